"""Failure class 'dir': output directories and files that hold other things.

A command deletes or replaces only files it can prove are its own: a directory holding another
tabmem run type is refused before anything is written (naming that run type), an output file that
would replace a file of the run directory it sits in is refused (naming the file), a ranking
cannot be written over its own sidecar, and ``--overwrite`` leaves another tool's files alone.
"""

from __future__ import annotations

from corpus_cases import study
from corpus_runner import TRAIN_FAST, Case, Result


def _files(out, names) -> None:
    out.mkdir(parents=True, exist_ok=True)
    for name in names:
        if "." in name:
            (out / name).write_text("old\n")
        else:
            (out / name).mkdir()


def training_run_in_out(tmp, out) -> None:
    """``out`` holds a (finished) training run."""
    _files(out, ("config.json", "model.pt", "checkpoint.pt", "history.csv", "summary.json", "records.csv",
                 "synthetic.csv", "tracking"))  # fmt: skip


def audit_run_in_out(tmp, out) -> None:
    """``out`` holds an audit output and a file of the user's."""
    _files(out, ("summary.json", "replicas.csv", "records.csv", "rare_values.csv", "notes.txt"))


def attack_run_in_out(tmp, out) -> None:
    _files(out, ("summary.json", "scores.csv", "roc.csv", "risk.csv"))


def study_in_out(tmp, out) -> None:
    _files(out, ("manifest.json", "study.toml", "cells", "steps"))


def finished_run_and_other_tools_files(tmp, out) -> None:
    """A previous training run plus another tool's files, which --overwrite must not touch."""
    training_run_in_out(tmp, out)
    (out / "model.onnx").write_text("another tool's model\n")
    (out / "features.parquet").write_text("another tool's table\n")
    (out / "notes").mkdir()
    (out / "notes" / "todo.md").write_text("mine\n")


def study_and_a_training_run_in_out(tmp, out) -> None:
    study()(tmp, out)
    training_run_in_out(tmp, out)


def other_tools_summary(tmp, out) -> None:
    """Another tool's summary.json and config.json (names a training run also writes)."""
    out.mkdir(parents=True)
    (out / "summary.json").write_text('{"accuracy": 0.9}\n')
    (out / "config.json").write_text('{"lr": 0.1}\n')


def tracked_run(tmp, out) -> None:
    """``rundir``: a real tracked training run (for the rank cases)."""
    from tabmem.cli import main

    try:
        main(["train", "--train", str(tmp / "train.csv"), *TRAIN_FAST, "--track-every", "1",
              "--out", str(tmp / "rundir")])  # fmt: skip
    except SystemExit as exc:
        assert not exc.code


def kept_other_tools_files(r: Result) -> None:
    assert (r.out_dir / "model.onnx").read_text() == "another tool's model\n"
    assert (r.out_dir / "features.parquet").read_text() == "another tool's table\n"
    assert (r.out_dir / "notes" / "todo.md").read_text() == "mine\n"
    assert (r.out_dir / "synthetic.csv").read_text() != "old\n"  # the run was made again


def parquet_ranking_reads_back(r: Result) -> None:
    from tabmem.mitigation.ranking import Ranking

    rk = Ranking.load(r.out_dir / "ranking.parquet")
    assert rk.n_train == len(r.tables["train"]) and rk.method == "intensity"
    assert (r.out_dir / "ranking.json").is_file()


CASES: list[Case] = [
    Case("dir_audit_into_a_training_run", "3 dirs", ("audit",), "error", setup=training_run_in_out,
         match=r"--out: .*holds a tabmem training run .*not an audit run: choose another output directory",
         note="exit 0: the run's summary.json, records.csv replaced by the audit's"),
    Case("dir_train_into_an_audit_run", "3 dirs", ("train",), "error", setup=audit_run_in_out,
         match=r"holds a tabmem audit run .*not a training run",
         note="'already holds a training run that stopped before its first checkpoint' (misnamed)"),
    Case("dir_train_overwrite_an_audit_run", "3 dirs", ("train",), "error", setup=audit_run_in_out,
         args=("--overwrite",), match=r"holds a tabmem audit run .*not a training run",
         note="exit 0: the audit's summary.json and records.csv deleted and replaced, replicas.csv left: a mixed folder"),
    Case("dir_quality_into_a_training_run", "3 dirs", ("quality",), "error", setup=training_run_in_out,
         match=r"holds a tabmem training run .*not a quality run", note="exit 0: the run's summary.json replaced"),
    Case("dir_attack_into_an_audit_run", "3 dirs", ("attack",), "error", setup=audit_run_in_out,
         match=r"holds a tabmem audit run .*not an attack run", note="exit 0: the audit's summary.json replaced"),
    Case("dir_audit_into_a_study", "3 dirs", ("audit",), "error", setup=study_in_out,
         match=r"holds a tabmem study run .*not an audit run", note="exit 0: an audit written into the study folder"),
    Case("dir_run_into_a_training_run", "3 dirs", ("run",), "error", setup=study_and_a_training_run_in_out,
         match=r"holds a tabmem training run .*not a study run",
         note="exit 0: study.toml, manifest.json, cells/, steps/ written into the training run's folder"),
    Case("dir_train_into_an_attack_run", "3 dirs", ("train",), "error", setup=attack_run_in_out,
         match=r"holds a tabmem attack run .*not a training run", note="exit 0: the attack's summary.json replaced"),
    Case("dir_overwrite_keeps_other_tools_files", "3 dirs", ("train",), "ok", setup=finished_run_and_other_tools_files,
         args=("--overwrite",), check=kept_other_tools_files),
    Case("dir_train_overwrite_other_tools_summary", "3 dirs", ("train",), "error", setup=other_tools_summary,
         args=("--overwrite",), match=r"holds config\.json, summary\.json, which no tabmem training run can be shown",
         note="exit 0: another tool's summary.json and config.json deleted and replaced"),
    Case("dir_sample_over_a_run_file", "3 dirs", ("sample",), "error", setup=training_run_in_out,
         args=("--out", "{out}/synthetic.csv"),
         match=r"--out: .*synthetic\.csv' would replace the synthetic\.csv of the tabmem training run",
         note="exit 0: the run's synthetic.csv replaced by the sample"),
    Case("dir_icl_over_a_run_file", "3 dirs", ("generate-icl",), "error", setup=training_run_in_out,
         args=("--out", "{out}/records.csv"), match=r"--out: .*would replace the records\.csv of the tabmem training run",
         note="exit 0: the run's records.csv replaced"),
    Case("dir_rank_out_json", "3 dirs", ("rank",), "error", setup=tracked_run, args=("--out", "{out}/ranking.json"),
         match=r"--out must end in \.csv or \.parquet",
         note="exit 0: the ranking CSV written to ranking.json, then its sidecar ranking.json over it"),
    Case("dir_rank_sidecar_over_summary", "3 dirs", ("rank",), "error", setup=tracked_run,
         args=("--out", "{tmp}/rundir/summary.csv"),
         match=r"--out \(its \.json sidecar\): .*summary\.json' would replace the summary\.json of the tabmem training run",
         note="exit 0: the ranking's sidecar replaced the run's summary.json"),
    Case("dir_rank_over_records", "3 dirs", ("rank",), "error", setup=tracked_run,
         args=("--out", "{tmp}/rundir/records.csv"), match=r"would replace the records\.csv of the tabmem training run",
         note="exit 0: the run's records.csv replaced by the ranking"),
    Case("dir_rank_parquet_reads_back", "3 dirs", ("rank",), "ok", setup=tracked_run,
         args=("--out", "{out}/ranking.parquet"), check=parquet_ranking_reads_back,
         note="written, but Ranking.load (dynamiccut --ranking) read it as CSV: 'not a readable ranking CSV'"),
]  # fmt: skip
