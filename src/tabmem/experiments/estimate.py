"""The cost model behind ``tabmem run --dry-run``: expected seconds of each step on one thread.

Every estimate is *work x a per-unit cost* measured on the development machine (a shared 2-core
x86 CPU, one torch thread; ``benchmarks/bench_study_costs.py`` re-measures the constants):

* ``train``: ``epochs x n_train x (n_columns / 15)`` row-epochs at the generator's cost per
  row-epoch (per preset; an unknown preset uses its generator's most expensive known one), plus
  the final |train|-row sample and the run's own audit.
* ``sample``: ``n x n_columns`` cells at the generator's sampling cost.
* ``audit``: per distance, ``(n_synthetic + n_holdout) x n_train x n_columns`` pair-columns of the
  exact neighbour search.
* ``attack``: per attack, ``targets x n_synthetic x n_columns`` pair-columns (edit distances for
  LevAtt, vector distances for DCR/MC; density and DOMIAS scale with the same product).
* ``quality``: per metric, ``n_train x n_columns`` at its cost (MLE's XGBoost grid dominates).

A study's wall time is the sum of its distinct steps (a step shared by several cells counts
once) divided by the number of parallel jobs; ``--dry-run`` prints both. The constants are
within a factor of about two on this machine (docs/studies.md compares them with measured
runs); on a GPU, training is typically 10-50x faster. Generators with no measured constant
(plugins) get a conservative default and are marked as such.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = ["TRAIN_COST", "attack_seconds", "audit_seconds", "quality_seconds", "sample_seconds", "train_seconds"]

#: seconds per row-epoch at 15 columns, one thread: (model, preset) -> cost
TRAIN_COST: dict[tuple[str, str | None], float] = {
    ("tabddpm", "small"): 4.0e-4,
    ("tabddpm", "paper"): 2.0e-2,
    ("tabddpm", None): 5.0e-4,
    ("tvae", "small"): 7.5e-4,
    ("tvae", "paper"): 1.5e-3,
    ("tvae", None): 1.5e-3,
    ("ctgan", "small"): 8.5e-4,
    ("ctgan", "paper"): 2.0e-3,
    ("ctgan", None): 2.0e-3,
    ("llm", "tiny"): 4.0e-3,
    ("llm", "small"): 8.0e-3,
    ("llm", "cpu"): 1.5e-2,
    ("llm", "realtabformer"): 2.5e-1,
    ("llm", None): 1.5e-2,
}
_DEFAULT_TRAIN_COST = 2.0e-2
#: seconds per sampled cell (row x column), one thread
SAMPLE_COST: dict[str, float] = {"tabddpm": 2.0e-6, "tvae": 1.0e-6, "ctgan": 1.0e-6, "llm": 3.0e-4}
#: seconds per (query row x reference row x column) of the exact neighbour search
PAIR_COST = 1.5e-9
#: LevAtt: seconds per (target x synthetic row x column) of bit-parallel edit distance
LEVATT_COST = 6.0e-9
#: attacks other than LevAtt, relative to the neighbour search
ATTACK_FACTOR = {"dcr": 1.0, "mc": 1.0, "density": 2.0, "domias": 4.0}
#: quality metrics: seconds per (training row x column)
QUALITY_COST = {
    "shape": 2e-7,
    "trend": 2e-6,
    "mle": 4e-4,
    "mmd": 1e-5,
    "wasserstein": 1e-6,
    "alpha_precision": 5e-6,
    "beta_recall": 0.0,
    "c2st": 2e-5,
    "dcr_share": 5e-6,
}


def _n(cell: Any) -> tuple[float, float]:
    n = float(cell.dataset.n_rows or 10_000)
    return n, float(max(cell.dataset.n_columns, 1))


def _train_cost(model: str, preset: str | None) -> float:
    if (model, preset) in TRAIN_COST:
        return TRAIN_COST[(model, preset)]
    known = [v for (m, _), v in TRAIN_COST.items() if m == model]
    return max(known) if known else _DEFAULT_TRAIN_COST


def train_seconds(config: Mapping[str, Any], cell: Any) -> float:
    """``train``: row-epochs x cost, plus the final sample and the run's own audit (module docstring)."""
    n, d = _n(cell)
    epochs = float(config["resolved"].get("epochs") or 1)
    fit = epochs * n * (d / 15.0) * _train_cost(config["model"], config["preset"])
    n_test = n if config.get("holdout") else 0.0
    return fit + sample_seconds(config["model"], n, d) + (n + n_test) * n * d * PAIR_COST


def sample_seconds(model: str, n: float, d: float) -> float:
    """Sampling ``n`` rows of ``d`` columns."""
    return n * d * SAMPLE_COST.get(model, 1e-5)


def audit_seconds(n_distances: int, n_synthetic: float, n_holdout: float, cell: Any) -> float:
    """Exact neighbour searches of the synthetic and holdout rows, once per distance."""
    n, d = _n(cell)
    return n_distances * (n_synthetic + n_holdout) * n * d * PAIR_COST


def attack_seconds(attacks: list[str], n_targets: float, n_synthetic: float, cell: Any) -> float:
    """Every attack scores every target against the synthetic table."""
    _, d = _n(cell)
    total = 0.0
    for name in attacks:
        unit = LEVATT_COST if name == "levatt" else PAIR_COST * ATTACK_FACTOR.get(name, 2.0)
        total += n_targets * n_synthetic * d * unit
    return total


def quality_seconds(metrics: list[str], cell: Any) -> float:
    """Each metric in proportion to the size of the real table."""
    n, d = _n(cell)
    return sum(QUALITY_COST.get(m, 1e-5) for m in metrics) * n * d
