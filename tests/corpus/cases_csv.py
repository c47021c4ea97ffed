"""Corpus cases: what CSV files really hold (NA-like categories, codes with leading zeros, decimal commas,
separators, a header name holding a comma, integers beyond 2^53, a byte-order mark).

Each case writes its own files (``setup``) from the base tables with one change, and its check
compares the audit's figures with the brute-force ones computed on the values the file means.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from pathlib import Path

import corpus_brute as brute
import pandas as pd
from corpus_runner import Case, Result
from corpus_tables import base_tables

ITEM = "1 CSV files"
ROLES = ("train", "synthetic", "holdout")
Tables = dict[str, pd.DataFrame]


def _writer(change: Callable[[Tables], Tables], **to_csv) -> Callable[[Path, Path], None]:
    """A ``setup`` writing the changed tables over the base files (``to_csv`` options: sep, decimal, ...)."""

    def setup(tmp: Path, out: Path) -> None:
        tables = change(base_tables())
        for role in ROLES:
            text = tables[role].to_csv(index=False, **{k: v for k, v in to_csv.items() if k != "bom"})
            (tmp / f"{role}.csv").write_bytes((b"\xef\xbb\xbf" if to_csv.get("bom") else b"") + text.encode())

    return setup


def _brute(change: Callable[[Tables], Tables], numerical=brute.NUMERICAL, categorical=brute.CATEGORICAL):
    """The audit's rates equal the brute-force ones on the intended values (``change`` of the base tables)."""

    def check(r: Result) -> None:
        if r.command != "audit":
            return
        s, t = r.json(), change(base_tables())
        ratios = brute.fang2024_ratios(t["train"], t["synthetic"], numerical, categorical)
        assert math.isclose(s["memorization_rate"], brute.memorization_rate(ratios), abs_tol=1e-12), (
            s["memorization_rate"],
            brute.memorization_rate(ratios),
        )
        copies = brute.exact_copies(t["train"], t["synthetic"], numerical, categorical)
        assert math.isclose(s["exact_copy_rate"], sum(copies) / len(copies), abs_tol=1e-12)
        hold = brute.fang2024_ratios(t["train"], t["holdout"], numerical, categorical)
        assert math.isclose(s["holdout_memorization_rate"], brute.memorization_rate(hold), abs_tol=1e-12)
        schema = s.get("schema") or {}
        if schema:
            assert sorted(schema["numerical"]) == sorted(numerical), schema
            assert sorted(schema["categorical"]) == sorted(categorical), schema

    return check


def _score_numerical(r: Result) -> None:
    assert "score" in r.json()["schema"]["numerical"], r.json()["schema"]


def _header_survives(r: Result) -> None:
    """Every CSV and JSON output that names the column names it whole, and the audit's figures are right."""
    for f in sorted(r.out_dir.rglob("*")):
        if f.suffix == ".csv" and "hours" in (f.read_text().splitlines() or [""])[0]:
            assert "hours, per week" in pd.read_csv(f, nrows=1).columns, f
        elif f.suffix == ".json" and '"hours' in f.read_text():
            assert '"hours, per week"' in f.read_text() and '"hours"' not in f.read_text(), f
    _brute(header_comma, numerical=["age", "fnlwgt", "hours, per week", "capital_gain", "score"])(r)


def same(t: Tables) -> Tables:
    return t


def na_categories(t: Tables) -> Tables:
    """Three workclass values renamed to the strings pandas reads as missing by default."""
    names = {"Self-emp": "NA", "Federal-gov": "None", "Local-gov": "null"}
    return {k: v.assign(workclass=v["workclass"].replace(names)) for k, v in t.items()}


def na_in_numbers(t: Tables) -> Tables:
    out = {}
    for k, v in t.items():
        v = v.copy()
        v["score"] = v["score"].astype(object)
        v.loc[v.index % 17 == 3, "score"] = "NA"
        out[k] = v
    return out


ZIPS = [f"{(i * 3217) % 100_000:05d}" for i in range(1, 31)]  # 30 codes (more than 20: not integer categories)


def zip_codes(t: Tables) -> Tables:
    """A zip column of 30 codes (some with leading zeros), a function of the row's fnlwgt."""
    return {k: v.assign(zip=[ZIPS[int(w) % len(ZIPS)] for w in v["fnlwgt"]]) for k, v in t.items()}


def header_comma(t: Tables) -> Tables:
    return {k: v.rename(columns={"hours": "hours, per week"}) for k, v in t.items()}


#: 30 distinct integers beyond 2^53 (more than 20: not integer categories), equal in pairs as float64
ACCOUNTS = [str(2**60 + i) for i in range(1, 31)]


def big_accounts(t: Tables) -> Tables:
    return {k: v.assign(account=[ACCOUNTS[int(w) % len(ACCOUNTS)] for w in v["fnlwgt"]]) for k, v in t.items()}


def thousands_like(t: Tables) -> Tables:
    """An amount column whose every comma is followed by three digits (1,500: decimal or thousands?)."""
    return {k: v.assign(amount=[f"{int(w) % 9 + 1},{int(w) % 1000:03d}" for w in v["fnlwgt"]]) for k, v in t.items()}


def thousands_as_decimals(t: Tables) -> Tables:
    return {k: v.assign(amount=[float(a.replace(",", ".")) for a in v["amount"]]) for k, v in thousands_like(t).items()}


def _parquet_synthetic(change: Callable[[Tables], Tables]) -> Callable[[Path, Path], None]:
    """CSV train and holdout, the synthetic table as a Parquet twin (codes as strings)."""

    def setup(tmp: Path, out: Path) -> None:
        _writer(change)(tmp, out)
        change(base_tables())["synthetic"].to_parquet(tmp / "synthetic.parquet", index=False)

    return setup


ZIP_CAT = [*brute.CATEGORICAL, "zip"]
READERS = ("audit", "attack", "quality")

CASES: list[Case] = [
    Case("csv_na_categories", ITEM, READERS, "ok", setup=_writer(na_categories), check=_brute(na_categories),
         match=r"NA-like strings kept as categories in workclass",
         note="before: NA, None and null read as missing, merged into one category: a rate on wrong values"),
    Case("csv_na_in_numbers", ITEM, ("audit",), "error", setup=_writer(na_in_numbers),
         match=r"column 'score' has 14 missing value\(s\).*--nan",
         note="NA in a column of numbers stays a missing value (numerical column, --nan decides)"),
    Case("csv_na_in_numbers_match", ITEM, ("audit",), "ok", setup=_writer(na_in_numbers), args=("--nan", "match"),
         check=lambda r: _score_numerical(r)),
    Case("csv_leading_zeros", ITEM, READERS, "ok", setup=_writer(zip_codes),
         check=_brute(zip_codes, categorical=ZIP_CAT), match=r"zip read as text \(codes with leading zeros\)",
         note="before: zip read as the numbers 501, 2134, ... and used as a numerical distance"),
    Case("csv_leading_zeros_parquet_twin", ITEM, ("audit",), "ok", setup=_parquet_synthetic(zip_codes),
         args=("--synthetic", "{tmp}/synthetic.parquet"), check=_brute(zip_codes, categorical=ZIP_CAT),
         note="before: the CSV's 501 and the Parquet's '00501' compared as numbers (agreeing by accident)"),
    Case("csv_decimal_comma", ITEM, READERS, "ok", setup=_writer(same, sep=";", decimal=","), check=_brute(same),
         match=r"separator ';'; decimal comma",
         note="before: score read as text: categorical, then unseen categories"),
    Case("csv_comma_three_digits", ITEM, READERS, "error", setup=_writer(thousands_like, sep=";"),
         match=r"train\.csv: column 'amount' holds numbers with a comma followed by three digits.*--decimal ,",
         note="before: amount read as text categories, a rate computed on them"),
    Case("csv_comma_three_digits_declared", ITEM, ("audit",), "ok", setup=_writer(thousands_like, sep=";"),
         args=("--decimal", ","), check=_brute(thousands_as_decimals, numerical=[*brute.NUMERICAL, "amount"])),
    Case("csv_tab_everywhere", ITEM, ("audit",), "ok", setup=_writer(same, sep="\t"), check=_brute(same),
         match=r"separator tab"),
    Case("csv_header_comma", ITEM, ("audit", "train", "attack", "quality", "generate-icl"), "ok",
         setup=_writer(header_comma), check=_header_survives,
         match=r"numerical: age, fnlwgt, 'hours, per week'",
         note="before: read right, but the schema line listed the column as two (hours, per week)"),
    Case("csv_integers_beyond_2_53", ITEM, ("audit",), "ok", setup=_writer(big_accounts),
         check=_brute(big_accounts, categorical=[*brute.CATEGORICAL, "account"]),
         match=r"account read as text \(integers beyond 2\^53\)",
         note="before: numerical float64, 2^60+1 == 2^60+2: distinct accounts collided"),
    Case("csv_bom_semicolon", ITEM, ("audit",), "ok", setup=_writer(same, sep=";", bom=True), check=_brute(same)),
]  # fmt: skip
