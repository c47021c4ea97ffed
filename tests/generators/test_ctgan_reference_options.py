"""CTGAN options that reproduce the reference code (generation conditions, BatchNorm when sampling, critic
pairing), each checked against its definition on small synthetic tables."""

from __future__ import annotations

import copy

import numpy as np
import pandas as pd
import pytest
import torch

from tabmem.data.schema import Schema
from tabmem.errors import TabmemError
from tabmem.generators import get_generator
from tabmem.generators.ctgan import CTGAN, _Critic, _Generator
from tabmem.generators.tvae import TVAE

TINY = {"embedding_dim": 16, "generator_dims": (32, 32), "discriminator_dims": (32, 32), "batch_size": 100}


@pytest.fixture(autouse=True, scope="module")
def _one_thread():
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


@pytest.fixture(scope="module")
def table() -> tuple[pd.DataFrame, Schema]:
    rng = np.random.default_rng(0)
    n = 700
    df = pd.DataFrame(
        {
            "x": rng.normal(0, 1, n),
            # very unequal counts, so frequency and log-frequency differ a lot
            "colour": rng.choice(["blue", "green", "red", "teal"], n, p=[0.80, 0.15, 0.04, 0.01]),
            "size": rng.choice(["L", "S"], n, p=[0.9, 0.1]),
        }
    )
    return df, Schema(("x", "colour", "size"), ("x",), ("colour", "size"))


def _tiny(**kw) -> CTGAN:
    return get_generator("ctgan", **{**TINY, "epochs": 1, "random_state": 0, **kw})


@pytest.mark.parametrize("mode", ["frequency", "training"])
def test_generation_conditions_follow_their_definition(table, mode) -> None:
    """Column uniform; category with probability count / n ("frequency") or log(1 + count) normalised
    ("training": the training-by-sampling law, which the reference code also uses to generate)."""
    df, schema = table
    gen = _tiny(sample_conditions=mode).fit(df, schema)
    n = 60_000
    _, c, cond = gen._fake(n, torch.Generator().manual_seed(0), training=False)
    np.testing.assert_allclose(np.bincount(cond.column, minlength=2) / n, [0.5, 0.5], atol=0.01)
    offsets = np.cumsum([0] + [len(gen.normalizer_.categories_[col]) for col in schema.categorical])
    for j, col in enumerate(schema.categorical):
        cats = list(gen.normalizer_.categories_[col])
        assert cats == sorted(df[col].unique())  # the one-hot order used below
        counts = df[col].value_counts().reindex(cats).to_numpy(dtype=float)
        weights = np.log1p(counts) if mode == "training" else counts
        expected = weights / weights.sum()
        picked = cond.category[cond.column == j]
        np.testing.assert_allclose(np.bincount(picked, minlength=len(cats)) / len(picked), expected, atol=0.012)
    # the condition vector is the one-hot of (column, category)
    hot = c.numpy().argmax(1)
    np.testing.assert_array_equal(hot, offsets[cond.column] + cond.category)
    assert np.all(c.numpy().sum(1) == 1.0)


def test_batch_statistics_equal_train_mode_batchnorm_and_keep_running_averages() -> None:
    torch.manual_seed(0)
    net = _Generator(6, (8, 8), 5)
    net.train()
    net(torch.randn(64, 6) * 3 + 1)  # running averages away from their initial values
    reference = copy.deepcopy(net).train()  # torch's BatchNorm in training mode: batch statistics
    net.eval()
    x = torch.randn(50, 6)
    before = {k: v.clone() for k, v in net.state_dict().items()}
    with torch.no_grad():
        got = net(x, batch_stats=True)
        torch.testing.assert_close(got, reference(x))
        assert not torch.allclose(got, net(x), atol=1e-3)  # running averages give other outputs
    for k, v in net.state_dict().items():
        assert torch.equal(v, before[k]), k


def test_batch_norm_sampling_generates_whole_batches(table) -> None:
    df, schema = table
    gen = _tiny(sample_batch_norm="batch").fit(df, schema)
    state = {k: v.clone() for k, v in gen.generator_.state_dict().items()}
    a = gen.sample(250, random_state=3)  # three batches of 100, the surplus 50 rows dropped
    assert len(a) == 250
    pd.testing.assert_frame_equal(a, gen.sample(250, random_state=3))
    # rows come in whole batches of batch_size: the first batch does not depend on n
    pd.testing.assert_frame_equal(a.iloc[:100], gen.sample(100, random_state=3))
    for k, v in gen.generator_.state_dict().items():  # sampling leaves the running averages alone
        assert torch.equal(v, state[k]), k
    gen.set_params(sample_batch_norm="running")
    assert not a.equals(gen.sample(250, random_state=3))


@pytest.mark.parametrize("pairing", ["paired", "shuffled"])
def test_critic_pairing(table, monkeypatch, pairing) -> None:
    """The critic's first two calls of a step are (fake, real) with their conditions appended."""
    df, schema = table
    seen: list[torch.Tensor] = []
    forward = _Critic.forward

    def spy(self, x):
        seen.append(x.detach().clone())
        return forward(self, x)

    monkeypatch.setattr(_Critic, "forward", spy)
    gen = _tiny(critic_pairing=pairing).fit(df, schema)
    fake_in, real_in = seen[0], seen[1]
    d, k = gen.normalizer_.output_dim_, gen.cond_dim_
    fake_cond, real_cond, real = fake_in[:, d:], real_in[:, d:], real_in[:, :d]
    if pairing == "paired":
        assert torch.equal(fake_cond, real_cond)
    else:
        assert not torch.equal(fake_cond, real_cond)
        # same conditions, another order
        assert torch.equal(fake_cond.argmax(1).sort().values, real_cond.argmax(1).sort().values)
    # every real row still carries its own condition: its category one-hot is set where the condition is
    cat_columns = torch.tensor([i for s in gen._cat_spans for i in range(s.start, s.end)])
    assert len(cat_columns) == k
    assert torch.all(real[torch.arange(len(real)), cat_columns[real_cond.argmax(1)]] == 1.0)


def test_option_validation(table) -> None:
    df, schema = table
    for name in ("critic_pairing", "sample_conditions", "sample_batch_norm"):
        with pytest.raises(TabmemError, match=name):
            _tiny(**{name: "nope"}).fit(df, schema)


def test_paper_preset_is_the_reference_behaviour() -> None:
    options = ("critic_pairing", "sample_conditions", "sample_batch_norm", "numerical_decoding")
    paper, plain = CTGAN.from_preset("paper"), CTGAN()
    assert [getattr(paper, k) for k in options] == ["shuffled", "training", "batch", "truncate"]
    assert [getattr(plain, k) for k in options] == ["paired", "frequency", "running", "clip_round"]
    # everything else is the same reference setting
    rest = {k: v for k, v in paper.get_params().items() if k not in options}
    assert rest == {k: v for k, v in plain.get_params().items() if k in rest}
    assert TVAE.from_preset("paper").numerical_decoding == "truncate"
    assert TVAE().numerical_decoding == "clip_round"


def test_cli_trains_the_paper_preset(table, tmp_path, capsys) -> None:
    """``tabmem train --model ctgan --preset paper`` builds the reference behaviour (CLI contract)."""
    from tabmem.cli import main
    from tabmem.generators import load_generator

    df, _ = table
    path = tmp_path / "train.csv"
    df.to_csv(path, index=False)
    out = tmp_path / "run"
    tiny = [f"--param=embedding_dim={TINY['embedding_dim']}", "--param=generator_dims=[32,32]"]
    tiny += ["--param=discriminator_dims=[32,32]", "--param=batch_size=100"]
    argv = ["train", "--train", str(path), "--model", "ctgan", "--preset", "paper", "--epochs", "1"]
    argv += ["--track-every", "0", "--out", str(out), "--quiet", *tiny]
    try:
        main(argv)
    except SystemExit as exc:
        assert exc.code == 0, capsys.readouterr().err
    gen = load_generator(out / "model.pt")
    for key, value in CTGAN.PRESETS["paper"].items():
        assert getattr(gen, key) == value, key
    assert len(pd.read_csv(out / "synthetic.csv")) == len(df)


def test_decode_without_clipping_truncates_integers() -> None:
    """``x = 4 sigma_k alpha + mu_k``: clipped to the training range and rounded, or left free and truncated."""
    from tabmem.generators._transformer import ModeSpecificNormalizer

    rng = np.random.default_rng(0)
    df = pd.DataFrame({"n": rng.integers(0, 50, 400), "f": rng.normal(0, 1, 400)})
    schema = Schema(("n", "f"), ("n", "f"), ())
    norm = ModeSpecificNormalizer(random_state=0).fit(df, schema)
    n_span, mode_span = norm.spans_[0], norm.spans_[1]
    info = norm.numeric_["n"]
    k = len(info.means) - 1  # the highest mode, pushed to its edges
    alphas = np.array([1.0, -1.0, 0.3, -0.3])
    m = np.zeros((len(alphas), norm.output_dim_))
    m[:, n_span.start] = alphas
    m[:, mode_span.start + k] = 1.0
    m[:, norm.spans_[2].start] = 0.0
    m[:, norm.spans_[3].start] = 1.0
    x = alphas * 4.0 * info.stds[k] + info.means[k]
    free = norm.decode(m, clip=False, integers="truncate")["n"]
    np.testing.assert_array_equal(free, np.trunc(x))
    default = norm.decode(m)["n"]
    np.testing.assert_array_equal(default, np.round(np.clip(x, 0, 49)))  # df["n"] spans 0..49
    assert free.max() > 49  # the top mode's edge lies beyond the training maximum
    with pytest.raises(TabmemError, match="integers"):
        norm.decode(m, integers="floor")


@pytest.mark.parametrize("name", ["ctgan", "tvae"])
def test_numerical_decoding_changes_numericals_only(table, name) -> None:
    df, schema = table
    df = df.assign(x=(df["x"] * 10).round().astype("int64"))
    tiny = TINY if name == "ctgan" else {"embedding_dim": 8, "compress_dims": (16,), "decompress_dims": (16,)}
    gen = get_generator(name, **{**tiny, "batch_size": 100, "epochs": 1, "random_state": 0}).fit(df, schema)
    a = gen.sample(400, random_state=2)
    gen.set_params(numerical_decoding="truncate")
    b = gen.sample(400, random_state=2)
    pd.testing.assert_frame_equal(a[["colour", "size"]], b[["colour", "size"]])  # same draws
    assert b["x"].dtype == df["x"].dtype and a["x"].between(df["x"].min(), df["x"].max()).all()
    # same values up to clipping and rounding vs truncation
    lo, hi = df["x"].min(), df["x"].max()
    assert (np.abs(a["x"] - b["x"].clip(lo, hi)) <= 1).all()
    gen.set_params(numerical_decoding="nope")
    with pytest.raises(TabmemError, match="numerical_decoding"):
        gen.fit(df, schema)


PUBLISHED_RATE, PUBLISHED_SD = 21.68, 0.62  # CTGAN on Adult, TabCutMix Table 9 (ctgan package, 5 seeds)
# preset="paper", Adult, 300 epochs, one torch thread, sample seed = seed + 1 (docs/ctgan_tvae.md,
# studies/ctgan_tvae/ctgan_tvae_reference.py, runs/cmp_ctgan_300). The package (ctgan 0.12.1, seed 0):
# 21.45 %, Shape 0.860, Trend 0.816; real `>50K` share 0.241.
MEASURED_300 = {
    0: {"rate": 21.790, "shape": 0.8644, "trend": 0.8484, "positive": 0.3163},
    1: {"rate": 22.616, "shape": 0.8722, "trend": 0.8102, "positive": 0.2370},
}


@pytest.mark.slow
@pytest.mark.long  # 20-60 minutes per seed: run by hand (pytest -m long), not in CI
@pytest.mark.parametrize("seed", [0, 1])
def test_ctgan_paper_preset_reproduces_the_published_rate(shared_data_dir, seed) -> None:
    """LONG (one 300-epoch CTGAN fit per seed: 20 minutes on a quiet core, about an hour on a loaded one).

    ``preset="paper"`` on the full Adult training split, |G| = |train|, fang2024. Both seeds land in the
    published interval (21.68 +- 2 x 0.62 %). The other figures are pinned to what these seeds gave here;
    they do not all meet the targets set for the reproduction (Shape +-0.01 of the package: seed 1 is 0.012 off; Trend:
    seed 0 is 0.032 off; `>50K` within +-0.01 of 0.241: seed 0 gives 0.316), see the docs for why.
    One torch thread as in the measurement: another thread count may take another GAN trajectory.
    """
    import torch

    from tabmem.data.datasets import load_dataset
    from tabmem.memorization.replicas import ReplicaDetector
    from tabmem.metrics import Shape, Trend

    ds = load_dataset("adult", data_dir=shared_data_dir)
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        gen = get_generator("ctgan", preset="paper", random_state=seed).fit(ds.train, ds.schema)
        synth = gen.sample(len(ds.train), random_state=seed + 1)
    finally:
        torch.set_num_threads(threads)
    res = ReplicaDetector("fang2024", n_jobs=1).fit(ds.train, ds.schema).score(synth, holdout=ds.test)
    rate = 100 * res.memorization_rate
    assert abs(rate - PUBLISHED_RATE) <= 2 * PUBLISHED_SD, rate
    assert 100 * res.holdout.memorization_rate == pytest.approx(30.15, abs=0.01)
    measured = MEASURED_300[seed]
    assert rate == pytest.approx(measured["rate"], abs=0.01)
    assert Shape().evaluate(ds.train, synth, ds.schema).value == pytest.approx(measured["shape"], abs=0.001)
    assert Trend().evaluate(ds.train, synth, ds.schema).value == pytest.approx(measured["trend"], abs=0.001)
    assert (synth["income"].astype(str) == ">50K").mean() == pytest.approx(measured["positive"], abs=0.001)
