"""Memorization-aware stopping and checkpoint choice: keep the model from before it memorized.

In a memorizing regime the excess memorization (replica rate of the synthetic rows minus that of
real rows never trained on) grows with the epochs while the quality has long stopped improving.
:class:`MemorizationStopping` is a training callback that reads, at every epoch the
:class:`~tabmem.memorization.tracker.MemorizationTracker` tracks, the tracker's replica result of
its sample and compares it with a **selection holdout**:

* ``excess`` = tracked replica rate - the selection holdout's replica rate, with the percentile
  bootstrap interval of :func:`~tabmem.memorization.uncertainty.proportion_difference_ci`;
* ``shape`` = Column Shapes of the same sample against the training table (cheap quality floor).

An epoch is *eligible* when the upper end of the excess interval is at most ``limit`` and the
Shape is at least ``quality_floor``. Each tracked epoch is saved as a snapshot (a full checkpoint);
the chosen one is the last eligible epoch (``choose="last"``) or the eligible one with the best
Shape (``"best-quality"``). With ``stop=True`` training also ends once ``patience`` tracked epochs
in a row exceed the limit (the excess only grows from there in the regimes measured). When no epoch
is eligible the limit wins over the floor: the callback takes the best Shape among the epochs within
the limit, else the epoch with the lowest upper bound, and says so (``rule_met`` False).

Why a *selection* holdout: the chosen epoch is the one whose measured excess happened to be low,
so the same holdout would judge the result with a downward-biased baseline comparison (selection
bias, "the winner's curse"). Evaluate the chosen model on other unseen rows.

Measuring does not change training: the tracker samples through ``gen.sample`` (private RNG,
states restored), saving a snapshot reads the state only, and the intervals use their own RNG.
With ``path``, the per-epoch table (``selection.csv``) and the snapshots
(``snapshots/epoch=000500.pt``) are written atomically before the run's checkpoint of that
epoch, and a fit resumed from a checkpoint drops what was written after it, as the tracker does.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from tabmem._checks import check_positive_int
from tabmem._io import read_frame, write_frame
from tabmem.callbacks import Callback
from tabmem.callbacks import TrainingRun as TabularGenerator
from tabmem.data.schema import raw_frame
from tabmem.errors import TabmemError
from tabmem.memorization.tracker import MemorizationTracker
from tabmem.memorization.uncertainty import proportion_difference_ci
from tabmem.metrics.shape import Shape

__all__ = ["CHOICES", "SELECTION_COLUMNS", "MemorizationStopping", "choose_epoch", "should_stop"]

CHOICES = ("last", "best-quality")
SELECTION_COLUMNS = [
    "epoch", "memorization_rate", "selection_holdout_rate", "excess", "excess_lo", "excess_hi", "shape",
    "eligible", "stop",
]  # fmt: skip


def _eligible(row: dict[str, Any], limit: float, quality_floor: float | None) -> bool:
    hi = float(row["excess_hi"])
    ok = not math.isnan(hi) and hi <= limit
    return ok and (quality_floor is None or float(row["shape"]) >= quality_floor)


def choose_epoch(
    rows: list[dict[str, Any]], limit: float, quality_floor: float | None = None, choose: str = "last"
) -> tuple[int | None, bool, str]:
    """The rule on a tracked series: ``(epoch, rule_met, reason)``; ``epoch`` is None for no rows.

    ``rows`` hold ``epoch``, ``excess_hi`` (upper end of the excess interval) and ``shape``."""
    if choose not in CHOICES:
        raise TabmemError(f"choose must be one of {', '.join(CHOICES)}, got {choose!r}")
    if not rows:
        return None, False, "no tracked epoch"
    ok = [r for r in rows if _eligible(r, limit, quality_floor)]
    floor = "" if quality_floor is None else f" and Shape >= {quality_floor:g}"
    if ok:
        if choose == "last":
            r = ok[-1]
            return int(r["epoch"]), True, f"last tracked epoch with excess upper bound <= {limit:g}{floor}"
        r = max(ok, key=lambda r: (float(r["shape"]), -int(r["epoch"])))
        return int(r["epoch"]), True, f"best Shape among tracked epochs with excess upper bound <= {limit:g}{floor}"
    under = [r for r in rows if _eligible(r, limit, None)]
    if under:  # the limit is the requirement, the floor is secondary: relax the floor, never the limit
        r = max(under, key=lambda r: (_nan_last(r["shape"], -math.inf), -int(r["epoch"])))
        return (
            int(r["epoch"]),
            False,
            f"no tracked epoch had excess upper bound <= {limit:g}{floor}: the best Shape among those within the limit",
        )
    r = min(rows, key=lambda r: (_nan_last(r["excess_hi"]), int(r["epoch"])))
    return int(r["epoch"]), False, f"no tracked epoch had excess upper bound <= {limit:g}: the lowest upper bound"


def _nan_last(x: Any, value: float = math.inf) -> float:
    x = float(x)
    return value if math.isnan(x) else x


def should_stop(rows: list[dict[str, Any]], limit: float, patience: int = 1) -> bool:
    """True when the last ``patience`` rows all have an excess upper bound above ``limit``."""
    last = rows[-patience:]
    return len(last) == patience and all(float(r["excess_hi"]) > limit for r in last)


class MemorizationStopping(Callback):
    """Choose a checkpoint (and optionally stop) by tracked excess memorization and a Shape floor.

    Parameters
    ----------
    tracker:
        The run's :class:`MemorizationTracker` (also passed to ``fit``; it runs first). Its replica
        result of each tracked sample is reused, never recomputed.
    selection_holdout:
        Real rows never trained on, used only to choose (not to evaluate the result: module docstring).
    limit:
        Largest allowed upper end of the excess interval (a fraction: 0.02 = 2 points).
    quality_floor:
        Smallest allowed Shape of the tracked sample against the training table (None: no floor).
    choose:
        ``"last"`` eligible epoch or ``"best-quality"`` (highest Shape) eligible epoch.
    stop, patience:
        End training after ``patience`` consecutive tracked epochs above the limit.
    path:
        Directory for ``selection.csv`` and ``snapshots/`` (needed to reload the chosen model).
    confidence, n_bootstrap, random_state:
        The excess interval (epoch e uses a stream derived from ``random_state`` and e).
    """

    order = 20  # after the tracker (10), before progress bars (50) and checkpoints (100)

    def __init__(
        self,
        tracker: MemorizationTracker,
        selection_holdout: pd.DataFrame,
        *,
        limit: float,
        quality_floor: float | None = None,
        choose: str = "last",
        stop: bool = False,
        patience: int = 1,
        path: str | Path | None = None,
        confidence: float = 0.95,
        n_bootstrap: int = 1000,
        random_state: int = 0,
    ):
        if not isinstance(tracker, MemorizationTracker):
            raise TabmemError("MemorizationStopping: tracker must be a MemorizationTracker")
        if not isinstance(selection_holdout, pd.DataFrame) or len(selection_holdout) == 0:
            raise TabmemError(
                "MemorizationStopping: selection_holdout must be a non-empty DataFrame of unseen real rows"
            )
        if not isinstance(limit, (int, float)) or not -1.0 <= float(limit) <= 1.0:
            raise TabmemError(f"MemorizationStopping: limit must be a fraction in [-1, 1], got {limit!r}")
        if quality_floor is not None and not 0.0 <= float(quality_floor) <= 1.0:
            raise TabmemError(f"MemorizationStopping: quality_floor must be in [0, 1], got {quality_floor!r}")
        if choose not in CHOICES:
            raise TabmemError(f"MemorizationStopping: choose must be one of {', '.join(CHOICES)}, got {choose!r}")
        self.tracker, self.selection_holdout = tracker, selection_holdout
        self.limit = float(limit)
        self.quality_floor = None if quality_floor is None else float(quality_floor)
        self.choose, self.stop = choose, bool(stop)
        self.patience = check_positive_int("MemorizationStopping: patience", patience)
        self.path = Path(path) if path is not None else None
        self.confidence, self.n_bootstrap, self.random_state = float(confidence), int(n_bootstrap), int(random_state)
        self.rows_: list[dict[str, Any]] = []
        self._snapshots: dict[int, Any] = {}  # in memory (no path): epoch -> state of the generator
        self._held: Any = None
        self.stopped_epoch_: int | None = None

    # ------------------------------------------------------------------ hooks
    def on_fit_start(self, gen: TabularGenerator) -> None:
        if not hasattr(self.tracker, "detector_"):
            raise TabmemError("MemorizationStopping: pass its tracker to fit too (it must run first)")
        self.tracker.keep_last_sample = True  # the Shape floor reads the tracked sample
        held = self.tracker.detector_.score(self.selection_holdout, name="selection holdout", unseen="mismatch")
        self._k_h, self._n_h = int(held.table["is_replica"].sum()), int(held.n_synthetic)
        self._real = raw_frame(gen.training_table_)
        self._schema = gen.training_table_.schema
        start = int(gen.epoch_)
        self.rows_ = [r for r in self._read_rows() if int(r["epoch"]) <= start] if start else []
        self._drop_snapshots_after(start)
        self._write_rows()
        self.stopped_epoch_ = None
        if start and self.rows_ and bool(self.rows_[-1]["stop"]) and int(self.rows_[-1]["epoch"]) == start:
            self.stopped_epoch_ = start  # a resumed run that had stopped here trains no further
            self._held, gen.epochs = gen.epochs, start  # type: ignore[attr-defined]

    def on_epoch_end(self, gen: TabularGenerator, epoch: int, logs: dict[str, Any]) -> bool | None:
        tracked = self.tracker.epochs_
        if not tracked or int(tracked[-1]["epoch"]) != int(epoch) or self.tracker.last_result_ is None:
            return None
        row = self.measure(int(epoch), self.tracker.last_result_, self.tracker.last_sample_)
        self._save_snapshot(gen, int(epoch))
        stop = self.stop and should_stop(self.rows_ + [row], self.limit, self.patience)
        row["stop"] = bool(stop)
        self.rows_.append(row)
        self._write_rows()
        logs["excess_hi"] = row["excess_hi"]
        if stop:
            self.stopped_epoch_ = int(epoch)
        return stop

    def on_fit_end(self, gen: TabularGenerator) -> None:
        if self._held is not None:
            gen.epochs, self._held = self._held, None  # type: ignore[attr-defined]

    # ------------------------------------------------------------------ measuring and choosing
    def measure(self, epoch: int, result: Any, sample: pd.DataFrame | None) -> dict[str, Any]:
        """One row of the per-epoch table from the tracker's replica result and sample of ``epoch``."""
        k, n = int(result.table["is_replica"].sum()), int(result.n_synthetic)
        seed = int(np.random.SeedSequence([self.random_state, epoch]).generate_state(1)[0])
        lo, hi = proportion_difference_ci(
            k, n, self._k_h, self._n_h, n_bootstrap=self.n_bootstrap, confidence=self.confidence, random_state=seed
        )
        shape = Shape().compute(self._real, sample, self._schema) if sample is not None else None
        return {
            "epoch": epoch, "memorization_rate": k / n, "selection_holdout_rate": self._k_h / self._n_h,
            "excess": k / n - self._k_h / self._n_h, "excess_lo": lo, "excess_hi": hi,
            "shape": float("nan") if shape is None else float(shape),
            "eligible": _eligible({"excess_hi": hi, "shape": shape if shape is not None else float("nan")},
                                  self.limit, self.quality_floor),
            "stop": False,
        }  # fmt: skip

    def choice(self) -> tuple[int | None, bool, str]:
        """``(epoch, rule_met, reason)`` over the tracked epochs whose snapshot exists."""
        rows = [r for r in self.rows_ if self._has_snapshot(int(r["epoch"]))]
        return choose_epoch(rows, self.limit, self.quality_floor, self.choose)

    @property
    def history_(self) -> pd.DataFrame:
        """One row per tracked epoch (SELECTION_COLUMNS)."""
        return pd.DataFrame(self.rows_, columns=SELECTION_COLUMNS)

    def snapshot_path(self, epoch: int) -> Path:
        if self.path is None:
            raise TabmemError("MemorizationStopping: snapshots are kept in memory without a path")
        return self.path / "snapshots" / f"epoch={int(epoch):06d}.pt"

    def load_chosen(self, device: str | None = "cpu") -> Any:
        """The generator at the chosen epoch (from its snapshot)."""
        from tabmem.generators import load_generator

        epoch, _, _ = self.choice()
        if epoch is None:
            raise TabmemError("MemorizationStopping: no tracked epoch to choose from")
        if self.path is None:
            return self._snapshots[epoch]
        return load_generator(self.snapshot_path(epoch), device=device)

    def prune_snapshots(self) -> None:
        """Delete every snapshot but the chosen one (after training)."""
        epoch, _, _ = self.choice()
        if self.path is None:
            self._snapshots = {e: s for e, s in self._snapshots.items() if e == epoch}
            return
        for f in (self.path / "snapshots").glob("epoch=*.pt"):
            if int(f.stem.split("=")[1]) != epoch:
                f.unlink()

    # ------------------------------------------------------------------ storage
    def _save_snapshot(self, gen: Any, epoch: int) -> None:
        if self.path is None:
            import copy

            self._snapshots[epoch] = copy.deepcopy(gen)
        else:
            gen.save_checkpoint(self.snapshot_path(epoch))

    def _has_snapshot(self, epoch: int) -> bool:
        return epoch in self._snapshots if self.path is None else self.snapshot_path(epoch).is_file()

    def _drop_snapshots_after(self, start: int) -> None:
        if self.path is None:
            self._snapshots = {e: s for e, s in self._snapshots.items() if start and e <= start}
            return
        folder = self.path / "snapshots"
        folder.mkdir(parents=True, exist_ok=True)
        for f in folder.glob("epoch=*.pt"):
            if not start or int(f.stem.split("=")[1]) > start:
                f.unlink()

    def _read_rows(self) -> list[dict[str, Any]]:
        if self.path is None:
            return list(self.rows_)
        f = self.path / "selection.csv"
        return read_frame(f).to_dict("records") if f.is_file() else []

    def _write_rows(self) -> None:
        if self.path is not None:
            write_frame(self.path / "selection.csv", self.history_)
