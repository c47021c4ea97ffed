"""Corpus cases of failure class 6: study files (read at parse time, one line naming file, table and key)."""

from __future__ import annotations

from corpus_cases import STUDY
from corpus_runner import Case, Result

_SHADOWS = STUDY.replace('steps = ["train", "audit"]', 'steps = ["train", "attack"]').replace(
    '[audit]\ndistances = ["fang2024"]\nn_bootstrap = 50\n', '[attack]\nattacks = ["lira", "dcr"]\nshadows = 4\n'
)


def _study(text: str, *, bom: bool = False):
    def setup(tmp, out) -> None:
        data = text.encode("utf-8")
        (tmp / "study.toml").write_bytes(b"\xef\xbb\xbf" + data if bom else data)

    return setup


def _planned(r: Result) -> None:
    assert "corpus/ddpm/seed=0" in r.out, r.out[-400:]


CASES: list[Case] = [
    Case("study_utf8_bom", "6 study files", ("run",), "ok", setup=_study(STUDY, bom=True), args=("--dry-run",),
         check=_planned, note="not valid TOML (Invalid statement at line 1, column 1)"),
    Case("study_seed_beyond_64_bits", "6 study files", ("run",), "error",
         setup=_study(STUDY.replace("seeds = [0]", "seeds = [18446744073709551616]")), args=("--dry-run",),
         match=r"study\.toml: \[study\] seeds must be an integer in \[0, 9223372036854775807\]",
         note="parsed; the seed reached torch.manual_seed / results.parquet (int64) only when a cell ran"),
    Case("study_target_not_a_column", "6 study files", ("run",), "error",
         setup=_study(STUDY.replace('target = "income"', 'target = "incme"')), args=("--dry-run",),
         match=r"study\.toml: \[\[datasets\]\] #1: target: 'incme' is not a column of train\.csv",
         note="parsed; the schema error came only when a cell ran"),
    Case("study_categorical_not_a_column", "6 study files", ("run",), "error",
         setup=_study(STUDY.replace('target = "income"', 'target = "income"\ncategorical = ["sexx"]')),
         args=("--dry-run",), match=r"study\.toml: \[\[datasets\]\] #1: categorical: 'sexx' is not a column"),
    Case("study_shadows_empty_population", "6 study files", ("run",), "error", setup=_study(_SHADOWS),
         args=("--dry-run",), match=r"study\.toml: \[attack\] shadows = 4: .*set n_non_members",
         note="parsed; the attack step failed at run time (the population is empty with n_non_members unset)"),
    Case("study_shadows_population_too_small", "6 study files", ("run",), "error",
         setup=_study(_SHADOWS.replace("shadows = 4", 'shadows = 4\nn_non_members = 20\nshadow_design = "offline"')),
         args=("--dry-run",),
         match=r"study\.toml: \[attack\] shadows: each offline shadow needs 240 population rows but the population "
               r"holds 220"),
    Case("study_n_train_negative", "6 study files", ("run",), "error",
         setup=_study(STUDY.replace('target = "income"', 'target = "income"\nn_train = -5')), args=("--dry-run",),
         match=r"study\.toml: \[\[datasets\]\] #1: n_train must be an integer in \[2, inf\]"),
]  # fmt: skip
