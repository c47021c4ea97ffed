"""The exact neighbour search and LevAtt's bag bounds with their dense work done by torch on a device.

numpy stays the default (``device="cpu"``); ``use_device("cuda")`` (``--device cuda`` on ``tabmem
audit`` and ``tabmem attack``) makes every :meth:`NeighborIndex.kneighbors` inside the block
compute its distance blocks with torch on that device, and :class:`LevenshteinIndex` its bag-distance
bounds. torch is imported only here, and only when a torch device is asked for.

Same results as the numpy path, by the same proof (:mod:`tabmem.neighbors.blocked`): the fast pass
on the device gives a key matrix whose error is within the numpy pass's ``margin`` (the float32 and
float64 GEMMs and element-wise passes have the same rounding bounds whatever the summation order
or FMA use, so the distance's bounds carry over unchanged), the ``k + 1`` smallest keys per row
are selected on the device (``topk``; which of several equal keys it takes does not matter: the
proof needs only that every other row's key is at least the ``(k+1)``-th), and only those
candidates, with their indices, come back to the host, where they are re-checked **exactly in
float64 by the distance's own numpy code** (``Block.exact``). The answer is the (distance, index)
order of the exact values, which does not depend on which valid keys led there: neighbours and
distances equal the numpy path's bit for bit. The re-check stays on the host because it touches
``k + 1`` pairs per row (negligible next to the ``n_ref`` cells of the fast pass) and because the
exact values are then computed by one piece of code whatever the device. Near-ties fetch only the
indices whose key can still compete (float32 keys against the bound rounded up to float32: the
same set as a float64 comparison), in groups of bounded size. TF32 and reduced-precision GEMMs
would break the bounds: the search forces IEEE float32 matmuls (:func:`_full_precision`).

The device path has no categorical pruning (on a GPU the dense block is cheaper than the pruning's
host-side bookkeeping; both are exact) and no worker threads (the device is the parallelism).
Distances other than ``gower``, ``fang2024`` and ``l2`` (subclasses, user-registered ones) keep the
numpy path; so do forked worker processes (:func:`not_in_workers`).
The hidden device ``"torch-cpu"`` runs the torch path on the CPU: tests and the benchmark use it
where no GPU is present.
"""

from __future__ import annotations

import contextlib
import weakref
from collections.abc import Callable, Iterator
from contextvars import ContextVar
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from tabmem.errors import ParameterError, TabmemError, suggest
from tabmem.neighbors.distances import (
    EPS32,
    EPS64,
    Distance,
    Fang2024Distance,
    GowerDistance,
    L2Distance,
    Queries,
)

if TYPE_CHECKING:
    import torch

__all__ = [
    "DEVICES",
    "TORCH_CPU",
    "bag_bounds",
    "check_device",
    "current",
    "kneighbors",
    "not_in_workers",
    "supports",
    "torch_device",
    "use_device",
]

#: device names a user passes (``cuda:N`` picks a GPU); ``"cpu"`` is the numpy path
DEVICES = ("cpu", "cuda")
#: hidden device: the torch path on torch's CPU device (tests and benchmarks without a GPU)
TORCH_CPU = "torch-cpu"
BYTES_PER_CELL = 16  # device memory per query x reference cell (fang2024: float64 S + float32 key; gower <= 10)
MAX_BLOCK_ROWS = 8192
#: fang2024's bounds allow 2^-140 for float32 subnormals; a device that flushed them to zero would err
#: by up to 2^-126: every device bound of fang2024 carries this much more (gower's and l2's slack
#: is >= 1e-12 already). PyTorch's builds keep subnormals; this only keeps the proof independent of it.
_FTZ = 2.0**-125
_HIT_PAIRS = 1 << 20  # (query, reference) pairs of near-ties or bands fetched from the device at a time

_CURRENT: ContextVar[Any] = ContextVar("tabmem_search_device", default=None)
_REF_CACHE: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()  # fitted object -> {device: tensors}


# ----------------------------------------------------------------------------- choosing the device
def check_device(device: str, option: str = "device") -> str:
    """``device`` if it names a device (``cpu``, ``cuda``, ``cuda:N``, the hidden ``torch-cpu``), else one clear error.

    ``option`` names the setting in messages (``"--device"`` under the command line).
    """
    name = str(device).strip().lower()
    if name in DEVICES or name == TORCH_CPU:
        return name
    if name.startswith("cuda:") and name[5:].isdigit():
        return name
    raise ParameterError(f"{option}: {device!r} is not a device (use cpu, cuda or cuda:N)")


def torch_device(device: str, option: str = "device") -> "torch.device | None":
    """The torch device of ``device`` (``None`` for ``"cpu"``: the numpy path); one clear error when it is absent."""
    name = check_device(device, option)
    if name == "cpu":
        return None
    try:
        import torch
    except ImportError as exc:  # pragma: no cover - torch is in the test environment
        raise TabmemError(
            f"{option} {name}: needs torch, which is not installed (pip install 'tabmem[torch]')"
        ) from exc
    if name == TORCH_CPU:
        return torch.device("cpu")
    if not torch.cuda.is_available():
        raise TabmemError(
            f"{option} {name}: no CUDA device is available on this machine (torch {torch.__version__} sees none); "
            "use cpu"
        )
    dev = torch.device(name)
    if dev.index is not None and dev.index >= torch.cuda.device_count():
        raise TabmemError(f"{option} {name}: this machine has {torch.cuda.device_count()} CUDA device(s)")
    return dev


@contextlib.contextmanager
def use_device(device: str | None) -> Iterator["torch.device | None"]:
    """Within the block, exact neighbour searches and LevAtt's bag bounds run on ``device`` (``None``/``"cpu"``: numpy)."""
    dev = None if device is None else torch_device(device)
    token = _CURRENT.set(dev)
    try:
        yield dev
    finally:
        _CURRENT.reset(token)


def current() -> "torch.device | None":
    """The torch device of the enclosing :func:`use_device` block (``None``: the numpy path)."""
    return _CURRENT.get()


def not_in_workers() -> None:
    """Called first in a forked worker process: its searches take the numpy path (CUDA cannot be used after a fork)."""
    _CURRENT.set(None)


def supports(distance: Distance) -> bool:
    """Whether the device path has this distance's fast pass (exact types: a subclass may change the block)."""
    return type(distance) in (Fang2024Distance, GowerDistance, L2Distance)


@contextlib.contextmanager
def _full_precision() -> Iterator[None]:
    """float32 GEMMs in IEEE float32 (no TF32 or bf16 shortcuts, whatever the caller set): the error bounds assume it.

    torch's per-backend setting where it has one (mixing it with the legacy global one is an error
    in torch >= 2.9), else the legacy ``set_float32_matmul_precision``; restored on exit.
    """
    import torch

    backends = [getattr(torch.backends, name, None) for name in ("cuda", "mkldnn")]
    matmuls = [b.matmul for b in backends if hasattr(getattr(b, "matmul", None), "fp32_precision")]
    if matmuls:
        saved = [m.fp32_precision for m in matmuls]
        for m in matmuls:
            m.fp32_precision = "ieee"
        try:
            yield
        finally:
            for m, value in zip(matmuls, saved):
                m.fp32_precision = value
        return
    prev = torch.get_float32_matmul_precision()  # pragma: no cover - torch < 2.9
    torch.set_float32_matmul_precision("highest")  # pragma: no cover
    try:  # pragma: no cover
        yield
    finally:  # pragma: no cover
        torch.set_float32_matmul_precision(prev)


def _on(x: np.ndarray, dev: "torch.device") -> "torch.Tensor":
    import torch

    return torch.as_tensor(np.ascontiguousarray(x), device=dev)


def _reference(
    owner: object, fitted: object, dev: "torch.device", build: Callable[[], dict[str, np.ndarray]]
) -> dict[str, Any]:
    """The reference operands of ``owner`` on ``dev``, moved once per fit (``fitted``: what its fit made) and device."""
    per_device = _REF_CACHE.setdefault(owner, {})
    key = str(dev)
    if key not in per_device or per_device[key][0] is not fitted:  # fitted again since: move again
        per_device[key] = (fitted, {name: _on(arr, dev) for name, arr in build().items()})
    return per_device[key][1]


# ----------------------------------------------------------------------------- the search
@dataclass
class DeviceBlock:
    """:class:`~tabmem.neighbors.distances.Block` with its key matrix on the device (same contract)."""

    key: "torch.Tensor"
    margin: np.ndarray
    exact: Callable[[np.ndarray, np.ndarray], np.ndarray]
    key_to_distance: Callable[[np.ndarray, np.ndarray], np.ndarray]
    distance_to_key: Callable[[np.ndarray, np.ndarray], np.ndarray]


def kneighbors(
    distance: Distance,
    queries: Queries,
    k: int,
    dev: "torch.device",
    idx: np.ndarray,
    dist: np.ndarray,
    *,
    memory_budget: int,
    block_rows: int | None = None,
    progress: Callable[[int], None] | None = None,
) -> None:
    """Fill ``idx`` and ``dist`` (``(n_queries, k)``, as :func:`tabmem.neighbors.blocked.kneighbors` returns them).

    Blocks of query rows hold at most ``memory_budget`` bytes of device memory.
    """
    import torch

    n_q, n_ref = len(queries), distance.n_ref
    step = block_rows or int(np.clip(memory_budget // (BYTES_PER_CELL * n_ref), 1, MAX_BLOCK_ROWS))
    with _full_precision():
        for start in range(0, n_q, step):
            rows = slice(start, min(start + step, n_q))
            try:
                i, d = _search(distance, queries, rows, k, dev)
            except torch.cuda.OutOfMemoryError as exc:
                budget = suggest("memory_budget", "--memory-gb")
                advice = f"lower {budget} or free the device" if budget else "free the device"
                raise TabmemError(
                    f"device {dev}: out of memory with blocks of {rows.stop - rows.start} x {n_ref:,} rows; {advice}"
                ) from exc
            idx[rows, : i.shape[1]] = i
            dist[rows, : d.shape[1]] = d
            if progress:
                progress(rows.stop - rows.start)


def _search(
    distance: Distance, queries: Queries, rows: slice, k: int, dev: "torch.device"
) -> tuple[np.ndarray, np.ndarray]:
    """One block: candidates on the device, exact float64 re-check on the host (blocked.py, steps 2-4)."""
    import torch

    blk = _block(distance, queries, rows, dev)
    key = blk.key
    n_rows, n_ref = key.shape
    m = min(k + 1, n_ref)
    vals, found = torch.topk(key, m, dim=1, largest=False, sorted=True)
    cand = found.cpu().numpy().astype(np.int64)
    cand_key = vals.cpu().numpy().astype(np.float64)
    r = np.arange(n_rows)
    exact = blk.exact(np.repeat(r, m), cand.ravel()).reshape(n_rows, m)
    order = np.lexsort((cand, exact), axis=1)  # by distance, then by reference index
    cand = np.take_along_axis(cand, order, axis=1)
    exact = np.take_along_axis(exact, order, axis=1)
    kk = min(k, n_ref)
    if m == n_ref:
        return cand[:, :kk], exact[:, :kk]
    floor = blk.key_to_distance(r, cand_key[:, m - 1] - blk.margin)
    margin = np.broadcast_to(np.asarray(blk.margin, dtype=np.float64), (n_rows,))
    tied = np.flatnonzero(~(exact[:, kk - 1] < floor))

    def settle(i: int, extra: np.ndarray) -> None:  # the k nearest of row i among ``extra``, exactly
        d_extra = blk.exact(np.full(len(extra), i), extra)
        best = np.lexsort((extra, d_extra))[:kk]
        cand[i, :kk] = extra[best]
        exact[i, :kk] = d_extra[best]

    for i in tied[~np.isfinite(margin[tied])]:  # no information in the keys: every reference row
        settle(i, np.arange(n_ref))
    bounded = tied[np.isfinite(margin[tied])]
    if bounded.size:  # near-ties: every row whose key could beat the current k-th, fetched in few device passes
        limit = _ceil32(blk.distance_to_key(bounded, exact[bounded, kk - 1]) + margin[bounded])
        mask = key[_on(bounded, dev)] <= _on(limit, dev)[:, None]  # float32 key <= limit iff key <= bound
        for start, stop, rr, cc, _ in _hits(mask):
            first = np.searchsorted(rr, np.arange(start, stop + 1))
            for t in range(stop - start):
                i = bounded[start + t]
                settle(i, np.union1d(cc[first[t] : first[t + 1]], cand[i]))
    return cand[:, :kk], exact[:, :kk]


def _hits(
    mask: "torch.Tensor", values: "torch.Tensor | None" = None
) -> Iterator[tuple[int, int, np.ndarray, np.ndarray, np.ndarray | None]]:
    """The true entries of ``mask`` (row-major, and ``values`` there in float64) in groups of whole rows.

    Yields ``(start, stop, rows, columns, values)`` for rows ``start:stop``, each group holding at most
    ``_HIT_PAIRS`` entries (a single row may hold more): bounded memory whatever the ties.
    """
    import torch

    ends = np.cumsum(mask.sum(dim=1).cpu().numpy())
    start = 0
    while start < len(ends):
        before = int(ends[start - 1]) if start else 0
        stop = max(int(np.searchsorted(ends, before + _HIT_PAIRS, side="right")), start + 1)
        rr, cc = torch.nonzero(mask[start:stop], as_tuple=True)
        vals = None if values is None else values[start:stop][rr, cc].double().cpu().numpy()
        yield start, stop, rr.cpu().numpy() + start, cc.cpu().numpy(), vals
        start = stop


def _ceil32(x: np.ndarray) -> np.ndarray:
    """The smallest float32 >= each float64 value (``inf`` beyond float32's range)."""
    with np.errstate(over="ignore"):
        y = x.astype(np.float32)
    up = y.astype(np.float64) < x
    y[up] = np.nextafter(y[up], np.float32(np.inf))
    return y


def _block(distance: Distance, q: Queries, rows: slice, dev: "torch.device") -> DeviceBlock:
    if type(distance) is L2Distance:
        return _l2_block(distance, q, rows, dev)
    if type(distance) is GowerDistance:
        return _gower_block(distance, q, rows, dev)
    if type(distance) is Fang2024Distance:
        return _fang2024_block(distance, q, rows, dev)
    raise TypeError(f"no device block for {type(distance).__name__}")  # pragma: no cover - supports() guards


# ----------------------------------------------------------------------------- the fast passes
# Each mirrors the numpy ``block`` of its distance (distances.py, where the bounds are proved): the
# same key, the same margin, the same exact evaluation of pairs.


def _l2_block(d: L2Distance, q: Queries, rows: slice, dev: "torch.device") -> DeviceBlock:
    ref = _reference(d, d.ref_, dev, lambda: {"aug_t": d.ref_.aug.T})  # type: ignore[union-attr]
    key = _on(q.aug[rows], dev) @ ref["aug_t"]  # type: ignore[index]  # squared distances, float32
    err = (2 * d._dim + 8) * EPS32 * (q.sq[rows] + d._ref_sq_max + 1.0)  # type: ignore[index]
    if q.tame is not None:
        wild = ~q.tame[rows]
        if wild.any():
            err = np.where(wild, np.inf, err)
            key[_on(wild, dev)] = 0.0
    if len(d._wild_refs):
        feats = q.feats[rows]  # type: ignore[index]
        q_abs = np.abs(feats).max(axis=1) if feats.shape[1] else np.zeros(len(feats))
        gap = np.maximum(d._wild_abs[None, :] - q_abs[:, None], 0.0)
        low = np.minimum(gap * gap * (1 - 1e-6), 1e38).astype(np.float32)
        key[:, _on(d._wild_refs, dev)] = _on(low, dev)
    qi = np.arange(rows.start, rows.start + key.shape[0])

    def exact(local_rows: np.ndarray, refs: np.ndarray) -> np.ndarray:
        return d.pair_distances(q, qi[local_rows], refs)

    def key_to_distance(local_rows: np.ndarray, keys: np.ndarray) -> np.ndarray:
        return np.sqrt(np.maximum(keys.astype(np.float64), 0.0))

    def distance_to_key(local_rows: np.ndarray, dd: np.ndarray) -> np.ndarray:
        return dd * dd

    return DeviceBlock(key, err, exact, key_to_distance, distance_to_key)


def _gower_block(d: GowerDistance, q: Queries, rows: slice, dev: "torch.device") -> DeviceBlock:
    import torch

    ref = _reference(
        d, d.ref_, dev, lambda: {"aug_t": d._ref_aug_t, "miss_t": d._ref_miss_t, "onehot_t": d.ref_.onehot.T}
    )
    b = q.aug[rows]  # type: ignore[index]
    n_rows, k = b.shape
    qmiss = q.miss[rows]
    clip = [bool(d._ref_outside[c] or (b[:, c].min() < 0) or (b[:, c].max() > 1)) for c in range(k)]
    nan_cols = [bool(qmiss[:, c].any() or d._ref_has_nan[c]) for c in range(k)]
    onehot = q.onehot_rows(rows)
    if onehot.shape[1]:  # -(categorical matches): small integers, exact
        key = -(_on(onehot, dev) @ ref["onehot_t"])
    else:
        key = torch.zeros((n_rows, d.n_ref), dtype=torch.float32, device=dev)
    bt, qm = _on(b, dev), _on(qmiss, dev)
    for c in range(k):  # column by column, as the numpy pass: the same float32 operations
        tt = (bt[:, c : c + 1] - ref["aug_t"][c]).abs_()
        if clip[c]:
            tt.clamp_(max=1.0)
        if nan_cols[c]:  # both missing: 0, one missing: 1 (in place: two bool masks, no float temporaries)
            qc, rm = qm[:, c : c + 1], ref["miss_t"][c]
            tt.masked_fill_(qc & rm, 0.0)
            tt.masked_fill_(qc ^ rm, 1.0)
        key += tt
    margin = np.full(n_rows, (4 * k + 4) * EPS32 * (k + d.n_cat_total) + 1e-12)
    qi = np.arange(rows.start, rows.start + n_rows)
    m, n_cat = float(d.n_columns_), float(d.n_cat_total)

    def exact(local_rows: np.ndarray, refs: np.ndarray) -> np.ndarray:
        return d.pair_distances(q, qi[local_rows], refs)

    def key_to_distance(local_rows: np.ndarray, keys: np.ndarray) -> np.ndarray:
        return (keys.astype(np.float64) + n_cat) / m

    def distance_to_key(local_rows: np.ndarray, dd: np.ndarray) -> np.ndarray:
        return dd * m - n_cat

    return DeviceBlock(key, margin, exact, key_to_distance, distance_to_key)


def _fang2024_block(d: Fang2024Distance, q: Queries, rows: slice, dev: "torch.device") -> DeviceBlock:
    import torch

    ref = _reference(d, d.ref_, dev, lambda: {"aug_t": d._ref_aug_t, "onehot_t": d.ref_.onehot.T})
    b = q.aug[rows]  # type: ignore[index]
    n_rows = b.shape[0]
    qi = np.arange(rows.start, rows.start + n_rows)
    if d._k:
        s = _on(b, dev) @ ref["aug_t"]  # float64 S̄ (class docstring of Fang2024Distance, step 1)
        key = s.clamp_(min=0.0).sqrt_().to(torch.float32)
        del s
        un = q.unorm[rows]  # type: ignore[index]
        big_e = (2 * d._k + 3) * EPS64 * (un + d._vmax) ** 2 * 1.01
        a = EPS64 * (un + d._vmax)
        emin, _ = _exact_extreme(d, q, qi, key, big_e, a, smallest=True)
        emax, emax32 = _exact_extreme(d, q, qi, key, big_e, a, smallest=False)
        x_hi = emax32 * (1 + EPS32) + 2.0**-149
        delta = np.sqrt(big_e) + a + ((d._k + 4) * EPS64 + 0.5 * EPS32) * x_hi + 2.0**-140
    else:
        key = torch.zeros((n_rows, d.n_ref), dtype=torch.float32, device=dev)
        emin, emax, delta = np.zeros(n_rows), np.zeros(n_rows), np.zeros(n_rows)
    spread = emax - emin
    sp = np.where(spread > 0, spread, 1.0)
    if q.n_onehot:  # key -= spread * (categorical matches), one float32 GEMM with beta = 1
        key.addmm_(
            _on(q.onehot_rows(rows) * sp.astype(np.float32)[:, None], dev), ref["onehot_t"], beta=1.0, alpha=-1.0
        )
    n_cat = float(d.n_cat_total)
    margin = (
        delta
        + (n_cat + 2.0) * EPS32 * (emax + n_cat * sp) * 1.01
        + n_cat * EPS32 * sp
        + 16 * EPS64 * (np.abs(emax) + (n_cat + 1.0) * sp)
        + _FTZ
    )
    m = float(d.n_columns_)

    def exact(local_rows: np.ndarray, refs: np.ndarray) -> np.ndarray:
        glob = qi[local_rows]
        ehat = (d._exact_e(q, glob, refs) - emin[local_rows]) / sp[local_rows]
        return (ehat + d._mismatches(q, glob, refs)) / m

    def key_to_distance(local_rows: np.ndarray, keys: np.ndarray) -> np.ndarray:
        return ((keys - emin[local_rows]) / sp[local_rows] + n_cat) / m

    def distance_to_key(local_rows: np.ndarray, dd: np.ndarray) -> np.ndarray:
        return (dd * m - n_cat) * sp[local_rows] + emin[local_rows]

    return DeviceBlock(key, margin, exact, key_to_distance, distance_to_key)


def _exact_extreme(
    d: Fang2024Distance,
    q: Queries,
    qi: np.ndarray,
    e: "torch.Tensor",
    big_e: np.ndarray,
    a: np.ndarray,
    *,
    smallest: bool,
) -> tuple[np.ndarray, np.ndarray]:
    """Exact min (or max) of ``e`` over all reference rows per query row, and the float32 extreme.

    As ``Fang2024Distance._exact_extreme``: the device's arg-extreme is recomputed exactly; a row
    whose runner-up is not separated from it by the per-element bound has its band evaluated exactly.
    """
    import torch

    two = min(2, e.shape[1])
    vals, found = torch.topk(e, two, dim=1, largest=not smallest, sorted=True)
    vals64 = vals.cpu().numpy().astype(np.float64)
    arg = found[:, 0].cpu().numpy().astype(np.int64)
    best = vals64[:, 0]
    runner = vals64[:, 1] if two == 2 else np.full(len(best), np.inf if smallest else -np.inf)
    out = d._exact_e(q, qi, arg)

    def bound(x: np.ndarray, big: np.ndarray, aa: np.ndarray) -> np.ndarray:
        return d._bound(x, big, aa) + _FTZ

    d_best = bound(best, big_e, a)
    with np.errstate(invalid="ignore"):
        if smallest:
            unsure = runner - bound(runner, big_e, a) <= best + d_best
        else:
            unsure = runner + bound(runner, big_e, a) >= best - d_best
    unsure &= np.isfinite(runner)
    # the band prefiltered on the device: D(x) <= s + r x + c0 (Fang2024Distance._bound, plus _FTZ), so
    # x - D(x) <= t implies x <= (t + s + c0) / (1 - r), and x + D(x) >= t implies x >= (t - s - c0) / (1 + r);
    # only those rows come back, where the band's own test runs on them as the numpy pass runs it on all
    r = ((d._k + 4) * EPS64 + 0.5 * EPS32) * (1 + EPS32)
    c0 = r * 2.0**-149 + 2.0**-140 + _FTZ
    rows = np.flatnonzero(unsure)
    if not rows.size:
        return out, best
    spread = np.sqrt(big_e[rows]) + a[rows]
    dev = e.device
    sub = e[_on(rows, dev)]
    if smallest:
        t = best[rows] + d_best[rows]
        pre = (t + spread + c0) / (1 - r) * (1 + 1e-12)
        mask = sub <= _on(_ceil32(pre), dev)[:, None]
    else:
        t = best[rows] - d_best[rows]
        pre = (t - spread - c0) / (1 + r)
        pre -= np.abs(pre) * 1e-12 + c0
        mask = sub >= _on(-_ceil32(-pre), dev)[:, None]  # the largest float32 <= pre
    for start, stop, rr, cc, vals in _hits(mask, sub):
        d_vals = bound(vals, big_e[rows[rr]], a[rows[rr]])
        keep = vals - d_vals <= t[rr] if smallest else vals + d_vals >= t[rr]  # the band, as the numpy pass
        rr, cc = rr[keep], cc[keep]
        band_e = d._exact_e(q, qi[rows[rr]], cc)
        extreme = np.full(stop - start, np.inf if smallest else -np.inf)  # each row's band holds its arg-extreme
        (np.minimum if smallest else np.maximum).at(extreme, rr - start, band_e)
        out[rows[start:stop]] = extreme
    return out, best


# ----------------------------------------------------------------------------- LevAtt
def bag_bounds(
    owner: object,
    codes: np.ndarray,
    codes_t: np.ndarray,
    base: np.ndarray,
    lq: np.ndarray,
    ls: np.ndarray,
    quantised: bool,
    dev: "torch.device",
) -> np.ndarray:
    """LevAtt's bag-distance lower bounds ``max(|q|, |s|) - codes.codes_t - base`` (levenshtein.py, step 2) on ``dev``.

    Every value is an integer below ``2^24``, exact in float32 whatever the summation order, so the
    bounds equal the numpy ones bit for bit. ``owner`` (the fitted index) keys the cached strings' codes.
    """
    import torch

    ref = _reference(owner, codes_t, dev, lambda: {"codes_t": codes_t, "ls": ls})
    with _full_precision():
        lqt = _on(lq, dev)[:, None]
        lb = torch.maximum(lqt, ref["ls"][None, :])
        if codes.shape[1]:
            lb -= _on(codes, dev) @ ref["codes_t"]
        lb -= _on(base.astype(np.float32), dev)[:, None]
        if quantised:
            lb = torch.maximum(lb, (lqt - ref["ls"][None, :]).abs_())
        return lb.cpu().numpy()
