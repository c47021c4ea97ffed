"""``sdv_ctgan`` and ``sdv_tvae``: the ``ctgan`` package's (sdv-dev) CTGAN and TVAE behind tabmem's generator interface.

Registered only when ``import ctgan`` works (extra ``tabmem[ctgan]``; its ``rdt`` pins pandas<3,
so it lives in its own virtualenv: ``tests/run_reference.sh``'s ``.venv-ref``). The package is
BSL-1.1 licensed: an optional adapter for comparisons, never a dependency, and none of its code is
copied. Its data transformer, conditional sampler, networks, training loop and sampling are its own
calls; tabmem's own ``ctgan``/``tvae`` (``generators/ctgan.py``, ``tvae.py``) are separate models.

How tabmem gets per-epoch control
---------------------------------
``CTGAN.fit`` / ``TVAE.fit`` loop over all epochs with no callback. The one thing they do exactly
once per epoch, after the epoch's last optimizer step, is to assign ``self.loss_values`` (the loss
table grown by that epoch's rows). tabmem trains a subclass of the package's class whose
``loss_values`` is a property: its setter stores the table and calls
:meth:`~tabmem.generators._worker.EpochPause.pause`. The package's ``fit`` runs once, for all
epochs, in a worker thread (:mod:`tabmem.generators._worker`, the same handoff the
realtabformer/GReaT adapters use for ``transformers.Trainer``); ``pause`` hands control back to
tabmem at each epoch boundary and waits. The worker runs only inside ``_train_epoch``, under the
generator's private copies of the global torch, numpy and Python RNGs (the package draws its noise,
conditions and rows from the global ``torch`` and ``np.random`` streams), so the trajectory is the
package's own uninterrupted ``fit`` and sampling in between does not change it: the tests check
that the final weights are bit-identical with and without tracking. Nothing of the loop is copied.

Sampling calls the package's ``sample`` under a private RNG seeded from the sampling seed. CTGAN
samples with its generator in training mode (BatchNorm normalises with each batch's statistics,
as the package does); the running statistics that this updates are put back afterwards, so a
sample mid-training leaves the model as it was. TVAE's ``sample`` switches its decoder to eval
mode; the mode is restored.

Resume is refused: the package keeps its discriminator (CTGAN), encoder (TVAE) and optimizers as
local variables of ``fit``, so no checkpoint can continue a run. Checkpoints and saved models hold
the trained network's weights as tensors, and the package's fitted data transformer (and CTGAN's
conditional sampler) as the package's own pickled objects, which are read back through torch's
``weights_only`` loader with an allowlist of exactly the classes they are made of (nothing else
can be built from the file). The transformer holds every category and the Gaussian mixture of
every numerical column; the sampler holds training row indices per category (no values).
"""

from __future__ import annotations

import importlib
import io
import re
from typing import Any, ClassVar

import ctgan  # noqa: F401  - a missing package makes the registry report the extra
import numpy as np
import pandas as pd
import torch
from ctgan import CTGAN, TVAE
from ctgan.synthesizers.ctgan import Generator
from ctgan.synthesizers.tvae import Decoder

from tabmem._checks import check_number, check_positive_int
from tabmem.data.schema import Schema
from tabmem.errors import TabmemError
from tabmem.generators._rng import derive_seed
from tabmem.generators._worker import EpochPause, WorkerTraining, python_numpy_rng, silenced
from tabmem.generators.base import TabularGenerator, register_generator

__all__ = ["SDVCTGANGenerator", "SDVTVAEGenerator"]

#: the classes the package's pickled transformer and sampler are made of (module.name); read back
#: with torch's weights_only loader allowing these and numpy's dtype classes only
_PACKAGE_GLOBALS = (
    "ctgan.data_transformer.DataTransformer", "ctgan.data_transformer.SpanInfo",
    "ctgan.data_transformer.ColumnTransformInfo", "ctgan.data_sampler.DataSampler",
    "rdt.transformers.numerical.ClusterBasedNormalizer", "rdt.transformers.categorical.OneHotEncoder",
    "rdt.transformers.null.NullTransformer", "sklearn.mixture._bayesian_mixture.BayesianGaussianMixture",
    "numpy._core.multiarray.scalar", "numpy._core.multiarray._reconstruct", "numpy.ndarray", "numpy.dtype",
    "numpy.random._pickle.__randomstate_ctor", "numpy.random._pickle.__bit_generator_ctor",
    "numpy.random._mt19937.MT19937", "numpy.random.bit_generator.__pyx_unpickle_SeedSequence",
    "numpy.random.bit_generator.SeedSequence", "numpy.random.mtrand.RandomState",
    "pandas.core.series.Series", "pandas.core.internals.managers.SingleBlockManager",
    "pandas.core.indexes.base._new_Index", "pandas.core.indexes.base.Index",
    "pandas.core.indexes.range.RangeIndex", "builtins.slice", "builtins.bytes",
)  # fmt: skip


def _allowed_globals() -> list[Any]:
    found = []
    for name in _PACKAGE_GLOBALS:
        module, _, attr = name.rpartition(".")
        try:
            found.append(getattr(importlib.import_module(module), attr))
        except (ImportError, AttributeError):  # another numpy/pandas layout: that name is simply not needed
            continue
    found += [v for v in vars(np.dtypes).values() if isinstance(v, type) and issubclass(v, np.dtype)]
    return found


def _pack(objects: dict[str, Any]) -> torch.Tensor:
    buf = io.BytesIO()
    torch.save(objects, buf)
    return torch.frombuffer(bytearray(buf.getvalue()), dtype=torch.uint8)


def _unpack(blob: torch.Tensor, who: str) -> dict[str, Any]:
    try:
        with torch.serialization.safe_globals(_allowed_globals()):
            return torch.load(io.BytesIO(blob.numpy().tobytes()), weights_only=True)
    except Exception as exc:  # noqa: BLE001 - any failure is one line naming what the file needs
        text = str(exc)
        found = re.search(r"GLOBAL ([\w.]+)", text) or re.search(r"got <class '([\w.]+)'>", text)
        what = f"it needs {found.group(1)}, which tabmem does not load" if found else type(exc).__name__
        raise TabmemError(
            f"{who}: cannot read the ctgan package's objects in this file ({what}; saved with another ctgan/rdt?)"
        ) from None


def _epoch_losses(table: pd.DataFrame) -> dict[str, float]:
    """The losses of the epoch whose rows ``table`` ends with (CTGAN: one row; TVAE: one row per batch)."""
    last = table[table["Epoch"] == table["Epoch"].iloc[-1]]
    if "Loss" in table:
        return {"loss": float(last["Loss"].astype(float).mean())}
    return {"loss": float(last["Generator Loss"].iloc[-1]), "loss_d": float(last["Discriminator Loss"].iloc[-1])}


def _hooked(package_class: type) -> type:
    """The package's class with ``loss_values`` (assigned once per epoch by its ``fit``) as the epoch hook."""

    class Hooked(package_class):
        @property
        def loss_values(self) -> pd.DataFrame | None:
            return self.__dict__.get("_loss_values")

        @loss_values.setter
        def loss_values(self, value: pd.DataFrame | None) -> None:
            self.__dict__["_loss_values"] = value
            pause = self.__dict__.get("_tabmem_pause")
            if pause is not None and value is not None and len(value):
                pause(_epoch_losses(value))

    Hooked.__name__ = Hooked.__qualname__ = f"Hooked{package_class.__name__}"
    return Hooked


_CTGAN, _TVAE = _hooked(CTGAN), _hooked(TVAE)


def _dims(name: str, value: Any) -> tuple[int, ...]:
    if not isinstance(value, (list, tuple)) or not value:
        raise TabmemError(f"{name} must be a non-empty list of layer sizes, got {value!r}")
    for v in value:
        check_positive_int(name, v)
    return tuple(int(v) for v in value)


class _PackageGenerator(WorkerTraining, TabularGenerator):
    """What ``sdv_ctgan`` and ``sdv_tvae`` share: the worker, state, sampling and the resume refusal."""

    _package_name: ClassVar[str] = "ctgan"
    #: what the package keeps inside fit() and so no checkpoint holds (the resume refusal names it)
    _fit_locals: ClassVar[str] = ""

    # ------------------------------------------------------------- the package
    def _new_model(self) -> Any:
        raise NotImplementedError

    def _network(self) -> torch.nn.Module | None:
        raise NotImplementedError

    def _package_objects(self) -> dict[str, Any]:
        raise NotImplementedError

    def _restore_package(self, objects: dict[str, Any], weights: dict[str, torch.Tensor]) -> None:
        raise NotImplementedError

    def check_params(self) -> _PackageGenerator:
        super().check_params()
        self._check_params()
        return self

    # ------------------------------------------------------------------ train
    def _resume_refusal(self) -> str:
        return f"the ctgan package keeps its {self._fit_locals} inside fit(), so a checkpoint cannot continue training"

    def _release_fit_state(self) -> None:
        self._fit_table = None

    def _build(self, train_clean: pd.DataFrame, schema: Schema) -> None:
        self._check_params()
        self._init_handoff(derive_seed(self.seed_, 34))
        self._train_call = self._run_fit
        self.model_ = self._new_model()
        training = getattr(self, "_train_clean", None) is not None  # load() builds on a placeholder table
        self._fit_table = train_clean[list(schema.columns)] if training else None

    def _run_fit(self, pause: EpochPause) -> None:  # runs in the worker thread
        self.model_.__dict__["_tabmem_pause"] = pause.pause
        try:
            self.model_.fit(self._fit_table, discrete_columns=list(self.schema_.categorical))
        finally:
            self.model_.__dict__.pop("_tabmem_pause", None)
        pause.end(float("nan"))

    def _torch_modules(self) -> list[torch.nn.Module]:
        return []  # the package sets its own modes (CTGAN samples in training mode, TVAE in eval mode)

    # ------------------------------------------------------------------ state
    def _state_dict(self) -> dict[str, Any]:
        network = self._network()
        if network is None:
            raise TabmemError(f"{self.name}: the package has not trained an epoch yet: nothing to save")
        weights = {k: v.detach().cpu().clone() for k, v in network.state_dict().items()}
        return {"model": weights, "package": _pack(self._package_objects())}

    def _load_state_dict(self, state: dict[str, Any]) -> None:
        objects = _unpack(state["package"], self.name)
        self._restore_package(objects, dict(state["model"]))

    # ----------------------------------------------------------------- sample
    def _sample_clean(self, n: int, generator: torch.Generator) -> pd.DataFrame:
        seed = int(torch.randint(0, 2**31 - 1, (1,), generator=generator).item())
        network = self._network()
        modes = [(m, m.training) for m in network.modules()]
        buffers = [b.clone() for b in network.buffers()]  # BatchNorm's running statistics (CTGAN)
        try:
            with silenced(), python_numpy_rng(seed):
                torch.manual_seed(seed)  # the global stream, forked by the base class for this call
                out = self.model_.sample(int(n))
        finally:
            for b, saved in zip(network.buffers(), buffers):
                b.copy_(saved)
            for m, mode in modes:
                m.train(mode)
        out = pd.DataFrame(out).reset_index(drop=True)
        out = out[list(self.schema_.columns)].copy()
        for c in self.schema_.numerical:
            out[c] = pd.to_numeric(out[c], errors="coerce").astype(float)
        for c in self.schema_.categorical:
            out[c] = out[c].astype(str)
        return out

    def _check_common_package_params(self) -> None:
        check_positive_int(f"{self.name}: embedding_dim", self.embedding_dim)
        batch = int(self.batch_size)
        if batch % 2:
            raise TabmemError(f"{self.name}: batch_size must be even (the package requires it), got {batch}")


@register_generator("sdv_ctgan")
class SDVCTGANGenerator(_PackageGenerator):
    """CTGAN (Xu et al. 2019) as the ``ctgan`` package implements it; arguments are the package's.

    ``random_state`` and ``device`` are tabmem's; the losses logged per epoch are the package's
    last-step generator (``loss``) and discriminator (``loss_d``) losses.
    """

    _package_name = "sdv_ctgan"
    _fit_locals = "discriminator and optimizers"
    PRESETS: ClassVar[dict[str, dict[str, Any]]] = {
        "tiny": {"epochs": 3, "embedding_dim": 16, "generator_dim": (32, 32), "discriminator_dim": (32, 32)},
        # the same sizes as tabmem's own ctgan ``small``
        "small": {"epochs": 30, "embedding_dim": 64, "generator_dim": (128, 128), "discriminator_dim": (128, 128)},
        "package": {},  # the package's defaults (300 epochs, 128 / 256x256 / 256x256)
    }

    def __init__(
        self,
        *,
        embedding_dim: int = 128,
        generator_dim: tuple[int, ...] = (256, 256),
        discriminator_dim: tuple[int, ...] = (256, 256),
        generator_lr: float = 2e-4,
        generator_decay: float = 1e-6,
        discriminator_lr: float = 2e-4,
        discriminator_decay: float = 1e-6,
        batch_size: int = 500,
        discriminator_steps: int = 1,
        log_frequency: bool = True,
        epochs: int = 300,
        pac: int = 10,
        random_state: int | None = None,
        device: str = "auto",
    ) -> None:
        self.embedding_dim = embedding_dim
        self.generator_dim = generator_dim
        self.discriminator_dim = discriminator_dim
        self.generator_lr = generator_lr
        self.generator_decay = generator_decay
        self.discriminator_lr = discriminator_lr
        self.discriminator_decay = discriminator_decay
        self.batch_size = batch_size
        self.discriminator_steps = discriminator_steps
        self.log_frequency = log_frequency
        self.epochs = epochs
        self.pac = pac
        self.random_state = random_state
        self.device = device

    def _check_params(self) -> None:
        self._check_common_package_params()
        _dims(f"{self.name}: generator_dim", self.generator_dim)
        _dims(f"{self.name}: discriminator_dim", self.discriminator_dim)
        for name in ("generator_lr", "generator_decay", "discriminator_lr", "discriminator_decay"):
            check_number(f"{self.name}: {name}", getattr(self, name), low=0.0)
        check_positive_int(f"{self.name}: discriminator_steps", self.discriminator_steps)
        check_positive_int(f"{self.name}: pac", self.pac)
        if int(self.batch_size) % int(self.pac):
            raise TabmemError(f"{self.name}: batch_size ({self.batch_size}) must be a multiple of pac ({self.pac})")

    def _new_model(self) -> Any:
        return _CTGAN(
            embedding_dim=int(self.embedding_dim),
            generator_dim=_dims("generator_dim", self.generator_dim),
            discriminator_dim=_dims("discriminator_dim", self.discriminator_dim),
            generator_lr=float(self.generator_lr),
            generator_decay=float(self.generator_decay),
            discriminator_lr=float(self.discriminator_lr),
            discriminator_decay=float(self.discriminator_decay),
            batch_size=int(self.batch_size),
            discriminator_steps=int(self.discriminator_steps),
            log_frequency=bool(self.log_frequency),
            epochs=int(self.epochs),
            pac=int(self.pac),
            enable_gpu=self.device_.type == "cuda",
        )

    def _network(self) -> torch.nn.Module | None:
        return self.model_._generator

    def _package_objects(self) -> dict[str, Any]:
        return {"transformer": self.model_._transformer, "sampler": self.model_._data_sampler}

    def _restore_package(self, objects: dict[str, Any], weights: dict[str, torch.Tensor]) -> None:
        model, transformer, sampler = self.model_, objects["transformer"], objects["sampler"]
        model._transformer, model._data_sampler = transformer, sampler
        model._generator = Generator(
            model._embedding_dim + sampler.dim_cond_vec(), model._generator_dim, transformer.output_dimensions
        )
        model._generator.load_state_dict(weights)
        model._generator.to(self.device_)


@register_generator("sdv_tvae")
class SDVTVAEGenerator(_PackageGenerator):
    """TVAE (Xu et al. 2019) as the ``ctgan`` package implements it; arguments are the package's.

    ``random_state`` and ``device`` are tabmem's; the loss logged per epoch is the mean of the
    package's per-batch losses in that epoch.
    """

    _package_name = "sdv_tvae"
    _fit_locals = "encoder and optimizer"
    PRESETS: ClassVar[dict[str, dict[str, Any]]] = {
        "tiny": {"epochs": 3, "embedding_dim": 16, "compress_dims": (32, 32), "decompress_dims": (32, 32)},
        # the same sizes as tabmem's own tvae ``small``
        "small": {"epochs": 30, "embedding_dim": 64, "compress_dims": (64, 64), "decompress_dims": (64, 64)},
        "package": {},  # the package's defaults (300 epochs, 128 / 128x128 / 128x128)
    }

    def __init__(
        self,
        *,
        embedding_dim: int = 128,
        compress_dims: tuple[int, ...] = (128, 128),
        decompress_dims: tuple[int, ...] = (128, 128),
        l2scale: float = 1e-5,
        batch_size: int = 500,
        epochs: int = 300,
        loss_factor: float = 2,
        random_state: int | None = None,
        device: str = "auto",
    ) -> None:
        self.embedding_dim = embedding_dim
        self.compress_dims = compress_dims
        self.decompress_dims = decompress_dims
        self.l2scale = l2scale
        self.batch_size = batch_size
        self.epochs = epochs
        self.loss_factor = loss_factor
        self.random_state = random_state
        self.device = device

    def _check_params(self) -> None:
        self._check_common_package_params()
        _dims(f"{self.name}: compress_dims", self.compress_dims)
        _dims(f"{self.name}: decompress_dims", self.decompress_dims)
        check_number(f"{self.name}: l2scale", self.l2scale, low=0.0)
        check_number(f"{self.name}: loss_factor", self.loss_factor, low=0.0)

    def _new_model(self) -> Any:
        return _TVAE(
            embedding_dim=int(self.embedding_dim),
            compress_dims=_dims("compress_dims", self.compress_dims),
            decompress_dims=_dims("decompress_dims", self.decompress_dims),
            l2scale=float(self.l2scale),
            batch_size=int(self.batch_size),
            epochs=int(self.epochs),
            loss_factor=float(self.loss_factor),
            enable_gpu=self.device_.type == "cuda",
        )

    def _network(self) -> torch.nn.Module | None:
        return getattr(self.model_, "decoder", None)

    def _package_objects(self) -> dict[str, Any]:
        return {"transformer": self.model_.transformer}

    def _restore_package(self, objects: dict[str, Any], weights: dict[str, torch.Tensor]) -> None:
        model, transformer = self.model_, objects["transformer"]
        model.transformer = transformer
        model.decoder = Decoder(model.embedding_dim, model.decompress_dims, transformer.output_dimensions)
        model.decoder.load_state_dict(weights)
        model.decoder.to(self.device_)
