"""One call that runs several attacks on (members, non-members, synthetic[, reference]) and evaluates them.

This is what ``tabmem attack`` does; the CLI only reads files and writes the results.
Targets are the members followed by the non-members (``target_row`` = position in that order).
Shadow-model attacks (``needs_shadows``) run when a :class:`~tabmem.attacks.shadows.ShadowSet`
is given (:func:`tabmem.runs.attack.attack_to_dir` trains one); every attack's summary carries,
next to AUC and TPR@FPR, the auditor's numbers of :func:`tabmem.attacks.auditing.membership_audit`
(MIDST and conservative TPR at FPR 0.1 and 0.01, ``min_resolved_fpr``, the ε lower bound).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Sequence

import numpy as np
import pandas as pd
from sklearn.metrics import roc_curve

from tabmem._io import write_frame, write_json
from tabmem.attacks.auditing import membership_audit
from tabmem.attacks.base import ATTACKS, check_attack_names, get_attack
from tabmem.attacks.evaluation import (
    MembershipResult,
    degenerate_warnings,
    evaluate_membership,
    original_threshold,
    rank_infinite,
)
from tabmem.attacks.shadows import ShadowSet
from tabmem.attacks.summary import AttackMeta, AttackRecord, AttackSummary
from tabmem.data.schema import Schema, ValidatedTable, concat_validated, validate
from tabmem.errors import TabmemError, name_setting, suggest

DEFAULT_ATTACKS: tuple[str, ...] = ("levatt", "dcr", "mc", "density", "domias")


@dataclass
class AttackReport:
    """Per-attack metrics and the per-record score table (``target_row``, ``is_member``, one column per attack)."""

    results: dict[str, MembershipResult]
    scores: pd.DataFrame
    n_overlap: int
    skipped: dict[str, str]
    config: dict[str, Any] = field(default_factory=dict)
    schema: Schema | None = None
    warnings: list[str] = field(default_factory=list)
    audit: dict[str, dict[str, Any]] = field(default_factory=dict)

    def risk(self) -> pd.DataFrame:
        """Per-record risk table joining all attacks (ranks, best rank first); see :func:`tabmem.attacks.compare.risk_table`."""
        from tabmem.attacks.compare import risk_table

        attack_cols = [c for c in self.scores.columns if c not in ("target_row", "is_member")]
        return risk_table(self.scores[attack_cols], self.scores["is_member"].to_numpy())

    def roc(self) -> pd.DataFrame:
        """Every attack's ROC curve as one long table: ``attack``, ``fpr``, ``tpr``, ``threshold``.

        Only the corners are kept (scikit-learn's ``drop_intermediate=True``): the points dropped
        lie on the straight segments between those kept, so the curve, the AUC and every
        interpolated TPR@FPR are unchanged.
        """
        y = self.scores["is_member"].to_numpy(dtype=bool)
        parts = []
        for name in self.results:
            raw = self.scores[name].to_numpy(np.float64)
            finite = raw if np.isfinite(raw).all() else rank_infinite(raw)  # same order, finite stand-ins
            fpr, tpr, thr = roc_curve(y, finite, drop_intermediate=True)
            if finite is not raw:  # thresholds back in the scores' units (a stand-in is its infinity)
                thr = np.array([original_threshold(float(t), raw) for t in thr])
            parts.append(pd.DataFrame({"attack": name, "fpr": fpr, "tpr": tpr, "threshold": thr}))
        if not parts:
            return pd.DataFrame({"attack": pd.Series(dtype=str), "fpr": [], "tpr": [], "threshold": []})
        return pd.concat(parts, ignore_index=True)

    def summary(self) -> AttackSummary:
        """The :class:`~tabmem.attacks.summary.AttackSummary`: per-attack records (AUC, TPR@FPR, the auditor's
        numbers) and the run's metadata (sizes, overlap, skipped attacks); ``.to_dict()`` is ``summary.json``."""
        records = {
            name: AttackRecord.from_dict({**r.to_dict(), **self.audit.get(name, {})})
            for name, r in self.results.items()
        }
        any_r = next(iter(self.results.values()), None)
        meta = AttackMeta(
            n_members=any_r.n_members if any_r else None,
            n_non_members=any_r.n_non_members if any_r else None,
            n_member_rows_also_in_non_members=self.n_overlap,
            min_resolved_fpr=any_r.min_resolved_fpr if any_r else None,
            skipped=self.skipped,
            warnings=list(self.warnings),
            target_row="position in members followed by non-members",
            config=self.config,
            schema=self.schema.to_dict() if self.schema is not None else None,
        )
        return AttackSummary(attacks=records, meta=meta)

    def save(self, out_dir: str | Path) -> AttackSummary:
        """Write the ``tabmem attack`` layout into ``out_dir`` (summary.json, scores.csv, risk.csv, roc.csv); returns the summary."""
        out = Path(out_dir)
        summary = self.summary()
        write_json(out / "summary.json", summary.to_dict())
        write_frame(out / "scores.csv", self.scores)
        write_frame(out / "risk.csv", self.risk())
        write_frame(out / "roc.csv", self.roc())
        return summary


def run_attacks(
    members: pd.DataFrame | ValidatedTable,
    non_members: pd.DataFrame | ValidatedTable,
    synthetic: pd.DataFrame | ValidatedTable,
    schema: Schema,
    *,
    reference: pd.DataFrame | ValidatedTable | None = None,
    attacks: Sequence[str] = DEFAULT_ATTACKS,
    attack_params: dict[str, dict[str, Any]] | None = None,
    nan: str = "error",
    extra: str = "error",
    n_bootstrap: int = 200,
    random_state: int = 0,
    shadows: ShadowSet | None = None,
    delta: float = 1e-5,
    confidence: float = 0.95,
) -> AttackReport:
    """Fit every attack on the synthetic table, score members and non-members, evaluate.

    Bad input raises :class:`~tabmem.errors.TabmemError` / ``SchemaError``: tables whose columns
    differ from the schema (``extra="ignore"`` drops unknown columns), empty tables, members
    identical to non-members. ``domias`` without a reference table is skipped (reported in
    ``skipped``) unless it is the only attack asked for; so is an attack that cannot run on these
    tables (its reason in ``skipped``), and so are shadow-model attacks without ``shadows``
    (planned for exactly these targets, members followed by non-members). Fewer than
    :data:`~tabmem.attacks.evaluation.MIN_TARGETS` members or non-members add a warning.
    ``delta`` and ``confidence`` are those of the ε lower bound and the exact intervals.
    """
    attacks = check_attack_names(attacks)
    if nan not in ("error", "match"):
        raise TabmemError(f"nan must be 'error' or 'match', got {nan!r}")
    tables = {"members": members, "non-members": non_members, "synthetic": synthetic}
    if reference is not None:
        tables["reference"] = reference
    # each table is validated once here; the attacks receive the validated tables
    checked = {
        name: validate(t, schema, name=name, nan="match" if nan == "match" else "error", extra=extra)  # type: ignore[arg-type]
        for name, t in tables.items()
    }
    m_keys = _row_keys(checked["members"].data)
    n_keys = _row_keys(checked["non-members"].data)
    n_overlap = int(np.isin(m_keys, n_keys).sum())
    if set(m_keys.tolist()) == set(n_keys.tolist()):
        raise TabmemError(
            "members and non-members hold exactly the same rows: membership cannot be evaluated (pass held-out rows as non-members)"
        )
    targets = concat_validated([checked["members"], checked["non-members"]], name="targets")
    is_member = np.r_[np.ones(len(checked["members"]), bool), np.zeros(len(checked["non-members"]), bool)]
    has_nan = any(t.has_nan for t in checked.values())
    params = attack_params or {}
    scores = pd.DataFrame({"target_row": np.arange(len(targets)), "is_member": is_member})
    results: dict[str, MembershipResult] = {}
    skipped: dict[str, str] = {}
    audit: dict[str, dict[str, Any]] = {}
    for name in attacks:
        kw = dict(params.get(name, {}))
        cls = ATTACKS[name]
        if cls.accepts_nan_policy():
            kw.setdefault("nan", nan)
        if cls.needs_reference and reference is None:
            if len(attacks) == 1:
                raise TabmemError(
                    f"{name} needs a reference table of real non-member rows ({name_setting('reference', '--reference')})"
                )
            skipped[name] = "needs a reference table (--reference)"
            continue
        if cls.needs_shadows and shadows is None:
            if len(attacks) == 1:
                raise TabmemError(
                    f"{name} is a shadow-model attack: it needs shadow generators ({'--population, --model' if suggest('shadows', '--population') == '--population' else 'shadows'})"
                )
            skipped[name] = "needs shadow generators (--population and --model)"
            continue
        if cls.needs_shadows and shadows is not None and shadows.design not in cls.shadow_designs:
            skipped[name] = f"needs {' or '.join(cls.shadow_designs)} shadows (the shadows are {shadows.design})"
            continue
        if not cls.supports_nan and has_nan:
            skipped[name] = f"{name} needs complete rows (missing values present)"
            continue
        attack = get_attack(name, **kw)
        try:
            s = attack.fit(
                checked["synthetic"],
                schema,
                reference=checked.get("reference"),
                shadows=shadows if cls.needs_shadows else None,
            ).score(targets)
        except TabmemError as exc:
            if len(attacks) == 1:
                raise
            skipped[name] = str(exc)
            continue
        scores[name] = s
        results[name] = evaluate_membership(s, is_member, n_bootstrap=n_bootstrap, random_state=random_state)
        audit[name] = membership_audit(s, is_member, delta=delta, confidence=confidence, random_state=random_state)
    config = {
        "attacks": list(attacks),
        "attack_params": {k: {p: _plain(v) for p, v in kw.items()} for k, kw in params.items() if k in attacks},
        "nan": nan,
        "n_bootstrap": int(n_bootstrap),
        "random_state": random_state,
        "delta": delta,
        "confidence": confidence,
    }
    warnings = degenerate_warnings(len(checked["members"]), len(checked["non-members"]))
    return AttackReport(
        results=results,
        scores=scores,
        n_overlap=n_overlap,
        skipped=skipped,
        config=config,
        schema=schema,
        warnings=warnings,
        audit=audit,
    )


def _plain(value: Any) -> Any:
    """A parameter as JSON-ready config (objects such as a serializer instance by their class name)."""
    if value is None or isinstance(value, (bool, int, float, str, list, dict, tuple)):
        return value
    return type(value).__name__


def _row_keys(clean: pd.DataFrame) -> np.ndarray:
    """Hash of every validated row (used only to detect identical member/non-member sets; never printed)."""
    return pd.util.hash_pandas_object(clean, index=False).to_numpy()
