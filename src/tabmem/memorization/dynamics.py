"""Training dynamics of memorization, record by record (DynamicCut, arXiv 2505.22322).

From the per-epoch records of :class:`~tabmem.memorization.tracker.MemorizationTracker`
(c_e(x_r), Mem-AUC_e(x_r) at tracked epochs e_1 < ... < e_E) this module derives, per training
record (DynamicCut's definitions; the paper's body was not available, so the
event definitions follow its abstract and Toneva et al. 2019's "example forgetting"):

* first-memorization epoch FM(x_r) = min{e : 1_e(x_r) = 1} (NaN when never memorized);
* forgetting events: tracked epochs e_k with 1_{e_{k-1}}(x_r) = 1 and 1_{e_k}(x_r) = 0;
* cumulative memorization: CMC(x_r) = sum_e 1_e(x_r) (and sum_e c_e(x_r));
* Mem-AUC trajectories, their mean over the early tracked epochs (the first ``early_fraction``)
  and over all epochs;

and compares the Top group (top ``q`` of records by final replica count, q = 10% by default;
only records with at least one final replica can be Top) with the rest, as the paper does
(memorized earlier? stronger early Mem-AUC? more forgetting?), with a two-sided Mann-Whitney U
test and two effect sizes: the probability of superiority A = P(X_top > X_rest) + P(tie)/2 and
Cliff's delta = 2A - 1.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence

import numpy as np
import pandas as pd
from scipy import stats

from tabmem._checks import check_positive_int
from tabmem.errors import TabmemError
from tabmem.memorization.store import load_tracking

__all__ = ["TrainingDynamics", "compare_groups", "cliffs_delta"]

# metric name -> (column in per_record(), question it answers)
COMPARED_METRICS: dict[str, str] = {
    "first_memorization_epoch": "memorized earlier? (lower = earlier; records never memorized excluded)",
    "early_mem_auc": "stronger early memorization (mean Mem-AUC over the early tracked epochs)?",
    "mean_mem_auc": "stronger memorization over the whole run?",
    "n_forgetting_events": "more forgetting events (memorized, then not at the next tracked epoch)?",
    "cumulative_memorized_epochs": "memorized at more tracked epochs?",
}


@dataclass
class TrainingDynamics:
    """Dense (tracked epochs x records) matrices of replica counts and Mem-AUC."""

    epochs: np.ndarray  # (E,) tracked epochs, increasing
    counts: np.ndarray  # (E, N) int32 replica counts c_e
    mem_auc: np.ndarray  # (E, N) float64 per-record Mem-AUC_e

    def __post_init__(self) -> None:
        self.epochs = np.asarray(self.epochs, dtype=np.int64)
        if self.counts.shape != self.mem_auc.shape or self.counts.shape[0] != len(self.epochs):
            raise TabmemError(
                f"TrainingDynamics: shapes disagree: epochs {self.epochs.shape}, counts {self.counts.shape}, mem_auc {self.mem_auc.shape}"
            )
        if len(self.epochs) > 1 and np.any(np.diff(self.epochs) <= 0):
            raise TabmemError("TrainingDynamics: tracked epochs must be strictly increasing")

    # --------------------------------------------------------- construction
    @classmethod
    def from_records(cls, records: pd.DataFrame, epochs: Sequence[int], n_train: int) -> TrainingDynamics:
        """From the tracker's long table (epoch, train_row, replica_count, mem_auc; zeros omitted)."""
        epochs = np.array(sorted({int(e) for e in epochs}), dtype=np.int64)
        n_train = int(n_train)
        pos = {e: i for i, e in enumerate(epochs.tolist())}
        counts = np.zeros((len(epochs), n_train), dtype=np.int32)
        auc = np.zeros((len(epochs), n_train), dtype=np.float64)
        if len(records):
            unknown = sorted(set(records["epoch"].astype(int)) - set(pos))
            if unknown:
                raise TabmemError(
                    f"TrainingDynamics: records for epochs {unknown[:5]} that are not in the tracked epochs"
                )
            rows = records["train_row"].to_numpy(dtype=np.int64)
            if rows.min() < 0 or rows.max() >= n_train:
                raise TabmemError(f"TrainingDynamics: train_row outside [0, {n_train})")
            ei = np.array([pos[int(e)] for e in records["epoch"].to_numpy()], dtype=np.int64)
            counts[ei, rows] = records["replica_count"].to_numpy()
            auc[ei, rows] = records["mem_auc"].to_numpy()
        return cls(epochs, counts, auc)

    @classmethod
    def load(cls, path: str | Path) -> TrainingDynamics:
        """From a tracker directory (``MemorizationTracker(path=...)``)."""
        epochs, records, meta = load_tracking(path)
        return cls.from_records(records, epochs["epoch"].astype(int).tolist(), int(meta["n_train"]))

    # ------------------------------------------------------------- per record
    @property
    def n_records(self) -> int:
        return self.counts.shape[1]

    @property
    def indicator(self) -> np.ndarray:
        """1_e(x_r) = [c_e(x_r) > 0], (E, N) bool."""
        return self.counts > 0

    def first_memorization_epoch(self) -> np.ndarray:
        """Epoch of the first tracked memorization per record (NaN if never)."""
        ind = self.indicator
        ever = ind.any(axis=0)
        first = np.argmax(ind, axis=0)
        return (
            np.where(ever, self.epochs[first].astype(float), np.nan)
            if len(self.epochs)
            else np.full(self.n_records, np.nan)
        )

    def forgetting_events(self) -> np.ndarray:
        """Number of memorized -> not memorized transitions between consecutive tracked epochs."""
        ind = self.indicator
        if ind.shape[0] < 2:
            return np.zeros(self.n_records, dtype=np.int64)
        return (ind[:-1] & ~ind[1:]).sum(axis=0).astype(np.int64)

    def cumulative_memorization(self, kind: str = "indicator") -> np.ndarray:
        """(E, N) running sums of 1_e (``kind="indicator"``) or of c_e (``kind="count"``)."""
        if kind == "indicator":
            return np.cumsum(self.indicator, axis=0, dtype=np.int64)
        if kind == "count":
            return np.cumsum(self.counts, axis=0, dtype=np.int64)
        raise TabmemError(f"cumulative_memorization: kind must be 'indicator' or 'count', got {kind!r}")

    def early_slice(self, early_fraction: float) -> slice:
        if not (0 < early_fraction <= 1):
            raise TabmemError(f"early_fraction must be in (0, 1], got {early_fraction!r}")
        return slice(0, max(1, math.ceil(early_fraction * len(self.epochs))))

    def per_record(self, *, early_fraction: float = 0.25, final_counts: np.ndarray | None = None) -> pd.DataFrame:
        """One row per training record with every derived quantity."""
        final = self._final_counts(final_counts)
        E = len(self.epochs)
        early = self.early_slice(early_fraction) if E else slice(0, 0)
        with np.errstate(invalid="ignore"):
            return pd.DataFrame(
                {
                    "train_row": np.arange(self.n_records),
                    "final_replica_count": final,
                    "first_memorization_epoch": self.first_memorization_epoch(),
                    "n_forgetting_events": self.forgetting_events(),
                    "cumulative_memorized_epochs": self.indicator.sum(axis=0).astype(np.int64),
                    "cumulative_replica_count": self.counts.sum(axis=0, dtype=np.int64),
                    "early_mem_auc": self.mem_auc[early].mean(axis=0) if E else np.full(self.n_records, np.nan),
                    "mean_mem_auc": self.mem_auc.mean(axis=0) if E else np.full(self.n_records, np.nan),
                    "peak_mem_auc": self.mem_auc.max(axis=0) if E else np.full(self.n_records, np.nan),
                }
            )

    def intensity_score(self, k: int = 1, max_epoch: int | None = None) -> np.ndarray:
        """Per-record epoch-wise memorization intensity: mean of the ``k`` largest Mem-AUC_e values
        over tracked epochs <= ``max_epoch`` (the warm-up window).

        The ranking DynamicCut prunes by ("ranks real samples by their epoch-wise memorization
        intensity"; k and the window are not published, so both are parameters)."""
        check_positive_int("intensity_score: k", k)
        rows = np.ones(len(self.epochs), dtype=bool) if max_epoch is None else self.epochs <= max_epoch
        if not rows.any():
            raise TabmemError(f"intensity_score: no tracked epoch <= {max_epoch} (tracked: {self.epochs.tolist()})")
        window = self.mem_auc[rows]
        k = min(int(k), window.shape[0])
        top = np.partition(window, window.shape[0] - k, axis=0)[window.shape[0] - k :]
        return top.mean(axis=0)

    def _final_counts(self, final_counts: np.ndarray | None) -> np.ndarray:
        if final_counts is None:
            if not len(self.epochs):
                raise TabmemError("TrainingDynamics: no tracked epoch (pass final_counts)")
            return self.counts[-1].astype(np.int64)
        final = np.asarray(final_counts)
        if final.shape != (self.n_records,):
            raise TabmemError(f"final_counts must have shape ({self.n_records},), got {final.shape}")
        return final.astype(np.int64)

    def top_mask(self, q: float = 0.10, final_counts: np.ndarray | None = None) -> np.ndarray:
        """Top group: the ceil(q N) records with the largest final replica counts, among records with >= 1.

        Ties at the boundary are broken by cumulative replica count, then by row position (stable).
        """
        if not (0 < q < 1):
            raise TabmemError(f"q must be in (0, 1), got {q!r}")
        final = self._final_counts(final_counts)
        k = min(math.ceil(q * self.n_records), int((final > 0).sum()))
        order = np.lexsort((np.arange(self.n_records), -self.counts.sum(axis=0, dtype=np.int64), -final))
        mask = np.zeros(self.n_records, dtype=bool)
        mask[order[:k]] = True
        return mask

    def trajectories(self, q: float = 0.10, final_counts: np.ndarray | None = None) -> pd.DataFrame:
        """Per tracked epoch, Top vs Non-top: mean Mem-AUC, fraction memorized, cumulative fraction ever memorized."""
        top = self.top_mask(q, final_counts)
        ind = self.indicator
        ever = np.maximum.accumulate(ind, axis=0) if len(self.epochs) else ind
        out = {"epoch": self.epochs}
        for name, m in (("top", top), ("nontop", ~top)):
            with np.errstate(invalid="ignore"):
                out[f"{name}_mean_mem_auc"] = (
                    self.mem_auc[:, m].mean(axis=1) if m.any() else np.full(len(self.epochs), np.nan)
                )
                out[f"{name}_frac_memorized"] = ind[:, m].mean(axis=1) if m.any() else np.full(len(self.epochs), np.nan)
                out[f"{name}_frac_ever_memorized"] = (
                    ever[:, m].mean(axis=1) if m.any() else np.full(len(self.epochs), np.nan)
                )
        return pd.DataFrame(out)

    def compare(
        self, q: float = 0.10, *, early_fraction: float = 0.25, final_counts: np.ndarray | None = None
    ) -> dict[str, Any]:
        """Top vs Non-top comparison (the content of ``dynamics.json``)."""
        per = self.per_record(early_fraction=early_fraction, final_counts=final_counts)
        top = self.top_mask(q, final_counts)
        metrics: dict[str, Any] = {}
        for name, question in COMPARED_METRICS.items():
            a = per.loc[top, name].to_numpy(dtype=float)
            b = per.loc[~top, name].to_numpy(dtype=float)
            a, b = a[~np.isnan(a)], b[~np.isnan(b)]
            metrics[name] = {"question": question, **compare_groups(a, b)}
        n_top = int(top.sum())
        early = self.early_slice(early_fraction) if len(self.epochs) else slice(0, 0)
        fm, es, fg = metrics["first_memorization_epoch"], metrics["early_mem_auc"], metrics["n_forgetting_events"]
        return {
            "q": q,
            "early_fraction": early_fraction,
            "early_epochs": self.epochs[early].tolist(),
            "tracked_epochs": self.epochs.tolist(),
            "n_records": self.n_records,
            "n_top": n_top,
            "n_nontop": self.n_records - n_top,
            "n_records_with_final_replica": int((self._final_counts(final_counts) > 0).sum()),
            "frac_top_ever_memorized": _mean_or_nan(self.indicator[:, top].any(axis=0)) if n_top else float("nan"),
            "frac_nontop_ever_memorized": _mean_or_nan(self.indicator[:, ~top].any(axis=0)),
            "metrics": metrics,
            "findings": {
                "top_memorized_earlier": _finding(fm, smaller=True),
                "top_stronger_early_mem_auc": _finding(es, smaller=False),
                "top_more_forgetting": _finding(fg, smaller=False),
            },
        }


def cliffs_delta(a: np.ndarray, b: np.ndarray) -> float:
    """Cliff's delta P(a > b) - P(a < b), from ranks in O((n + m) log(n + m))."""
    a, b = np.asarray(a, float), np.asarray(b, float)
    if not len(a) or not len(b):
        return float("nan")
    bs = np.sort(b)
    greater = np.searchsorted(bs, a, side="left").sum()
    less = (len(bs) - np.searchsorted(bs, a, side="right")).sum()
    return float((greater - less) / (len(a) * len(b)))


def compare_groups(a: np.ndarray, b: np.ndarray) -> dict[str, Any]:
    """Two-sided Mann-Whitney U test of a vs b with the probability of superiority and Cliff's delta."""
    out: dict[str, Any] = {
        "n_top": int(len(a)),
        "n_nontop": int(len(b)),
        "top_mean": _mean_or_nan(a),
        "nontop_mean": _mean_or_nan(b),
        "top_median": float(np.median(a)) if len(a) else float("nan"),
        "nontop_median": float(np.median(b)) if len(b) else float("nan"),
    }
    if len(a) and len(b) and not (np.all(a == a[0]) and np.all(b == a[0])):
        res = stats.mannwhitneyu(a, b, alternative="two-sided", method="asymptotic")
        u = float(res.statistic)
        out.update(
            mannwhitney_u=u,
            p_value=float(res.pvalue),
            prob_superiority=u / (len(a) * len(b)),
            cliffs_delta=cliffs_delta(a, b),
        )
    else:
        out.update(
            mannwhitney_u=float("nan"), p_value=float("nan"), prob_superiority=float("nan"), cliffs_delta=float("nan")
        )
    return out


def _mean_or_nan(x: np.ndarray) -> float:
    return float(np.mean(x)) if len(x) else float("nan")


def _finding(m: dict[str, Any], *, smaller: bool, alpha: float = 0.05) -> dict[str, Any]:
    d = m["cliffs_delta"]
    if not np.isfinite(d):
        return {"holds": None, "cliffs_delta": None, "p_value": None}
    holds = bool((d < 0 if smaller else d > 0) and m["p_value"] < alpha)
    return {"holds": holds, "cliffs_delta": d, "p_value": m["p_value"]}
