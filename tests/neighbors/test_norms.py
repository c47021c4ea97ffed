"""norm_rows: the plain float64 norm as written, accurate over every difference the value domain allows."""

from __future__ import annotations

import numpy as np
import pytest

from tabmem.neighbors.distances import norm_rows


def plain_in_order(d: np.ndarray) -> np.ndarray:
    total = d[:, 0] * d[:, 0]
    for c in range(1, d.shape[1]):
        total += d[:, c] * d[:, c]
    return np.sqrt(total)


@pytest.mark.parametrize("k", [1, 3, 6, 17])
def test_same_bits_as_the_plain_formula_in_range(k: int) -> None:
    d = np.random.default_rng(k).normal(0, 1e3, (500, k))
    np.testing.assert_array_equal(norm_rows(d, columns_in_order=True), plain_in_order(d))
    np.testing.assert_array_equal(norm_rows(d), np.sqrt(np.einsum("ij,ij->i", d, d)))


# differences of values in the domain (0 or 1e-100 <= |x| <= 1e15): from ~1e-116 to 2e15; scaled by a
# training spread they reach ~1e136 at most. Neither end overflows or underflows when squared.
@pytest.mark.parametrize("magnitude", [2e15, 1e-116, 1e136, 1.0])
def test_accurate_across_the_domain(magnitude: float) -> None:
    d = np.random.default_rng(2).uniform(0.5, 1, (100, 4)) * magnitude
    ref = np.hypot.reduce(d, axis=1)
    for in_order in (True, False):
        np.testing.assert_allclose(norm_rows(d, columns_in_order=in_order), ref, rtol=4e-16)


def test_mixed_tiny_and_large_differences_in_one_row() -> None:
    """A ~1e-116 difference next to a 2e15 one: the large one decides, the tiny one is exact alone."""
    d = np.array([[1e-116, 2e15], [1e-116, 0.0], [3e-116, 4e-116]])
    np.testing.assert_array_equal(norm_rows(d, columns_in_order=True), [2e15, 1e-116, np.hypot(3e-116, 4e-116)])
