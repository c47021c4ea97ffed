"""Failure class 'damaged': files tabmem wrote, damaged afterwards.

A model file with a missing or unknown entry, a binary ``history.csv`` or tracking table, a
tracker record or a study step record without its fields: each is one line naming the file
(never a ``KeyError``/``TypeError``/``UnicodeDecodeError``), and a study step whose record is
damaged is run again (resuming repairs it).
"""

from __future__ import annotations

from pathlib import Path

from cases_dirs import tracked_run
from corpus_cases import STUDY, study
from corpus_runner import Case, Result

BINARY = bytes(range(256)) * 8


def _damaged_model(change):
    """``model.pt`` in ``tmp``: the corpus' training run's model with ``change(payload)`` applied."""

    def setup(tmp, out) -> None:
        import torch

        tracked_run(tmp, out)
        payload = torch.load(tmp / "rundir" / "model.pt", weights_only=True)
        change(payload)
        torch.save(payload, tmp / "damaged.pt")

    return setup


def _run_with(path: str, data: bytes | str):
    """``rundir``: the corpus' tracked training run with its file ``path`` replaced by ``data``."""

    def setup(tmp, out) -> None:
        tracked_run(tmp, out)
        p = tmp / "rundir" / path
        p.write_bytes(data) if isinstance(data, bytes) else p.write_text(data)

    return setup


def _studied_then_damaged(tmp, out) -> None:
    """The corpus study run once, then every audit step record stripped of its fields."""
    from tabmem.cli import main

    study()(tmp, out)
    try:
        main(["run", str(tmp / "study.toml"), "--jobs", "1", "--out", str(out)])
    except SystemExit as exc:
        assert not exc.code
    records = list(Path(out, "steps", "audit").glob("*/step.json"))
    assert records
    for p in records:
        p.write_text('{"finished": "yesterday"}')


def steps_run_again(r: Result) -> None:
    import json

    records = list(Path(r.out_dir, "steps", "audit").glob("*/step.json"))
    assert records
    for p in records:
        doc = json.loads(p.read_text())
        assert {"name", "key", "seconds"} <= set(doc), doc
    assert list(Path(r.out_dir, "steps", "audit").rglob("summary.json"))


CASES: list[Case] = [
    Case("damaged_model_missing_entry", "4 damaged", ("sample",), "error",
         setup=_damaged_model(lambda p: p.pop("schema")), args=("--model", "{tmp}/damaged.pt"),
         match=r"generator file '.*damaged\.pt' is damaged: it lacks the entry 'schema'", note="KeyError: 'schema'"),
    Case("damaged_model_state_entry", "4 damaged", ("sample",), "error",
         setup=_damaged_model(lambda p: p.update(state={"unknown": 1})), args=("--model", "{tmp}/damaged.pt"),
         match=r"damaged\.pt' is damaged .*the entry '\w+' is missing", note="KeyError: 'model'"),
    Case("damaged_model_unknown_param", "4 damaged", ("sample",), "error",
         setup=_damaged_model(lambda p: p["params"].update(unknown_entry=1)), args=("--model", "{tmp}/damaged.pt"),
         match=r"damaged\.pt' is damaged: its params entry is not valid .*unknown_entry",
         note="TypeError: __init__() got an unexpected keyword argument"),
    Case("damaged_model_encoder", "4 damaged", ("sample",), "error",
         setup=_damaged_model(lambda p: p.update(encoder={"unknown": 1})), args=("--model", "{tmp}/damaged.pt"),
         match=r"damaged\.pt' is damaged", note="KeyError: 'categories'"),
    Case("damaged_history_binary", "4 damaged", ("report",), "error", setup=_run_with("history.csv", BINARY),
         match=r"history\.csv' is damaged", note="pandas ParserError traceback"),
    Case("damaged_trajectories_binary", "4 damaged", ("report",), "error",
         setup=_run_with("trajectories.csv", BINARY), match=r"trajectories\.csv' is damaged",
         note="pandas ParserError traceback"),
    Case("damaged_tracking_epochs_binary", "4 damaged", ("rank",), "error",
         setup=_run_with("tracking/epochs.csv", BINARY), match=r"tracking/epochs\.csv' is damaged",
         note="pandas ParserError traceback"),
    Case("damaged_tracker_record_without_fields", "4 damaged", ("rank",), "error",
         setup=_run_with("tracking/tracker.json", "{}"), match=r"tracker\.json' is damaged: it lacks the field\(s\) n_train",
         note="KeyError: 'n_train'"),
    Case("damaged_dynamics_binary", "4 damaged", ("report",), "error", setup=_run_with("dynamics.json", BINARY),
         match=r"dynamics\.json' is not a readable JSON file \(it is not UTF-8 text"),
    Case("damaged_study_step_record", "4 damaged", ("run",), "ok", setup=_studied_then_damaged, check=steps_run_again,
         time_limit=300, note="KeyError: 'seconds' (traceback)"),
]  # fmt: skip

assert STUDY  # the study the step-record case runs
