"""``sdv_ctgan`` / ``sdv_tvae``: the ``ctgan`` package's CTGAN and TVAE behind tabmem's generator interface.

Runs beside sdmetrics in ``.venv-ref`` (``tests/run_reference.sh``: the package's rdt pins pandas<3),
where a missing package fails (``TABMEM_REQUIRE_EXTGEN=1``) instead of skipping. Every fit is tiny:
200 rows of diabetes, 16/32x32 networks, 3 epochs (about a second each after the package's
transformer fit).
"""

from __future__ import annotations

import fractions
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

pytestmark = [pytest.mark.sdv, pytest.mark.filterwarnings("ignore")]
MODELS = ("sdv_ctgan", "sdv_tvae")


@pytest.fixture(scope="module", autouse=True)
def _package():
    """The package (in a fixture, so that a deselected module is not a skip in the main environment)."""
    require("ctgan", env="TABMEM_REQUIRE_EXTGEN")


@pytest.fixture(scope="module")
def train() -> pd.DataFrame:
    from sklearn.datasets import load_diabetes

    df = load_diabetes(as_frame=True, scaled=False).frame.head(200).copy()
    df["sex"] = df["sex"].map({1.0: "F", 2.0: "M"})  # one categorical column
    return df


def _fit(name: str, train: pd.DataFrame, **kwargs):
    return get_generator(name, preset="tiny", random_state=0, batch_size=100).fit(train, **kwargs)


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
    if name == "sdv_ctgan":  # the package's generator and discriminator losses, per epoch
        assert all(np.isfinite(h["loss_d"]) for h in gen.history_)
    out = gen.sample(40, random_state=1)
    assert list(out.columns) == list(train.columns) and len(out) == 40
    assert set(out["sex"]) <= {"F", "M"} and out.drop(columns="sex").notna().all().all()
    assert list(out.dtypes) == list(train.dtypes)


@pytest.mark.parametrize("name", MODELS)
def test_epoch_losses_are_the_packages(name, plain):
    """The logged losses are those of the package's own loss table (its last epoch's rows)."""
    table = plain[name].model_.loss_values
    assert sorted(set(table["Epoch"])) == [0, 1, 2]
    last = table[table["Epoch"] == 2]
    if name == "sdv_ctgan":
        assert plain[name].history_[-1]["loss"] == pytest.approx(float(last["Generator Loss"].iloc[-1]))
    else:
        assert plain[name].history_[-1]["loss"] == pytest.approx(float(last["Loss"].mean()))


@pytest.mark.parametrize("name", MODELS)
def test_tracking_every_epoch_leaves_the_weights_bit_identical(name, plain, tracked, train):
    gen, tracker = tracked[name]
    assert [e["epoch"] for e in tracker.epochs_] == [1, 2, 3]
    assert _same(_weights(plain[name]), _weights(gen))
    # the check can fail: another seed gives other weights
    assert not _same(
        _weights(plain[name]), _weights(get_generator(name, preset="tiny", random_state=1, batch_size=100).fit(train))
    )


@pytest.mark.parametrize("name", MODELS)
def test_a_callback_using_the_global_rngs_changes_nothing(name, plain, train):
    """The package draws from the global torch/numpy streams; a callback that draws from them too (and samples)
    between epochs does not change the trajectory: the worker runs under the run's private copies."""

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


def test_ctgan_sampling_restores_the_batchnorm_statistics(plain):
    """The package samples CTGAN in training mode (BatchNorm on the batch), which moves the running
    statistics: they are put back, so sampling leaves the model as it was."""
    gen = plain["sdv_ctgan"]
    before = _weights(gen)
    assert any("running_mean" in k for k in before)
    gen.sample(100, random_state=0)
    assert _same(before, _weights(gen)) and gen._network().training


@pytest.mark.parametrize("name", MODELS)
def test_save_load_round_trip(name, plain, tmp_path):
    gen = plain[name]
    gen.save(tmp_path / "m.pt")
    back = load_generator(tmp_path / "m.pt")
    assert type(back) is type(gen) and back.epoch_ == 3
    assert _same(_weights(gen), _weights(back))
    pd.testing.assert_frame_equal(gen.sample(50, random_state=2), back.sample(50, random_state=2))


@pytest.mark.parametrize("name", MODELS)
def test_save_load_of_tables_without_categories_or_without_numbers(name, train, tmp_path):
    """The package's objects differ by the columns' kinds (its sampler with no discrete column holds
    raw bytes): each loads through the allowlist."""
    tables = {"numbers": train.drop(columns="sex"), "categories": train[["sex"]].assign(g=train["age"] > 50)}
    tables["categories"]["g"] = tables["categories"]["g"].map({True: "old", False: "young"})
    for label, table in tables.items():
        gen = get_generator(name, preset="tiny", random_state=0, batch_size=100, epochs=1).fit(table)
        gen.save(tmp_path / f"{label}.pt")
        pd.testing.assert_frame_equal(
            gen.sample(20, random_state=0), load_generator(tmp_path / f"{label}.pt").sample(20, random_state=0)
        )


def test_a_file_needing_other_classes_is_one_line(plain, tmp_path):
    """The package's objects are read with an allowlist: a file holding anything else is refused by name."""
    from tabmem.generators import ext_sdv

    gen = plain["sdv_tvae"]
    gen.save(tmp_path / "m.pt")
    payload = torch.load(tmp_path / "m.pt", weights_only=True)
    payload["state"]["package"] = ext_sdv._pack({"transformer": gen.model_.transformer, "x": fractions.Fraction(1, 3)})
    torch.save(payload, tmp_path / "bad.pt")
    with pytest.raises(
        TabmemError, match=r"sdv_tvae: cannot read the ctgan package's objects.*fractions.Fraction"
    ) as e:
        load_generator(tmp_path / "bad.pt")
    assert "\n" not in str(e.value)


@pytest.mark.parametrize("name", MODELS)
def test_resume_is_refused_in_one_line(name, plain, train, tmp_path):
    plain[name].save_checkpoint(tmp_path / "ck.pt")
    with pytest.raises(TabmemError, match=rf"{name}: resume is not supported") as e:
        get_generator(name, preset="tiny", random_state=0, batch_size=100).fit(train, resume_from=tmp_path / "ck.pt")
    assert "\n" not in str(e.value)


@pytest.mark.parametrize(
    ("params", "match"),
    [({"batch_size": 101}, "batch_size must be even"), ({"batch_size": 50, "pac": 20}, "multiple of pac"),
     ({"generator_dim": []}, "generator_dim"), ({"embedding_dim": 0}, "embedding_dim")],
)  # fmt: skip
def test_bad_parameters_are_one_line(params, match, train):
    with pytest.raises(TabmemError, match=match):
        get_generator("sdv_ctgan", preset="tiny", **params).fit(train)


def test_early_stop_ends_the_packages_fit(train):
    gen = _fit("sdv_ctgan", train, callbacks=[LambdaCallback(on_epoch_end=lambda g, e, logs: e == 2)])
    assert gen.epoch_ == 2 and gen.stopped_early_ and gen._worker is None


# ------------------------------------------------------------------ the commands
TINY_CLI = ["--preset", "tiny", "--epochs", 2, "--threads", 1]


def test_cli_train_tracked_sample_and_resume_refused(tmp_path, capsys):
    out = tmp_path / "run"
    args = ["train", "--dataset", "diabetes", "--model", "sdv_ctgan", *TINY_CLI, "--param", "batch_size=100"]
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
    assert code != 0 and "sdv_ctgan: resume is not supported" in lines[-1] and "Traceback" not in text


def test_cli_dynamiccut_smoke(tmp_path, capsys):
    args = ["dynamiccut", "--dataset", "diabetes", "--model", "sdv_tvae", *TINY_CLI, "--warmup-epochs", 1]
    code, text = run([*args, "--track-every", 1, "--out", tmp_path], capsys)
    assert code == 0, text
    assert (tmp_path / "summary.json").is_file() and (tmp_path / "ranking.csv").is_file()


def test_cli_attack_with_sdv_ctgan_shadows_smoke(tmp_path, capsys, train):
    df = train.sample(frac=1.0, random_state=0).reset_index(drop=True)
    files = {}
    for name, part in {"mem": df.iloc[:40], "non": df.iloc[40:80], "pop": df.iloc[80:200]}.items():
        files[name] = tmp_path / f"{name}.csv"
        part.to_csv(files[name], index=False)
    files["syn"] = tmp_path / "syn.csv"
    df.iloc[:40].to_csv(files["syn"], index=False)  # a released table that copies its members
    args = ["attack", "--members", files["mem"], "--non-members", files["non"], "--synthetic", files["syn"]]
    args += ["--population", files["pop"], "--attacks", "dcr,groundhog", "--model", "sdv_ctgan", *TINY_CLI]
    args += ["--param", "batch_size=20", "--n-shadows", 4, "--n-bootstrap", 0]
    code, text = run([*args, "--categorical", "sex", "--out", tmp_path / "att"], capsys)
    assert code == 0, text
    assert set(pd.read_csv(tmp_path / "att" / "roc.csv")["attack"]) >= {"dcr", "groundhog"}


def test_study_generators_axis(tmp_path, capsys):
    study = tmp_path / "study.toml"
    study.write_text(
        '[study]\nname = "sdv"\nsteps = ["train", "sample", "audit"]\nseeds = [0]\nthreads = 1\n'
        '[[datasets]]\nname = "diabetes"\n'
        '[[generators]]\nname = "sdv_tvae"\npreset = "tiny"\nepochs = 1\nlabel = "sdv-tvae"\n'
        "[train]\nholdout = false\n"
    )
    code, text = run(["run", study, "--out", tmp_path / "out"], capsys)
    assert code == 0, text
    results = pd.read_parquet(tmp_path / "out" / "results.parquet")
    assert set(results["generator"]) == {"sdv-tvae"} and results["value"].notna().any()
