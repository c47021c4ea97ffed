"""The density attacks' KDE under a working-memory budget: the same numbers in smaller blocks, and scipy's."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy.stats import gaussian_kde

from tabmem.attacks import density, get_attack
from tabmem.attacks.density import GaussianKDE
from tabmem.data.schema import Schema
from tabmem.neighbors.settings import working_memory


def test_blocks_follow_the_budget_and_leave_the_log_density_unchanged(monkeypatch) -> None:
    rng = np.random.default_rng(0)
    data, points = rng.normal(size=(500, 3)), rng.normal(size=(77, 3)) * 1.5
    kde = GaussianKDE("scott").fit(data)
    free = kde.logpdf(points)
    np.testing.assert_allclose(free, gaussian_kde(data.T).logpdf(points.T), rtol=1e-12)
    sizes: list[int] = []
    real = density.log_sum_exp_rows

    def spy(a):
        sizes.append(a.shape[0])
        return real(a)

    monkeypatch.setattr(density, "log_sum_exp_rows", spy)
    for rows in (1, 7, 40):
        sizes.clear()
        with working_memory(density._CELL_BYTES * 500 * rows):
            assert kde.block_rows() == rows
            got = kde.logpdf(points)
        assert max(sizes) == rows and sum(sizes) == len(points)
        # the same numbers; BLAS picks its kernel by block shape, so the last bits may differ
        np.testing.assert_allclose(got, free, rtol=1e-13, atol=0)
    with working_memory(1):  # below one row: one row a block, never an error
        assert kde.block_rows() == 1
    assert kde.block_rows() == density._BLOCK_CELLS // 500  # no budget: the blocks as before


def test_density_and_domias_scores_do_not_depend_on_the_budget() -> None:
    rng = np.random.default_rng(1)
    schema = Schema(columns=("a", "b", "c"), numerical=("a", "b"), categorical=("c",))

    def table(n: int, shift: float) -> pd.DataFrame:
        return pd.DataFrame(
            {"a": rng.normal(shift, 1, n), "b": rng.gamma(2.0, 1.0, n), "c": rng.choice(["x", "y", "z"], n)}
        )

    syn, ref, targets = table(300, 0.0), table(200, 0.3), table(50, 0.1)
    for name in ("density", "domias"):
        free = get_attack(name).fit(syn, schema, ref).score(targets)
        with working_memory(density._CELL_BYTES * 300 * 3):
            tight = get_attack(name).fit(syn, schema, ref).score(targets)
        np.testing.assert_allclose(tight, free, rtol=1e-13, atol=0)


def test_log_sum_exp_rows_is_scipys_to_the_bit() -> None:
    import scipy
    from scipy.special import logsumexp

    if tuple(int(x) for x in scipy.__version__.split(".")[:2]) < (1, 15):
        pytest.skip("scipy before 1.15 sums differently (no maxima taken out); tabmem keeps the newer arithmetic")
    rng = np.random.default_rng(2)
    a = -0.5 * rng.gamma(2.0, 30.0, size=(60, 301))
    a[3, [5, 77, 200]] = a[3].max() + 1.0  # tied maxima
    a[4] = -3.0  # a whole row of ties
    a[5, 10] = 0.0  # one dominant value: the rest underflow to 0
    a[5, 11:] = -1e4
    a[6, :] = -np.inf
    a[6, 0] = -2.0  # all but one entry impossible
    expected = logsumexp(a, axis=1)
    np.testing.assert_array_equal(density.log_sum_exp_rows(a.copy()), expected)


def test_the_kde_equals_its_scipy_logsumexp_form_to_the_bit() -> None:
    """logpdf equals the former computation (one scipy logsumexp per block) bit for bit, duplicates included."""
    from scipy.special import logsumexp

    rng = np.random.default_rng(3)
    data = np.round(rng.normal(size=(400, 4)), 1)  # coarse values: duplicated rows, tied nearest rows
    points = np.vstack([data[:20], rng.normal(size=(40, 4)) * 3])
    kde = GaussianKDE("silverman").fit(data)
    zq = (points - kde.center_) @ kde.proj_
    q_sq = np.einsum("ij,ij->i", zq, zq)
    d2 = np.maximum(q_sq[:, None] + kde.z_sq_[None, :] - 2.0 * (zq @ kde.z_.T), 0.0)
    np.testing.assert_array_equal(kde.logpdf(points), logsumexp(-0.5 * d2, axis=1) - kde.log_norm_)
