"""Read output directories into the report model: one function per input kind.

* :func:`read_train_dir`: a ``tabmem train`` run directory;
* :func:`read_audit_dir`, :func:`read_attack_dir`, :func:`read_quality_dir`, :func:`read_risk_dir`:
  the output directories of ``tabmem audit`` / ``attack`` / ``quality`` / ``risk``;
* :func:`read_dynamiccut_dir`: a ``tabmem dynamiccut`` run directory (``summary.json``, the
  tracked warm-up in ``warmup/``);
* :func:`read_cell`: a directory holding any of these, itself or in ``train/``, ``audit/`` (or
  ``audit/<distance>/``), ``attack/``, ``quality/``, ``risk/`` and ``dynamiccut/`` sub-directories
  (a study cell, a ``tabmem demo`` table);
* :func:`read_study_dir`: a ``tabmem run`` study (``manifest.json``: its ``cells`` with their
  ``dir``, ``labels`` (the axes), ``seed``, ``status`` and ``error``; ``versions``; ``study``),
  laid out as ``docs/studies.md`` describes (each cell a directory as above);
* :func:`load_report_data`: any of the above, or a directory of cells or unrelated runs (a
  collection: each sub-directory its own cell). Parts are combined into one cell only when laid out
  as one (the sub-directories above and nothing else).

Every reader returns the same :class:`~tabmem.report.model.ReportData`; numbers are
taken from the files as written, never recomputed from records. A missing optional file (older
outputs without ``roc.csv``, say) becomes a note in the report, not an error.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from tabmem._io import read_frame, read_json
from tabmem.attacks.base import ATTACKS
from tabmem.attacks.summary import is_attack_summary
from tabmem.errors import TabmemError
from tabmem.memorization.replicas import ReplicaDetector
from tabmem.memorization.summary import EXCESS_MEMORIZATION, EXCESS_MEMORIZATION_CI
from tabmem.mitigation.summary import SUMMARY_KEYS as DYNAMICCUT_KEYS
from tabmem.report.model import Attacks, Audit, Cell, DynamicCutRun, Quality, ReportData, Risk, Training

__all__ = [
    "detect_kind",
    "read_train_dir",
    "read_audit_dir",
    "read_attack_dir",
    "read_quality_dir",
    "read_dynamiccut_dir",
    "read_risk_dir",
    "read_cell",
    "read_study_dir",
    "load_report_data",
]

#: sub-directories of a cell that hold one command's outputs
PART_DIRS: dict[str, tuple[str, ...]] = {
    "train": ("train",),
    "audit": ("audit",),
    "attack": ("attack", "attacks"),
    "quality": ("quality",),
    "dynamiccut": ("dynamiccut",),
    "risk": ("risk",),
}
KINDS = ("study", "train", "audit", "attack", "quality", "dynamiccut", "risk")
#: what each kind is, in the report's words
KIND_NAMES = {
    "study": "study",
    "train": "train run",
    "audit": "audit run",
    "attack": "attack run",
    "quality": "quality run",
    "dynamiccut": "DynamicCut run",
    "risk": "risk run",
    "cell": "cell",
    "collection": "collection",
}
#: keys every ``tabmem risk`` summary holds (what tells it from the other summaries)
RISK_KEYS = ("singling_out_univariate", "singling_out_multivariate", "linkability", "inference")


def detect_kind(path: str | Path) -> str | None:
    """Which command wrote ``path`` (``study``, ``train``, ``audit``, ``attack``, ``quality``, ``dynamiccut``,
    ``risk``), or None."""
    p = Path(path)
    if (p / "manifest.json").is_file():
        return "study"
    if not (p / "summary.json").is_file():
        return None
    summary = read_json(p / "summary.json")
    if not isinstance(summary, dict):
        return None
    if is_attack_summary(summary):
        return "attack"
    if "goals" in summary and "shape" in summary:
        return "quality"
    if is_risk_summary(summary):
        return "risk"
    if all(k in summary for k in DYNAMICCUT_KEYS if k != "quality"):  # before train: its config names a model too
        return "dynamiccut"  # ("quality" is left out of the file when the run skipped it, as a study's step does)
    if "memorization_rate" in summary:
        config = _read_optional_json(p / "config.json")
        return "train" if isinstance(config, dict) and "model" in config else "audit"
    return None


# ----------------------------------------------------------------------------- parts
def _audit_part(p: Path, summary: dict[str, Any], notes: list[str]) -> Audit:
    counts = None
    records = p / "records.csv"
    if records.is_file():
        counts = read_frame(records, usecols=["replica_count"])["replica_count"].to_numpy(dtype=np.int64)
    else:
        notes.append(f"{p}: no records.csv, so no per-record replica counts (the heavy-tail plot is left out)")
    if EXCESS_MEMORIZATION in summary and EXCESS_MEMORIZATION_CI not in summary:
        notes.append(f"{p}: summary.json has no bootstrap intervals (written by an older tabmem): re-run to get them")
    return Audit(summary=summary, record_counts=counts, path=str(p))


def read_audit_dir(path: str | Path, notes: list[str] | None = None) -> Audit:
    """A ``tabmem audit`` output directory (``summary.json``, ``records.csv``)."""
    p = Path(path)
    return _audit_part(p, _summary(p), notes if notes is not None else [])


def read_attack_dir(path: str | Path, notes: list[str] | None = None) -> Attacks:
    """A ``tabmem attack`` output directory (``summary.json``, ``roc.csv``, ``scores.csv``)."""
    p = Path(path)
    notes = notes if notes is not None else []
    summary = _summary(p)
    attacks = Attacks(summary=summary, path=str(p))
    names = list(attacks.results)
    if (p / "roc.csv").is_file():
        attacks.roc = read_frame(p / "roc.csv", usecols=["attack", "fpr", "tpr"])
    else:
        notes.append(f"{p}: no roc.csv (written by an older tabmem): the ROC curves are left out")
    wanted = [a for a in distance_attacks() if a in names]
    if wanted and (p / "scores.csv").is_file():
        scores = read_frame(p / "scores.csv", usecols=["is_member", *wanted])
        member = scores["is_member"].astype(bool).to_numpy()
        for name in wanted:
            attacks.distances[name] = pd.DataFrame({"distance": -scores[name].to_numpy(float), "is_member": member})
    return attacks


def distance_attacks() -> dict[str, str]:
    """``{attack: what its distance is}`` for the attacks whose score is minus a distance to the closest
    synthetic row (their classes' ``distance_description``), in registration order."""
    return {a.name: a.distance_description for a in ATTACKS.in_order() if a.distance_description}


def read_quality_dir(path: str | Path, notes: list[str] | None = None) -> Quality:
    """A ``tabmem quality`` output directory (``summary.json``, ``shape_breakdown.csv``)."""
    p = Path(path)
    shape = p / "shape_breakdown.csv"
    breakdown = read_frame(shape, usecols=["column", "metric", "score"]) if shape.is_file() else None
    return Quality(summary=_summary(p), shape_breakdown=breakdown, path=str(p))


def is_risk_summary(summary: Any) -> bool:
    """Whether a parsed ``summary.json`` is one of ``tabmem risk`` (it holds the three risks and the inference)."""
    return isinstance(summary, dict) and all(k in summary for k in RISK_KEYS)


def read_risk_dir(path: str | Path, notes: list[str] | None = None) -> Risk:
    """A ``tabmem risk`` output directory (``summary.json``; its per-column inference is ``inference.csv``'s rows)."""
    p = Path(path)
    summary = _summary(p)
    if not is_risk_summary(summary):
        raise TabmemError(f"{str(p / 'summary.json')!r} is not a tabmem risk summary (it lacks {', '.join(RISK_KEYS)})")
    return Risk(summary=summary, path=str(p))


def read_train_dir(path: str | Path, notes: list[str] | None = None) -> tuple[Training, Audit]:
    """A ``tabmem train`` run directory: the training part and the audit of its final ``synthetic.csv``."""
    p = Path(path)
    notes = notes if notes is not None else []
    config = read_json(p / "config.json")
    training = Training(config=config, path=str(p))
    epochs = p / "tracking" / "epochs.csv"
    if epochs.is_file():
        training.epochs = read_frame(epochs)
    if (p / "history.csv").is_file():
        training.history = read_frame(p / "history.csv")
    if (p / "trajectories.csv").is_file():
        training.trajectories = read_frame(p / "trajectories.csv")
    training.dynamics = _read_optional_json(p / "dynamics.json")
    if training.epochs is None:
        notes.append(f"{p}: trained without tracking (--track-every 0): no memorization-over-epochs plot")
    return training, _audit_part(p, _summary(p), notes)


#: the MLE score of each task (``tabmem.metrics.mle``'s choice), for a DynamicCut summary that records the value only
MLE_SCORE = {"binclass": "auc", "multiclass": "macro_f1", "regression": "rmse"}
#: the d1/d2 threshold of a DynamicCut run's evaluation (``mitigation_report``'s ReplicaDetector default;
#: its summary does not record it)
DYNAMICCUT_THRESHOLD: float = ReplicaDetector().threshold


def read_dynamiccut_dir(
    path: str | Path, notes: list[str] | None = None
) -> tuple[DynamicCutRun, Audit, Training | None, Quality | None]:
    """A ``tabmem dynamiccut`` run directory: the run, the audit of its retrained model's ``synthetic.csv``
    against the original table (its ``summary.json``), the tracked warm-up (``warmup/``) and the quality of the
    retrained model's table (the summary's ``quality`` block), each None where the run has none."""
    p = Path(path)
    notes = notes if notes is not None else []
    summary = _summary(p)
    run = DynamicCutRun(summary=summary, path=str(p))
    audit_summary = {"threshold": DYNAMICCUT_THRESHOLD, **summary}
    audit_summary.pop("quality", None)  # the run's quality block is shown in its before/after table
    audit = Audit(summary=audit_summary, path=str(p))
    warmup = None
    if (p / "warmup").is_dir() and detect_kind(p / "warmup") == "train":
        warmup, _ = read_train_dir(p / "warmup", [])
    return run, audit, warmup, _dynamiccut_quality(summary, p)


def _dynamiccut_quality(summary: dict[str, Any], p: Path) -> Quality | None:
    """The ``quality`` block of a DynamicCut summary as a quality part (Shape, Trend, MLE next to the real rows')."""
    block = summary.get("quality")
    if not isinstance(block, dict):
        return None
    q: dict[str, Any] = {k: block.get(k) for k in ("shape", "trend", "mle")}
    q["skipped"] = block.get("skipped") or {}
    config = _read_optional_json(p / "config.json")
    schema = (config.get("schema") if isinstance(config, dict) else None) or {}
    score = MLE_SCORE.get(str(schema.get("task")))
    if score is not None and block.get("mle") is not None:
        q["details"] = {"mle": {"score": score, "real": {score: block.get("mle_real")}}}
    return Quality(summary=q, path=str(p))


# ----------------------------------------------------------------------------- cells
def read_cell(path: str | Path, *, name: str | None = None, notes: list[str] | None = None) -> Cell:
    """One cell: ``path`` itself (any kind) and its sub-directories.

    ``train/`` (a train run), ``audit/`` or ``audit/<distance>/`` (one audit per distance, the
    layout of a study cell), ``attack/`` and ``quality/``. The cell's primary audit is the first
    explicit audit (by distance name), else the train run's own.
    """
    p = Path(path)
    notes = notes if notes is not None else []
    cell = Cell(name=name or p.name, path=str(p))
    own_audit: Audit | None = None
    own_notes: list[str] = []  # about the train run's own audit: kept only when no explicit audit replaces it
    explicit: list[Audit] = []
    kind = detect_kind(p)
    cell.kind = kind or "cell"
    if kind == "train":
        cell.training, own_audit = read_train_dir(p, own_notes)
    elif kind == "dynamiccut":
        cell.dynamiccut, own_audit, cell.training, cell.quality = read_dynamiccut_dir(p, own_notes)
    elif kind == "audit":
        explicit.append(read_audit_dir(p, notes))
    elif kind == "attack":
        cell.attacks = read_attack_dir(p, notes)
    elif kind == "quality":
        cell.quality = read_quality_dir(p, notes)
    elif kind == "risk":
        cell.risk = read_risk_dir(p, notes)
    if cell.training is None and (p / "train").is_dir() and detect_kind(p / "train") == "train":
        cell.training, own_audit = read_train_dir(p / "train", own_notes)
    audit_dir = p / "audit"
    if audit_dir.is_dir():
        if detect_kind(audit_dir) == "audit":
            explicit.append(read_audit_dir(audit_dir, notes))
        else:
            subs = sorted(d for d in audit_dir.iterdir() if d.is_dir() and detect_kind(d) == "audit")
            explicit.extend(read_audit_dir(d, notes) for d in subs)
    for d in PART_DIRS["attack"]:
        if cell.attacks is None and (p / d).is_dir() and detect_kind(p / d) == "attack":
            cell.attacks = read_attack_dir(p / d, notes)
    if cell.quality is None and (p / "quality").is_dir() and detect_kind(p / "quality") == "quality":
        cell.quality = read_quality_dir(p / "quality", notes)
    dc_dir = p / "dynamiccut"  # a study cell's dynamiccut step: its before/after (the cell's audit/ is its audit)
    if cell.dynamiccut is None and dc_dir.is_dir() and detect_kind(dc_dir) == "dynamiccut":
        cell.dynamiccut = read_dynamiccut_dir(dc_dir, notes)[0]
    if cell.risk is None and (p / "risk").is_dir() and detect_kind(p / "risk") == "risk":
        cell.risk = read_risk_dir(p / "risk", notes)
    notes.extend(n for n in own_notes if not explicit or "records.csv" not in n and "bootstrap" not in n)
    for a in [*explicit, *([own_audit] if own_audit is not None else [])]:
        label = str(a.get("distance") or Path(a.path).name)
        cell.audits.setdefault(label, a)
    cell.audit = next(iter(cell.audits.values()), None)
    config = _read_optional_json(p / "config.json")
    if isinstance(config, dict):
        cell.config = config
    elif cell.training is not None:
        cell.config = cell.training.config
    cell.axes = _axes(cell)
    status = _read_optional_json(p / "status.json")
    if isinstance(status, dict):
        cell.status = str(status.get("status", cell.status))
        cell.error = status.get("error")
    return cell


def _axes(cell: Cell) -> dict[str, Any]:
    """What tells this cell apart: dataset, generator, seed (from its config and summaries)."""
    axes: dict[str, Any] = {}
    cfg = cell.training.config if cell.training is not None else cell.config
    source = cfg.get("source") if isinstance(cfg.get("source"), dict) else {}
    dataset = source.get("dataset") or (cfg.get("schema") or {}).get("name")
    if dataset is None and cell.audit is not None:
        dataset = (cell.audit.get("schema") or {}).get("name")
    if dataset is None and cell.risk is not None:
        dataset = (cell.risk.summary.get("schema") or {}).get("name")
    if dataset:
        axes["dataset"] = dataset
    if cfg.get("model"):
        axes["generator"] = cfg["model"] + (f" ({cfg['preset']})" if cfg.get("preset") else "")
    if "seed" in cfg:
        axes["seed"] = cfg["seed"]
    return axes


def read_study_dir(path: str | Path) -> ReportData:
    """A ``tabmem run`` study directory (``manifest.json``; each cell a run directory)."""
    p = Path(path)
    manifest = read_json(p / "manifest.json")
    if not isinstance(manifest, dict):
        raise TabmemError(f"{str(p / 'manifest.json')!r} is not a study manifest (expected a JSON object)")
    notes: list[str] = []
    cells: list[Cell] = []
    info = manifest.get("study") if isinstance(manifest.get("study"), dict) else {}
    study_axes = set(info.get("axes") or [])
    entries = manifest.get("cells", [])
    if isinstance(entries, dict):
        entries = [{"id": k, **(v if isinstance(v, dict) else {"status": v})} for k, v in entries.items()]
    for entry in entries:
        cid = str(entry.get("id") or entry.get("hash") or entry.get("name"))
        cdir = p / str(entry.get("dir") or entry.get("path") or Path("cells") / cid)
        if not cdir.is_dir():
            cdir = p / cid
        label = str(entry.get("name") or cid)
        cell = read_cell(cdir, name=label, notes=notes) if cdir.is_dir() else Cell(name=label, path=str(cdir))
        axes = entry.get("labels") or entry.get("axes")
        if isinstance(axes, dict) and axes:
            if study_axes:  # the axes the study varies: every label of theirs, "none"/"default" included
                cell.axes = {k: v for k, v in axes.items() if k in study_axes}
            else:  # an older manifest: drop labels that only say "nothing applied"
                cell.axes = {k: v for k, v in axes.items() if v not in (None, "none", "default")}
            if entry.get("seed") is not None:
                cell.axes["seed"] = entry["seed"]
        cell.status = str(entry.get("status", cell.status))
        cell.error = entry.get("error", cell.error)
        if not cdir.is_dir():
            notes.append(f"cell {cid}: run directory {str(cdir)!r} not found")
        cells.append(cell)
    results = p / "results.parquet"
    if results.is_file():
        _apply_results(cells, [str(e.get("id") or e.get("hash") or e.get("name")) for e in entries], results, notes)
    versions = manifest.get("versions") if isinstance(manifest.get("versions"), dict) else {}
    study = {k: v for k, v in manifest.items() if k not in ("cells", "versions")}
    title = str(info.get("name") or manifest.get("name") or p.name)
    return ReportData(
        title=title, source=str(p), kind="study", cells=cells, versions=versions, notes=notes, study=study
    )


AUDIT_INTERVALS = ("memorization_rate", "holdout_memorization_rate", EXCESS_MEMORIZATION)


def _apply_results(cells: list[Cell], ids: list[str], path: Path, notes: list[str]) -> None:
    """Take the study's intervals from ``results.parquet`` (what ``load_results`` returns), so that the
    report and the results table agree: audit rate/excess intervals per distance, attack AUC and
    TPR@FPR intervals and ``min_resolved_fpr`` per attack (the cells' own files give the rest)."""
    cols = ["cell", "step", "component", "metric", "value", "ci_low", "ci_high"]
    try:
        table = pd.read_parquet(path, columns=cols)
    except (ValueError, KeyError, OSError) as exc:  # an older or foreign results table: the cell files still serve
        notes.append(f"{path}: not read ({type(exc).__name__}: {exc}); intervals come from the cells' files")
        return
    for cid, cell in zip(ids, cells):
        rows = table[table["cell"] == cid]
        for r in rows.itertuples(index=False):
            ci = None if pd.isna(r.ci_low) or pd.isna(r.ci_high) else [float(r.ci_low), float(r.ci_high)]
            if r.step == "audit" and r.component in cell.audits and r.metric in AUDIT_INTERVALS and ci:
                cell.audits[r.component].summary[f"{r.metric}_ci"] = ci
            elif r.step == "attack" and cell.attacks is not None and r.component in cell.attacks.summary:
                res = cell.attacks.summary[r.component]
                if r.metric == "auc" and ci:
                    res["auc_ci"] = ci
                elif r.metric.startswith("tpr_at_fpr_") and ci:
                    res.setdefault("tpr_at_fpr_ci", {})[r.metric.removeprefix("tpr_at_fpr_")] = ci
                elif r.metric == "min_resolved_fpr" and not pd.isna(r.value):
                    res["min_resolved_fpr"] = float(r.value)
    filled = {a.path for c in cells for a in c.audits.values() if EXCESS_MEMORIZATION_CI in a.summary}
    notes[:] = [n for n in notes if not ("bootstrap intervals" in n and n.split(": ", 1)[0] in filled)]


def load_report_data(path: str | Path) -> ReportData:
    """Read any supported input (see the module docstring) into a :class:`ReportData`."""
    p = Path(path)
    if not p.exists():
        raise TabmemError(f"DIR: {str(p)!r} does not exist")
    if not p.is_dir():
        raise TabmemError(f"DIR: {str(p)!r} is a file; give the directory a tabmem command wrote")
    kind = detect_kind(p)
    if kind == "study":
        return read_study_dir(p)
    notes: list[str] = []
    children = [child for child in sorted(p.iterdir()) if child.is_dir() and _holds_results(child)]
    parts = _cell_parts(p)
    if kind is not None or (parts and all(c.name in parts for c in children)):
        cell = read_cell(p, notes=notes)  # one run, or parts laid out as one cell (and nothing else beside them)
        axes = ", ".join(f"{k} {v}" for k, v in cell.axes.items() if k != "seed")
        title = f"{p.resolve().name} ({KIND_NAMES[cell.kind]}{'; ' + axes if axes else ''})"
        return ReportData(title=title, source=str(p), kind=cell.kind, cells=[cell], notes=notes)
    cells = [read_cell(child, notes=notes) for child in children]
    if not cells:
        raise TabmemError(
            f"DIR: {str(p)!r} is not a study, a tabmem train run directory, or an audit/attack/quality/risk/"
            "dynamiccut output directory (no manifest.json or summary.json in it or its sub-directories)"
        )
    kinds = dict.fromkeys(KIND_NAMES[c.kind] for c in cells)
    title = f"{p.resolve().name} (a collection of {len(cells)}: {', '.join(kinds)})"
    return ReportData(title=title, source=str(p), kind="collection", cells=cells, notes=notes)


# ----------------------------------------------------------------------------- helpers
def _holds_results(p: Path) -> bool:
    """Whether ``p`` is a cell: a command's output itself or in the sub-directories :func:`read_cell` reads."""
    if detect_kind(p) is not None:
        return True
    subs = [p / d for dirs in PART_DIRS.values() for d in dirs]
    if (p / "audit").is_dir():
        subs += [d for d in (p / "audit").iterdir() if d.is_dir()]
    return any(d.is_dir() and detect_kind(d) is not None for d in subs)


def _cell_parts(p: Path) -> set[str]:
    """The sub-directories of ``p`` that :func:`read_cell` reads as parts of one cell (``train/``, ``audit/``,
    ``audit/<distance>/``, ``attack/``, ``quality/``, ``dynamiccut/``), each holding its own kind."""
    found = set()
    for kind, dirs in PART_DIRS.items():
        for d in dirs:
            q = p / d
            if not q.is_dir():
                continue
            if detect_kind(q) == kind or (kind == "audit" and any(detect_kind(x) == "audit" for x in q.iterdir())):
                found.add(d)
    return found


def _summary(p: Path) -> dict[str, Any]:
    summary = read_json(p / "summary.json")
    if not isinstance(summary, dict):
        raise TabmemError(f"{str(p / 'summary.json')!r} is not a tabmem summary (expected a JSON object)")
    return summary


def _read_optional_json(path: Path) -> Any:
    return read_json(path) if path.is_file() else None


def finite(value: Any) -> float | None:
    """``value`` as a finite float, or None (JSON nulls, NaN, missing)."""
    try:
        v = float(value)
    except (TypeError, ValueError):
        return None
    return v if math.isfinite(v) else None
