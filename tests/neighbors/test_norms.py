"""norm_rows: the plain float64 norm's bits where it neither overflows nor underflows, the true value elsewhere."""

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


@pytest.mark.parametrize("scale", [2.0**600, 2.0**-600, 2.0**1000, 2.0**-1000])
def test_power_of_two_frames_are_exact(scale: float) -> None:
    d = np.random.default_rng(1).normal(0, 1.0, (200, 6))
    base = norm_rows(d, columns_in_order=True)
    np.testing.assert_array_equal(norm_rows(d * scale, columns_in_order=True), base * scale)
    shift = int(np.log2(scale))
    np.testing.assert_array_equal(norm_rows(d * scale, shift, columns_in_order=True), base)


@pytest.mark.parametrize("magnitude", [1e300, 1e200, 1e-200, 1e-300, 1e-310])
def test_no_overflow_or_underflow(magnitude: float) -> None:
    d = np.random.default_rng(2).uniform(-1, 1, (100, 4)) * magnitude
    ref = np.hypot.reduce(d, axis=1)
    for in_order in (True, False):
        np.testing.assert_allclose(
            norm_rows(d, columns_in_order=in_order), ref, rtol=4e-16 if magnitude > 1e-300 else 1e-6
        )


def test_norm_beyond_the_float64_range_is_inf_only_there() -> None:
    d = np.array([[1.5e308, 1.5e308], [1.5e308, 0.0]])
    out = norm_rows(d)
    assert np.isinf(out[0]) and out[1] == 1.5e308
    assert norm_rows(d, 4)[0] == pytest.approx(np.hypot(1.5e308 / 16, 1.5e308 / 16))
