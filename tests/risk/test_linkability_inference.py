"""Linkability's and inference's neighbours and guesses against a brute-force Gower search."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from tabmem.data.schema import Schema
from tabmem.risk.inference import correct_guesses
from tabmem.risk.linkability import count_links, nearest, random_links

SCHEMA = Schema(("a", "b", "c", "d"), ("a", "b"), ("c", "d"))


def _table(n: int, seed: int) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    return pd.DataFrame(
        {
            "a": rng.normal(size=n).round(2),
            "b": rng.integers(0, 50, n).astype(float),
            "c": rng.choice(list("pqrs"), n),
            "d": rng.choice(list("xy"), n),
        }
    )


def _brute_distances(syn: pd.DataFrame, targets: pd.DataFrame, cols: list[str]) -> np.ndarray:
    """Gower: range-scaled |a - b| clipped at 1 (synthetic ranges) plus mismatches, over the columns."""
    d = np.zeros((len(targets), len(syn)))
    for c in cols:
        s, t = syn[c].to_numpy(), targets[c].to_numpy()
        if c in SCHEMA.numerical:
            rng = s.max() - s.min()
            d += np.minimum(np.abs(t[:, None] - s[None, :]) / (rng if rng > 0 else np.inf), 1.0)
        else:
            d += t[:, None] != s[None, :]
    return d / len(cols)


def _brute_nearest(syn: pd.DataFrame, targets: pd.DataFrame, cols: list[str], k: int) -> np.ndarray:
    """The ``k`` nearest rows by :func:`_brute_distances`, ties to the lower row."""
    return np.argsort(_brute_distances(syn, targets, cols), axis=1, kind="stable")[:, :k]


@pytest.mark.parametrize("cols", [["a", "c"], ["b", "d"], ["a", "b", "c", "d"], ["c"]])
@pytest.mark.parametrize("k", [1, 3])
def test_nearest_equals_brute_force(cols, k):
    syn, targets = _table(300, 1), _table(80, 2)
    ours = nearest(syn, targets, SCHEMA, cols, k, 1)
    d = _brute_distances(syn, targets, cols)
    # the k smallest distances, to rounding (rows at equal distance may differ in the last bit of a sum)
    np.testing.assert_allclose(np.take_along_axis(d, ours, axis=1), np.sort(d, axis=1)[:, :k], atol=1e-12)
    assert (ours == _brute_nearest(syn, targets, cols, k)).mean() > 0.9
    if k == 1 and cols in (["c"], ["b", "d"]):  # repeated rows indexed once: still the lowest tied row
        assert syn[cols].duplicated().any()
        assert (ours == _brute_nearest(syn, targets, cols, k)).all()


def test_count_links_is_the_number_of_targets_with_a_shared_neighbour():
    idx_0 = np.array([[1, 2], [3, 4], [5, 6], [7, 8]])
    idx_1 = np.array([[2, 9], [0, 1], [6, 5], [8, 8]])
    assert count_links(idx_0, idx_1) == 3
    assert count_links(idx_0[:, :1], idx_1[:, :1]) == 0
    brute = sum(bool(set(r0) & set(r1)) for r0, r1 in zip(idx_0.tolist(), idx_1.tolist()))
    assert count_links(idx_0, idx_1) == brute


def test_random_links_are_distinct_rows():
    links = random_links(10, 200, 4, np.random.default_rng(0))
    assert links.shape == (200, 4) and all(len(set(r)) == 4 for r in links.tolist())
    assert links.min() >= 0 and links.max() < 10


def test_inference_guess_rules():
    g = pd.Series([100.0, 100.0, np.nan, 10.0, np.nan])
    s = pd.Series([104.9, 106.0, np.nan, 9.0, 1.0])
    assert correct_guesses(g, s, numerical=True, tolerance=0.05).tolist() == [True, False, True, False, False]
    gc = pd.Series(["x", "y", "<NA>", "x"])
    sc = pd.Series(["x", "x", "<NA>", "<NA>"])
    assert correct_guesses(gc, sc, numerical=False, tolerance=0.05).tolist() == [True, False, True, False]


def test_inference_attack_equals_brute_force_guesses():
    from tabmem.risk.evaluate import _inference

    train, syn, control = _table(200, 3), _table(300, 4), _table(150, 5)
    est = _inference("c", train, syn, control, SCHEMA, n_attacks=120, tolerance=0.05, confidence=0.95, seed=3, n_jobs=1)
    # the attack's targets are the seeded sample; recompute the success count by brute force
    from tabmem.risk.evaluate import _rng, _sample

    rng = _rng(3, "inference:c")
    targets = train.iloc[_sample(len(train), 120, rng)]
    idx = _brute_nearest(syn, targets, ["a", "b", "d"], 1)[:, 0]
    brute = int((syn["c"].to_numpy()[idx] == targets["c"].to_numpy()).sum())
    assert abs(est.n_success - brute) <= 2  # exact ties may pick another row of equal distance
    assert est.n_attacks == 120 and est.n_control_attacks is None
