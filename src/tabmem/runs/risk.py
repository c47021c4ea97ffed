"""The three WP29 anonymisation risks into a directory (``tabmem risk``, the study's ``risk`` step).

:func:`risk_to_dir` runs :func:`tabmem.risk.evaluate_risk` (singling out, linkability and
inference as anonymeter defines them: each attack on the training rows set against the same
attack on real control rows never trained on, and against a random-guess baseline) and writes::

    DIR/summary.json     the risks with their intervals, the attack / control / baseline rates,
                         the secrets and auxiliary columns used, the defaults chosen and why, the
                         warnings and the schema (:meth:`RiskSummary.to_dict` plus ``schema``)
    DIR/inference.csv    one row per secret column: column, risk, ci_low, ci_high, attack_rate,
                         control_rate, baseline_rate

Rates and counts only, never a record. The directory's writer lock is held throughout
(:class:`~tabmem.runs.protocol.RunDirectory`): a second process writing the same directory stops
with one line, and a directory holding another run type (or another tool's ``summary.json``) is
refused before anything is written. Running again into a risk directory replaces its two files,
as ``tabmem audit`` does.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from tabmem._io import write_frame, write_json
from tabmem.data.schema import Schema
from tabmem.risk import N_ATTACKS, RiskSummary, evaluate_risk
from tabmem.runs.protocol import RISK_RUN, RunDirectory

__all__ = ["INFERENCE_COLUMNS", "RISK_RUN", "RISKS", "inference_frame", "risk_to_dir"]

#: the columns of ``inference.csv``, in order
INFERENCE_COLUMNS = ("column", "risk", "ci_low", "ci_high", "attack_rate", "control_rate", "baseline_rate")
#: the summary's single-estimate risks, in the order they are reported
RISKS = ("singling_out_univariate", "singling_out_multivariate", "linkability")


def risk_to_dir(
    train: pd.DataFrame,
    synthetic: pd.DataFrame,
    control: pd.DataFrame,
    schema: Schema | None,
    out_dir: str | Path,
    *,
    secrets: Sequence[str] | None = None,
    aux: Sequence[Sequence[str]] | None = None,
    n_attacks: int = N_ATTACKS,
    n_neighbors: int = 1,
    n_cols: int = 3,
    confidence: float = 0.95,
    seed: int = 0,
    tolerance: float = 0.05,
    n_jobs: int | None = None,
) -> RiskSummary:
    """Evaluate the three WP29 risks of ``synthetic`` (made from ``train``; ``control``: real rows never
    trained on) into ``out_dir``; returns the :class:`~tabmem.risk.RiskSummary` (what ``summary.json`` holds,
    less the schema).

    ``secrets`` (columns an attacker infers; default: chosen by :func:`~tabmem.risk.evaluate_risk`, see
    ``summary.chosen``), ``aux`` (the two column sets linkability links; default chosen likewise),
    ``n_attacks`` (attacks per risk), ``n_neighbors``, ``n_cols`` (columns of a multivariate
    predicate), ``confidence`` (of the intervals), ``seed``, ``tolerance`` (the relative error of a right
    numerical guess) and ``n_jobs`` (neighbour-search workers) are those of ``evaluate_risk``.
    """
    with RunDirectory(out_dir, RISK_RUN).lock() as run:
        summary = evaluate_risk(
            train,
            synthetic,
            control,
            schema=schema,
            secrets=None if secrets is None else list(secrets),
            aux=None if aux is None else [list(a) for a in aux],
            n_attacks=n_attacks,
            n_neighbors=n_neighbors,
            n_cols=n_cols,
            confidence=confidence,
            seed=seed,
            tolerance=tolerance,
            n_jobs=n_jobs,
        )
        doc = summary.to_dict()
        if schema is not None:
            doc["schema"] = schema.to_dict()
        write_frame(run.path / "inference.csv", inference_frame(doc))
        write_json(run.path / "summary.json", doc)  # last: a finished run has both files
        return summary


def inference_frame(summary: dict[str, Any]) -> pd.DataFrame:
    """The per-column inference breakdown of a risk ``summary.json`` object (the rows of ``inference.csv``)."""
    per_column = (summary.get("inference") or {}).get("per_column") or {}
    rows = []
    for column, est in per_column.items():
        ci = est.get("risk_ci") or (None, None)
        rows.append(
            {
                "column": column,
                "risk": est.get("risk"),
                "ci_low": ci[0],
                "ci_high": ci[1],
                "attack_rate": est.get("attack_rate"),
                "control_rate": est.get("control_rate"),
                "baseline_rate": est.get("baseline_rate"),
            }
        )
    return pd.DataFrame(rows, columns=list(INFERENCE_COLUMNS))
