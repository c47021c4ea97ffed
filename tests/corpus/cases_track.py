"""Failure class 'track': snapshots that ``tabmem track`` cannot score, each refused in one line naming the file.

Snapshots of another table's columns, a file name without an epoch number, two files of one epoch, a
glob that matches nothing, an output directory holding a training run. A good run's final audit (its
last snapshot is the corpus' synthetic table) equals the brute-force figures, and prints no record.
"""

from __future__ import annotations

import shutil

from cases_dirs import training_run_in_out
from corpus_cases import audit_matches_brute_force
from corpus_runner import Case


def snapshots(tmp, out) -> None:
    """``snaps/synthetic_epoch1.csv`` (the holdout: no copies) and ``synthetic_epoch2.csv`` (the synthetic table)."""
    snaps = tmp / "snaps"
    snaps.mkdir(exist_ok=True)
    shutil.copy(tmp / "holdout.csv", snaps / "synthetic_epoch1.csv")
    shutil.copy(tmp / "synthetic.csv", snaps / "synthetic_epoch2.csv")


def other_tables_columns(tmp, out) -> None:
    import pandas as pd

    snapshots(tmp, out)
    other = pd.read_csv(tmp / "synthetic.csv").rename(columns={"hours": "hours_per_week"})
    other.to_csv(tmp / "snaps" / "synthetic_epoch2.csv", index=False)


def no_epoch_in_a_name(tmp, out) -> None:
    snapshots(tmp, out)
    shutil.copy(tmp / "synthetic.csv", tmp / "snaps" / "synthetic_final.csv")


def two_files_of_one_epoch(tmp, out) -> None:
    import pandas as pd

    snapshots(tmp, out)
    pd.read_csv(tmp / "synthetic.csv").to_parquet(tmp / "snaps" / "synthetic_epoch002.parquet", index=False)


def training_run_and_snapshots(tmp, out) -> None:
    training_run_in_out(tmp, out)
    snapshots(tmp, out)


def final_snapshot_audited(r) -> None:
    audit_matches_brute_force(r)
    s = r.json()
    assert s["epochs"] == 2 and s["n_snapshots"] == 2
    epochs = __import__("pandas").read_csv(r.out_dir / "tracking" / "epochs.csv")
    assert epochs["epoch"].tolist() == [1, 2] and epochs["memorization_rate"].iloc[1] == s["memorization_rate"]


CASES: list[Case] = [
    Case("track_another_tables_columns", "13 track", ("track",), "error", setup=other_tables_columns,
         match=r"snapshot '.*synthetic_epoch2\.csv' table does not match the training schema"),
    Case("track_no_epoch_in_a_name", "13 track", ("track",), "error", setup=no_epoch_in_a_name,
         args=("--snapshots", "{tmp}/snaps/*.csv"),
         match=r"--snapshots: '.*synthetic_final\.csv' has no epoch number in its name"),
    Case("track_two_files_of_one_epoch", "13 track", ("track",), "error", setup=two_files_of_one_epoch,
         args=("--snapshots", "{tmp}/snaps/*"),
         match=r"--snapshots: '.*synthetic_epoch002\.parquet' and '.*synthetic_epoch2\.csv' are both epoch 2"),
    Case("track_glob_matches_nothing", "13 track", ("track",), "error",
         match=r"--snapshots: '.*snaps/synthetic_epoch\*\.csv' matches no file"),
    Case("track_into_a_training_run", "13 track", ("track",), "error", setup=training_run_and_snapshots,
         match=r"--out: .*holds a tabmem training run .*not a track run"),
    Case("track_final_snapshot_audited", "13 track", ("track",), "ok", setup=snapshots, check=final_snapshot_audited),
]  # fmt: skip
