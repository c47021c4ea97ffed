"""Rejection sampling against a brute-force replica criterion; the CLI option and command; bad inputs."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from mitigation_tables import TINY_DDPM, mixed_table

from tabmem.cli import main
from tabmem.errors import TabmemError
from tabmem.mitigation import RejectionSampler, rejection_aware_scores

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "memorization"))
from brute import all_distances, brute_force  # noqa: E402


class CopyingGenerator:
    """Draws each row as a copy of a training row (probability ``p_copy``) or a fresh row of a second table."""

    def __init__(self, train: pd.DataFrame, fresh: pd.DataFrame, p_copy: float) -> None:
        self.train, self.fresh, self.p_copy = train, fresh, p_copy
        self.calls: list[tuple[int, int | None]] = []

    def sample(self, n: int, *, random_state: int | None = None, **_: object) -> pd.DataFrame:
        self.calls.append((n, random_state))
        rng = np.random.default_rng(random_state)
        copy = rng.random(n) < self.p_copy
        rows = [
            self.train.iloc[rng.integers(len(self.train))] if c else self.fresh.iloc[rng.integers(len(self.fresh))]
            for c in copy
        ]
        return pd.DataFrame(rows).reset_index(drop=True).astype(self.train.dtypes.to_dict())


def brute_replicas(train, synthetic, schema, distance, threshold):
    """d1/d2 < threshold by brute force, exact copies always replicas."""
    ref = brute_force(train, synthetic, schema, distance)
    exact = ref["d1"].to_numpy() == 0
    with np.errstate(invalid="ignore"):
        return (ref["ratio"].to_numpy() < threshold) | exact


@pytest.fixture
def data():
    train, schema = mixed_table(60, seed=0)
    fresh, _ = mixed_table(200, seed=1)
    return train, fresh, schema


@pytest.mark.parametrize("distance", ["gower", "fang2024", "l2"])
def test_filter_keeps_exactly_the_rows_brute_force_does_not_flag(data, distance):
    train, fresh, schema = data
    syn = pd.concat([fresh.iloc[:80], train.iloc[:20]], ignore_index=True)
    kept, report = RejectionSampler(distance, 0.5, n_jobs=1).fit(train, schema).filter(syn)
    flags = brute_replicas(train, syn, schema, distance, 0.5)
    assert kept.index.tolist() == np.flatnonzero(~flags).tolist()
    assert flags[80:].all() and 0 < flags[:80].sum() < 80  # copies all go, some near-copies too
    assert (report.n_drawn, report.n_rejected, report.n_kept) == (100, int(flags.sum()), int((~flags).sum()))
    assert report.rejection_rate == pytest.approx(flags.mean())


def test_sample_tops_up_with_the_seeded_rounds_and_is_reproducible(data):
    train, fresh, schema = data
    sampler = RejectionSampler("gower", n_jobs=1).fit(train, schema)
    gen = CopyingGenerator(train, fresh, p_copy=0.5)
    out, report = sampler.sample(gen, 50, random_state=7)
    assert len(out) == 50 and report.n_kept == 50
    # the same rows, by hand: every round's batch, filtered by brute force, concatenated, the first 50
    seeds = [7] + [int(np.random.SeedSequence([7, j]).generate_state(1)[0]) for j in range(1, report.rounds)]
    assert [s for _, s in gen.calls] == seeds and gen.calls[0][0] == 50
    batches = [CopyingGenerator(train, fresh, 0.5).sample(n, random_state=s) for n, s in gen.calls]
    kept = [b[~brute_replicas(train, b, schema, "gower", 1 / 3)] for b in batches]
    expected = pd.concat(kept, ignore_index=True).iloc[:50]
    pd.testing.assert_frame_equal(out, expected.reset_index(drop=True))
    assert report.n_drawn == sum(n for n, _ in gen.calls) and report.rounds >= 2
    assert report.n_rejected == sum(len(b) - len(k) for b, k in zip(batches, kept))
    again, _ = sampler.sample(CopyingGenerator(train, fresh, 0.5), 50, random_state=7)
    assert again.to_csv().encode() == out.to_csv().encode()


def test_sample_without_replicas_is_the_plain_sample(data):
    train, fresh, schema = data
    gen = CopyingGenerator(train, fresh.iloc[:0].pipe(lambda _: train.iloc[:0]), 0.0)
    gen.fresh = train.assign(income=train["income"] * 1000 + 1e7)  # far from every training row
    out, report = RejectionSampler(n_jobs=1).fit(train, schema).sample(gen, 30, random_state=3)
    pd.testing.assert_frame_equal(out, gen.sample(30, random_state=3))
    assert (report.n_rejected, report.rounds) == (0, 1)


def test_a_model_that_only_copies_fails_in_one_line(data):
    train, fresh, schema = data
    sampler = RejectionSampler(max_rounds=3, n_jobs=1).fit(train, schema)
    with pytest.raises(TabmemError, match=r"after 3 rounds .* only 0 of 20 rows are not replicas"):
        sampler.sample(CopyingGenerator(train, fresh, 1.0), 20, random_state=0)


@pytest.mark.parametrize(
    "make, match",
    [
        (lambda t, s: RejectionSampler(max_rounds=0).fit(t, s), "max_rounds"),
        (lambda t, s: RejectionSampler(threshold=0).fit(t, s), "threshold"),
        (lambda t, s: RejectionSampler("cosine").fit(t, s), "cosine"),
        (lambda t, s: RejectionSampler().fit(t.iloc[:1], s), "at least 2 rows"),
        (lambda t, s: RejectionSampler().filter(t), "not fitted"),
        (lambda t, s: RejectionSampler().fit(t, s).sample(None, 0), "n"),
        (lambda t, s: RejectionSampler().fit(t, s).filter(t.drop(columns="age")), "age"),
    ],
)
def test_bad_inputs(data, make, match):
    train, _, schema = data
    with pytest.raises(TabmemError, match=match):
        make(train, schema)


def test_rejection_aware_scores_against_brute_force(data):
    train, fresh, schema = data
    reference, targets, syn = fresh.iloc[:50], pd.concat([train.iloc[:20], fresh.iloc[50:70]]), fresh.iloc[100:160]
    hole = rejection_aware_scores(syn, targets, reference, schema, distance="l2", threshold=0.4, n_jobs=1)
    # brute force, with the l2 scaling fitted on the reference and target rows
    num = list(schema.numerical)
    known = pd.concat([reference, targets])[num]
    mean, std = known.mean().to_numpy(), known.std(ddof=0).to_numpy()
    d_st = all_distances(targets, syn, schema, "l2", std=std, mean=mean)  # (syn, targets)
    d_sr = all_distances(reference, syn, schema, "l2", std=std, mean=mean).min(axis=1)
    expected = np.where(d_st == 0, 0.0, d_st / d_sr[:, None]).min(axis=0)
    np.testing.assert_allclose(hole, expected, rtol=1e-9)
    edge = rejection_aware_scores(syn, targets, reference, schema, distance="l2", threshold=0.4, mode="edge", n_jobs=1)
    np.testing.assert_allclose(edge, -np.abs(expected - 0.4), rtol=1e-9)
    with pytest.raises(TabmemError, match="mode"):
        rejection_aware_scores(syn, targets, reference, schema, mode="both")


def run(argv, capsys):
    try:
        main(argv)
        code = 0
    except SystemExit as exc:
        code = exc.code
    out = capsys.readouterr()
    return code, out.out + out.err


def test_reject_command(tmp_path, data, capsys):
    train, fresh, schema = data
    syn = pd.concat([fresh.iloc[:30], train.iloc[:10]], ignore_index=True)
    train.to_csv(tmp_path / "t.csv", index=False)
    syn.to_csv(tmp_path / "s.csv", index=False)
    args = ["reject", "--train", str(tmp_path / "t.csv"), "--categorical", "level", "--target", "y",
            "--synthetic", str(tmp_path / "s.csv"), "--report", str(tmp_path / "r.json"), "--n-jobs", "1"]  # fmt: skip
    code, out = run([*args, "--out", str(tmp_path / "kept.csv")], capsys)
    assert code == 0, out
    flags = brute_replicas(train, syn, schema, "gower", 1 / 3)
    kept = pd.read_csv(tmp_path / "kept.csv")
    pd.testing.assert_frame_equal(kept, pd.read_csv(tmp_path / "s.csv")[~flags].reset_index(drop=True))
    assert json.loads((tmp_path / "r.json").read_text())["n_rejected"] == flags.sum()
    assert f"rejected {flags.sum()} " in out
    code, out = run([*args, "--out", str(tmp_path / "s.csv")], capsys)
    assert code != 0 and "is the --synthetic file" in out and "Traceback" not in out


def test_sample_reject_replicas_option(tmp_path, data, capsys):
    from tabmem.generators import get_generator

    train, _, schema = data
    gen = get_generator("tabddpm", **TINY_DDPM, epochs=2, random_state=0).fit(train, schema)
    gen.save(tmp_path / "model.pt")
    train.to_csv(tmp_path / "t.csv", index=False)
    base = ["sample", "--model", str(tmp_path / "model.pt"), "--n", "40", "--seed", "1", "--threads", "1"]
    opts = ["--reject-replicas", str(tmp_path / "t.csv"), "--threshold", "0.9", "--n-jobs", "1"]
    code, out = run([*base, *opts, "--out", str(tmp_path / "a.csv")], capsys)
    assert code == 0, out
    a = pd.read_csv(tmp_path / "a.csv")
    expected, report = RejectionSampler(threshold=0.9, n_jobs=1).fit(train, schema).sample(gen, 40, random_state=1)
    assert len(a) == 40 and not brute_replicas(train, a, schema, "gower", 0.9).any()
    assert f"rejected {report.n_rejected} of {report.n_drawn} rows" in out
    pd.testing.assert_frame_equal(a, pd.read_csv(tmp_path / "a.csv"))
    run([*base, *opts, "--out", str(tmp_path / "b.csv")], capsys)
    assert (tmp_path / "a.csv").read_bytes() == (tmp_path / "b.csv").read_bytes()
    code, out = run(
        [*base, "--reject-replicas", str(tmp_path / "missing.csv"), "--out", str(tmp_path / "c.csv")], capsys
    )
    assert code != 0 and "missing.csv" in out and "Traceback" not in out
