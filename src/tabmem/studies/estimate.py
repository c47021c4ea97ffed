"""The cost model behind ``tabmem run --dry-run``: expected seconds of each step on one thread.

Every estimate is *work x a per-unit cost* measured on the development machine (a 2-core x86 CPU,
one torch/BLAS thread, in CPU seconds so that other users' load does not bias them;
``benchmarks/bench_study_costs.py`` re-measures the constants):

* ``train``: a fixed cost per cell, and per epoch a fixed cost (batching, samplers: it dominates
  on small tables) plus ``n_train x (n_columns / 15)`` rows at the generator's cost per row-epoch
  (per preset; an unknown preset uses its generator's most expensive known one); plus the final
  |train|-row sample and the run's own audit.
* ``sample``: ``n x n_columns`` cells at the generator's sampling cost (per preset).
* ``audit``: per distance, the exact neighbour search of the synthetic and holdout rows: a fixed
  cost per query row plus ``n_train x n_columns`` per query row (BLAS-bound at scale).
* ``attack``: per attack, ``targets x n_synthetic x n_columns`` edit-distance cells for LevAtt; a
  neighbour search of the targets for DCR, MC and density (DOMIAS: two); the bootstrap intervals
  (``n_bootstrap x targets`` per attack).
* ``quality``: per metric, a fixed part plus ``n_train x n_columns`` at its cost (MLE's XGBoost
  grid dominates).

A study's wall time is the sum of its distinct steps (a step shared by several cells counts
once), scheduled longest-first on the parallel jobs; ``--dry-run`` prints both. On a machine
that others also use, wall time is longer than CPU time (docs/studies.md compares estimates with
measured runs). There are no GPU constants (none was available to measure). Generators without
a measured constant (plugins, unmeasured presets) get their generator's most expensive known
cost, or a conservative default.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = [
    "SAMPLE_COST",
    "TRAIN_COST",
    "attack_seconds",
    "audit_seconds",
    "quality_seconds",
    "sample_seconds",
    "search_seconds",
    "train_seconds",
]

#: CPU seconds per row-epoch at 15 columns, one thread: (model, preset) -> cost (bench_study_costs.py)
TRAIN_COST: dict[tuple[str, str | None], float] = {
    ("tabddpm", "small"): 1.0e-4,
    ("tabddpm", "paper"): 8.6e-4,
    ("tabddpm", None): 1.0e-4,
    ("tvae", "small"): 1.1e-4,
    ("tvae", "paper"): 2.0e-4,
    ("tvae", None): 2.0e-4,
    ("ctgan", "small"): 1.6e-4,
    ("ctgan", "paper"): 2.9e-4,
    ("ctgan", None): 2.9e-4,
    ("llm", "tiny"): 2.0e-3,  # interpolated from small (not measured)
    ("llm", "small"): 4.2e-3,
    ("llm", "cpu"): 8.0e-3,  # interpolated from small and realtabformer (not measured)
    ("llm", "realtabformer"): 1.4e-1,
    ("llm", None): 8.0e-3,
}
_DEFAULT_TRAIN_COST = 1.0e-2
#: CPU seconds per epoch whatever the size (batching, samplers, callbacks): dominates on small tables;
#: approximated from the quick studies' timings (diabetes, 353 rows)
EPOCH_COST: dict[str, float] = {"tabddpm": 0.01, "tvae": 0.02, "ctgan": 0.08, "llm": 0.05}
#: fixed CPU seconds of every cell (reading the data, validating it, writing the outputs)
CELL_COST = 2.0
#: CPU seconds per sampled cell (row x column), one thread: (model, preset) -> cost
SAMPLE_COST: dict[tuple[str, str | None], float] = {
    ("tabddpm", "small"): 4.0e-5,
    ("tabddpm", "paper"): 9.6e-3,  # 1,000 timesteps through a 1024-2048-2048-1024 MLP
    ("tabddpm", None): 4.0e-5,
    ("tvae", "small"): 1.0e-6,
    ("tvae", "paper"): 1.2e-6,
    ("ctgan", "small"): 2.0e-6,
    ("ctgan", "paper"): 2.0e-6,
    ("llm", "tiny"): 1.0e-4,
    ("llm", "small"): 1.6e-4,
    ("llm", "cpu"): 5.0e-4,
    ("llm", "realtabformer"): 4.0e-3,
}
_DEFAULT_SAMPLE_COST = 1.0e-4
#: exact neighbour search: seconds per query row (fixed) and per (query row x reference row x column);
#: fitted to 2,000 x 1,000 rows here (3.7e-9 per pair-column) and 32k x 32k rows (BLAS-bound)
ROW_COST = 5.0e-5
PAIR_COST = 3.0e-10
#: one bootstrap resample of the AUC and TPR intervals, per target
BOOTSTRAP_COST = 2.0e-7
#: attacks of ``cost_unit = "edit_distance"`` (LevAtt): seconds per (target x synthetic row x column) of
#: bit-parallel edit distance
LEVATT_COST = 1.1e-8
#: quality metrics: seconds per (training row x column); MLE with the tabsyn grid (36 configurations)
QUALITY_COST = {
    "shape": 2.3e-6,
    "trend": 2.7e-6,
    "mle": 2.3e-4,
    "mmd": 6.1e-6,
    "wasserstein": 4.4e-6,
    "alpha_precision": 7.3e-6,
    "beta_recall": 0.0,
    "c2st": 1.1e-5,
    "dcr_share": 7.3e-6,
}
#: MLE with the "tiny" grid (2 configurations) relative to the tabsyn grid
MLE_TINY_FACTOR = 3 / 37


def _n(cell: Any) -> tuple[float, float]:
    n = float(cell.dataset.n_rows or 10_000)
    return n, float(max(cell.dataset.n_columns, 1))


def _lookup(table: dict[tuple[str, str | None], float], model: str, preset: str | None, default: float) -> float:
    if (model, preset) in table:
        return table[(model, preset)]
    known = [v for (m, _), v in table.items() if m == model]
    return max(known) if known else default


def train_seconds(config: Mapping[str, Any], cell: Any) -> float:
    """``train``: row-epochs x cost, plus the final sample and the run's own audit (module docstring)."""
    n, d = _n(cell)
    model, preset = config["model"], config["preset"]
    epochs = float(config["resolved"].get("epochs") or 1)
    per_epoch = EPOCH_COST.get(model, 0.05) + n * (d / 15.0) * _lookup(TRAIN_COST, model, preset, _DEFAULT_TRAIN_COST)
    fit = CELL_COST + epochs * per_epoch
    n_test = n if config.get("holdout") else 0.0
    return fit + sample_seconds(model, preset, n, d) + search_seconds(n + n_test, n, d)


def sample_seconds(model: str, preset: str | None, n: float, d: float) -> float:
    """Sampling ``n`` rows of ``d`` columns."""
    return n * d * _lookup(SAMPLE_COST, model, preset, _DEFAULT_SAMPLE_COST)


def search_seconds(n_queries: float, n_reference: float, d: float) -> float:
    """The exact nearest-neighbour search of ``n_queries`` rows among ``n_reference`` rows."""
    return n_queries * (ROW_COST + n_reference * d * PAIR_COST)


def audit_seconds(n_distances: int, n_synthetic: float, n_holdout: float, cell: Any) -> float:
    """Exact neighbour searches of the synthetic and holdout rows, once per distance; with a holdout, the
    distance evidence adds a search of the training rows among themselves and the copying test's search."""
    n, d = _n(cell)
    evidence = search_seconds(n + n_synthetic + n_holdout, n, d) if n_holdout > 0 else 0.0
    return n_distances * (search_seconds(n_synthetic + n_holdout, n, d) + evidence)


def attack_seconds(attacks: list[str], n_targets: float, n_synthetic: float, cell: Any, n_bootstrap: int = 0) -> float:
    """Every attack scores every target against the synthetic table, at its class's ``cost_unit`` times
    ``cost_factor`` (DOMIAS fits two densities); the AUC and TPR bootstraps rank the targets
    ``n_bootstrap`` times per attack."""
    from tabmem.attacks import ATTACKS

    _, d = _n(cell)
    total = len(attacks) * n_bootstrap * n_targets * BOOTSTRAP_COST
    for name in attacks:
        cls = ATTACKS[name]  # its cost_unit and cost_factor (tabmem.attacks.base)
        if cls.cost_unit == "edit_distance":
            total += cls.cost_factor * n_targets * n_synthetic * d * LEVATT_COST
        else:
            total += cls.cost_factor * search_seconds(n_targets, n_synthetic, d)
    return total


def quality_seconds(metrics: list[str], cell: Any, mle_grid: str = "tabsyn") -> float:
    """Each metric in proportion to the size of the real table."""
    n, d = _n(cell)
    total = 0.0
    for m in metrics:
        total += 0.2 / (n * d)  # a fixed part per metric (model fits, breakdown tables)
        cost = QUALITY_COST.get(m, 1e-5)
        total += cost * (MLE_TINY_FACTOR if m == "mle" and mle_grid == "tiny" else 1.0)
    return total * n * d
