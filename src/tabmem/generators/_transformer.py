"""Mode-specific normalisation of a mixed-type table (CTGAN/TVAE input space).

Xu et al. 2019, "Modeling Tabular data using Conditional GAN", section 4.2:

* each numerical column is modelled by a variational (Dirichlet-process) Gaussian mixture with at most
  ``max_modes`` components; components whose weight is below ``weight_threshold`` are dropped
  (reference setting: 10 modes, threshold 0.005);
* a value ``x`` is encoded as a scalar ``alpha = (x - mu_k) / (4 sigma_k)`` clipped to ``[-1, 1]``
  and the one-hot ``beta`` of a mode ``k`` drawn from the posterior ``P(k | x)`` (the paper samples the
  mode; it does not take the arg-max);
* each categorical column is one-hot encoded.

The inverse takes the scalar and the arg-max mode (or arg-max category) and maps back to raw units:
``x = 4 sigma_k alpha + mu_k``. Everything learned from the training table is learned once in
:meth:`ModeSpecificNormalizer.fit`; transform and inverse are vectorised and work in row blocks so
memory stays bounded whatever the table size.

Choices beyond the paper (documented in ``docs/ctgan_tvae.md``): generated numericals are clipped to the
training range and integer-valued training columns are rounded back to integers (as SDV does by
default); every column comes back with the training frame's dtype and original category values.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np
import pandas as pd

from tabmem._checks import check_positive_int
from tabmem.data.schema import Schema, ValidatedTable, validate, validate_table
from tabmem.errors import TabmemError
from tabmem.generators._rng import derive_seed, fork_devices

_BLOCK = 65_536
NUMERICAL_DECODINGS = ("clip_round", "truncate")


@dataclass(frozen=True)
class Span:
    """A contiguous block of encoded columns.

    ``kind`` is ``"tanh"`` (one scalar in ``[-1, 1]``) or ``"softmax"`` (a one-hot block: numerical modes
    or categories); ``column`` is the source column and ``role`` one of ``"scalar"``, ``"mode"``,
    ``"category"``.
    """

    start: int
    end: int
    kind: str
    column: str
    role: str

    @property
    def width(self) -> int:
        return self.end - self.start


@dataclass
class _NumericInfo:
    means: np.ndarray  # (k,)
    stds: np.ndarray  # (k,)
    log_weights: np.ndarray  # (k,), renormalised over the kept modes
    lo: float
    hi: float
    integer: bool


class ModeSpecificNormalizer:
    """Encode a table as CTGAN/TVAE do: mode-specific normalisation and one-hot categories.

    Parameters
    ----------
    max_modes:
        Maximum number of mixture components per numerical column (paper: 10).
    weight_threshold:
        Components with a mixture weight below this are dropped (paper's reference code: 0.005).
    clip:
        Clip decoded numericals to the training range.
    round_integers:
        Round decoded numericals back to integers when every training value of the column is an integer.
    random_state:
        Seed for the mixture fit and the mode sampling of :meth:`transform`.

    After :meth:`fit`: ``spans_`` (list of :class:`Span`), ``output_dim_``, ``modes_`` (number of kept modes
    per numerical column), ``categories_`` (canonical category strings per categorical column, in the order
    of their one-hot block), ``unrepresentable_`` (per numerical column, the share of training values more
    than 4 sigma away from every kept mode: the method clips their scalar, so they do not round-trip).
    """

    def __init__(
        self,
        max_modes: int = 10,
        weight_threshold: float = 0.005,
        *,
        clip: bool = True,
        round_integers: bool = True,
        random_state: int | None = None,
    ) -> None:
        self.max_modes = max_modes
        self.weight_threshold = weight_threshold
        self.clip = clip
        self.round_integers = round_integers
        self.random_state = random_state

    # ------------------------------------------------------------------ fit
    def fit(self, train: pd.DataFrame | ValidatedTable, schema: Schema) -> ModeSpecificNormalizer:
        """Learn the per-column mixtures and category lists from the training table (once).

        A :class:`~tabmem.data.schema.ValidatedTable` is used as it is (not validated again); its
        clean frame then also gives the dtypes and category values :meth:`inverse_transform`
        returns (float64 and canonical strings), as a DataFrame's own do.
        """
        check_positive_int("max_modes", self.max_modes)
        if not 0.0 <= float(self.weight_threshold) < 1.0:
            raise TabmemError(f"weight_threshold must be in [0, 1), got {self.weight_threshold!r}")
        from sklearn.mixture import BayesianGaussianMixture

        clean = validate(train, schema, name="training", nan="error").data
        if isinstance(train, ValidatedTable):
            train = train.data
        self.schema_ = schema
        self.columns_ = list(schema.columns)
        self.dtypes_ = {c: train[c].dtype for c in schema.columns}
        self.numeric_: dict[str, _NumericInfo] = {}
        self.categories_: dict[str, np.ndarray] = {}
        self.originals_: dict[str, np.ndarray] = {}
        self._lookup: dict[str, dict[str, int]] = {}
        seed_seq = np.random.SeedSequence(self.random_state)
        col_seeds = seed_seq.spawn(len(schema.columns))
        spans: list[Span] = []
        pos = 0
        for col, ss in zip(schema.columns, col_seeds):
            if col in schema.numerical:
                x = clean[col].to_numpy(dtype=np.float64)
                info = self._fit_numeric(col, x, int(ss.generate_state(1)[0]), BayesianGaussianMixture)
                self.numeric_[col] = info
                spans.append(Span(pos, pos + 1, "tanh", col, "scalar"))
                pos += 1
                k = len(info.means)
                spans.append(Span(pos, pos + k, "softmax", col, "mode"))
                pos += k
            else:
                canon = clean[col].to_numpy(dtype=object)
                cats, first = np.unique(canon.astype(str), return_index=True)
                self.categories_[col] = cats.astype(object)
                # original (pre-canonical) value of each category, to give samples the training dtype back
                self.originals_[col] = train[col].iloc[first].to_numpy()
                self._lookup[col] = {c: i for i, c in enumerate(cats.tolist())}
                spans.append(Span(pos, pos + len(cats), "softmax", col, "category"))
                pos += len(cats)
        self.spans_ = spans
        self.output_dim_ = pos
        self.modes_ = {c: len(i.means) for c, i in self.numeric_.items()}
        # share of training values farther than 4 sigma from every kept mode: their scalar is clipped, so
        # the encoding cannot represent them exactly (rare outliers whose mode fell under the weight threshold)
        self.unrepresentable_ = {
            c: float(self._far_from_all_modes(c, clean[c].to_numpy(dtype=np.float64)).mean()) for c in self.numeric_
        }
        return self

    def _far_from_all_modes(self, col: str, x: np.ndarray) -> np.ndarray:
        info = self.numeric_[col]
        far = np.ones(len(x), dtype=bool)
        for mu, sd in zip(info.means, info.stds):
            far &= np.abs(x - mu) > 4.0 * sd
        return far

    def _fit_numeric(self, col: str, x: np.ndarray, seed: int, bgm_cls: Any) -> _NumericInfo:
        lo, hi = float(x.min()), float(x.max())
        integer = bool(np.all(np.mod(x, 1.0) == 0))
        n_unique = np.unique(x).size
        if n_unique == 1:
            return _NumericInfo(np.array([lo]), np.array([1.0]), np.array([0.0]), lo, hi, integer)
        scale = max(float(np.std(x)), 1e-12)
        n_components = int(min(self.max_modes, n_unique, len(x)))
        bgm = bgm_cls(
            n_components=n_components,
            weight_concentration_prior_type="dirichlet_process",
            weight_concentration_prior=0.001,
            max_iter=100,
            n_init=1,
            random_state=seed,
        )
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # ConvergenceWarning: 100 iterations is the reference setting
            bgm.fit(((x - x.mean()) / scale).reshape(-1, 1))
        weights = bgm.weights_
        keep = weights > self.weight_threshold
        if not keep.any():
            keep = weights == weights.max()
        means = bgm.means_[keep, 0] * scale + x.mean()
        stds = np.sqrt(bgm.covariances_[keep].reshape(-1)) * scale
        stds = np.maximum(stds, 1e-6 * max(hi - lo, 1e-12))
        order = np.argsort(means)
        w = weights[keep][order]
        return _NumericInfo(means[order], stds[order], np.log(w / w.sum()), lo, hi, integer)

    # ------------------------------------------------------------ transform
    def _check_fitted(self) -> None:
        if not hasattr(self, "spans_"):
            raise TabmemError("ModeSpecificNormalizer is not fitted: call fit(train, schema) first")

    def mode_posterior(self, column: str, x: np.ndarray) -> np.ndarray:
        """``P(mode | x)`` for the kept modes of a numerical column, shape ``(n, k)``."""
        info = self.numeric_[column]
        z = (x[:, None] - info.means[None, :]) / info.stds[None, :]
        logp = info.log_weights[None, :] - np.log(info.stds)[None, :] - 0.5 * z * z
        logp -= logp.max(axis=1, keepdims=True)
        p = np.exp(logp)
        p /= p.sum(axis=1, keepdims=True)
        return p

    def transform(self, table: pd.DataFrame, random_state: int | np.random.Generator | None = None) -> np.ndarray:
        """Encode ``table`` (training columns, training categories) as a float32 matrix.

        The mode of each numerical value is drawn from ``P(mode | x)`` with ``random_state`` (defaults to the
        normaliser's own seed), so the same seed gives the same encoding.
        """
        self._check_fitted()
        rng = np.random.default_rng(self.random_state if random_state is None else random_state)
        clean = validate_table(
            table, self.schema_, name="table", categories={c: set(v) for c, v in self.categories_.items()}, nan="error"
        )
        n = len(clean)
        out = np.zeros((n, self.output_dim_), dtype=np.float32)
        for span in self.spans_:
            col = span.column
            if span.role == "scalar":
                x = clean[col].to_numpy(dtype=np.float64)
                info = self.numeric_[col]
                mode_span = self.spans_[self.spans_.index(span) + 1]
                for s in range(0, n, _BLOCK):
                    xb = x[s : s + _BLOCK]
                    p = self.mode_posterior(col, xb)
                    u = rng.random(len(xb))
                    k = (np.cumsum(p, axis=1) < u[:, None]).sum(axis=1)
                    k = np.minimum(k, p.shape[1] - 1)
                    alpha = (xb - info.means[k]) / (4.0 * info.stds[k])
                    rows = np.arange(s, s + len(xb))
                    out[rows, span.start] = np.clip(alpha, -1.0, 1.0)
                    out[rows, mode_span.start + k] = 1.0
            elif span.role == "category":
                codes = self.codes(clean, col)
                out[np.arange(n), span.start + codes] = 1.0
        return out

    def codes(self, clean: pd.DataFrame, column: str) -> np.ndarray:
        """Integer category codes of a validated (canonical) categorical column."""
        lookup = self._lookup[column]
        values = clean[column].to_numpy(dtype=object)
        return np.fromiter((lookup[v] for v in values), dtype=np.int64, count=len(values))

    def category_codes(self, table: pd.DataFrame) -> list[np.ndarray]:
        """Codes of every categorical column of ``table`` (training categories only), in span order."""
        self._check_fitted()
        clean = validate_table(
            table, self.schema_, name="table", categories={c: set(v) for c, v in self.categories_.items()}, nan="error"
        )
        return [self.codes(clean, s.column) for s in self.spans_ if s.role == "category"]

    # -------------------------------------------------------------- inverse
    def decode(
        self,
        matrix: np.ndarray,
        sigmas: np.ndarray | None = None,
        random_state: int | np.random.Generator | None = None,
        *,
        clip: bool | None = None,
        integers: str | None = None,
    ) -> dict[str, np.ndarray]:
        """Decode a matrix to raw numericals (float64) and categorical codes (int64, into ``categories_``).

        ``sigmas`` (one per encoded column, TVAE's learned output scale) adds Gaussian noise to each scalar
        before decoding, as TVAE's decoder ``alpha ~ N(tanh(.), sigma)`` prescribes; ``random_state`` seeds it.
        One-hot blocks are decoded by arg-max, so soft outputs (softmax, Gumbel-softmax) are accepted.
        ``clip`` and ``integers`` (``"round"``, ``"truncate"`` toward zero, or ``"keep"``; applied to
        integer-valued training columns) override the normaliser's ``clip`` / ``round_integers`` for this call.
        """
        self._check_fitted()
        clip = self.clip if clip is None else clip
        integers = ("round" if self.round_integers else "keep") if integers is None else integers
        if integers not in ("round", "truncate", "keep"):
            raise TabmemError(f"integers must be 'round', 'truncate' or 'keep', got {integers!r}")
        matrix = np.asarray(matrix)
        if matrix.ndim != 2 or matrix.shape[1] != self.output_dim_:
            raise TabmemError(
                f"inverse_transform: expected a matrix with {self.output_dim_} columns, got shape {matrix.shape}"
            )
        if not np.isfinite(matrix).all():
            raise TabmemError("inverse_transform: the matrix holds NaN or infinite values (did training diverge?)")
        rng = np.random.default_rng(random_state) if sigmas is not None else None
        n = matrix.shape[0]
        data: dict[str, np.ndarray] = {}
        for i, span in enumerate(self.spans_):
            col = span.column
            if span.role == "scalar":
                info = self.numeric_[col]
                mode_span = self.spans_[i + 1]
                alpha = matrix[:, span.start].astype(np.float64)
                if sigmas is not None:
                    alpha = alpha + rng.standard_normal(n) * float(sigmas[span.start])  # type: ignore[union-attr]
                alpha = np.clip(alpha, -1.0, 1.0)
                k = np.argmax(matrix[:, mode_span.start : mode_span.end], axis=1)
                x = alpha * 4.0 * info.stds[k] + info.means[k]
                if clip:
                    x = np.clip(x, info.lo, info.hi)
                if info.integer and integers != "keep":
                    x = np.round(x) if integers == "round" else np.trunc(x)
                data[col] = x
            elif span.role == "category":
                data[col] = np.argmax(matrix[:, span.start : span.end], axis=1).astype(np.int64)
        return data

    def inverse_transform(
        self,
        matrix: np.ndarray,
        sigmas: np.ndarray | None = None,
        random_state: int | np.random.Generator | None = None,
    ) -> pd.DataFrame:
        """Decode an encoded (or generated) matrix back to a table with the training columns and dtypes.

        See :meth:`decode` for ``sigmas`` and ``random_state``.
        """
        data = self.decode(matrix, sigmas, random_state)
        out = {}
        for col in self.columns_:
            if col in self.numeric_:
                out[col] = self._restore_numeric(col, data[col])
            else:
                out[col] = self._restore_category(col, data[col])
        return pd.DataFrame(out, columns=self.columns_)

    def _restore_numeric(self, col: str, x: np.ndarray) -> pd.Series:
        dtype = self.dtypes_[col]
        if pd.api.types.is_integer_dtype(dtype) and self.numeric_[col].integer and self.round_integers:
            return pd.Series(x.astype(np.int64)).astype(dtype)
        return pd.Series(x, dtype=np.float64)

    def _restore_category(self, col: str, codes: np.ndarray) -> pd.Series:
        values = self.originals_[col][codes]
        dtype = self.dtypes_[col]
        try:
            return pd.Series(values).astype(dtype)
        except (TypeError, ValueError):
            return pd.Series(values, dtype=object)

    # ---------------------------------------------------------------- state
    def get_state(self) -> dict[str, Any]:
        """Everything learned, as plain lists/numbers/strings (safe for ``torch.load(weights_only=True)``)."""
        self._check_fitted()
        return {
            "params": {
                "max_modes": int(self.max_modes),
                "weight_threshold": float(self.weight_threshold),
                "clip": bool(self.clip),
                "round_integers": bool(self.round_integers),
            },
            "columns": list(self.columns_),
            "numeric": {
                c: {
                    "means": i.means.tolist(),
                    "stds": i.stds.tolist(),
                    "log_weights": i.log_weights.tolist(),
                    "lo": i.lo,
                    "hi": i.hi,
                    "integer": i.integer,
                }
                for c, i in self.numeric_.items()
            },
            "categories": {c: [str(v) for v in cats.tolist()] for c, cats in self.categories_.items()},
            "unrepresentable": dict(self.unrepresentable_),
        }

    @classmethod
    def from_state(cls, state: dict[str, Any], schema: Schema) -> ModeSpecificNormalizer:
        """Rebuild a fitted normaliser from :meth:`get_state` (dtypes default to float64 / object)."""
        self = cls(**state["params"])
        self.schema_ = schema
        self.columns_ = list(state["columns"])
        self.numeric_ = {
            c: _NumericInfo(
                np.asarray(d["means"], dtype=np.float64),
                np.asarray(d["stds"], dtype=np.float64),
                np.asarray(d["log_weights"], dtype=np.float64),
                float(d["lo"]),
                float(d["hi"]),
                bool(d["integer"]),
            )
            for c, d in state["numeric"].items()
        }
        self.categories_ = {c: np.asarray(v, dtype=object) for c, v in state["categories"].items()}
        self.originals_ = {c: v.copy() for c, v in self.categories_.items()}
        self._lookup = {c: {v: i for i, v in enumerate(cats.tolist())} for c, cats in self.categories_.items()}
        self.dtypes_ = {c: np.dtype(np.float64) if c in self.numeric_ else np.dtype(object) for c in self.columns_}
        spans, pos = [], 0
        for col in self.columns_:
            if col in self.numeric_:
                k = len(self.numeric_[col].means)
                spans += [Span(pos, pos + 1, "tanh", col, "scalar"), Span(pos + 1, pos + 1 + k, "softmax", col, "mode")]
                pos += 1 + k
            else:
                k = len(self.categories_[col])
                spans.append(Span(pos, pos + k, "softmax", col, "category"))
                pos += k
        self.spans_ = spans
        self.output_dim_ = pos
        self.modes_ = {c: len(i.means) for c, i in self.numeric_.items()}
        self.unrepresentable_ = dict(state.get("unrepresentable", {}))
        return self


# ----------------------------------------------------------------------------------------------------
# Plumbing shared by the generators that train in this space (CTGAN, TVAE)
# ----------------------------------------------------------------------------------------------------
class NormalizedSpaceMixin:
    """Fit-once normaliser + encoded training matrix for a :class:`TabularGenerator` subclass.

    ``_build`` calls :meth:`_prepare_space` then builds its modules only when it returns ``True`` (a real
    training table). On :meth:`TabularGenerator.load` the base class hands ``_build`` a placeholder table;
    the normaliser then comes from the saved state in ``_load_state_dict`` (see :meth:`_restore_space`),
    which is also what makes a resumed run use exactly the normaliser and encoding of the original run.

    A subclass provides ``_check_params`` and ``_make_modules`` (networks and optimisers) and names in
    ``_STATE_MODULES`` the attributes saved in a checkpoint (checkpoint key -> attribute, in order).
    """

    max_modes: int
    weight_threshold: float
    _STATE_MODULES: ClassVar[dict[str, str]] = {}

    def _build(self, train_clean: pd.DataFrame, schema: Schema) -> None:
        self._check_params()  # type: ignore[attr-defined]
        self._weights = _weights_tensor(getattr(self, "_fit_weights", None), self.device_)  # type: ignore[attr-defined]
        if self._prepare_space(train_clean, schema):
            self._make_modules()  # type: ignore[attr-defined]

    def _module_states(self) -> dict[str, Any]:
        """The ``state_dict()`` of every attribute in ``_STATE_MODULES``."""
        return {key: getattr(self, attr).state_dict() for key, attr in self._STATE_MODULES.items()}

    def _restore_modules(self, state: dict[str, Any]) -> bool:
        """Restore the normaliser from ``state["transformer"]`` and build the modules when a loaded model
        has none yet (without touching the global RNG); returns ``True`` when they were built."""
        import torch

        if not self._restore_space(state["transformer"]):
            return False
        with torch.random.fork_rng(devices=fork_devices(self.device_)):  # type: ignore[attr-defined]
            self._make_modules()  # type: ignore[attr-defined]
        return True

    def _load_module_states(self, state: dict[str, Any]) -> None:
        for key, attr in self._STATE_MODULES.items():
            getattr(self, attr).load_state_dict(state[key])

    def fit(self, train: pd.DataFrame, schema: Schema | None = None, **kwargs: Any) -> Any:
        """See :meth:`TabularGenerator.fit`; a resumed fit takes the normaliser from the checkpoint
        instead of refitting the mixtures (the slow part of building)."""
        self._resuming = kwargs.get("resume_from") is not None
        try:
            return super().fit(train, schema, **kwargs)  # type: ignore[misc]
        finally:
            self._resuming = False

    def _prepare_space(self, train_clean: pd.DataFrame, schema: Schema) -> bool:
        table: ValidatedTable | None = getattr(self, "_train_table", None)  # train_clean, validated once by fit
        if table is None or getattr(self, "_resuming", False):
            # load(): placeholder table; resume: the checkpoint's normaliser is restored in _load_state_dict
            self.normalizer_ = None
            return False
        self.normalizer_ = ModeSpecificNormalizer(
            self.max_modes,
            self.weight_threshold,
            random_state=derive_seed(self.seed_, 21),  # type: ignore[attr-defined]
        ).fit(table, schema)
        self._encode_training(table)
        return True

    def _encode_training(self, table: ValidatedTable) -> None:
        import torch

        norm = self.normalizer_
        assert norm is not None
        for c in norm.categories_:
            if list(norm.categories_[c]) != list(self.encoder_.categories_[c]):  # type: ignore[attr-defined]
                raise TabmemError(f"internal: category order of column {c!r} differs from the training encoder")
        matrix = norm.transform(table, random_state=derive_seed(self.seed_, 22))  # type: ignore[attr-defined]
        self.train_matrix_ = torch.from_numpy(matrix).to(self.device_)  # type: ignore[attr-defined]
        self._category_codes = norm.category_codes(table)

    def _restore_space(self, state: dict[str, Any]) -> bool:
        """Restore the normaliser from ``state``; returns ``True`` when the modules must still be built."""
        norm = ModeSpecificNormalizer.from_state(state, self.schema_)  # type: ignore[attr-defined]
        must_build = self.normalizer_ is None
        self.normalizer_ = norm
        table = getattr(self, "_train_table", None)
        if table is not None:  # resume: re-encode with the checkpoint's normaliser (identical encoding)
            self._encode_training(table)
        return must_build

    def _decode_sample(self, matrix: np.ndarray, sigmas: np.ndarray | None, seed: int) -> pd.DataFrame:
        """Decode generated rows; ``numerical_decoding`` = ``"clip_round"`` (clip numericals to the training
        range, round integer columns) or ``"truncate"`` (no clipping, integer columns truncated toward zero:
        the reference code's output, a plain cast to the training dtype)."""
        norm = self.normalizer_
        assert norm is not None
        mode = getattr(self, "numerical_decoding", "clip_round")
        if mode not in NUMERICAL_DECODINGS:
            raise TabmemError(f"numerical_decoding must be one of {NUMERICAL_DECODINGS}, got {mode!r}")
        clip, integers = (True, "round") if mode == "clip_round" else (False, "truncate")
        data = norm.decode(matrix, sigmas, random_state=seed, clip=clip, integers=integers)
        return pd.DataFrame(data, columns=norm.columns_)


def _weights_tensor(weights: np.ndarray | None, device: Any) -> Any:
    """``fit(sample_weight=...)`` as a float32 tensor on ``device`` (None on load and without weights)."""
    if weights is None:
        return None
    import torch

    return torch.as_tensor(weights, dtype=torch.float32, device=device)
