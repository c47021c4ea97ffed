"""The torch device path (``--device cuda``) gives the numpy path's neighbours and distances, bit for bit.

No GPU here: torch's CPU device stands in (the hidden device ``"torch-cpu"``), which runs the same
torch code as CUDA. Each table is searched by the numpy path and by the device path (several
blocks, so block boundaries are crossed) and the results must be identical; the device path is
also checked against a float64 brute force, and spied on so that a silent fallback to numpy cannot
pass. Tables: mixed with missing values on either side, ties (duplicated reference rows, integer
values), near-ties below float32's resolution, categorical-only, numerical-only, queries far outside the reference (l2's exact fallback),
fewer reference rows than k. LevAtt's bag bounds and its whole search likewise.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import torch

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "memorization"))
from brute import all_distances  # noqa: E402

from tabmem import Schema  # noqa: E402
from tabmem.errors import ParameterError, TabmemError  # noqa: E402
from tabmem.neighbors import NeighborIndex, device  # noqa: E402
from tabmem.neighbors.levenshtein import LevenshteinIndex  # noqa: E402

pytestmark = pytest.mark.device
DISTANCES = ("gower", "fang2024", "l2")


def table(kind: str, n: int, rng: np.random.Generator) -> tuple[pd.DataFrame, Schema]:
    """A random table of ``kind``: mixed (with NaN), ties, near (differences below float32's resolution), categorical,
    numerical."""
    cols: dict[str, np.ndarray] = {}
    if kind == "near":  # float32 keys cannot order these rows: the exact re-check must
        cols["x"] = rng.choice([0.0, 1000.0], n) + rng.integers(0, 40, n) * 1e-9
        cols["y"] = rng.choice([-5.0, 5.0], n) - rng.integers(0, 40, n) * 1e-9
        cols["c"] = rng.choice(["a", "b"], n)
    if kind in ("mixed", "numerical", "ties"):
        cols["x"] = rng.integers(0, 4, n).astype(float) if kind == "ties" else rng.normal(0.0, 3.0, n)
        cols["y"] = rng.integers(0, 3, n).astype(float) if kind == "ties" else rng.uniform(-1.0, 9.0, n)
    if kind in ("mixed", "categorical", "ties"):
        cols["c"] = rng.choice(["a", "b", "e"], n)
        cols["d"] = rng.choice(["u", "v"], n)
    df = pd.DataFrame(cols)
    num = tuple(c for c in ("x", "y") if c in df)
    cat = tuple(c for c in ("c", "d") if c in df)
    return df, Schema(tuple(df.columns), num, cat)


def tables(kind: str, n_ref: int = 120, n_q: int = 70, seed: int = 0):
    rng = np.random.default_rng(seed)
    ref, schema = table(kind, n_ref, rng)
    q, _ = table(kind, n_q, rng)
    if kind == "ties":
        ref = pd.concat([ref, ref.iloc[:30]], ignore_index=True)  # duplicated reference rows
        q = pd.concat([q, ref.iloc[:10]], ignore_index=True)  # exact copies among the queries
    if kind == "mixed":
        ref.loc[rng.random(len(ref)) < 0.15, "y"] = np.nan
        q.loc[rng.random(len(q)) < 0.2, "y"] = np.nan
        q.loc[rng.random(len(q)) < 0.1, "x"] = np.nan  # missing only on the query side
    return ref, q, schema


@pytest.fixture
def spy(monkeypatch):
    """Counts the device searches of query blocks (a fallback to numpy would leave it at 0)."""
    calls = {"blocks": 0, "bounds": 0}
    search, bounds = device._search, device.bag_bounds

    def counted_search(*args, **kwargs):
        calls["blocks"] += 1
        return search(*args, **kwargs)

    def counted_bounds(*args, **kwargs):
        calls["bounds"] += 1
        return bounds(*args, **kwargs)

    monkeypatch.setattr(device, "_search", counted_search)
    monkeypatch.setattr(device, "bag_bounds", counted_bounds)
    return calls


def both(index: NeighborIndex, q: pd.DataFrame, k: int, block_rows: int = 16):
    numpy_result = index.kneighbors(q, k=k)
    with device.use_device(device.TORCH_CPU):
        device_result = index.kneighbors(q, k=k, block_rows=block_rows)
    return numpy_result, device_result


@pytest.mark.parametrize("distance", DISTANCES)
@pytest.mark.parametrize("kind", ["mixed", "ties", "near", "categorical", "numerical"])
def test_device_path_equals_numpy_path_bit_for_bit(distance, kind, spy) -> None:
    ref, q, schema = tables(kind)
    index = NeighborIndex(distance, n_jobs=1).fit(ref, schema)
    for k in (1, 2, 5):
        (i_np, d_np), (i_dev, d_dev) = both(index, q, k)
        np.testing.assert_array_equal(i_dev, i_np)
        np.testing.assert_array_equal(d_dev, d_np)  # exact: the same float64 re-check on the host
    assert spy["blocks"] == 3 * -(-len(q) // 16)
    assert device.current() is None  # the block does not leak


@pytest.mark.parametrize("distance", DISTANCES)
@pytest.mark.parametrize("kind", ["ties", "categorical", "numerical"])
def test_device_path_against_float64_brute_force(distance, kind) -> None:
    ref, q, schema = tables(kind, seed=1)
    k = 3
    index = NeighborIndex(distance, n_jobs=1).fit(ref, schema)
    with device.use_device(device.TORCH_CPU):
        idx, dist = index.kneighbors(q, k=k, block_rows=25)
    brute = all_distances(ref, q, schema, distance)
    order = np.lexsort((np.broadcast_to(np.arange(len(ref)), brute.shape), brute), axis=1)[:, :k]
    expected = np.take_along_axis(brute, order, axis=1)
    np.testing.assert_allclose(dist, expected, rtol=1e-12, atol=1e-12)
    # the neighbours returned are at the distances found: none is missed
    np.testing.assert_allclose(np.take_along_axis(brute, idx, axis=1), expected, rtol=1e-12, atol=1e-12)
    # on exact ties (duplicated rows), the lowest index comes first
    tied = np.isclose(dist[:, :1], dist[:, 1:2], rtol=0, atol=0)
    assert (idx[tied[:, 0], 0] < idx[tied[:, 0], 1]).all()


def test_far_queries_and_wild_reference_rows_take_the_exact_fallback(spy) -> None:
    rng = np.random.default_rng(3)
    ref, q, schema = tables("numerical", n_ref=60, n_q=20, seed=3)
    q.loc[[0, 5], "x"] = 3e14  # beyond 2^40 reference spreads: l2 evaluates these rows exactly
    for name in DISTANCES:
        index = NeighborIndex(name, n_jobs=1).fit(ref, schema)
        (i_np, d_np), (i_dev, d_dev) = both(index, q, 2, block_rows=7)
        np.testing.assert_array_equal(i_dev, i_np)
        np.testing.assert_array_equal(d_dev, d_np)
    # an encoder fitted on another table puts reference rows far outside it (l2's "wild" rows)
    small = ref.assign(x=rng.normal(0, 1e-3, len(ref)))
    wide = ref.copy()
    wide.loc[[1, 2], "x"] = 5e14
    base = NeighborIndex("l2", n_jobs=1).fit(small, schema)
    index = NeighborIndex("l2", n_jobs=1).fit(wide, encoder=base.encoder_)
    (i_np, d_np), (i_dev, d_dev) = both(index, q, 3, block_rows=6)
    np.testing.assert_array_equal(i_dev, i_np)
    np.testing.assert_array_equal(d_dev, d_np)


@pytest.mark.parametrize("distance", DISTANCES)
@pytest.mark.parametrize("n_ref", [1, 3])
def test_fewer_reference_rows_than_k(distance, n_ref) -> None:
    ref, q, schema = tables("mixed", n_ref=n_ref, n_q=9, seed=4)
    index = NeighborIndex(distance, n_jobs=1).fit(ref, schema)
    (i_np, d_np), (i_dev, d_dev) = both(index, q, 5, block_rows=4)
    np.testing.assert_array_equal(i_dev, i_np)
    np.testing.assert_array_equal(d_dev, d_np)
    assert (i_dev[:, n_ref:] == -1).all() and np.isinf(d_dev[:, n_ref:]).all()


def test_refitting_moves_the_new_reference_to_the_device() -> None:
    ref, q, schema = tables("numerical", seed=5)
    dist = NeighborIndex("gower", n_jobs=1).fit(ref, schema).distance_
    index = NeighborIndex(dist, n_jobs=1)
    first = index.fit(ref, schema)
    with device.use_device(device.TORCH_CPU):
        a = first.kneighbors(q, k=2)
        first.fit(ref.iloc[::-1].reset_index(drop=True), schema)  # the same object, another reference
        b = first.kneighbors(q, k=2)
    np.testing.assert_array_equal(b[0], first.kneighbors(q, k=2)[0])
    assert not np.array_equal(a[0], b[0])


def strings(rng: np.random.Generator, n: int, alphabet: str, length: tuple[int, int]) -> list[str]:
    return ["".join(rng.choice(list(alphabet), rng.integers(*length))) for _ in range(n)]


@pytest.mark.parametrize("case", ["digits", "quantised", "unicode"])
def test_levatt_bag_bounds_and_search_on_the_device(case, spy) -> None:
    rng = np.random.default_rng(6)
    if case == "digits":
        ref, q = strings(rng, 150, "0123456789,.-", (5, 30)), strings(rng, 40, "0123456789,.-", (5, 30))
    elif case == "quantised":  # count ranges wider than 48: quantised unary codes
        ref = strings(rng, 80, "ab", (1, 200))
        q = strings(rng, 30, "abc", (1, 220))
    else:  # more than 96 distinct characters: a shared "other" bucket
        alphabet = "".join(chr(c) for c in range(0x100, 0x100 + 140))
        ref, q = strings(rng, 90, alphabet, (3, 25)), strings(rng, 30, alphabet, (3, 25))
    q = q + ref[:5]  # exact copies: distance 0
    index = LevenshteinIndex(n_jobs=1, block_size=8).fit(ref)
    lb_np = index.lower_bounds(q)
    res_np = index.query(q)
    with device.use_device(device.TORCH_CPU):
        lb_dev = index.lower_bounds(q)
        res_dev = index.query(q)
    np.testing.assert_array_equal(lb_dev, lb_np)
    np.testing.assert_array_equal(res_dev.distance, res_np.distance)
    np.testing.assert_array_equal(res_dev.index, res_np.index)
    assert res_dev.n_exact == res_np.n_exact
    assert spy["bounds"] > 1
    if case == "quantised":
        assert index.encoder_.quantised


def test_device_names_and_missing_cuda(monkeypatch) -> None:
    assert device.torch_device("cpu") is None
    assert device.torch_device("torch-cpu") == torch.device("cpu")
    assert device.check_device(" CUDA:1 ") == "cuda:1"
    with pytest.raises(ParameterError, match="'tpu' is not a device"):
        device.check_device("tpu")
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    with pytest.raises(TabmemError, match="no CUDA device is available") as err:
        device.torch_device("cuda", "--device")
    assert str(err.value).startswith("--device cuda:") and "\n" not in str(err.value)
    with pytest.raises(TabmemError, match="no CUDA device"):
        with device.use_device("cuda"):
            pass


def test_numpy_default_never_imports_torch() -> None:
    code = (
        "import sys, numpy as np, pandas as pd\n"
        "import tabmem, tabmem.cli.audit, tabmem.cli.attack\n"
        "from tabmem import Schema\n"
        "from tabmem.neighbors import NeighborIndex, device\n"
        "df = pd.DataFrame({'x': [0.0, 1.0, 3.0], 'c': ['a', 'b', 'a']})\n"
        "with device.use_device('cpu'):\n"
        "    NeighborIndex('gower', n_jobs=1).fit(df, Schema(('x', 'c'), ('x',), ('c',))).kneighbors(df, k=2)\n"
        "assert 'torch' not in sys.modules, 'torch was imported'\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]


def test_full_precision_whatever_the_caller_set(monkeypatch) -> None:
    """TF32 / bf16 GEMMs would break the bounds: the search forces IEEE float32 and restores the setting."""
    seen = []
    search = device._search

    def recording(*args, **kwargs):
        seen.append((torch.backends.cuda.matmul.fp32_precision, torch.backends.mkldnn.matmul.fp32_precision))
        return search(*args, **kwargs)

    monkeypatch.setattr(device, "_search", recording)
    ref, q, schema = tables("numerical", seed=7)
    index = NeighborIndex("l2", n_jobs=1).fit(ref, schema)
    before = torch.backends.cuda.matmul.fp32_precision, torch.backends.mkldnn.matmul.fp32_precision
    try:
        torch.backends.cuda.matmul.fp32_precision = "tf32"
        torch.backends.mkldnn.matmul.fp32_precision = "bf16"
        with device.use_device(device.TORCH_CPU):
            index.kneighbors(q, k=2)
        assert seen and set(seen) == {("ieee", "ieee")}
        assert (torch.backends.cuda.matmul.fp32_precision, torch.backends.mkldnn.matmul.fp32_precision) == (
            "tf32",
            "bf16",
        )
    finally:
        torch.backends.cuda.matmul.fp32_precision, torch.backends.mkldnn.matmul.fp32_precision = before


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
@pytest.mark.parametrize("distance", DISTANCES)
def test_cuda_equals_numpy(distance) -> None:
    """On a machine with a GPU: the real device, larger blocks, every kind of table."""
    for kind in ("mixed", "ties", "near", "categorical", "numerical"):
        ref, q, schema = tables(kind, n_ref=3000, n_q=700, seed=8)
        index = NeighborIndex(distance, n_jobs=1).fit(ref, schema)
        numpy_result = index.kneighbors(q, k=3)
        with device.use_device("cuda"):
            cuda_result = index.kneighbors(q, k=3)
        np.testing.assert_array_equal(cuda_result[0], numpy_result[0])
        np.testing.assert_array_equal(cuda_result[1], numpy_result[1])


def test_levatt_worker_processes_stay_off_the_device(monkeypatch) -> None:
    """Forked workers cannot use the parent's CUDA context: they compute their bounds on their CPU."""
    import tabmem.neighbors.levenshtein as lev

    rng = np.random.default_rng(9)
    ref, q = strings(rng, 120, "0123456789,.", (5, 25)), strings(rng, 40, "0123456789,.", (5, 25))
    index = LevenshteinIndex(n_jobs=2, block_size=8).fit(ref)
    expected = index.query(q)

    def refuse(*args, **kwargs):
        raise AssertionError("a worker process used the device")

    monkeypatch.setattr(lev, "_PARALLEL_MIN_PAIRS", 0)  # worker processes even for this small search
    monkeypatch.setattr(device, "bag_bounds", refuse)
    with device.use_device(device.TORCH_CPU):
        found = index.query(q)
    np.testing.assert_array_equal(found.distance, expected.distance)
    np.testing.assert_array_equal(found.index, expected.index)


def test_ceil32_is_the_smallest_float32_not_below() -> None:
    """Near-ties are fetched by comparing float32 keys with the bound rounded up to float32: no key may be lost."""
    rng = np.random.default_rng(10)
    x = np.concatenate([rng.normal(0, 10, 500), rng.normal(0, 1e-30, 50), [0.0, 1.0, -1.5, 1e39, -1e39, 3.4e38]])
    with np.errstate(over="ignore"):
        grid = x.astype(np.float32).astype(np.float64)  # values exactly on the float32 grid too
    x = np.concatenate([x, grid[np.isfinite(grid)]])
    y = device._ceil32(x)
    assert y.dtype == np.float32
    assert (y.astype(np.float64) >= x).all()
    with np.errstate(over="ignore"):
        below = np.nextafter(y, np.float32(-np.inf)).astype(np.float64)
    assert (below < x).all()


@pytest.mark.parametrize("kind", ["ties", "near"])
def test_near_ties_fetched_in_small_groups(kind, monkeypatch) -> None:
    """Near-ties and fang2024's bands come back in groups of at most a few pairs (bounded memory): same results."""
    monkeypatch.setattr(device, "_HIT_PAIRS", 5)  # most groups one row, many rows alone above the limit
    ref, q, schema = tables(kind, seed=11)
    for name in DISTANCES:
        index = NeighborIndex(name, n_jobs=1).fit(ref, schema)
        (i_np, d_np), (i_dev, d_dev) = both(index, q, 3, block_rows=32)
        np.testing.assert_array_equal(i_dev, i_np)
        np.testing.assert_array_equal(d_dev, d_np)


def test_device_out_of_memory_is_one_clear_error(monkeypatch) -> None:
    def exhausted(*args, **kwargs):
        raise torch.cuda.OutOfMemoryError("CUDA out of memory. Tried to allocate 2.00 GiB")

    monkeypatch.setattr(device, "_search", exhausted)
    ref, q, schema = tables("numerical", seed=12)
    index = NeighborIndex("l2", n_jobs=1).fit(ref, schema)
    with device.use_device(device.TORCH_CPU), pytest.raises(TabmemError, match="out of memory .* lower memory_budget"):
        index.kneighbors(q, k=2)
