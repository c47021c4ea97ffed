"""Corpus cases: identifier columns (a ``patient_id`` kept in the tables) are warned about, never dropped.

The warning names the columns and ``--exclude``; with ``--exclude`` the figures are those of the
table without the ids; measurements and ordinary categoricals are not mistaken for keys.
"""

from __future__ import annotations

import corpus_brute as brute
import numpy as np
from cases_csv import Tables, _brute, _writer
from corpus_runner import Case, Result
from corpus_tables import N_COPIES

ITEM = "10 identifier columns"
WARNING = r"'patient_id' look like identifiers.*--exclude patient_id"


def patient_ids(t: Tables) -> Tables:
    """Training ids 1..n; the synthetic copies carry their training row's id, fresh rows the holdout's."""
    train = t["train"].assign(patient_id=np.arange(1, len(t["train"]) + 1))
    hold = t["holdout"].assign(patient_id=np.arange(10_001, 10_001 + len(t["holdout"])))
    n_fresh = len(t["synthetic"]) - N_COPIES
    syn = t["synthetic"].assign(
        patient_id=np.concatenate([train["patient_id"][:N_COPIES], hold["patient_id"][:n_fresh]])
    )
    return {"train": train[["patient_id", *t["train"].columns]], "synthetic": syn, "holdout": hold}


def record_keys(t: Tables) -> Tables:
    """String keys (R000001, ...) under a key-like name."""
    out = patient_ids(t)
    return {k: v.rename(columns={"patient_id": "record_key"}).assign(
        record_key=[f"R{i:06d}" for i in v["patient_id"]]) for k, v in out.items()}  # fmt: skip


def measurements(t: Tables) -> Tables:
    """A unique continuous measurement and an ordinary integer code column: neither is a key."""
    out = {}
    for k, v in t.items():
        rng = np.random.default_rng(len(k))
        out[k] = v.assign(weight_kg=np.round(v["score"] + rng.random(len(v)) / 7, 6), grade=v["age"] % 5)
    return out


def _warned(r: Result) -> None:
    if r.command == "audit":
        assert any("'patient_id' look like identifiers" in w for w in r.json()["warnings"]), r.json()["warnings"]
        _brute(patient_ids, numerical=["patient_id", *brute.NUMERICAL])(r)


def _not_warned(change, **kw):
    def check(r: Result) -> None:
        assert "identifiers" not in r.text, "an identifier warning where there is no key"
        _brute(change, **kw)(r)

    return check


READERS = ("audit", "attack", "quality")

CASES: list[Case] = [
    Case("id_patient_id", ITEM, READERS, "warn", setup=_writer(patient_ids), match=WARNING, check=_warned,
         note="before: no word; the id column entered every distance"),
    Case("id_patient_id_excluded", ITEM, READERS, "ok", setup=_writer(patient_ids), args=("--exclude", "patient_id"),
         check=_not_warned(lambda t: {k: v.drop(columns="patient_id") for k, v in patient_ids(t).items()}),
         match=r"left out: patient_id \(--exclude\)"),
    Case("id_string_keys", ITEM, ("audit",), "warn", setup=_writer(record_keys), args=("--unseen", "mismatch"),
         match=r"'record_key' look like identifiers.*--exclude record_key",
         check=_brute(record_keys, categorical=["record_key", *brute.CATEGORICAL])),
    Case("id_measurements_not_keys", ITEM, ("audit",), "ok", setup=_writer(measurements),
         check=_not_warned(measurements, numerical=[*brute.NUMERICAL, "weight_kg"],
                           categorical=[*brute.CATEGORICAL, "grade"])),
    Case("id_exclude_unknown", ITEM, READERS, "error", args=("--exclude", "nope"),
         match=r"--exclude: column 'nope' is not in the training table"),
]  # fmt: skip
