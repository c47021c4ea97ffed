"""The density attacks' KDE under a working-memory budget: the same numbers in smaller blocks, and scipy's."""

from __future__ import annotations

import numpy as np
import pandas as pd
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
    real = density.logsumexp

    def spy(a, axis):
        sizes.append(a.shape[0])
        return real(a, axis=axis)

    monkeypatch.setattr(density, "logsumexp", spy)
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
