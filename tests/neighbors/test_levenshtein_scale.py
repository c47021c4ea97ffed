"""LevAtt's search at scale: the bigram bound, the memory budget, progress and shards, all against brute force."""

from __future__ import annotations

from collections import Counter
from math import ceil

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tabmem.attacks import get_attack
from tabmem.data.schema import Schema
from tabmem.neighbors import levenshtein
from tabmem.neighbors import shards as shards_module
from tabmem.neighbors.levenshtein import LevenshteinIndex
from tabmem.neighbors.settings import search_progress, working_memory
from tabmem.neighbors.shards import Sharding, sharding


def naive_lev(a: str, b: str) -> int:
    """Wagner-Fischer, written independently of rapidfuzz."""
    prev = list(range(len(b) + 1))
    for i, ca in enumerate(a, 1):
        cur = [i]
        for j, cb in enumerate(b, 1):
            cur.append(min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (ca != cb)))
        prev = cur
    return prev[-1]


def bigram_bound(q: str, s: str) -> int:
    """ceil((max(|G(q)|, |G(s)|) - |G(q) & G(s)|) / 2) over the bigram multisets G, from Counters."""
    gq, gs = Counter(q[i : i + 2] for i in range(len(q) - 1)), Counter(s[i : i + 2] for i in range(len(s) - 1))
    return ceil((max(sum(gq.values()), sum(gs.values())) - sum((gq & gs).values())) / 2)


def rows_near(rng: np.random.Generator, n: int, base: list[str], edits: int) -> list[str]:
    """Near copies of ``base`` rows: up to ``edits`` random character edits each (many ties)."""
    out = []
    for _ in range(n):
        s = list(base[int(rng.integers(len(base)))])
        for _ in range(int(rng.integers(0, edits + 1))):
            pos = int(rng.integers(0, len(s) + 1))
            op = int(rng.integers(3))
            if op == 0 or not s:
                s.insert(pos, str(rng.integers(10)))
            elif op == 1:
                del s[min(pos, len(s) - 1)]
            else:
                s[min(pos, len(s) - 1)] = str(rng.integers(10))
        out.append("".join(s))
    return out


def brute(queries: list[str], strings: list[str]) -> list[int]:
    return [min(naive_lev(q, s) for s in strings) for q in queries]


_text = st.text(alphabet="ab01,.", max_size=14)


@settings(max_examples=300, deadline=None)
@given(_text, _text)
def test_bigram_bound_is_a_lower_bound(a: str, b: str) -> None:
    assert bigram_bound(a, b) <= naive_lev(a, b)


def test_combined_bound_is_the_larger_of_bag_and_bigram_bounds_and_below_the_distance() -> None:
    rng = np.random.default_rng(3)
    strings = [f"{rng.integers(100)},{rng.choice(['ab', 'ba', 'aab'])},{rng.integers(1000)}" for _ in range(60)]
    queries = strings[:5] + rows_near(rng, 10, strings, 3)
    idx = LevenshteinIndex(n_jobs=1).fit(strings)
    got = levenshtein._combined_bounds(idx, queries)
    bag = idx.lower_bounds(queries)
    expected = [[max(bag[i, j], bigram_bound(q, s)) for j, s in enumerate(strings)] for i, q in enumerate(queries)]
    np.testing.assert_array_equal(got, expected)  # few distinct bigrams: kept exactly
    assert (got <= np.array([[naive_lev(q, s) for s in strings] for q in queries])).all()


def test_merged_bigrams_stay_a_lower_bound(monkeypatch) -> None:
    monkeypatch.setattr(levenshtein, "_BIGRAM_BUCKETS", 4)  # most bigrams share one count
    monkeypatch.setattr(levenshtein, "_BIGRAM_UNARY", 2)  # and wide count ranges are quantised
    rng = np.random.default_rng(4)
    strings = rows_near(rng, 80, ["0123456789" * 3, "1111122222", "9.9.9.9,9"], 6)
    queries = rows_near(rng, 15, strings, 4)
    idx = LevenshteinIndex(n_jobs=1).fit(strings)
    assert idx.bigrams_ is not None and idx.bigrams_.encoder.quantised
    exact = np.array([[naive_lev(q, s) for s in strings] for q in queries])
    assert (levenshtein._combined_bounds(idx, queries) <= exact).all()
    assert LevenshteinIndex(n_jobs=1).fit(strings).query(queries).distance.tolist() == exact.min(axis=1).tolist()


def test_near_copies_with_ties_equal_brute_force_and_argmins_reach_the_minimum() -> None:
    rng = np.random.default_rng(5)
    base = [",".join(str(rng.integers(10**k)) for k in (2, 3, 5, 1)) for _ in range(20)]
    strings = rows_near(rng, 300, base, 2) + base  # many near copies, many equal distances
    queries = base[:3] + rows_near(rng, 40, base, 3) + [f"{rng.integers(10**6)}" for _ in range(5)]
    res = LevenshteinIndex(n_jobs=1).fit(strings).query(queries)
    assert res.distance.tolist() == brute(queries, strings)
    assert [naive_lev(q, strings[j]) for q, j in zip(queries, res.index)] == res.distance.tolist()
    assert res.n_exact < res.n_pairs / 4  # pruning did its job on near copies


def test_memory_budget_bounds_the_blocks_and_changes_nothing(monkeypatch) -> None:
    sizes: list[int] = []
    real = levenshtein._search_block

    def spy(index, queries):
        sizes.append(len(queries))
        return real(index, queries)

    monkeypatch.setattr(levenshtein, "_search_block", spy)
    rng = np.random.default_rng(6)
    strings = rows_near(rng, 200, ["12,345,6789", "98,7,65"], 3)
    queries = rows_near(rng, 25, strings, 2)
    free = LevenshteinIndex(n_jobs=1).fit(strings).query(queries)
    sizes.clear()
    budget = levenshtein._PAIR_BYTES * len(strings) * 4  # 4 queries a block
    tight = LevenshteinIndex(n_jobs=1, memory_budget=budget).fit(strings).query(queries)
    assert max(sizes) == 4
    sizes.clear()
    with working_memory(budget // 2):  # the context, when the index has no budget of its own
        ctx = LevenshteinIndex(n_jobs=1).fit(strings).query(queries)
    assert max(sizes) == 2
    for other in (tight, ctx):
        np.testing.assert_array_equal(other.distance, free.distance)
        np.testing.assert_array_equal(other.index, free.index)
        assert other.n_exact == free.n_exact


def _in_process(fn, payloads, on_done) -> None:
    for i in reversed(range(len(payloads))):  # out of order, as a pool may finish them
        on_done(i, fn(payloads[i]))


def test_sharded_query_is_the_unsharded_query_bit_for_bit(monkeypatch) -> None:
    monkeypatch.setattr(shards_module, "MIN_SHARD_CELLS", 1)
    rng = np.random.default_rng(7)
    strings = rows_near(rng, 150, ["3,14,159", "2,71,828", "1,41,421"], 3)
    queries = strings[:4] + rows_near(rng, 30, strings, 3)
    idx = LevenshteinIndex(n_jobs=1).fit(strings)
    plain = idx.query(queries)
    calls: list[int] = []

    def counting(fn, payloads, on_done) -> None:
        calls.append(len(payloads))
        _in_process(fn, payloads, on_done)

    done: list[int] = []
    with sharding(Sharding(counting, shards=5)):
        sharded = idx.query(queries, progress=done.append)
    assert calls == [5] and sum(done) == len(queries)
    np.testing.assert_array_equal(sharded.distance, plain.distance)
    np.testing.assert_array_equal(sharded.index, plain.index)
    assert (sharded.n_exact, sharded.n_pairs) == (plain.n_exact, plain.n_pairs)
    assert plain.distance.tolist() == brute(queries, strings)


def test_levatt_reports_progress_through_the_context() -> None:
    rng = np.random.default_rng(8)
    schema = Schema(columns=("a", "b", "c"), numerical=("a", "b"), categorical=("c",))
    syn = pd.DataFrame({"a": rng.integers(0, 99, 120), "b": rng.normal(size=120), "c": rng.choice(["x", "y"], 120)})
    targets = syn.iloc[:37].copy()
    seen: list[tuple[int, int]] = []
    advanced: list[int] = []

    class Display:
        def __init__(self, rows: int, ref: int) -> None:
            seen.append((rows, ref))

        def __enter__(self):
            return advanced.append

        def __exit__(self, *exc) -> None:
            return None

    attack = get_attack("levatt", n_jobs=1).fit(syn, schema)
    with search_progress(Display):
        scores = attack.score(targets)
    assert seen == [(37, 120)] and sum(advanced) == 37
    np.testing.assert_array_equal(scores, get_attack("levatt", n_jobs=1).fit(syn, schema).score(targets))
    assert (scores == 0).all()  # every target is a synthetic row


@pytest.mark.parametrize("n_jobs", [1, 2])
def test_parallel_workers_report_every_block(monkeypatch, n_jobs) -> None:
    monkeypatch.setattr(levenshtein, "_PARALLEL_MIN_PAIRS", 1)
    rng = np.random.default_rng(9)
    strings = rows_near(rng, 60, ["1,2,3", "44,55"], 2)
    queries = rows_near(rng, 20, strings, 2)
    done: list[int] = []
    res = LevenshteinIndex(n_jobs=n_jobs, block_size=3).fit(strings).query(queries, progress=done.append)
    assert done == [3] * 6 + [2] and res.distance.tolist() == brute(queries, strings)
