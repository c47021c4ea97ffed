"""Shadow generators: plans, reproducibility by seed, resume, executors (local and Ray), and one-line errors."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from tabmem.attacks.shadows import row_keys
from tabmem.data.schema import Schema, concat_validated, validate
from tabmem.errors import ParameterError, TabmemError
from tabmem.runs.shadows import MIN_SHADOWS, load_shadows, plan_shadows, train_shadows

pytest.importorskip("torch")


def _table(n: int, seed: int) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    return pd.DataFrame(
        {
            "a": np.round(rng.normal(0, 1, n), 3),
            "b": np.round(rng.exponential(2, n), 3),
            "c": rng.choice(["x", "y", "z"], n),
        }
    )


@pytest.fixture(scope="module")
def data():
    members, non_members, population = _table(30, 0), _table(30, 1), _table(80, 2)
    schema = Schema.infer(members, categorical=["c"])
    targets = concat_validated(
        [validate(members, schema, name="members"), validate(non_members, schema, name="non-members")],
        name="targets",
    )
    return targets, population, schema


def _train(data, out, **kw):
    targets, population, schema = data
    opts = {
        "model": "tabddpm",
        "preset": "small",
        "params": {"epochs": 2, "batch_size": 16},
        "n_shadows": 4,
        "n_train": 40,
        "n_synthetic": 25,
        "seed": 3,
        **kw,
    }
    return train_shadows(targets, population, schema, out, **opts)


def test_online_plan_complementary_pairs_prefix_stable():
    plan = plan_shadows(60, 100, n_shadows=6, n_train=50, random_state=1)
    m = plan.membership(60)
    assert (m.sum(axis=0) == 3).all()  # every target in exactly half of the shadows
    for j in range(3):
        assert not (m[2 * j] & m[2 * j + 1]).any() and (m[2 * j] | m[2 * j + 1]).all()
    assert all(t.size + p.size == 50 for t, p in zip(plan.targets, plan.population))
    assert all(np.unique(p).size == p.size for p in plan.population)
    short = plan_shadows(60, 100, n_shadows=4, n_train=50, random_state=1)
    for a, b in zip(short.targets + short.population, plan.targets[:4] + plan.population[:4]):
        np.testing.assert_array_equal(a, b)  # asking for more shadows keeps the first ones
    odd = plan_shadows(60, 100, n_shadows=5, n_train=50, random_state=1)
    np.testing.assert_array_equal(odd.targets[4], plan.targets[4])


def test_offline_plan_holds_no_target():
    plan = plan_shadows(60, 100, n_shadows=4, n_train=50, design="offline", random_state=0)
    assert not plan.membership(60).any() and all(p.size == 50 for p in plan.population)


@pytest.mark.parametrize(
    "kw, match",
    [
        ({"n_shadows": MIN_SHADOWS - 1}, "at least 4"),
        ({"n_train": 20}, "half of the 60 targets"),
        ({"n_train": 200}, "population has 100 rows"),
        ({"design": "offline", "n_train": 101}, "population rows only"),
        ({"design": "both"}, "design"),
    ],
)
def test_plan_errors_name_what_is_too_small(kw, match):
    opts = {"n_shadows": 4, "n_train": 50, **kw}
    with pytest.raises(ParameterError, match=match):
        plan_shadows(60, 100, **opts)


def test_shadows_reproducible_by_seed_and_resumable(data, tmp_path):
    a = _train(data, tmp_path / "a")
    assert a.n_shadows == 4 and a.membership.sum(axis=0).tolist() == [2] * 60
    assert all(len(t) == 25 for t in a.synthetic)
    other = plan_shadows(60, 80, n_shadows=4, n_train=40, random_state=4)
    assert not np.array_equal(other.membership(60), a.membership)  # another seed, other shadows
    # interrupted after the first shadow, then resumed: the same tables as the uninterrupted run
    calls = []

    def stop(line: str) -> None:
        calls.append(line)
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        _train(data, tmp_path / "d", progress=stop)
    assert (tmp_path / "d" / "000" / "done.json").is_file() and not (tmp_path / "d" / "001" / "done.json").exists()
    with pytest.raises(TabmemError, match="not finished"):
        load_shadows(tmp_path / "d")
    d = _train(data, tmp_path / "d")
    for x, y in zip(a.synthetic, d.synthetic):
        pd.testing.assert_frame_equal(x, y)
    # a finished directory is reused as is, and loads back identically
    mtime = (tmp_path / "a" / "002" / "synthetic.parquet").stat().st_mtime_ns
    again = _train(data, tmp_path / "a")
    assert (tmp_path / "a" / "002" / "synthetic.parquet").stat().st_mtime_ns == mtime
    np.testing.assert_array_equal(again.membership, a.membership)
    assert a.meta["model"] == "tabddpm" and a.meta["n_shadows"] == 4


def test_settings_change_in_existing_directory_is_refused(data, tmp_path):
    _train(data, tmp_path / "s", n_shadows=4)
    with pytest.raises(TabmemError, match="seed differ"):
        _train(data, tmp_path / "s", seed=9)


def test_population_overlapping_targets(data, tmp_path):
    targets, population, schema = data
    clash = pd.concat([population, targets.source.iloc[[3, 40]]], ignore_index=True)
    with pytest.raises(
        TabmemError, match=r"population: 2 row\(s\) equal a target row.*first population rows \[80, 81\]"
    ):
        train_shadows(targets, clash, schema, tmp_path / "o", n_shadows=4, n_train=40, n_synthetic=10)
    sh = _train((targets, clash, schema), tmp_path / "o2", overlap="drop")
    assert sh.meta["n_population_dropped"] == 2
    keys = row_keys(targets)
    assert np.array_equal(sh.target_keys, keys)


@pytest.mark.parametrize(
    "kw, match",
    [
        ({"model": "nope"}, "unknown generator 'nope'"),
        ({"preset": "huge"}, "unknown preset 'huge'"),
        ({"params": {"epochs": 0}}, "epochs must be a positive integer"),
        ({"params": {"no_such_param": 1}}, "unknown parameter"),
    ],
)
def test_generator_that_cannot_be_built(data, tmp_path, kw, match):
    with pytest.raises(TabmemError, match=match) as err:
        _train(data, tmp_path / "g", **kw)
    assert "\n" not in str(err.value)
    assert not (tmp_path / "g" / "000").exists()  # nothing was started


def test_ray_trains_the_local_shadows_byte_for_byte(data, tmp_path):
    """A local Ray instance (the pool's) trains exactly the in-process shadows: same files, same bytes."""
    ray = pytest.importorskip("ray")
    a = _train(data, tmp_path / "local")
    b = _train(data, tmp_path / "ray", executor="ray", jobs=2)
    assert not ray.is_initialized()  # the instance the pool started is shut down
    for x, y in zip(a.synthetic, b.synthetic):
        pd.testing.assert_frame_equal(x, y)
    for i in range(4):
        name = f"{i:03d}/synthetic.parquet"
        assert (tmp_path / "local" / name).read_bytes() == (tmp_path / "ray" / name).read_bytes()
    assert (tmp_path / "local" / "plan.json").read_bytes() == (tmp_path / "ray" / "plan.json").read_bytes()


@pytest.mark.slow
def test_spawned_workers_give_the_same_tables(data, tmp_path):
    """Two spawned local workers train exactly the in-process shadows."""
    a = _train(data, tmp_path / "inline")
    b = _train(data, tmp_path / "pool", jobs=2)
    for x, y in zip(a.synthetic, b.synthetic):
        pd.testing.assert_frame_equal(x, y)


def test_a_failing_shadow_is_one_line_naming_it_and_the_others_are_kept(data, tmp_path, monkeypatch):
    import tabmem.runs.shadows as shadows

    train = shadows.train_shadow

    def flaky(task):
        if task["index"] == 2:
            raise ValueError("boom\ntraceback lines")
        return train(task)

    monkeypatch.setattr(shadows, "train_shadow", flaky)  # jobs=1 runs in this process
    with pytest.raises(TabmemError) as err:
        _train(data, tmp_path / "f")
    assert str(err.value) == (
        "1 shadow(s) failed; shadow 2: ValueError: boom (finished shadows are kept: rerun to resume)"
    )
    assert [(tmp_path / "f" / f"{i:03d}" / "done.json").is_file() for i in range(4)] == [True, True, False, True]
    monkeypatch.setattr(shadows, "train_shadow", train)
    assert _train(data, tmp_path / "f").n_shadows == 4  # the rerun trains the failed one only


def test_executor_and_address_are_checked_before_anything_runs(data, tmp_path):
    with pytest.raises(ParameterError, match="executor"):
        _train(data, tmp_path / "e", executor="dask")
    with pytest.raises(ParameterError, match="address applies to executor='ray'"):
        _train(data, tmp_path / "e", address="auto")
    assert not (tmp_path / "e").exists()
