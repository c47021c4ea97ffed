"""Exact min-Levenshtein search: equals a naive DP, the bag-distance bound is a valid lower bound."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from rapidfuzz.distance import Levenshtein

from tabmem.errors import TabmemError
from tabmem.neighbors.levenshtein import LevenshteinIndex, min_levenshtein


def naive_lev(a: str, b: str) -> int:
    """Wagner-Fischer, written independently of rapidfuzz."""
    prev = list(range(len(b) + 1))
    for i, ca in enumerate(a, 1):
        cur = [i]
        for j, cb in enumerate(b, 1):
            cur.append(min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (ca != cb)))
        prev = cur
    return prev[-1]


def random_rows(
    rng: np.random.Generator, n: int, alphabet: str = "0123456789.,-", lo: int = 0, hi: int = 30
) -> list[str]:
    chars = np.array(list(alphabet))
    return ["".join(rng.choice(chars, size=int(rng.integers(lo, hi + 1)))) for _ in range(n)]


def test_naive_reference_agrees_with_rapidfuzz():
    rng = np.random.default_rng(0)
    for a, b in zip(random_rows(rng, 200), random_rows(rng, 200)):
        assert naive_lev(a, b) == Levenshtein.distance(a, b)


@pytest.mark.parametrize("n_jobs", [1, 2])
def test_min_equals_brute_force(n_jobs):
    rng = np.random.default_rng(1)
    choices = random_rows(rng, 300, lo=5, hi=40)
    # near copies (one edit), exact copies, unrelated strings, empty string
    queries = [c[:3] + "7" + c[4:] for c in choices[:40]] + choices[40:60] + random_rows(rng, 80, lo=0, hi=40) + [""]
    idx = LevenshteinIndex(n_jobs=n_jobs, block_size=16).fit(choices)
    res = idx.query(queries)
    # brute force with rapidfuzz's plain distance (itself checked against the naive DP above)
    brute = np.array([min(Levenshtein.distance(q, s) for s in choices) for q in queries])
    np.testing.assert_array_equal(res.distance, brute)
    # the returned index reaches the minimum
    np.testing.assert_array_equal([naive_lev(q, choices[j]) for q, j in zip(queries, res.index)], brute)
    assert res.n_pairs == len(queries) * len(choices)
    assert res.n_exact < res.n_pairs  # something was pruned


def test_parallel_path_identical_to_serial(monkeypatch):
    from tabmem.neighbors import levenshtein

    monkeypatch.setattr(levenshtein, "_PARALLEL_MIN_PAIRS", 0)  # force worker processes on a small problem
    rng = np.random.default_rng(2)
    choices = random_rows(rng, 600, lo=20, hi=60)
    queries = random_rows(rng, 150, lo=20, hi=60) + [c[::-1] for c in choices[:50]] + choices[100:110]
    serial = LevenshteinIndex(n_jobs=1, block_size=32).fit(choices).query(queries)
    parallel = LevenshteinIndex(n_jobs=2, block_size=32).fit(choices).query(queries)
    np.testing.assert_array_equal(serial.distance, parallel.distance)
    np.testing.assert_array_equal(serial.index, parallel.index)
    ref = np.array([min(Levenshtein.distance(q, s) for s in choices) for q in queries[:60]])
    np.testing.assert_array_equal(serial.distance[:60], ref)


_text = st.text(alphabet=st.sampled_from(list("ab01.,é€")), max_size=25)


@settings(max_examples=150, deadline=None)
@given(st.lists(_text, min_size=1, max_size=12), st.lists(_text, min_size=1, max_size=6))
def test_bag_bound_is_a_lower_bound_and_search_is_exact(choices, queries):
    idx = LevenshteinIndex(n_jobs=1).fit(choices)
    lb = idx.lower_bounds(queries)
    exact = np.array([[naive_lev(q, s) for s in choices] for q in queries])
    assert (lb <= exact).all()
    assert (
        lb >= np.abs(np.array([len(q) for q in queries])[:, None] - np.array([len(s) for s in choices])[None, :])
    ).all()
    np.testing.assert_array_equal(idx.query(queries).distance, exact.min(axis=1))


def test_bag_bound_exact_form_on_known_pairs():
    idx = LevenshteinIndex(n_jobs=1).fit(["abc", "cba", "aab", "xyz12"])
    lb = idx.lower_bounds(["abc"])[0]
    # anagram -> 0 (true distance 2), one substitution -> 1, disjoint -> max(len)
    assert lb.tolist() == [0, 0, 1, 5]


def test_quantised_alphabet_is_still_a_lower_bound():
    # more than _MAX_BUCKETS distinct characters and very uneven counts force bucket merging and quantisation
    rng = np.random.default_rng(3)
    alphabet = "".join(chr(0x4E00 + i) for i in range(150)) + "a"
    choices = random_rows(rng, 60, alphabet=alphabet, lo=0, hi=20) + ["a" * 300, "a" * 150 + "b"]
    queries = random_rows(rng, 20, alphabet=alphabet, lo=0, hi=20) + ["a" * 290]
    idx = LevenshteinIndex(n_jobs=1).fit(choices)
    exact = np.array([[Levenshtein.distance(q, s) for s in choices] for q in queries])
    assert (idx.lower_bounds(queries) <= exact).all()
    np.testing.assert_array_equal(idx.query(queries).distance, exact.min(axis=1))


def test_bad_input():
    with pytest.raises(TabmemError, match="no strings"):
        LevenshteinIndex().fit([])
    with pytest.raises(TabmemError, match="not strings"):
        LevenshteinIndex().fit(["a", 3])
    with pytest.raises(TabmemError, match="single string"):
        LevenshteinIndex().fit("abc")
    with pytest.raises(TabmemError, match="not fitted"):
        LevenshteinIndex().query(["a"])
    with pytest.raises(TabmemError, match="n_jobs"):
        LevenshteinIndex(n_jobs=0).fit(["a"]).query(["b"] * 10)
    assert min_levenshtein([], ["a"]).distance.size == 0


@settings(max_examples=200, deadline=None)
@given(_text, _text)
def test_lcs_bound_is_a_lower_bound(a, b):
    from rapidfuzz.distance import LCSseq

    assert max(len(a), len(b)) - LCSseq.similarity(a, b) <= naive_lev(a, b)


def test_far_queries_use_lcs_bound_and_stay_exact():
    # rows of random digits: the bag bound prunes nothing, the LCS bound does the work
    rng = np.random.default_rng(5)
    choices = random_rows(rng, 3000, alphabet="0123456789", lo=40, hi=50)
    queries = random_rows(rng, 30, alphabet="0123456789", lo=40, hi=50)
    res = LevenshteinIndex(n_jobs=1).fit(choices).query(queries)
    ref = np.array([min(Levenshtein.distance(q, s) for s in choices) for q in queries])
    np.testing.assert_array_equal(res.distance, ref)
    assert res.n_exact < 0.75 * res.n_pairs  # unstructured digits: the LCS bound still removes a good share


def test_memory_bounded_blocks_stay_exact(monkeypatch):
    from tabmem.neighbors import levenshtein

    rng = np.random.default_rng(6)
    choices = random_rows(rng, 200, lo=5, hi=30)
    queries = random_rows(rng, 25, lo=5, hi=30)
    full = LevenshteinIndex(n_jobs=1).fit(choices).query(queries)
    monkeypatch.setattr(levenshtein, "_BLOCK_BYTES", 16 * len(choices) * 3)  # 3 queries per block
    small = LevenshteinIndex(n_jobs=1).fit(choices).query(queries)
    np.testing.assert_array_equal(full.distance, small.distance)
    np.testing.assert_array_equal(full.index, small.index)
