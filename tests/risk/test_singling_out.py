"""Singling-out query evaluation against a naive per-row Python loop; query generation's promises."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from tabmem.data.schema import Schema
from tabmem.risk import singling_out as so

SCHEMA = Schema(("x", "y", "c", "d"), ("x", "y"), ("c", "d"))


def _table(n: int, seed: int) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    x = rng.integers(0, 12, n).astype(float)
    x[rng.random(n) < 0.1] = np.nan
    c = rng.choice(list("abcde"), n).astype(object)
    c[rng.random(n) < 0.1] = "<NA>"
    return pd.DataFrame({"x": x, "y": rng.normal(size=n).round(1), "c": c, "d": rng.choice(["u", "v"], n)})


def _naive_holds(row: pd.Series, term, cols, inv_vocab) -> bool:
    j, op, value = term
    col = cols[j]
    v = row[col]
    if col in SCHEMA.numerical:
        missing = isinstance(v, float) and math.isnan(v)
    else:
        missing = v == "<NA>"
        if not missing and op not in ("null", "notnull"):
            value = inv_vocab[col].get(int(value), object())
    if op == "null":
        return missing
    if op == "notnull" or missing:
        return (op == "notnull") and not missing
    return {
        "eq": v == value,
        "ne": v != value,
        "lt": v < value,
        "le": v <= value,
        "gt": v > value,
        "ge": v >= value,
    }[op]


def _naive_count(df: pd.DataFrame, query, vocab) -> int:
    inv = {col: {i: v for v, i in m.items()} for col, m in vocab.items()}
    cols = list(SCHEMA.columns)
    return sum(all(_naive_holds(row, t, cols, inv) for t in query) for _, row in df.iterrows())


def test_query_counts_equal_a_naive_loop_over_rows():
    syn, other = _table(150, 1), _table(120, 2)
    vocab = so.vocabulary([syn, other], SCHEMA)
    c_syn, c_other = so.Coded(syn, SCHEMA, vocab), so.Coded(other, SCHEMA, vocab)
    rng = np.random.default_rng(3)
    queries = so.random_queries(c_syn, 150, 2, rng) + so.random_queries(c_syn, 60, 1, rng)
    queries += so.random_queries(c_syn, 40, 3, rng)
    queries += [((0, "null", 0.0),), ((0, "notnull", 0.0), (2, "null", 0.0)), ((2, "ne", 1.0), (0, "ge", 5.0))]
    for table, coded in ((syn, c_syn), (other, c_other)):
        ours = so.count_queries(coded, queries)
        naive = [_naive_count(table, q, vocab) for q in queries]
        assert ours.tolist() == naive
        for width in (1, 2, 3):
            same = [q for q in queries if len(q) == width]
            for prefixes in ((1,), (4, 16), (64, 2048)):
                assert coded.singles(same, prefixes=prefixes).tolist() == [
                    n == 1 for n, q in zip(naive, queries) if len(q) == width
                ]
        for q in queries[:40]:
            assert len(coded.rows(q)) == _naive_count(table, q, vocab)


def test_generated_queries_single_out_one_synthetic_row_and_are_distinct():
    syn = _table(300, 4).drop_duplicates(ignore_index=True)
    vocab = so.vocabulary([syn], SCHEMA)
    coded = so.Coded(syn, SCHEMA, vocab)
    rng = np.random.default_rng(5)
    uni = so.univariate_queries(coded, 50, rng)
    multi, attempts = so.multivariate_queries(coded, 80, 3, rng, max_attempts=50_000)
    assert len(multi) == 80 and attempts >= 80
    for queries, width in ((uni, 1), (multi, 3)):
        assert (so.count_queries(coded, queries) == 1).all()
        assert len({tuple(sorted(q)) for q in queries}) == len(queries)
        assert all(len(q) == width for q in queries)
    # univariate candidates: min/max of every numerical column are there (they single out when unique)
    assert any(q[0][1] in ("le", "ge") for q in uni)


def test_multivariate_operators_point_away_from_the_median():
    syn = _table(200, 6).drop_duplicates(ignore_index=True)
    coded = so.Coded(syn, SCHEMA, so.vocabulary([syn], SCHEMA))
    med = float(np.nanmedian(syn["y"]))
    queries, _ = so.multivariate_queries(coded, 60, 2, np.random.default_rng(7), max_attempts=20_000)
    for q in queries:
        for j, op, v in q:
            if j == 1:
                assert op == ("ge" if v > med else "le")
            if j in (2, 3):
                assert op in ("eq", "null")


@pytest.mark.parametrize("n_control", [1500, 3000, 4000])
def test_control_size_correction_scales_toward_the_training_size(n_control):
    rng = np.random.default_rng(8)
    big = pd.DataFrame({"x": rng.integers(0, 10**6, 4000).astype(float), "y": 0.0, "c": "a", "d": "u"})
    control = big.iloc[:n_control].reset_index(drop=True)
    vocab = so.vocabulary([big], SCHEMA)
    coded = so.Coded(control, SCHEMA, vocab)
    queries = [((0, "le", float(v)),) for v in rng.integers(0, 3000, 2000)]
    corr = so.control_correction(coded, queries, 2000, np.random.default_rng(9))
    # a query singles out less often in a bigger table: a bigger control's count is scaled up, a smaller one's down
    assert (corr > 1.0) if n_control > 2000 else (corr < 1.0)
