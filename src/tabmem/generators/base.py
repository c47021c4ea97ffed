"""One interface for every tabular generator: an owned training loop with callbacks,
checkpoints that resume bit-exactly, seeded sampling and save/load.

How to implement a generator
----------------------------
Subclass :class:`TabularGenerator`, decorate it with ``@register_generator("name")`` and implement
five methods; the base class does everything else (validation, RNG discipline, the epoch loop,
callbacks, checkpoints, resume, batched sampling, output dtypes, save/load)::

    @register_generator("mymodel")
    class MyModel(TabularGenerator):
        PRESETS = {"small": {"epochs": 50, "batch_size": 512}}        # optional

        def __init__(self, *, epochs=300, batch_size=500, lr=2e-4, random_state=None, device="auto"):
            # scikit-learn rule: store every argument under its own name, nothing else.
            self.epochs, self.batch_size, self.lr = epochs, batch_size, lr
            self.random_state, self.device = random_state, device

        def _build(self, train_clean, schema): ...     # models + optimizers from the clean table
        def _train_epoch(self, epoch) -> dict: ...     # one pass over the data; return {"loss": ...}
        def _sample_clean(self, n, generator) -> pd.DataFrame: ...   # n rows, see below
        def _state_dict(self) -> dict: ...             # everything learned: model, optimizer, ...
        def _load_state_dict(self, state) -> None: ... # inverse of _state_dict (after _build)

What the base class gives you inside these methods:

* ``train_clean`` (``_build``'s argument): the training table validated once (by :meth:`fit`, or
  by the caller who passed a :class:`~tabmem.data.schema.ValidatedTable`): numerical columns
  float64, categorical columns canonical strings. Code that wants a table argument validated
  passes ``self._train_table`` (the ``ValidatedTable``), which is not validated again;
* ``self.encoder_``: a :class:`~tabmem.data.encoding.TableEncoder` fitted on the training table
  (``categories_``, ``codes(clean)``, ``min_``/``max_``/``mean_``/``std_``...);
* ``self.schema_``, ``self.n_train_``, ``self.device_`` (a ``torch.device``);
* ``self.torch_generator_`` (a ``torch.Generator`` on ``device_``) and ``self.rng_`` (a numpy
  ``Generator``): the ONLY randomness training may use (shuffling, noise, timesteps). Both are
  saved in checkpoints (:mod:`tabmem.generators._rng` derives every stream from the seed). Never
  call ``np.random.*`` or the global ``torch`` RNG functions directly; modules that use the
  global torch stream internally (``nn.init``, ``nn.Dropout``) are fine: ``_build`` and
  ``_train_epoch`` run under a private copy of the global torch RNG that is seeded from
  ``random_state``, checkpointed, and swapped out again afterwards, so the user's global RNG is
  never touched.
* ``_sample_clean(n, generator)`` receives a fresh ``torch.Generator`` (seeded from
  ``sample(random_state=...)``) and runs in ``torch.inference_mode()`` with every module of the
  generator in eval mode (restored afterwards). It returns a DataFrame with the schema's columns:
  numerical columns as float (in raw training units), categorical columns either as integer
  codes into ``self.encoder_.categories_[col]`` or as canonical category strings. The base class
  calls it in chunks of at most ``sample_batch_size`` rows (bounded memory) and converts the
  result to the training dtypes (:func:`tabmem.data.dtypes.restore_dtypes`).
* ``_state_dict`` must return only tensors, numbers, strings, lists and dicts (checkpoints are
  loaded with ``torch.load(weights_only=True)``: no pickled objects). Include optimizer state
  and any step counter used by a learning-rate schedule; RNG states, epoch, params, schema and
  history are added by the base class.
* ``_torch_modules()`` (optional override): the ``nn.Module`` objects to switch to eval mode
  while sampling; by default every ``nn.Module`` attribute of the instance.

Epochs are 1-based: ``_train_epoch(epoch)`` trains epoch ``epoch`` and callbacks see the same
number. Resume continues at ``epoch_ + 1`` with the same RNG states, so an interrupted and
resumed run yields exactly the weights of an uninterrupted one (on CPU).
"""

from __future__ import annotations

import contextlib
import copy
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
import pandas as pd

from tabmem._checks import check_number, check_positive_int, check_random_state
from tabmem._io import atomic_write, reading
from tabmem._params import Params
from tabmem._registry import Registry
from tabmem.callbacks import CallbackProtocol
from tabmem.data.dtypes import category_dtypes, restore_dtypes
from tabmem.data.encoding import TableEncoder
from tabmem.data.fingerprint import table_fingerprint
from tabmem.data.schema import Schema, ValidatedTable, validate
from tabmem.errors import ParameterError, TabmemError
from tabmem.generators._rng import TrainingRNG, fresh_seed, sampling_rng
from tabmem.generators._weights import check_sample_weight, weight_fingerprint

try:  # torch is an optional extra; give a clear message when missing
    import torch
except ModuleNotFoundError:  # pragma: no cover
    torch = None  # type: ignore[assignment]

FORMAT = "tabmem-generator"
#: 2: encoder statistics as plain lists (``TableEncoder.to_state``) and ``category_dtypes``;
#: format 1 (float64 tensors, no category levels) is still read.
FORMAT_VERSION = 2
#: the entries every generator file has (format 1 lacked ``category_dtypes``; ``stopped_early`` is optional)
PAYLOAD_ENTRIES = (
    "class", "params", "schema", "dtypes", "encoder", "n_train", "fingerprint", "seed", "epoch", "history", "rng",
    "state",
)  # fmt: skip
_DEFAULT_SAMPLE_BATCH = 10_000


__all__ = [
    "TabularGenerator",
    "GENERATORS",
    "DEFAULT_PRESET",
    "register_generator",
    "get_generator",
    "resolve_preset",
    "available_generators",
    "load_generator",
    "resolve_device",
]


def _require_torch() -> None:
    if torch is None:  # pragma: no cover
        raise TabmemError("tabmem generators need torch: pip install 'tabmem[torch]' torch==2.13.0")


#: the preset a command (and :func:`~tabmem.runs.train.train_to_dir`) uses unless told otherwise;
#: a generator without it takes its class defaults (:meth:`TabularGenerator.resolve_preset`)
DEFAULT_PRESET = "small"


def resolve_preset(name: str, preset: str | None) -> str | None:
    """The preset that ``preset`` names for the generator registered as ``name`` (``None``: class defaults)."""
    return GENERATORS.get(name).resolve_preset(preset)


def get_generator(
    name: str, *, preset: str | None = None, dataset: str | None = None, **params: Any
) -> TabularGenerator:
    """Build the generator registered as ``name`` (optionally from a ``preset``; ``params`` override).

    ``dataset`` selects the preset's per-dataset settings where the papers used some (for example
    TabDDPM ``paper`` on Adult adds weight decay 5e-4); see ``DATASET_PRESETS`` on the class.
    """
    _require_torch()
    cls = GENERATORS.get(name)
    return cls.from_preset(preset, dataset=dataset, **params)


def load_generator(path: str | Path, *, device: str | None = None) -> TabularGenerator:
    """Load any generator saved with :meth:`TabularGenerator.save` (or a checkpoint)."""
    return TabularGenerator.load(path, device=device)


def resolve_device(device: str | None) -> torch.device:
    """``"auto"``/``None`` -> ``cuda`` when present else ``cpu``; anything else is checked."""
    _require_torch()
    if device in (None, "auto"):
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    try:
        dev = torch.device(device)
    except (RuntimeError, TypeError) as exc:
        raise TabmemError(f"device: cannot parse {device!r} ({exc})") from None
    if dev.type == "cuda" and not torch.cuda.is_available():
        raise TabmemError(f"device={device!r} requested but CUDA is not available on this machine")
    return dev


def _atomic_torch_save(obj: Any, path: Path) -> None:
    atomic_write(path, lambda tmp: torch.save(obj, tmp))


class TabularGenerator(Params):
    """Base class of tabmem generators (see the module docstring for how to implement one).

    Public API: :meth:`fit`, :meth:`sample`, :meth:`save`, :meth:`load`, :meth:`save_checkpoint`,
    :meth:`get_params`, :meth:`from_preset`. Learned attributes end in ``_``: ``schema_``,
    ``encoder_``, ``n_train_``, ``epoch_`` (completed epochs), ``history_`` (one dict per epoch),
    ``seed_`` (the seed actually used), ``device_``, ``stopped_early_``.
    """

    name: ClassVar[str] = "base"
    PRESETS: ClassVar[dict[str, dict[str, Any]]] = {}
    #: (preset, dataset) -> settings the papers used with that preset on that dataset only
    DATASET_PRESETS: ClassVar[dict[tuple[str, str], dict[str, Any]]] = {}
    #: keyword arguments of :meth:`sample` beyond ``n``, ``random_state`` and ``batch_size``
    sampling_options: ClassVar[tuple[str, ...]] = ()
    sample_batch_size: int = _DEFAULT_SAMPLE_BATCH
    #: ``fit(sample_weight=...)`` is applied by this generator (:mod:`tabmem.generators._weights`)
    supports_sample_weight: ClassVar[bool] = False
    # params that may differ between a checkpoint and the run resuming it
    _RESUME_MUTABLE: ClassVar[frozenset[str]] = frozenset({"epochs", "device"})

    # ----------------------------------------------------------- to implement
    def _build(self, train_clean: pd.DataFrame, schema: Schema) -> None:
        raise NotImplementedError

    def _train_epoch(self, epoch: int) -> dict[str, float]:
        raise NotImplementedError

    def _sample_clean(self, n: int, generator: torch.Generator) -> pd.DataFrame:
        raise NotImplementedError

    def _state_dict(self) -> dict[str, Any]:
        raise NotImplementedError

    def _load_state_dict(self, state: dict[str, Any]) -> None:
        raise NotImplementedError

    def _torch_modules(self) -> list[torch.nn.Module]:
        """Modules switched to eval mode while sampling (default: every nn.Module attribute)."""
        return [v for v in vars(self).values() if isinstance(v, torch.nn.Module)]

    # ------------------------------------------------------------- parameters
    def get_params(self) -> dict[str, Any]:
        """Constructor arguments (scikit-learn convention), deep copies (a checkpoint keeps them)."""
        return {k: copy.deepcopy(v) for k, v in super().get_params().items()}

    def set_params(self, **params: Any) -> TabularGenerator:
        names = set(self._param_names())
        for k, v in params.items():
            if k not in names:
                raise TabmemError(f"{type(self).__name__}: unknown parameter {k!r}; valid: {sorted(names)}")
            setattr(self, k, v)
        return self

    @classmethod
    def resolve_preset(cls, preset: str | None) -> str | None:
        """The preset ``preset`` names for this generator; ``None``: the class defaults.

        ``None`` or ``"none"`` (any case) ask for the class defaults; so does the default preset
        :data:`DEFAULT_PRESET` for a generator that has no preset of that name (``noisy_resample``
        has none at all), so that a command's default works with every generator. Any other name
        must be one of ``cls.PRESETS``.
        """
        if preset is None or (isinstance(preset, str) and preset.lower() == "none"):
            return None
        if preset in cls.PRESETS:
            return preset
        if preset == DEFAULT_PRESET:
            return None
        names = ", ".join(sorted(cls.PRESETS))
        available = f"{names}, or none (the class defaults)" if names else "none (the class defaults)"
        raise ParameterError(f"{cls.name}: unknown preset {preset!r}; available: {available}")

    @classmethod
    def from_preset(cls, preset: str | None, *, dataset: str | None = None, **overrides: Any) -> TabularGenerator:
        """Instance from a named preset (``cls.PRESETS``) with ``overrides`` applied on top.

        ``DATASET_PRESETS[(preset, dataset)]`` (when present) sits between the preset and the
        overrides: settings the papers used for that preset on one dataset only.
        """
        preset = cls.resolve_preset(preset)
        if preset is None:
            return cls(**overrides)
        params = {**cls.PRESETS[preset], **cls.DATASET_PRESETS.get((preset, dataset or ""), {}), **overrides}
        unknown = sorted(set(params) - set(cls._param_names()))
        if unknown:
            raise ParameterError(f"{cls.name}: unknown parameter(s) {unknown}; valid: {cls._param_names()}")
        return cls(**params)

    def check_params(self) -> TabularGenerator:
        """Check the parameters every generator shares (called by :meth:`fit`; callable before it)."""
        self._check_common_params()
        return self

    def _check_common_params(self) -> None:
        cls = type(self).__name__
        check_positive_int(f"{cls}: epochs", getattr(self, "epochs", None))
        check_positive_int(f"{cls}: batch_size", getattr(self, "batch_size", 1))
        if hasattr(self, "lr"):
            check_number(f"{cls}: lr", self.lr, low=0.0)  # 0 freezes the weights (tests use it)
        if hasattr(self, "weight_decay"):
            check_number(f"{cls}: weight_decay", self.weight_decay, low=0.0)
        check_random_state(getattr(self, "random_state", None))

    @property
    def is_fitted(self) -> bool:
        return getattr(self, "epoch_", 0) > 0 and hasattr(self, "schema_")

    # ----------------------------------------------------------- RNG plumbing
    def _init_rngs(self, seed: int) -> None:
        self.seed_ = seed
        self._rngs = TrainingRNG(seed, self.device_)
        self.torch_generator_ = self._rngs.torch
        self.rng_ = self._rngs.numpy

    def _private_global_rng(self) -> AbstractContextManager[None]:
        """Run a block under this generator's own copy of the global torch RNG streams."""
        return self._rngs.private_global()

    # -------------------------------------------------------------------- fit
    def fit(
        self,
        train: pd.DataFrame | ValidatedTable,
        schema: Schema | None = None,
        *,
        callbacks: Sequence[CallbackProtocol] | None = None,
        random_state: int | None = None,
        resume_from: str | Path | None = None,
        checkpoint_every: int | None = None,
        checkpoint_path: str | Path | None = None,
        sample_weight: Sequence[float] | np.ndarray | None = None,
    ) -> TabularGenerator:
        """Train on ``train`` (raw units) for ``self.epochs`` epochs; returns ``self``.

        ``train`` is a DataFrame or a :class:`~tabmem.data.schema.ValidatedTable` (then used as it
        is: its clean values are not validated again, and its ``schema`` is the default).
        ``schema`` defaults to :meth:`Schema.infer`. ``random_state`` overrides the constructor's;
        ``None`` in both draws a fresh seed, kept in ``seed_`` (and in checkpoints) so the run can
        be reproduced. ``resume_from`` is a checkpoint written by this generator class on the same
        training table: training continues at the next epoch and ends with exactly the weights of
        an uninterrupted run. ``checkpoint_every``/``checkpoint_path`` add a
        :class:`~tabmem.callbacks.CheckpointCallback`. ``sample_weight`` (one non-negative weight per
        training row; generators with ``supports_sample_weight``) scales each record's share of the
        objective (:mod:`tabmem.generators._weights`); ``None`` or all ones train exactly as without.
        """
        _require_torch()
        self._check_common_params()
        if isinstance(train, ValidatedTable):
            schema = train.schema if schema is None else schema
        elif not isinstance(train, pd.DataFrame):
            raise TabmemError(f"fit: train must be a pandas DataFrame or a ValidatedTable, got {type(train).__name__}")
        if schema is None:
            schema = Schema.infer(train)
        elif not isinstance(schema, Schema):
            raise TabmemError(f"fit: schema must be a tabmem Schema, got {type(schema).__name__}")
        callbacks = list(callbacks or [])
        for cb in callbacks:
            if not any(hasattr(cb, m) for m in ("on_fit_start", "on_epoch_end", "on_fit_end")):
                raise TabmemError(
                    f"fit: {cb!r} is not a callback (it has none of on_fit_start/on_epoch_end/on_fit_end)"
                )
        if checkpoint_every is not None or checkpoint_path is not None:
            if checkpoint_every is None or checkpoint_path is None:
                raise TabmemError("fit: pass both checkpoint_every and checkpoint_path (or neither)")
            from tabmem.callbacks import CheckpointCallback

            callbacks.append(CheckpointCallback(checkpoint_every, checkpoint_path))
        callbacks = sorted(callbacks, key=lambda cb: getattr(cb, "order", 0))

        table = validate(train, schema, name="training", nan="error")  # once; a ValidatedTable is used as is
        if len(table) < 2:
            raise TabmemError(f"fit: the training table needs at least 2 rows, got {len(table)}")
        weights = check_sample_weight(sample_weight, len(table))
        if weights is not None and not self.supports_sample_weight:
            raise TabmemError(f"sample_weight: the {self.name} generator does not support per-record weights")
        self.device_ = resolve_device(getattr(self, "device", "auto"))
        self._record_training_meta(table)
        self.sample_weight_fingerprint_ = weight_fingerprint(weights)

        ckpt = None
        if resume_from is not None:
            ckpt = self._read_file(resume_from)
            with reading(self._model_file(resume_from), "checkpoint"):
                self._check_resume(ckpt)
            if ckpt.get("sample_weight") != self.sample_weight_fingerprint_:
                raise TabmemError("resume_from: the checkpoint was trained with other sample_weight values")
            seed = int(ckpt["seed"])
        else:
            seed = check_random_state(random_state)
            if seed is None:
                seed = check_random_state(getattr(self, "random_state", None))
            if seed is None:
                seed = fresh_seed()
        self._init_rngs(seed)
        self.epoch_ = 0
        self.history_: list[dict[str, Any]] = []
        self.stopped_early_ = False
        # kept only during fit (callbacks may read it); never saved
        self._train_table, self._train_clean = table, table.data
        self._fit_weights = weights
        try:
            with self._private_global_rng():
                self._build(table.data, schema)
            if ckpt is not None:
                ckpt_file = self._model_file(resume_from)
                with reading(ckpt_file, "checkpoint"), _state_errors(ckpt_file):
                    self.epoch_ = int(ckpt["epoch"])
                    self.history_ = list(ckpt["history"])
                    self._load_state_dict(ckpt["state"])
                    self._rngs.load_state_dict(ckpt["rng"], epoch=self.epoch_)
            for cb in callbacks:
                if hasattr(cb, "on_fit_start"):
                    cb.on_fit_start(self)
            for epoch in range(self.epoch_ + 1, int(self.epochs) + 1):
                t0 = time.perf_counter()
                self._set_train_mode(True)
                with self._private_global_rng():
                    logs = dict(self._train_epoch(epoch))
                self.epoch_ = epoch
                logs = {k: float(v) for k, v in logs.items()}
                logs["epoch_time"] = time.perf_counter() - t0
                self.history_.append({"epoch": epoch, **logs})
                stop = False
                for cb in callbacks:
                    if hasattr(cb, "on_epoch_end"):
                        stop = bool(cb.on_epoch_end(self, epoch, logs)) or stop
                self.history_[-1] = {"epoch": epoch, **{k: v for k, v in logs.items() if _is_number(v)}}
                if stop:
                    self.stopped_early_ = epoch < int(self.epochs)
                    break
            for cb in callbacks:
                if hasattr(cb, "on_fit_end"):
                    cb.on_fit_end(self)
        finally:
            self._train_table = self._train_clean = None
            self._fit_weights = None
        return self

    @property
    def training_table_(self) -> ValidatedTable:
        """The validated training table (pass it on as is: it is not validated again); during ``fit`` only."""
        table = getattr(self, "_train_table", None)
        if table is None:
            raise TabmemError("the training table is only available during fit (it is never stored with the model)")
        return table

    def _set_train_mode(self, mode: bool) -> None:
        for m in self._torch_modules():
            m.train(mode)

    def _record_training_meta(self, table: ValidatedTable) -> None:
        schema = table.schema
        self.schema_ = schema
        self.encoder_ = TableEncoder(schema).fit(table)
        self.n_train_ = int(len(table))
        self.fingerprint_ = table_fingerprint(table)
        self.dtypes_ = {c: table.dtypes[c] for c in schema.columns}
        self.category_dtypes_ = {c: v for c, v in category_dtypes(table).items() if c in schema.categorical}

    def _check_resume(self, ckpt: dict[str, Any]) -> None:
        if ckpt.get("class") != self.name:
            raise TabmemError(f"resume_from: the checkpoint is for generator {ckpt.get('class')!r}, not {self.name!r}")
        if ckpt.get("fingerprint") != self.fingerprint_:
            raise TabmemError(
                "resume_from: the checkpoint was trained on a different training table (fingerprints differ)"
            )
        # a parameter added after the checkpoint was written is read at its default: new parameters
        # default to the behaviour of the versions that did not have them
        mine, theirs = self.get_params(), {**self._param_defaults(), **ckpt["params"]}
        diff = sorted(
            k
            for k in set(mine) | set(theirs)
            if k not in self._RESUME_MUTABLE and k != "random_state" and mine.get(k) != theirs.get(k)
        )
        if diff:
            details = "; ".join(f"{k}: checkpoint {theirs.get(k)!r} vs now {mine.get(k)!r}" for k in diff)
            raise TabmemError(f"resume_from: parameters differ from the checkpoint ({details})")
        if int(ckpt["epoch"]) > int(self.epochs):
            raise TabmemError(f"resume_from: the checkpoint is at epoch {ckpt['epoch']} but epochs={self.epochs}")

    # ----------------------------------------------------------------- sample
    def sample(self, n: int, *, random_state: int | None = None, batch_size: int | None = None) -> pd.DataFrame:
        """``n`` synthetic rows with the training columns, kinds and dtypes.

        Categories come only from the training table; numerical columns are float, rounded back
        to integers where the training column was an integer dtype (every rule:
        :mod:`tabmem.data.dtypes`). The same ``random_state``
        gives the same rows; ``None`` draws fresh randomness. Sampling never touches the
        training RNG, the global RNG or the train/eval modes (it restores all of them), so a
        callback may sample mid-training without changing the training trajectory.
        """
        seed, bs = self._check_sample_args(n, random_state, batch_size)
        return self._sample_batches(n, seed, bs, self._sample_clean)

    def _check_sample_args(self, n: int, random_state: int | None, batch_size: int | None) -> tuple[int, int]:
        """Check :meth:`sample`'s arguments (and that there is a model); returns ``(seed, batch size)``."""
        if not self.is_fitted and getattr(self, "_train_clean", None) is None:
            raise TabmemError(f"{type(self).__name__} is not fitted: call fit() or load() first")
        check_positive_int("sample: n", n)
        seed = check_random_state(random_state)
        if seed is None:
            seed = fresh_seed()
        bs = int(batch_size or self.sample_batch_size)
        if bs < 1:
            raise TabmemError(f"sample: batch_size must be positive, got {batch_size!r}")
        return seed, bs

    def _sample_batches(
        self, n: int, seed: int, batch_size: int, draw: Callable[[int, torch.Generator], pd.DataFrame]
    ) -> pd.DataFrame:
        """The body of :meth:`sample`: ``draw(k, generator)`` (``_sample_clean`` or a subclass's variant
        with its per-call options bound) in chunks of ``batch_size``, under a private RNG, in eval mode."""
        modes = [(m, m.training) for m in self._torch_modules()]
        parts: list[pd.DataFrame] = []
        try:
            for m, _ in modes:
                m.eval()
            with sampling_rng(seed, self.device_) as gen, torch.inference_mode():
                done = 0
                while done < n:
                    k = min(batch_size, n - done)
                    part = draw(k, gen)
                    if len(part) != k:
                        raise RuntimeError(
                            f"{type(self).__name__}._sample_clean returned {len(part)} rows, expected {k}"
                        )
                    parts.append(self._decode_categories(part))
                    done += k
        finally:
            for m, mode in modes:
                m.train(mode)
        clean = pd.concat(parts, ignore_index=True) if len(parts) > 1 else parts[0].reset_index(drop=True)
        return restore_dtypes(clean, self.schema_, self.dtypes_, category_dtypes=self.category_dtypes_)

    def _decode_categories(self, part: pd.DataFrame) -> pd.DataFrame:
        part = part.copy()
        for c in self.schema_.categorical:
            col = part[c]
            if pd.api.types.is_integer_dtype(col.dtype):
                cats = self.encoder_.categories_[c]
                codes = col.to_numpy()
                if codes.size and (codes.min() < 0 or codes.max() >= len(cats)):
                    raise RuntimeError(
                        f"{type(self).__name__}._sample_clean returned out-of-range codes for column {c!r}"
                    )
                part[c] = cats[codes]
        return part[list(self.schema_.columns)]

    # -------------------------------------------------------------- save/load
    def _payload(self) -> dict[str, Any]:
        return {
            "format": FORMAT,
            "version": FORMAT_VERSION,
            "class": self.name,
            "params": self.get_params(),
            "schema": self.schema_.to_dict(),
            "dtypes": dict(self.dtypes_),
            "category_dtypes": dict(self.category_dtypes_),
            "encoder": self.encoder_.to_state(),
            "n_train": self.n_train_,
            "fingerprint": self.fingerprint_,
            "seed": self.seed_,
            "epoch": self.epoch_,
            "history": list(self.history_),
            "stopped_early": bool(self.stopped_early_),
            "rng": self._rngs.state_dict(),
            "state": self._state_dict(),
            **({"sample_weight": fp} if (fp := getattr(self, "sample_weight_fingerprint_", None)) else {}),
        }

    def save_checkpoint(self, path: str | Path) -> Path:
        """Write a resumable checkpoint (atomic). Same content as :meth:`save`."""
        path = Path(path)
        _atomic_torch_save(self._payload(), path)
        return path

    def save(self, path: str | Path) -> Path:
        """Save the fitted generator (model, optimizer, RNG states, config, schema); no training rows."""
        if not self.is_fitted:
            raise TabmemError(f"{type(self).__name__} is not fitted: nothing to save")
        return self.save_checkpoint(path)

    @staticmethod
    def _model_file(path: str | Path) -> Path:
        """``path`` itself, or the ``model.pt`` (else ``checkpoint.pt``) of the directory ``path``."""
        p = Path(path)
        if p.is_dir():
            for candidate in ("model.pt", "checkpoint.pt"):
                if (p / candidate).is_file():
                    return p / candidate
        return p

    @staticmethod
    def _read_file(path: str | Path) -> dict[str, Any]:
        _require_torch()
        p = TabularGenerator._model_file(path)
        if not p.is_file():
            where = " (no model.pt or checkpoint.pt in it)" if Path(path).is_dir() else ""
            raise TabmemError(f"no saved generator at {str(path)!r}{where}")
        try:
            payload = torch.load(p, map_location="cpu", weights_only=True)
        except Exception as exc:  # noqa: BLE001 - any unreadable file is a user error here
            # torch's own text runs over many lines (and suggests weights_only=False, which would run
            # the file's pickled code): one line, with the reason's first line only
            reason = str(exc).strip().splitlines()[0][:200] if str(exc).strip() else ""
            if "weights_only" in str(exc) or "Unsupported global" in str(exc):
                reason = "it holds pickled Python objects, which tabmem never loads"
            raise TabmemError(
                f"{str(p)!r} is not a readable tabmem generator file ({type(exc).__name__}: {reason})"
            ) from None
        if not isinstance(payload, dict) or payload.get("format") != FORMAT:
            raise TabmemError(f"{str(p)!r} is not a tabmem generator file")
        with reading(p, "generator file"):
            newer = int(payload.get("version", 0)) > FORMAT_VERSION
        if newer:
            raise TabmemError(f"{str(p)!r} was written by a newer tabmem (format {payload['version']})")
        missing = [k for k in PAYLOAD_ENTRIES if k not in payload]
        if missing:
            raise TabmemError(
                f"generator file {str(p)!r} is damaged: it lacks the entry {', '.join(map(repr, missing))}"
            )
        return payload

    @classmethod
    def load(cls, path: str | Path, *, device: str | None = None) -> TabularGenerator:
        """Load a generator written by :meth:`save` or a checkpoint; ready to :meth:`sample`."""
        payload = cls._read_file(path)
        p = cls._model_file(path)
        name = payload["class"]
        if not isinstance(name, str) or name not in GENERATORS:
            raise TabmemError(f"{str(path)!r} holds a {name!r} generator, which is not available here")
        target = GENERATORS.get(name)
        if cls is not TabularGenerator and not issubclass(target, cls):
            raise TabmemError(f"{str(path)!r} holds a {name!r} generator, not a {cls.__name__}")
        with reading(p, "generator file"):
            params = dict(payload["params"])
        if device is not None:
            params["device"] = device
        try:
            gen = target(**params)
        except (TabmemError, TypeError) as exc:  # an unknown or invalid entry of its "params"
            raise TabmemError(f"generator file {str(p)!r} is damaged: its params entry is not valid ({exc})") from None
        with reading(p, "generator file"), _state_errors(p):
            gen._restore(payload)
        return gen

    def _restore(self, payload: dict[str, Any]) -> None:
        schema = Schema.from_dict(payload["schema"])
        self.device_ = resolve_device(getattr(self, "device", "auto"))
        self.schema_ = schema
        self.encoder_ = TableEncoder.from_state(schema, payload["encoder"])
        self.dtypes_ = dict(payload["dtypes"])
        self.category_dtypes_ = dict(payload.get("category_dtypes", {}))  # absent in format 1
        self.n_train_ = int(payload["n_train"])
        self.fingerprint_ = payload["fingerprint"]
        self.epoch_ = int(payload["epoch"])
        self.history_ = list(payload["history"])
        self.stopped_early_ = bool(payload.get("stopped_early", False))
        self._init_rngs(int(payload["seed"]))
        self._train_table = self._train_clean = None
        with self._private_global_rng():
            self._build(self.encoder_.placeholder_table(self.n_train_), schema)
        self._load_state_dict(payload["state"])
        self._rngs.load_state_dict(payload["rng"], epoch=self.epoch_)


@contextlib.contextmanager
def _state_errors(path: Path) -> Iterator[None]:
    """torch's ``load_state_dict`` errors (missing, unexpected or mis-sized weights) as one line naming the file."""
    try:
        yield
    except RuntimeError as exc:
        text = str(exc).strip().splitlines()
        reason = " ".join(line.strip() for line in text[1:3])[:200] or (text[0][:200] if text else "RuntimeError")
        raise TabmemError(
            f"generator file {str(path)!r} is damaged: its weights do not fit the model ({reason})"
        ) from None


#: name -> generator class; the built-in generators are imported when first asked for.
GENERATORS: Registry[type[TabularGenerator]] = Registry(
    "generator",
    base=TabularGenerator,
    optional={
        "tabddpm": "tabmem.generators.tabddpm",
        "tvae": "tabmem.generators.tvae",
        "ctgan": "tabmem.generators.ctgan",
        "llm": "tabmem.generators.llm",
        "noisy_resample": "tabmem.generators.baselines",
        "realtabformer": "tabmem.generators.ext_realtabformer",
        "great": "tabmem.generators.ext_great",
        "sdv_ctgan": "tabmem.generators.ext_sdv",
        "sdv_tvae": "tabmem.generators.ext_sdv",
        "synthcity_ddpm": "tabmem.generators.ext_synthcity",
        "synthcity_ctgan": "tabmem.generators.ext_synthcity",
        "synthcity_tvae": "tabmem.generators.ext_synthcity",
    },
    extras={
        "realtabformer": "realtabformer",
        "great": "great",
        "sdv_ctgan": "ctgan",
        "sdv_tvae": "ctgan",
        "synthcity_ddpm": "synthcity",
        "synthcity_ctgan": "synthcity",
        "synthcity_tvae": "synthcity",
    },
)
register_generator = GENERATORS.register


def available_generators() -> list[str]:
    """Names of all generators that can be built in this installation."""
    return GENERATORS.names()


# ------------------------------------------------------------------ helpers
def _is_number(v: Any) -> bool:
    return isinstance(v, (int, float, np.integer, np.floating)) and not isinstance(v, bool)
