"""The ``realtabformer`` generator: the real REaLTabFormer package behind tabmem's interface.

Runs in its own virtualenv (``tests/run_extgen.sh``: realtabformer 0.2.4 needs transformers<5),
where a missing package fails (``TABMEM_REQUIRE_EXTGEN=1``) instead of skipping. Every fit is
tiny: 100 rows of diabetes, 2 layers x 32, 3 epochs (a few seconds each on one core).
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import torch

from reference_libs import require
from tabmem.callbacks import LambdaCallback
from tabmem.defenses.tlp import TendencyLogitsProcessor
from tabmem.generators import get_generator, load_generator
from tabmem.memorization.tracker import MemorizationTracker

pytestmark = [pytest.mark.extgen, pytest.mark.filterwarnings("ignore")]


@pytest.fixture(scope="module", autouse=True)
def _package():
    """The package (in a fixture, so that a deselected module is not a skip in the main environment)."""
    require("realtabformer", env="TABMEM_REQUIRE_EXTGEN")


TINY = {"n_layer": 2, "n_head": 2, "n_embd": 32, "epochs": 3, "lr": 1e-3}


@pytest.fixture(scope="module")
def train() -> pd.DataFrame:
    from sklearn.datasets import load_diabetes

    df = load_diabetes(as_frame=True, scaled=False).frame.head(100).copy()
    df["sex"] = df["sex"].map({1.0: "F", 2.0: "M"})  # one categorical column
    return df


def _weights(gen) -> dict[str, torch.Tensor]:
    return {k: v.detach().clone() for k, v in gen.rtf_.model.state_dict().items()}


def _same(a: dict, b: dict) -> bool:
    return a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a)


@pytest.fixture(scope="module")
def tracked(train):
    tracker = MemorizationTracker(every=1)
    gen = get_generator("realtabformer", random_state=0, **TINY).fit(train, callbacks=[tracker])
    return gen, tracker


def test_train_sample_round_trip(tracked, train):
    gen, _ = tracked
    assert gen.epoch_ == 3 and [h["epoch"] for h in gen.history_] == [1, 2, 3]
    assert all(np.isfinite(h["loss"]) for h in gen.history_)
    out = gen.sample(40, random_state=1)
    assert list(out.columns) == list(train.columns) and len(out) == 40
    assert set(out["sex"]) <= {"F", "M"}
    assert out.drop(columns="sex").notna().all().all()


def test_sampling_is_deterministic_per_seed(tracked):
    gen, _ = tracked
    a, b, c = gen.sample(30, random_state=5), gen.sample(30, random_state=5), gen.sample(30, random_state=6)
    pd.testing.assert_frame_equal(a, b)
    assert not a.equals(c)


def test_sampling_leaves_the_global_rngs_alone(tracked):
    import random

    gen, _ = tracked
    legacy = np.random.get_state  # noqa: NPY002 - the legacy global stream is what is checked
    states = torch.get_rng_state(), legacy()[1].copy(), random.getstate()
    gen.sample(10, random_state=0)
    assert torch.equal(states[0], torch.get_rng_state())
    assert np.array_equal(states[1], legacy()[1]) and states[2] == random.getstate()


def test_tracking_runs_every_epoch(tracked):
    _, tracker = tracked
    assert tracker.history_["epoch"].tolist() == [1, 2, 3]
    assert tracker.history_["memorization_rate"].between(0, 1).all()


def test_weights_identical_with_and_without_tracking(tracked, train):
    gen, _ = tracked
    plain = get_generator("realtabformer", random_state=0, **TINY).fit(train)
    assert _same(_weights(gen), _weights(plain))
    pd.testing.assert_frame_equal(gen.sample(20, random_state=3), plain.sample(20, random_state=3))


def test_tlp_changes_the_samples_through_the_packages_logits_processor(tracked):
    gen, _ = tracked
    base = gen.sample(40, random_state=2)
    warped = gen.sample(40, random_state=2, tendency=20.0)
    assert not base.equals(warped)
    pd.testing.assert_frame_equal(
        warped, gen.sample(40, random_state=2, logits_processor=[TendencyLogitsProcessor(20.0)])
    )
    identity = gen.sample(40, random_state=2, logits_processor=[TendencyLogitsProcessor(1.0)])
    pd.testing.assert_frame_equal(base, identity)


def test_save_load_round_trip(tracked, tmp_path):
    gen, _ = tracked
    path = gen.save(tmp_path / "model.pt")
    payload = torch.load(path, weights_only=True)  # plain tensors and strings only
    assert isinstance(payload["state"]["rtf_config"], str)
    loaded = load_generator(tmp_path)
    assert loaded.name == "realtabformer" and loaded.epoch_ == 3
    pd.testing.assert_frame_equal(gen.sample(25, random_state=4), loaded.sample(25, random_state=4))
    assert _same(_weights(gen), _weights(loaded))


def test_resume_equals_an_uninterrupted_run(tracked, train, tmp_path):
    gen, _ = tracked
    first = get_generator("realtabformer", random_state=0, **TINY)
    stop_at_2 = LambdaCallback(on_epoch_end=lambda g, epoch, logs: epoch >= 2)
    first.fit(train, callbacks=[stop_at_2], checkpoint_every=1, checkpoint_path=tmp_path / "ck.pt")
    assert first.epoch_ == 2 and first.stopped_early_
    resumed = get_generator("realtabformer", random_state=0, **TINY).fit(train, resume_from=tmp_path / "ck.pt")
    assert resumed.epoch_ == 3 and [h["epoch"] for h in resumed.history_] == [1, 2, 3]
    assert _same(_weights(gen), _weights(resumed))


# ------------------------------------------------------------------ the commands, end to end (tiny)
def test_cli_train_tracked_then_sample(tmp_path, capsys):
    from cli_run import run

    out = tmp_path / "run"
    args = ["train", "--dataset", "diabetes", "--model", "realtabformer", "--preset", "tiny", "--epochs", 2]
    code, text = run([*args, "--track-every", 1, "--seed", 0, "--threads", 1, "--quiet", "--out", out], capsys)
    assert code == 0, text
    assert (out / "model.pt").is_file() and (out / "tracking" / "epochs.csv").is_file()
    assert pd.read_csv(out / "tracking" / "epochs.csv")["epoch"].tolist() == [1, 2]
    code, text = run(["sample", "--model", out, "--n", 30, "--seed", 1, "--out", tmp_path / "a.csv"], capsys)
    assert code == 0, text
    plain = pd.read_csv(tmp_path / "a.csv")
    assert len(plain) == 30
    code, text = run(
        ["sample", "--model", out, "--n", 30, "--seed", 1, "--tlp", 20, "--out", tmp_path / "b.csv"], capsys
    )
    assert code == 0, text
    assert not plain.equals(pd.read_csv(tmp_path / "b.csv"))


def test_cli_dynamiccut_smoke(tmp_path, capsys):
    from cli_run import run

    args = ["dynamiccut", "--dataset", "diabetes", "--model", "realtabformer", "--preset", "tiny", "--epochs", 2]
    code, text = run([*args, "--warmup-epochs", 1, "--track-every", 1, "--threads", 1, "--out", tmp_path], capsys)
    assert code == 0, text
    assert (tmp_path / "summary.json").is_file() and (tmp_path / "ranking.csv").is_file()


def test_cli_attack_with_realtabformer_shadows_smoke(tmp_path, capsys, train):
    from cli_run import run

    df = train.sample(frac=1.0, random_state=0).reset_index(drop=True)
    files = {}
    for name, part in {"mem": df.iloc[:30], "non": df.iloc[30:60], "pop": df.iloc[60:100]}.items():
        files[name] = tmp_path / f"{name}.csv"
        part.to_csv(files[name], index=False)
    files["syn"] = tmp_path / "syn.csv"
    df.iloc[:30].to_csv(files["syn"], index=False)  # a released table that copies its members
    args = ["attack", "--members", files["mem"], "--non-members", files["non"], "--synthetic", files["syn"]]
    args += ["--population", files["pop"], "--attacks", "dcr,groundhog", "--model", "realtabformer"]
    args += ["--preset", "tiny", "--epochs", 1, "--n-shadows", 4, "--n-bootstrap", 0, "--threads", 1]
    code, text = run([*args, "--categorical", "sex", "--out", tmp_path / "att"], capsys)
    assert code == 0, text
    assert set(pd.read_csv(tmp_path / "att" / "roc.csv")["attack"]) >= {"dcr", "groundhog"}


def test_study_generators_axis_with_tlp_sampling(tmp_path, capsys):
    from cli_run import run

    study = tmp_path / "study.toml"
    study.write_text(
        '[study]\nname = "rtf"\nsteps = ["train", "sample", "audit"]\nseeds = [0]\nthreads = 1\n'
        '[[datasets]]\nname = "diabetes"\n'
        '[[generators]]\nname = "realtabformer"\npreset = "tiny"\nepochs = 1\nlabel = "rtf"\n'
        '[[sampling]]\nlabel = "none"\n[[sampling]]\nlabel = "tlp-9"\noptions = { tendency = 9.0 }\n'
        "[train]\nholdout = false\n"
    )
    code, text = run(["run", study, "--out", tmp_path / "out"], capsys)
    assert code == 0, text
    results = pd.read_parquet(tmp_path / "out" / "results.parquet")
    assert set(results["sampling"]) == {"none", "tlp-9"} and results["value"].notna().any()
