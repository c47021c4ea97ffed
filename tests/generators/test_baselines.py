"""``noisy_resample``: the positive control copies the stated share of rows and jitters only numerical values."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from tabmem.data.schema import Schema
from tabmem.errors import ParameterError
from tabmem.generators import get_generator, load_generator


@pytest.fixture(scope="module")
def table():
    rng = np.random.default_rng(0)
    n = 400
    df = pd.DataFrame(
        {
            "x": rng.normal(50, 10, n),  # continuous: a jittered value never equals a training value
            "z": rng.uniform(0, 1, n),
            "c": rng.choice(["a", "b", "c"], n),
        }
    )
    return df, Schema.infer(df, categorical=["c"])


def _exact(syn: pd.DataFrame, train: pd.DataFrame) -> np.ndarray:
    """Whether each synthetic row equals a training row (every column; a naive set lookup)."""
    keys = set(map(tuple, train[["x", "z", "c"]].itertuples(index=False)))
    return np.array([tuple(r) in keys for r in syn[["x", "z", "c"]].itertuples(index=False)])


@pytest.mark.parametrize("copy_fraction", [0.0, 0.3, 1.0])
def test_the_share_of_exact_copies_is_copy_fraction(table, copy_fraction):
    df, schema = table
    gen = get_generator("noisy_resample", copy_fraction=copy_fraction, random_state=0).fit(df, schema)
    n = 2000
    syn = gen.sample(n, random_state=1)
    exact = _exact(syn, df)
    # binomial(n, p): 4 standard deviations
    sd = np.sqrt(n * copy_fraction * (1 - copy_fraction))
    assert abs(exact.sum() - n * copy_fraction) <= 4 * sd + 1e-9


def test_jitter_is_gaussian_with_the_stated_scale_on_numerical_columns_only():
    # one category per row: the category of a synthetic row names its source row
    rng = np.random.default_rng(3)
    n = 50
    df = pd.DataFrame({"x": rng.normal(50, 10, n), "z": rng.uniform(0, 1, n), "c": [f"r{i}" for i in range(n)]})
    schema = Schema.infer(df, categorical=["c"])
    noise = 0.25
    gen = get_generator("noisy_resample", copy_fraction=0.0, noise=noise, random_state=0).fit(df, schema)
    syn = gen.sample(5000, random_state=2)
    src = df.set_index("c").loc[syn.c]
    for col in ("x", "z"):
        off = syn[col].to_numpy() - src[col].to_numpy()
        scale = noise * df[col].std(ddof=0)
        assert abs(off.mean()) < 4 * scale / np.sqrt(len(off))
        assert off.std() == pytest.approx(scale, rel=0.05)
        assert (off != 0).all()


def test_same_seed_same_rows_and_save_load_round_trip(table, tmp_path):
    df, schema = table
    gen = get_generator("noisy_resample", random_state=0).fit(df, schema)
    a, b = gen.sample(100, random_state=5), gen.sample(100, random_state=5)
    pd.testing.assert_frame_equal(a, b)
    assert not a.equals(gen.sample(100, random_state=6))
    gen.save(tmp_path / "m.pt")
    pd.testing.assert_frame_equal(load_generator(tmp_path / "m.pt").sample(100, random_state=5), a)


@pytest.mark.parametrize(("param", "value"), [("copy_fraction", 1.5), ("copy_fraction", -0.1), ("noise", -1.0)])
def test_bad_parameters_are_one_line_naming_the_parameter(table, param, value):
    df, schema = table
    with pytest.raises(ParameterError, match=rf"NoisyResample: {param} must be in"):
        get_generator("noisy_resample", **{param: value}).fit(df, schema)
