"""Failure class 'risk': bad input to ``tabmem risk`` (the holdout plays the control).

``--aux`` given once or three times, or naming a column twice or one the table lacks, ``--secret``
naming no column, an empty control table, a synthetic table that does not fit the training schema,
an output directory holding another run type: one ``Error:`` line each, before any attack runs.
A good run prints rates only (never the planted training value). An option given twice is written
``--aux=COLS`` here: the runner's extra arguments replace the value of an option they repeat.
"""

from __future__ import annotations

import pandas as pd
from cases_dirs import audit_run_in_out
from corpus_runner import Case, Result


def risk_rates_only(r: Result) -> None:
    s = r.json()
    assert s["n_train"] == len(r.tables["train"]) and s["n_control"] == len(r.tables["holdout"])
    assert s["secrets"] == ["income"] and s["aux"] == [["age", "sex"], ["hours", "education"]]
    assert list(pd.read_csv(r.out_dir / "inference.csv")["column"]) == ["income"]
    for key in ("singling_out_univariate", "singling_out_multivariate", "linkability"):
        assert 0.0 <= s[key]["risk"] <= 1.0, key
    assert "inference: income" in r.out


CASES: list[Case] = [
    Case("risk_aux_once", "12 risk", ("risk",), "error", args=("--aux", "age,sex"),
         match=r"--aux: give it twice, once per column set that linkability links .*not once"),
    Case("risk_aux_three_times", "12 risk", ("risk",), "error", args=("--aux=age", "--aux=sex", "--aux=hours"),
         match=r"--aux: give it twice, .*not 3 times"),
    Case("risk_aux_overlap", "12 risk", ("risk",), "error", args=("--aux=age,sex", "--aux=sex,hours"),
         match=r"--aux: column 'sex' is in both column sets"),
    Case("risk_aux_not_a_column", "12 risk", ("risk",), "error", args=("--aux=age,colour", "--aux=sex"),
         match=r"--aux: column 'colour' is not in the training table \(its columns: age, workclass"),
    Case("risk_secret_not_a_column", "12 risk", ("risk",), "error", args=("--secret", "salary"),
         match=r"--secret: column 'salary' is not in the training table"),
    Case("risk_control_header_only", "12 risk", ("risk",), "error", inputs={"holdout": "synthetic_header_only"},
         match=r"holdout\.csv: the control table is empty"),
    Case("risk_synthetic_infinite", "12 risk", ("risk",), "error", inputs={"synthetic": "synthetic_inf"},
         match=r"column 'score'.*infinite.*rows: 11"),
    Case("risk_synthetic_missing_column", "12 risk", ("risk",), "error",
         inputs={"synthetic": "synthetic_missing_column"}, match=r"missing column.*'hours'"),
    Case("risk_into_an_audit_run", "12 risk", ("risk",), "error", setup=audit_run_in_out,
         match=r"--out: .*holds a tabmem audit run .*not a risk run: choose another output directory"),
    Case("risk_rates_only", "12 risk", ("risk",), "ok",
         args=("--secret", "income", "--aux=age,sex", "--aux=hours,education"), check=risk_rates_only),
]  # fmt: skip
