"""LevenshteinIndex.lower_bounds against a Counter-based bag distance written here.

The bag distance of q and s is ``max(|q|, |s|) - sum_c min(n_c(q), n_c(s))`` (module docstring of
``tabmem.neighbors.levenshtein``). Documented relaxations: the 96 most frequent characters of the
indexed strings keep their own count; the others share one count (``min`` of the sums); a character
whose count range over the indexed strings is wider than 48 is quantised upward, which may only lower
the bound, and never below the length difference.
"""

from __future__ import annotations

from collections import Counter
from math import ceil

import numpy as np

from tabmem.neighbors.levenshtein import LevenshteinIndex

MAX_UNARY = 48  # count range kept exact per character (documented next to _MAX_UNARY)


def bag(q: str, s: str) -> int:
    return max(len(q), len(s)) - sum((Counter(q) & Counter(s)).values())


def merged_bag(q: str, s: str, own: set[str]) -> int:
    """Bag distance where the characters outside ``own`` share one count."""
    cq, cs = Counter(q), Counter(s)
    shared = sum(min(cq[c], cs[c]) for c in own)
    rest_q = sum(n for c, n in cq.items() if c not in own)
    rest_s = sum(n for c, n in cs.items() if c not in own)
    return max(len(q), len(s)) - shared - min(rest_q, rest_s)


def test_bound_is_the_exact_bag_distance_when_count_ranges_are_narrow() -> None:
    # every character's count range over the indexed strings is <= 48, but 'a' counts start at 50:
    # the bound is the exact bag distance, also for query counts outside that range and for
    # characters no indexed string has ('z')
    rng = np.random.default_rng(11)
    other = np.array(list("bcd01"))
    choices = [
        "a" * int(rng.integers(50, 61)) + "".join(rng.choice(other, int(rng.integers(0, 21)))) for _ in range(30)
    ]
    choices = ["".join(rng.permutation(list(s))) for s in choices]  # mixed order
    queries = choices[:3] + [
        "a" * k + "".join(rng.choice(np.array(list("bcd01z")), int(rng.integers(0, 25))))
        for k in (0, 3, 49, 55, 61, 80)
    ]
    lb = LevenshteinIndex(n_jobs=1).fit(choices).lower_bounds(queries)
    assert np.issubdtype(lb.dtype, np.integer)
    np.testing.assert_array_equal(lb, [[bag(q, s) for s in choices] for q in queries])


def test_single_count_column() -> None:
    # one character whose count ranges over 0..1: a single unary column
    idx = LevenshteinIndex(n_jobs=1).fit(["a", ""])
    queries = ["a", "", "aa", "b"]
    np.testing.assert_array_equal(idx.lower_bounds(queries), [[bag(q, s) for s in ["a", ""]] for q in queries])


def test_no_queries_give_an_empty_matrix() -> None:
    lb = LevenshteinIndex(n_jobs=1).fit(["ab", "c", ""]).lower_bounds([])
    assert lb.shape == (0, 3)


def test_frequent_characters_keep_their_own_count() -> None:
    rng = np.random.default_rng(12)
    frequent = [chr(0x100 + i) for i in range(96)]
    rare = [chr(0x300 + i) for i in range(10)]  # each once in the indexed strings: merged
    choices = ["".join(frequent[i : i + 12]) for i in range(0, 96, 12)] * 2  # every frequent one twice
    choices += ["".join(rng.choice(frequent, 15)) for _ in range(20)]
    choices += ["".join(rare[:5] + frequent[:3]), "".join(rare[5:] + frequent[3:6])]
    pool = np.array(frequent + rare + ["x"])  # "x": seen in no indexed string, also merged
    queries = ["".join(rng.choice(pool, int(rng.integers(0, 30)))) for _ in range(25)]
    lb = LevenshteinIndex(n_jobs=1).fit(choices).lower_bounds(queries)
    np.testing.assert_array_equal(lb, [[merged_bag(q, s, set(frequent)) for s in choices] for q in queries])
    exact = np.array([[bag(q, s) for s in choices] for q in queries])
    assert (lb <= exact).all()


def _check_quantised(choices: list[str], queries: list[str]) -> np.ndarray:
    idx = LevenshteinIndex(n_jobs=1).fit(choices)
    lb = idx.lower_bounds(queries)
    counts = [Counter(s) for s in choices]
    chars = set().union(*counts)
    # the documented quantisation step of each character: ceil(count range / 48)
    loss = sum(ceil((max(c[x] for c in counts) - min(c[x] for c in counts)) / MAX_UNARY) - 1 for x in chars)
    for i, q in enumerate(queries):
        for j, s in enumerate(choices):
            b = bag(q, s)
            assert abs(len(q) - len(s)) <= lb[i, j] <= b, (q, s)
            assert lb[i, j] >= b - loss, (q, s)  # quantising upward loses less than one step per character
    return lb


def test_quantised_counts_stay_between_the_length_difference_and_the_bag_distance() -> None:
    # 'a' ranges over 0..96 (step 2), then 0..100 (step 3, 100 not a multiple of it), 0..300 (step 7)
    for top in (96, 100, 300):
        choices = ["", "a" * 37, "a" * top, "a" * top + "b", "b" * 10]
        queries = ["a", "a" * 3, "a" * 47, "a" * (top - 1), "a" * top + "c", "a" * 48 + "b" * 10, "a" * (top + 20)]
        lb = _check_quantised(choices, queries)
        # strings of one repeated character: the edit distance is the length difference, and so is the bound
        unary = [(i, j) for i, q in enumerate(queries) for j, s in enumerate(choices) if set(q + s) <= {"a"}]
        for i, j in unary:
            assert lb[i, j] == abs(len(queries[i]) - len(choices[j]))


def test_quantisation_bounds_the_code_width() -> None:
    # one character with counts 0..300: at most 48 unary columns, not 300
    idx = LevenshteinIndex(n_jobs=1).fit(["a" * 300, ""])
    assert idx.codes_t_.shape[0] <= MAX_UNARY and idx.codes_t_.shape[1] == 2
    np.testing.assert_array_equal(idx.lower_bounds(["a" * 299, "a"]), [[1, 299], [299, 1]])
