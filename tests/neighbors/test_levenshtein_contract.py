"""LevenshteinIndex's public contract: messages, result types, what ``n_exact`` counts, block sizes."""

from __future__ import annotations

import re
from types import SimpleNamespace

import numpy as np
import pytest
from rapidfuzz import process
from rapidfuzz.distance import Levenshtein

from tabmem.errors import TabmemError
from tabmem.neighbors import levenshtein
from tabmem.neighbors.levenshtein import LevenshteinIndex, min_levenshtein


def brute(queries: list[str], strings: list[str]) -> list[int]:
    return [min(Levenshtein.distance(q, s) for s in strings) for q in queries]


def rows(rng: np.random.Generator, n: int, alphabet: str, lo: int, hi: int) -> list[str]:
    chars = np.array(list(alphabet))
    return ["".join(rng.choice(chars, int(rng.integers(lo, hi + 1)))) for _ in range(n)]


def whole(message: str) -> str:
    return "^" + re.escape(message) + "$"


@pytest.mark.parametrize("call", ["fit", "query", "lower_bounds"])
def test_a_single_string_is_refused_naming_the_argument(call: str) -> None:
    name = "strings" if call == "fit" else "queries"
    idx = LevenshteinIndex(n_jobs=1).fit(["a"])
    with pytest.raises(TabmemError, match=whole(f"{name}: expected a sequence of strings, got a single string")):
        getattr(idx, call)("abc")


def test_non_strings_are_refused_with_count_and_first_five_positions() -> None:
    items = ["a", 1, "b", None, 2.0, b"x", 3, 4, 5, "c"]
    with pytest.raises(
        TabmemError, match=whole("strings: 7 item(s) are not strings (first positions: [1, 3, 4, 5, 6])")
    ):
        LevenshteinIndex().fit(items)
    with pytest.raises(TabmemError, match=whole("queries: 1 item(s) are not strings (first positions: [0])")):
        LevenshteinIndex(n_jobs=1).fit(["a"]).query([7])


def test_fit_and_query_messages() -> None:
    with pytest.raises(
        TabmemError, match=whole("LevenshteinIndex.fit: no strings to index (the synthetic table is empty)")
    ):
        LevenshteinIndex().fit([])
    with pytest.raises(TabmemError, match=whole("LevenshteinIndex is not fitted: call fit(strings) first")):
        LevenshteinIndex().query(["a"])


@pytest.mark.parametrize("block_size", [0, -3, 2.5, "8", None])
def test_bad_block_size_is_refused(block_size) -> None:
    message = f"LevenshteinIndex: block_size must be a positive integer, got {block_size!r}"
    with pytest.raises(TabmemError, match=whole(message)):
        LevenshteinIndex(block_size=block_size).fit(["a"])


def test_block_size_one_is_accepted() -> None:
    res = LevenshteinIndex(n_jobs=1, block_size=1).fit(["abc", "xy"]).query(["abd", "x", "xy"])
    assert res.distance.tolist() == [1, 1, 0]


def test_strings_of_two_to_the_24_characters_are_refused() -> None:
    # bounds are float32, exact below 2**24: the message names the limit, and it starts at 2**24 itself
    huge = "a" * (1 << 24)
    with pytest.raises(TabmemError, match=whole("strings: strings of 2**24 characters or more are not supported")):
        LevenshteinIndex(n_jobs=1).fit(["b", huge])
    idx = LevenshteinIndex(n_jobs=1).fit(["b"])
    with pytest.raises(TabmemError, match=whole("queries: strings of 2**24 characters or more are not supported")):
        idx.query(["b", huge])


def test_empty_query_has_the_types_of_a_full_one() -> None:
    idx = LevenshteinIndex(n_jobs=1).fit(["abc", "ab"])
    full = idx.query(["abd", "ab"])
    empty = idx.query([])
    for got, ref in ((empty.distance, full.distance), (empty.index, full.index)):
        assert isinstance(got, np.ndarray) and got.shape == (0,)
        assert got.dtype == ref.dtype and np.issubdtype(got.dtype, np.integer)
    assert (empty.n_exact, empty.n_pairs) == (0, 0)
    assert full.distance.tolist() == [1, 0] and full.n_pairs == 4


def test_learned_lengths_are_integers() -> None:
    idx = LevenshteinIndex(n_jobs=1).fit(["abc", "", "é€x1"])
    assert np.issubdtype(idx.lengths_.dtype, np.integer)
    assert idx.lengths_.tolist() == [3, 0, 4]


def test_exact_copies_cost_no_exact_evaluation() -> None:
    strings = ["abc", "xyz", "abc", "hello", "wörld"]
    res = LevenshteinIndex(n_jobs=1).fit(strings).query(["wörld", "abc", "xyz"])
    assert res.distance.tolist() == [0, 0, 0]
    assert [strings[j] for j in res.index] == ["wörld", "abc", "xyz"]
    assert res.n_exact == 0


def test_n_exact_counts_the_exact_evaluations_made(monkeypatch) -> None:
    """``n_exact`` equals the edit distances actually computed (direct calls plus strings handed to extractOne)."""
    real_distance, real_extract = Levenshtein.distance, process.extractOne
    made = {"n": 0}

    def distance(a, b, **kwargs):
        made["n"] += 1
        return real_distance(a, b, **kwargs)

    def extract_one(query, choices, **kwargs):
        made["n"] += len(choices)
        return real_extract(query, choices, **{**kwargs, "scorer": real_distance})

    monkeypatch.setattr(levenshtein, "Levenshtein", SimpleNamespace(distance=distance))
    monkeypatch.setattr(levenshtein, "process", SimpleNamespace(extractOne=extract_one, cdist=process.cdist))
    rng = np.random.default_rng(21)
    strings = rows(rng, 400, "0123456789", 20, 30)
    queries = strings[:5] + [s[:4] + "x" + s[5:] for s in strings[5:15]] + rows(rng, 15, "0123456789", 20, 30)
    res = LevenshteinIndex(n_jobs=1, block_size=8).fit(strings).query(queries)
    assert res.distance.tolist() == brute(queries, strings)
    assert 0 < res.n_exact == made["n"] < res.n_pairs


def test_blocks_respect_block_size_and_the_memory_budget(monkeypatch) -> None:
    real = levenshtein._search_block
    sizes: list[int] = []

    def spy(index, queries):
        sizes.append(len(queries))
        return real(index, queries)

    monkeypatch.setattr(levenshtein, "_search_block", spy)
    rng = np.random.default_rng(22)
    strings = rows(rng, 50, "abc01", 3, 12)
    queries = rows(rng, 7, "abc01", 3, 12)
    res = LevenshteinIndex(n_jobs=1, block_size=1).fit(strings).query(queries)
    assert sizes == [1] * 7 and res.distance.tolist() == brute(queries, strings)
    sizes.clear()
    # a budget of 16 bytes x 50 strings x 3 queries: blocks of at most 3 queries, whatever block_size
    monkeypatch.setattr(levenshtein, "_BLOCK_BYTES", 16 * 50 * 3)
    res = LevenshteinIndex(n_jobs=1, block_size=64).fit(strings).query(queries)
    assert max(sizes) <= 3 and sum(sizes) == 7 and res.distance.tolist() == brute(queries, strings)


def test_trailing_nul_characters_count() -> None:
    # numpy's fixed-width unicode arrays drop trailing NULs; the search must not. 23 anagrams of
    # "abcd" (bag bound 0, distance >= 2) come first, then "abcd\0" (bound 1, distance 1)
    from itertools import permutations

    anagrams = ["".join(p) for p in permutations("abcd") if "".join(p) != "abcd"]
    strings = anagrams + ["abcd\x00", "abcd\x00\x00\x00"]
    res = LevenshteinIndex(n_jobs=1).fit(strings).query(["abcd", "abcd\x00\x00"])
    assert res.distance.tolist() == [1, 1]
    rng = np.random.default_rng(23)
    strings = rows(rng, 120, "ab\x00", 0, 8)
    queries = rows(rng, 40, "ab\x00", 0, 8)
    assert LevenshteinIndex(n_jobs=1).fit(strings).query(queries).distance.tolist() == brute(queries, strings)


def test_min_levenshtein_passes_n_jobs() -> None:
    res = min_levenshtein(["abd", "xyzw", "ab"], ["abc", "xyz", "ab"], n_jobs=1)
    assert res.distance.tolist() == [1, 1, 0]
    with pytest.raises(
        TabmemError, match=r"^n_jobs must be a non-zero integer or None \(None/-1: all available CPUs\), got 0$"
    ):
        min_levenshtein(["abd"], ["abc"], n_jobs=0)
