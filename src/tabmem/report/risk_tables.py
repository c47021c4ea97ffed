"""The report's "Anonymisation risks (WP29)" section: the tables of a ``tabmem risk`` output.

:func:`risk_section` turns a cell's :class:`~tabmem.report.model.Risk` into what
``templates/risk.html.j2`` shows: one table of the three risks (singling out univariate and
multivariate, linkability) and the worst inference, each with its interval and the attack,
control and baseline rates behind it; one table of the inference risk per secret column; the
defaults that were chosen and why; the run's warnings. Numbers as ``summary.json`` holds them.
"""

from __future__ import annotations

from typing import Any

from tabmem.report.model import Cell, Risk
from tabmem.report.readers import finite
from tabmem.report.tables import Table

__all__ = ["RISK_LABELS", "risk_section", "risk_tables"]

RISK_LABELS = {
    "singling_out_univariate": "singling out (univariate)",
    "singling_out_multivariate": "singling out (multivariate)",
    "linkability": "linkability",
}
COLUMNS = ["risk", "value", "interval", "attack rate", "control rate", "baseline rate", "attacks", "successes"]
NUMERIC = [False, True, True, True, True, True, True, True]


def _num(v: Any) -> str:
    f = finite(v)
    return "-" if f is None else f"{f:.3f}"


def _interval(ci: Any) -> str:
    if not isinstance(ci, (list, tuple)) or len(ci) != 2:
        return "-"
    lo, hi = finite(ci[0]), finite(ci[1])
    return "-" if lo is None or hi is None else f"{lo:.3f} to {hi:.3f}"


def _count(v: Any) -> str:
    return f"{v:,}" if isinstance(v, int) and not isinstance(v, bool) else "-"


def _row(label: str, est: dict[str, Any]) -> list[str | tuple[str, str]]:
    return [
        label,
        _num(est.get("risk")),
        _interval(est.get("risk_ci")),
        (_num(est.get("attack_rate")), _interval(est.get("attack_rate_ci"))),
        (_num(est.get("control_rate")), _interval(est.get("control_rate_ci"))),
        (_num(est.get("baseline_rate")), _interval(est.get("baseline_rate_ci"))),
        _count(est.get("n_attacks")),
        _count(est.get("n_success")),
    ]


def risk_tables(risk: Risk) -> list[Table]:
    """The risks table and the per-column inference table (when there is a secret column)."""
    s = risk.summary
    conf = finite(s.get("confidence"))
    level = f"{round(100 * conf)}%" if conf is not None else "the"
    rows = [_row(label, est) for key, label in RISK_LABELS.items() if (est := risk.estimate(key)) is not None]
    worst = (s.get("inference") or {}).get("worst")
    if isinstance(worst, dict) and worst.get("column") is not None:
        rows.append(_row(f"inference (worst: {worst['column']})", worst))
    n_control = s.get("n_control")
    tables = [
        Table(
            COLUMNS,
            rows,
            f"Risk = (attack rate - control rate) / (1 - control rate), with its {level} interval (anonymeter). "
            "Attack rate: the attacks' success on training rows, using the synthetic table; control rate: the same "
            f"attacks on {_count(n_control)} real rows never trained on (what the synthetic table reveals about "
            "anyone); baseline rate: random guessing. An attack no better than the baseline says nothing.",
            NUMERIC,
        )
    ]
    if risk.inference:
        tables.append(
            Table(
                ["secret column", *COLUMNS[1:]],
                [_row(col, est) for col, est in risk.inference.items()],
                "Inference risk per secret column: an attacker who knows the auxiliary columns of a record infers its "
                "secret from the closest synthetic rows.",
                NUMERIC,
            )
        )
    return tables


def risk_section(cell: Cell) -> dict[str, Any] | None:
    """What the template's risk section shows for ``cell`` (None: the cell has no risk output)."""
    risk = cell.risk
    if risk is None:
        return None
    s = risk.summary
    chosen = s.get("chosen") if isinstance(s.get("chosen"), dict) else {}
    aux = s.get("aux") if isinstance(s.get("aux"), list) else []
    secrets = s.get("secrets") if isinstance(s.get("secrets"), list) else []
    facts = [
        f"{_count(s.get('n_train'))} training, {_count(s.get('n_synthetic'))} synthetic and "
        f"{_count(s.get('n_control'))} control rows; {_count(s.get('n_attacks'))} attacks per risk, seed {s.get('seed')}.",
    ]
    if secrets:
        facts.append("Secret columns (inference): " + ", ".join(map(str, secrets)) + ".")
    if len(aux) == 2 and all(isinstance(a, list) for a in aux):
        facts.append(f"Linkability links {', '.join(map(str, aux[0]))} with {', '.join(map(str, aux[1]))}.")
    return {
        "path": risk.path,
        "tables": risk_tables(risk),
        "facts": facts,
        "chosen": [f"{k}: {v}" for k, v in chosen.items()],
        "warnings": [str(w) for w in s.get("warnings") or []],
    }
