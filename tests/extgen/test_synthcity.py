"""``synthcity_ddpm`` / ``synthcity_ctgan`` / ``synthcity_tvae``: synthcity's plugins behind tabmem's generator interface.

Runs beside sdmetrics in ``.venv-ref`` (``tests/run_reference.sh``; the fork pins transformers>=5),
where a missing package fails (``TABMEM_REQUIRE_EXTGEN=1``) instead of skipping. Every fit is tiny:
200 rows of diabetes, 32-unit networks, 3 epochs (under a second each).
"""

from __future__ import annotations

import random

import numpy as np
import pandas as pd
import pytest
import torch

from cli_run import run
from reference_libs import require
from tabmem.callbacks import LambdaCallback
from tabmem.errors import TabmemError
from tabmem.generators import get_generator, load_generator
from tabmem.memorization.tracker import MemorizationTracker

pytestmark = [pytest.mark.synthcity, pytest.mark.filterwarnings("ignore")]
MODELS = ("synthcity_ddpm", "synthcity_ctgan", "synthcity_tvae")


@pytest.fixture(scope="module", autouse=True)
def _package():
    """The package (in a fixture, so that a deselected module is not a skip in the main environment)."""
    require("synthcity", env="TABMEM_REQUIRE_EXTGEN")


@pytest.fixture(scope="module")
def train() -> pd.DataFrame:
    from sklearn.datasets import load_diabetes

    df = load_diabetes(as_frame=True, scaled=False).frame.head(200).copy()
    df["sex"] = df["sex"].map({1.0: "F", 2.0: "M"})  # one categorical column
    return df


def _fit(name: str, train: pd.DataFrame, seed: int = 0, **kwargs):
    return get_generator(name, preset="tiny", random_state=seed).fit(train, **kwargs)


def _weights(gen) -> dict[str, torch.Tensor]:
    return {k: v.detach().clone() for k, v in gen._network().state_dict().items()}


def _same(a: dict, b: dict) -> bool:
    return a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a)


@pytest.fixture(scope="module")
def plain(train):
    return {name: _fit(name, train) for name in MODELS}


@pytest.fixture(scope="module")
def tracked(train):
    out = {}
    for name in MODELS:
        tracker = MemorizationTracker(every=1)
        out[name] = (_fit(name, train, callbacks=[tracker]), tracker)
    return out


@pytest.mark.parametrize("name", MODELS)
def test_train_sample_round_trip(name, plain, train):
    gen = plain[name]
    assert gen.epoch_ == 3 and [h["epoch"] for h in gen.history_] == [1, 2, 3]
    assert all(np.isfinite(h["loss"]) for h in gen.history_)
    assert gen.plugin_.fitted
    out = gen.sample(40, random_state=1)
    assert list(out.columns) == list(train.columns) and len(out) == 40
    assert set(out["sex"]) <= {"F", "M"} and out.drop(columns="sex").notna().all().all()
    assert list(out.dtypes) == list(train.dtypes)


def test_ddpm_epoch_losses_are_the_packages(plain):
    """The logged losses are the means of the package's own per-step loss rows of each epoch (2 steps of 100)."""
    gen = plain["synthcity_ddpm"]
    table = gen.plugin_.loss_history  # the package's DataFrame, one row per step (log_interval=1)
    assert len(table) == 6
    for epoch in (1, 2, 3):
        rows = table["loss"].to_numpy()[2 * (epoch - 1) : 2 * epoch]
        assert gen.history_[epoch - 1]["loss"] == pytest.approx(rows.mean())


def test_ctgan_losses_are_finite_pairs(plain):
    assert all(np.isfinite(h["loss_d"]) for h in plain["synthcity_ctgan"].history_)


@pytest.mark.parametrize("name", MODELS)
def test_tracking_every_epoch_leaves_weights_and_samples_bit_identical(name, plain, tracked, train):
    gen, tracker = tracked[name]
    assert [e["epoch"] for e in tracker.epochs_] == [1, 2, 3]
    assert _same(_weights(plain[name]), _weights(gen))
    pd.testing.assert_frame_equal(plain[name].sample(60, random_state=4), gen.sample(60, random_state=4))
    assert [h["loss"] for h in plain[name].history_] == [h["loss"] for h in gen.history_]
    # the check can fail: another seed gives other weights
    assert not _same(_weights(plain[name]), _weights(_fit(name, train, seed=1)))


@pytest.mark.parametrize("name", MODELS)
def test_a_callback_using_the_global_rngs_changes_nothing(name, plain, train):
    """synthcity seeds and draws from the global torch/numpy/Python streams; a callback that draws from
    them too (and samples) between epochs does not change the trajectory."""

    def meddle(gen, epoch, logs):
        torch.rand(7), np.random.rand(7), random.random()  # noqa: NPY002 - the global streams on purpose
        gen.sample(25, random_state=epoch)

    gen = _fit(name, train, callbacks=[LambdaCallback(on_epoch_end=meddle)])
    assert _same(_weights(plain[name]), _weights(gen))
    pd.testing.assert_frame_equal(plain[name].sample(30, random_state=3), gen.sample(30, random_state=3))


@pytest.mark.parametrize("name", MODELS)
def test_same_seed_same_rows_and_the_global_rngs_untouched(name, plain):
    gen = plain[name]
    legacy = np.random.get_state  # noqa: NPY002 - the legacy global stream is what is checked
    states = torch.get_rng_state(), legacy()[1].copy(), random.getstate()
    a, b, c = gen.sample(30, random_state=5), gen.sample(30, random_state=5), gen.sample(30, random_state=6)
    pd.testing.assert_frame_equal(a, b)
    assert not a.equals(c)
    assert torch.equal(states[0], torch.get_rng_state()) and np.array_equal(states[1], legacy()[1])
    assert states[2] == random.getstate()


def test_fitting_leaves_the_global_rngs_untouched(train):
    """The plugin seeds the global streams when built and in fit; the user's are put back."""
    legacy = np.random.get_state  # noqa: NPY002
    states = torch.get_rng_state(), legacy()[1].copy(), random.getstate()
    get_generator("synthcity_tvae", preset="tiny", random_state=0, epochs=1).fit(train)
    assert torch.equal(states[0], torch.get_rng_state()) and np.array_equal(states[1], legacy()[1])
    assert states[2] == random.getstate()


@pytest.mark.parametrize("name", MODELS)
def test_save_load_round_trip(name, plain, tmp_path):
    gen = plain[name]
    gen.save(tmp_path / "m.pt")
    back = load_generator(tmp_path / "m.pt")
    assert type(back) is type(gen) and back.epoch_ == 3
    assert _same(_weights(gen), _weights(back))
    pd.testing.assert_frame_equal(gen.sample(50, random_state=2), back.sample(50, random_state=2))


@pytest.mark.parametrize("name", MODELS)
def test_the_saved_model_holds_no_training_rows(name, plain, train, tmp_path):
    """The data loaders (which hold the encoded training rows) are dropped from the file: no array in
    the loaded object graph has as many rows and columns as the training table. (The CTGAN/TVAE keep
    the one-hot conditional column of each training row, 200 x 2 here: the package samples conditions
    from them.)"""
    plain[name].save(tmp_path / "m.pt")
    back = load_generator(tmp_path / "m.pt").plugin_
    seen, stack, long = set(), [back], []
    while stack:
        obj = stack.pop()
        if id(obj) in seen:
            continue
        seen.add(id(obj))
        if (
            isinstance(obj, (np.ndarray, torch.Tensor, pd.DataFrame))
            and obj.ndim == 2
            and len(obj) >= 160
            and obj.shape[1] >= train.shape[1]
        ):
            long.append(obj.shape)
        elif isinstance(obj, dict):
            stack += list(obj.values())
        elif isinstance(obj, (list, tuple)):
            stack += list(obj)
        elif hasattr(obj, "__dict__") and not isinstance(obj, type):
            stack += list(vars(obj).values())
    assert long == []


def test_a_mid_training_checkpoint_loads_and_samples(train, tmp_path):
    gen = get_generator("synthcity_ctgan", preset="tiny", random_state=0)
    gen.fit(train, checkpoint_every=1, checkpoint_path=tmp_path / "ck")
    files = sorted(p for p in (tmp_path / "ck").rglob("*.pt"))
    assert files
    back = load_generator(files[0])
    assert 1 <= back.epoch_ <= 3 and len(back.sample(20, random_state=0)) == 20


def test_a_file_needing_other_classes_is_one_line(plain, tmp_path):
    """The plugin is read with an allowlist: a file holding anything else is refused by name."""
    import fractions

    from tabmem.generators import ext_synthcity

    gen = plain["synthcity_tvae"]
    gen.save(tmp_path / "m.pt")
    payload = torch.load(tmp_path / "m.pt", weights_only=True)
    payload["state"]["plugin"] = ext_synthcity._pack({"x": fractions.Fraction(1, 3)})
    torch.save(payload, tmp_path / "bad.pt")
    with pytest.raises(TabmemError, match=r"synthcity_tvae: cannot read synthcity's objects.*fractions.Fraction") as e:
        load_generator(tmp_path / "bad.pt")
    assert "\n" not in str(e.value)


@pytest.mark.parametrize("name", MODELS)
def test_resume_and_sample_weight_are_refused_in_one_line(name, plain, train, tmp_path):
    plain[name].save_checkpoint(tmp_path / "ck.pt")
    with pytest.raises(TabmemError, match=rf"{name}: resume is not supported") as e:
        _fit(name, train, resume_from=tmp_path / "ck.pt")
    assert "\n" not in str(e.value)
    with pytest.raises(TabmemError, match="does not support per-record weights"):
        _fit(name, train, sample_weight=np.linspace(0.5, 1.5, len(train)))


@pytest.mark.parametrize(
    ("name", "params", "match"),
    [("synthcity_ddpm", {"num_timesteps": 0}, "num_timesteps"), ("synthcity_ctgan", {"epochs": 0}, "epochs"),
     ("synthcity_tvae", {"options": {"n_iter": 5}}, "options may not set n_iter"),
     ("synthcity_tvae", {"options": {"no_such_argument": 1, "decoder_nonlin": "nope"}}, "synthcity refused")],
)  # fmt: skip
def test_bad_parameters_are_one_line(name, params, match, train):
    with pytest.raises(TabmemError, match=match) as e:
        get_generator(name, preset="tiny", **params).fit(train)
    assert "\n" not in str(e.value)


@pytest.mark.parametrize("name", MODELS)
def test_early_stop_ends_the_packages_fit_and_the_model_samples(name, train):
    gen = _fit(name, train, callbacks=[LambdaCallback(on_epoch_end=lambda g, e, logs: e == 2)])
    assert gen.epoch_ == 2 and gen.stopped_early_ and gen._worker is None
    assert len(gen.sample(20, random_state=0)) == 20


# ------------------------------------------------------------------ the commands
TINY_CLI = ["--preset", "tiny", "--epochs", 2, "--threads", 1]


def test_cli_train_tracked_sample_and_resume_refused(tmp_path, capsys):
    out = tmp_path / "run"
    args = ["train", "--dataset", "diabetes", "--model", "synthcity_ddpm", *TINY_CLI]
    code, text = run([*args, "--track-every", 1, "--seed", 0, "--quiet", "--out", out], capsys)
    assert code == 0, text
    assert (out / "model.pt").is_file()
    assert pd.read_csv(out / "tracking" / "epochs.csv")["epoch"].tolist() == [1, 2]
    code, text = run(["sample", "--model", out, "--n", 30, "--seed", 1, "--out", tmp_path / "a.csv"], capsys)
    assert code == 0, text
    code, text = run(["sample", "--model", out, "--n", 30, "--seed", 1, "--out", tmp_path / "b.csv"], capsys)
    assert code == 0, text
    a = pd.read_csv(tmp_path / "a.csv")
    assert len(a) == 30 and a.equals(pd.read_csv(tmp_path / "b.csv"))
    code, text = run([*args, "--track-every", 1, "--seed", 0, "--quiet", "--resume", "--out", out], capsys)
    lines = [line for line in text.splitlines() if line.strip()]
    assert code != 0 and "synthcity_ddpm: resume is not supported" in lines[-1] and "Traceback" not in text


def test_cli_dynamiccut_smoke(tmp_path, capsys):
    args = ["dynamiccut", "--dataset", "diabetes", "--model", "synthcity_tvae", *TINY_CLI, "--warmup-epochs", 1]
    code, text = run([*args, "--track-every", 1, "--out", tmp_path], capsys)
    assert code == 0, text
    assert (tmp_path / "summary.json").is_file() and (tmp_path / "ranking.csv").is_file()


def test_cli_attack_with_synthcity_ctgan_shadows_smoke(tmp_path, capsys, train):
    df = train.sample(frac=1.0, random_state=0).reset_index(drop=True)
    files = {}
    for name, part in {"mem": df.iloc[:40], "non": df.iloc[40:80], "pop": df.iloc[80:200]}.items():
        files[name] = tmp_path / f"{name}.csv"
        part.to_csv(files[name], index=False)
    files["syn"] = tmp_path / "syn.csv"
    df.iloc[:40].to_csv(files["syn"], index=False)  # a released table that copies its members
    args = ["attack", "--members", files["mem"], "--non-members", files["non"], "--synthetic", files["syn"]]
    args += ["--population", files["pop"], "--attacks", "dcr,groundhog", "--model", "synthcity_ctgan", *TINY_CLI]
    args += ["--param", "batch_size=20", "--n-shadows", 4, "--n-bootstrap", 0]
    code, text = run([*args, "--categorical", "sex", "--out", tmp_path / "att"], capsys)
    assert code == 0, text
    assert set(pd.read_csv(tmp_path / "att" / "roc.csv")["attack"]) >= {"dcr", "groundhog"}


def test_study_generators_axis(tmp_path, capsys):
    study = tmp_path / "study.toml"
    study.write_text(
        '[study]\nname = "sc"\nsteps = ["train", "sample", "audit"]\nseeds = [0]\nthreads = 1\n'
        '[[datasets]]\nname = "diabetes"\n'
        '[[generators]]\nname = "synthcity_ddpm"\npreset = "tiny"\nepochs = 1\nlabel = "sc-ddpm"\n'
        "[train]\nholdout = false\n"
    )
    code, text = run(["run", study, "--out", tmp_path / "out"], capsys)
    assert code == 0, text
    results = pd.read_parquet(tmp_path / "out" / "results.parquet")
    assert set(results["generator"]) == {"sc-ddpm"} and results["value"].notna().any()
