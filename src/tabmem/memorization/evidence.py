"""Distance evidence with its own null, for ``tabmem audit``: every figure next to the holdout's.

:func:`distance_evidence` adds to an audit (a fitted :class:`ReplicaDetector` and the
:class:`ReplicaResult` of a synthetic table, scored with a holdout) the data-copying test
(:mod:`tabmem.memorization.copying`), authenticity, identical matches and NNDR
(:mod:`tabmem.memorization.authenticity`). It returns a
:class:`~tabmem.memorization.summary.DistanceEvidence`: the new ``summary.json`` keys.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable

import pandas as pd

from tabmem.data.schema import ValidatedTable
from tabmem.memorization.authenticity import authenticity, nndr_summary
from tabmem.memorization.copying import DataCopyingTest
from tabmem.memorization.replicas import ReplicaDetector, ReplicaResult
from tabmem.memorization.selfsearch import nearest_other_distances
from tabmem.memorization.summary import DistanceEvidence

__all__ = ["distance_evidence"]

Table = pd.DataFrame | ValidatedTable


def distance_evidence(
    detector: ReplicaDetector,
    result: ReplicaResult,
    synthetic: Table,
    holdout: Table | None = None,
    *,
    n_cells: int = 10,
    copying_distance: str | None = None,
    random_state: int | None = 0,
    self_search_cache: Path | bool | None = True,
    progress: Callable[[int], None] | None = None,
) -> DistanceEvidence:
    """``data_copying`` (``None`` without a holdout), ``authenticity``, ``identical_matches`` and ``nndr``.

    ``detector`` is fitted on the training table (its validated rows are ``training_table_``);
    ``result`` is its score of ``synthetic`` (with ``holdout``). Pass the tables as
    :meth:`ReplicaDetector.validate` returns them, so that none is validated twice. The
    data-copying test uses the detector's distance unless ``copying_distance`` is given, with
    ``n_cells`` k-means cells (seeded by ``random_state``).

    Authenticity's search of the training table against itself is computed once per training table
    and reused (:mod:`tabmem.memorization.selfsearch`; ``self_search_cache`` is its ``cache_dir``:
    ``True`` = the user cache, ``False`` = memory only); ``progress(n_rows)`` follows that search.
    """
    train = detector.training_table_
    loo = nearest_other_distances(detector.index_, train, cache_dir=self_search_cache, progress=progress)
    parts = {"synthetic": result}
    if result.holdout is not None:
        parts["holdout"] = result.holdout
    out: dict[str, Any] = {"authenticity": {}, "identical_matches": {}, "nndr": {}}
    for name, res in parts.items():
        t = res.table
        auth = authenticity(t["d1"].to_numpy(), t["nn1"].to_numpy(), loo)
        out["authenticity"][f"{name}_closer_share"] = auth["closer_share"]
        out["authenticity"][f"{name}_authenticity"] = auth["authenticity"]
        # the same rows as the audit's exact copies (one hash comparison, in ReplicaDetector.score)
        out["identical_matches"][f"{name}_share"] = res.exact_copy_rate
        out["nndr"][name] = nndr_summary(t["d1"].to_numpy(), t["d2"].to_numpy())
    out["authenticity"]["distance"] = detector.distance
    out["nndr"]["distance"] = detector.distance
    if holdout is None or result.holdout is None or detector.nan != "error":
        out["data_copying"] = None  # needs a holdout, and complete rows (k-means cells)
        return DistanceEvidence.from_dict(out)
    test = DataCopyingTest(
        n_cells=min(n_cells, len(train)),
        distance=copying_distance or detector.distance,
        random_state=random_state,
        n_jobs=detector.n_jobs,
    ).fit(train)
    out["data_copying"] = {
        "distance": copying_distance or detector.distance,
        **test.test(_clean(detector, synthetic, "synthetic"), _clean(detector, holdout, "holdout")).summary(),
    }
    return DistanceEvidence.from_dict(out)


def _clean(detector: ReplicaDetector, table: Table, name: str) -> ValidatedTable:
    """``table`` as validated for the detector (a :class:`ValidatedTable` is used as it is)."""
    if isinstance(table, ValidatedTable):
        return table
    return detector.validate(
        table, name=name, nan="match" if detector.nan != "error" else "error", unseen="mismatch", extra="ignore"
    )
