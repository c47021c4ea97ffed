"""``synthcity_ddpm``, ``synthcity_ctgan``, ``synthcity_tvae``: synthcity's plugins behind tabmem's generator interface.

Registered only when synthcity imports (extra ``tabmem[synthcity]``: the maintained fork
``schneiderkamplab-synthcity``, Apache-2.0; upstream synthcity pins torch<2.3). It pins
transformers>=5 and pandas<4, so it is installed beside sdmetrics in ``tests/run_reference.sh``'s
``.venv-ref`` (pandas<3 there). None of its code is copied: its data encoding, networks, training
loops and sampling (``Plugin.fit`` / ``Plugin.generate``, with its schema constraints) are its own
calls.

How tabmem gets per-epoch control
---------------------------------
The plugin's ``fit`` runs once, for all epochs, in a worker thread (:mod:`tabmem.generators._worker`,
the handoff the other package adapters use); a per-instance hook calls
:meth:`~tabmem.generators._worker.EpochPause.pause` at each epoch boundary but the last (the last
epoch ends when ``fit`` returns, so the package finishes its own bookkeeping):

* ``synthcity_ddpm``: the package's own callback API: TabDDPM calls ``on_epoch_end`` of each of
  its ``callbacks`` once per epoch; tabmem adds one (:class:`_EpochEnd`) for the duration of ``fit``.
* ``synthcity_ctgan``: ``GAN._train`` calls ``self._train_epoch`` exactly once per epoch; the plugin
  builds its ``TabularGAN`` (and so the ``GAN``) inside ``fit``, so tabmem trains a subclass of the
  plugin whose ``model`` attribute is a property: its setter wraps that one ``GAN`` instance's
  ``_train_epoch`` (an instance attribute; the class is untouched), removed again after ``fit``.
* ``synthcity_tvae``: ``VAE._train`` calls ``self.train()`` once at the start of every epoch (and
  ``eval()`` = ``train(False)`` for its validation); the same plugin subclass wraps that ``VAE``
  instance's ``train`` (the k-th ``train(True)`` ends epoch k-1) and ``_loss_function`` (to log
  the mean training loss of the epoch; the value returned is the package's own).

The worker runs only inside ``_train_epoch``, under the generator's private copies of the global
torch, numpy and Python RNGs (synthcity seeds and draws from the global streams:
``enable_reproducible_results(random_state)`` in ``Plugin.fit``), so the trajectory is the
package's own uninterrupted ``fit`` and sampling in between does not change it: the tests check
that the final weights and samples are bit-identical with and without tracking. A tabmem early
stop ends the package's loop by an exception at the epoch boundary; the plugin is then marked
fitted (``Plugin.fit`` sets that flag after the loop), and what the package does after its loop
(the GAN/VAE reload of their best validation state, which their patience checks write only every
``n_iter_print`` = 50 epochs) does not happen.

What the package does that tabmem's own generators do not: the TVAE (always) and the CTGAN (by
default, for its detection-score early stopping) hold out a random 20% of the training rows as a
validation set, never trained on; their patience checks can end training early after
``n_iter_min`` epochs (tabmem reports that as an error naming the epoch). Sampling with
``strict=True`` (the package's default) drops rows outside the training columns' ranges and
duplicate rows within a call, and draws more.

Sampling calls ``Plugin.generate(n, random_state=seed)`` with the seed drawn from tabmem's
sampling generator, under a private copy of the global RNGs; the modules' train/eval modes are
restored, so a sample mid-training leaves the model as it was. Resume is refused (the epoch loop,
and TabDDPM's and the VAE's optimizers, are local to the package's ``fit``). ``sample_weight`` is
refused (the plugins have no per-record weights).

Saved models and checkpoints hold the fitted plugin (networks with their weights, the package's
data encoders and schema) pickled without its data loaders and optimizers, and read back through
torch's ``weights_only`` loader with an allowlist of exactly the classes it is made of (nothing
else can be built from the file). Two kinds of synthcity classes cannot be named by import
(``FeatureEncoder.wraps`` and ``SkipConnection`` build classes at import time): they are written as
(module, name) and found again only among the classes of the synthcity modules listed here. The
schema holds each column's range and value frequencies (treat a saved model as private as the data).
"""

from __future__ import annotations

import importlib
import io
import pickle
import re
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
import pandas as pd
import synthcity.plugins.core.models.feature_encoder as _feature_encoder
import synthcity.plugins.core.models.layers as _layers
import synthcity.plugins.core.models.mlp as _mlp
import torch
from synthcity.plugins.generic.plugin_ctgan import CTGANPlugin
from synthcity.plugins.generic.plugin_ddpm import TabDDPMPlugin
from synthcity.plugins.generic.plugin_tvae import TVAEPlugin
from synthcity.utils.callbacks import Callback

from tabmem._checks import check_number, check_positive_int
from tabmem.data.schema import Schema
from tabmem.errors import TabmemError
from tabmem.generators._rng import derive_seed
from tabmem.generators._worker import EpochPause, Stop, WorkerTraining, python_numpy_rng, silenced
from tabmem.generators.base import TabularGenerator, register_generator

__all__ = ["SynthcityCTGANGenerator", "SynthcityDDPMGenerator", "SynthcityTVAEGenerator"]

#: where the package writes nothing here (compress_dataset=False) but creates the folder
_WORKSPACE = Path(tempfile.gettempdir()) / "tabmem-synthcity"


# ------------------------------------------------------------------ the hooks
class _EpochEnd(Callback):
    """TabDDPM's own callback API: pauses the worker at the end of every epoch but the last."""

    def __init__(self, pause: Callable[[Any], None], epochs: int) -> None:
        self.pause, self.epochs, self.done, self.rows = pause, epochs, 0, 0
        self.last: dict[str, float] = {"loss": float("nan")}

    def on_epoch_begin(self, model: Any) -> None:
        return None

    def on_epoch_end(self, model: Any) -> None:
        self.done += 1
        steps = model.loss_history[self.rows :]  # one row per step (log_interval=1): [step, mloss, gloss, loss]
        self.rows = len(model.loss_history)
        if steps:
            self.last = {
                "loss": float(np.mean([s[3] for s in steps])),
                "loss_multinomial": float(np.mean([s[1] for s in steps])),
                "loss_gaussian": float(np.mean([s[2] for s in steps])),
            }
        if self.done < self.epochs:
            self.pause(self.last)

    def on_fit_begin(self, model: Any) -> None:
        return None

    def on_fit_end(self, model: Any) -> None:
        return None


class _Hook:
    """Per-instance wrappers of a GAN's ``_train_epoch`` or a VAE's ``train``/``_loss_function``."""

    _ATTRS = ("_train_epoch", "train", "_loss_function")

    def __init__(self, pause: Callable[[Any], None], epochs: int) -> None:
        self.pause, self.epochs = pause, epochs
        self.last: dict[str, float] = {"loss": float("nan")}
        self.net: Any = None

    def attach(self, net: Any) -> None:
        self.net = net
        if hasattr(net, "_train_epoch") and hasattr(net, "generator"):  # synthcity's GAN
            train_epoch, done = net._train_epoch, [0]

            def _train_epoch(*args: Any, **kwargs: Any) -> Any:
                g_loss, d_loss = train_epoch(*args, **kwargs)
                done[0] += 1
                self.last = {"loss": float(g_loss), "loss_d": float(d_loss)}
                if done[0] < self.epochs:
                    self.pause(self.last)
                return g_loss, d_loss

            net.__dict__["_train_epoch"] = _train_epoch
            return
        train, loss_function, begun, losses = net.train, net._loss_function, [0], []

        def _train(mode: bool = True) -> Any:
            if mode:
                begun[0] += 1
                if begun[0] > 1:  # the previous epoch (and its validation) is complete
                    self._epoch_done(losses)
                    self.pause(self.last)
            return train(mode)

        def _loss(*args: Any, **kwargs: Any) -> Any:
            value = loss_function(*args, **kwargs)
            if net.training:  # the validation loss is computed in eval mode
                losses.append(float(value.detach()))
            return value

        net.__dict__["train"], net.__dict__["_loss_function"] = _train, _loss
        self._losses = losses

    def _epoch_done(self, losses: list[float]) -> None:
        if losses:
            self.last = {"loss": float(np.mean(losses))}
        losses.clear()

    def finish(self) -> dict[str, float]:
        if getattr(self, "_losses", None):
            self._epoch_done(self._losses)
        self.detach()
        return self.last

    def detach(self) -> None:
        for attr in self._ATTRS:
            if self.net is not None:
                self.net.__dict__.pop(attr, None)


def _hooked(plugin_class: type) -> type:
    """The plugin with ``model`` as a property: its setter attaches the hook to the network it builds in fit."""

    class Hooked(plugin_class):
        @property
        def model(self) -> Any:
            return self.__dict__.get("model")

        @model.setter
        def model(self, value: Any) -> None:
            self.__dict__["model"] = value
            hook = self.__dict__.get("_tabmem_hook")
            if hook is not None and value is not None:
                hook.attach(value.model)

    Hooked.__name__ = Hooked.__qualname__ = f"Hooked{plugin_class.__name__}"
    Hooked.__module__ = __name__
    return Hooked


HookedCTGANPlugin, HookedTVAEPlugin = _hooked(CTGANPlugin), _hooked(TVAEPlugin)


# ------------------------------------------------------------------ the file format
#: the classes a fitted plugin is made of (module.name); read back with torch's weights_only loader
_PACKAGE_GLOBALS = (
    "synthcity.plugins.generic.plugin_ddpm.TabDDPMPlugin", "synthcity.plugins.generic.plugin_ctgan.CTGANPlugin",
    "synthcity.plugins.generic.plugin_tvae.TVAEPlugin",
    "tabmem.generators.ext_synthcity.HookedCTGANPlugin", "tabmem.generators.ext_synthcity.HookedTVAEPlugin",
    "synthcity.plugins.core.schema.Schema", "synthcity.plugins.core.distribution.FloatDistribution",
    "synthcity.plugins.core.distribution.CategoricalDistribution",
    "synthcity.plugins.core.distribution.IntegerDistribution",
    "synthcity.plugins.core.distribution.DatetimeDistribution",
    "synthcity.plugins.core.models.tabular_encoder.TabularEncoder",
    "synthcity.plugins.core.models.tabular_encoder.FeatureInfo",
    "synthcity.plugins.core.models.feature_encoder.FeatureEncoder",
    "synthcity.plugins.core.models.feature_encoder.GaussianQuantileTransformer",
    "synthcity.plugins.core.models.feature_encoder.BayesianGMMEncoder",
    "synthcity.plugins.core.models.feature_encoder.OneHotEncoder",
    "synthcity.plugins.core.models.feature_encoder.LabelEncoder",
    "synthcity.plugins.core.models.feature_encoder.MinMaxScaler",
    "synthcity.plugins.core.models.feature_encoder.StandardScaler",
    "synthcity.plugins.core.models.feature_encoder.DatetimeEncoder",
    "synthcity.plugins.core.models.tabular_ddpm.TabDDPM",
    "synthcity.plugins.core.models.tabular_ddpm.gaussian_multinomial_diffsuion.GaussianMultinomialDiffusion",
    "synthcity.plugins.core.models.tabular_ddpm.modules.MLPDiffusion",
    "synthcity.plugins.core.models.tabular_ddpm.modules.DiffusionModel",
    "synthcity.plugins.core.models.tabular_ddpm.modules.PositionalEncoding",
    "synthcity.plugins.core.models.tabular_ddpm.modules.TimeStepEmbedding",
    "synthcity.plugins.core.models.tabular_gan.TabularGAN", "synthcity.plugins.core.models.gan.GAN",
    "synthcity.plugins.core.models.tabular_vae.TabularVAE", "synthcity.plugins.core.models.vae.VAE",
    "synthcity.plugins.core.models.vae.Encoder", "synthcity.plugins.core.models.vae.Decoder",
    "synthcity.plugins.core.models.mlp.MLP", "synthcity.plugins.core.models.mlp.LinearLayer",
    "synthcity.plugins.core.models.mlp.MultiActivationHead",
    "synthcity.plugins.core.models.layers.GumbelSoftmax",
    "synthcity.utils.samplers.ConditionalDatasetSampler",
    "synthcity.metrics.weighted_metrics.WeightedMetrics",
    "synthcity.metrics.eval_detection.SyntheticDetectionMLP",
    "torch.nn.modules.container.Sequential", "torch.nn.modules.container.ModuleList",
    "torch.nn.modules.linear.Linear", "torch.nn.modules.linear.Identity", "torch.nn.modules.activation.ReLU", "torch.nn.modules.activation.LeakyReLU",
    "torch.nn.modules.activation.SiLU", "torch.nn.modules.activation.Tanh", "torch.nn.modules.activation.ELU",
    "torch.nn.modules.activation.Softmax", "torch.nn.modules.activation.Sigmoid",
    "torch.nn.modules.dropout.Dropout", "torch.nn.modules.batchnorm.BatchNorm1d",
    "torch.nn.modules.loss.MSELoss", "torch.nn.modules.loss.CrossEntropyLoss", "torch.nn.modules.loss.BCELoss",
    "torch.nn.modules.loss.NLLLoss",
    "sklearn.preprocessing._label.LabelEncoder", "sklearn.preprocessing._encoders.OneHotEncoder",
    "sklearn.preprocessing._data.MinMaxScaler", "sklearn.preprocessing._data.StandardScaler",
    "sklearn.mixture._bayesian_mixture.BayesianGaussianMixture",
    "pathlib.PosixPath", "pathlib.WindowsPath", "torch.device", "builtins.slice", "builtins.type", "builtins.bytes",
    "builtins.set", "builtins.frozenset", "builtins.getattr",
    "numpy._core.multiarray.scalar", "numpy._core.multiarray._reconstruct", "numpy.ndarray", "numpy.dtype",
    "numpy.float64", "numpy.random._pickle.__generator_ctor", "numpy.random._pickle.__bit_generator_ctor",
    "numpy.random._pickle.__randomstate_ctor", "numpy.random._pcg64.PCG64", "numpy.random._mt19937.MT19937",
    "numpy.random.bit_generator.__pyx_unpickle_SeedSequence", "numpy.random.bit_generator.SeedSequence",
    "numpy.random._generator.Generator", "numpy.random.mtrand.RandomState",
    "pandas.core.series.Series", "pandas.core.frame.DataFrame", "pandas.core.internals.managers.SingleBlockManager",
    "pandas.core.internals.managers.BlockManager", "pandas.core.internals.blocks.new_block",
    "pandas._libs.internals._unpickle_block", "pandas.core.indexes.base._new_Index",
    "pandas.core.indexes.base.Index", "pandas.core.indexes.range.RangeIndex",
)  # fmt: skip

#: modules whose import-time built classes (``FeatureEncoder.wraps``, ``SkipConnection``) are looked up by name
_DYNAMIC_MODULES = (_feature_encoder, _layers, _mlp)


def _importable(cls: type) -> bool:
    try:
        return getattr(importlib.import_module(cls.__module__), cls.__qualname__) is cls
    except (ImportError, AttributeError):
        return False


def _dynamic_class(module: str, qualname: str) -> type:
    """A class built at import time by synthcity (module, qualname), found among ``_DYNAMIC_MODULES`` only."""
    named = getattr(importlib.import_module(module), qualname, None)  # the class written was not this one
    for mod in _DYNAMIC_MODULES:
        for value in vars(mod).values():
            if not isinstance(value, type):
                continue
            if value is not named and value.__module__ == module and value.__qualname__ == qualname:
                return value
            inner = getattr(value, "__init__", None)  # FeatureEncoder.wraps: the wrapped class in the closure
            for cell in getattr(inner, "__closure__", None) or ():
                found = cell.cell_contents
                if (
                    isinstance(found, type)
                    and found is not named
                    and (found.__module__, found.__qualname__) == (module, qualname)
                ):
                    return found
    raise TabmemError(f"synthcity has no class {module}.{qualname} (saved with another synthcity?)")


def _rebuild(module: str, qualname: str, state: dict[str, Any]) -> Any:
    cls = _dynamic_class(module, qualname)
    obj = cls.__new__(cls)
    obj.__dict__.update(state)
    return obj


def _no_object() -> None:
    return None


class _Pickler(pickle.Pickler):
    """Drops data loaders (they hold the training rows), optimizers and local functions (loss
    closures, hooks); writes synthcity's import-time built classes as (module, name)."""

    def reducer_override(self, obj: Any) -> Any:
        if isinstance(obj, (torch.utils.data.DataLoader, torch.optim.Optimizer, _EpochEnd, _Hook, EpochPause)):
            return (_no_object, ())
        if callable(obj) and "<locals>" in getattr(obj, "__qualname__", ""):
            return (_no_object, ())
        cls = type(obj)
        if cls.__module__.startswith("synthcity") and hasattr(obj, "__dict__") and not _importable(cls):
            return (_rebuild, (cls.__module__, cls.__qualname__, obj.__dict__))
        return NotImplemented


class _PickleModule:
    """What ``torch.save(pickle_module=...)`` needs, with :class:`_Pickler`."""

    Pickler = _Pickler
    Unpickler = pickle.Unpickler
    HIGHEST_PROTOCOL = pickle.HIGHEST_PROTOCOL
    dump, load = pickle.dump, pickle.load


def _allowed_globals() -> list[Any]:
    found: list[Any] = [_rebuild, _no_object, type(None)]
    for name in _PACKAGE_GLOBALS:
        module, _, attr = name.rpartition(".")
        try:
            found.append(getattr(importlib.import_module(module), attr))
        except (ImportError, AttributeError):  # another numpy/pandas/sklearn layout: that name is not needed
            continue
    found += [v for v in vars(np.dtypes).values() if isinstance(v, type) and issubclass(v, np.dtype)]
    return found


def _pack(plugin: Any) -> torch.Tensor:
    buf = io.BytesIO()
    torch.save(plugin, buf, pickle_module=_PickleModule)
    return torch.frombuffer(bytearray(buf.getvalue()), dtype=torch.uint8)


def _unpack(blob: torch.Tensor, who: str) -> Any:
    try:
        with torch.serialization.safe_globals(_allowed_globals()):
            return torch.load(io.BytesIO(blob.numpy().tobytes()), weights_only=True)
    except Exception as exc:  # noqa: BLE001 - any failure is one line naming what the file needs
        text = str(exc)
        found = re.search(r"GLOBAL ([\w.]+)", text) or re.search(r"got <class '([\w.]+)'>", text)
        what = f"it needs {found.group(1)}, which tabmem does not load" if found else type(exc).__name__
        raise TabmemError(
            f"{who}: cannot read synthcity's objects in this file ({what}; saved with another synthcity?)"
        ) from None


# ------------------------------------------------------------------ the generators
class _SynthcityGenerator(WorkerTraining, TabularGenerator):
    """What the synthcity generators share: the worker, state, sampling and the refusals."""

    _package_name: ClassVar[str] = "synthcity"
    _plugin_class: ClassVar[type] = TabDDPMPlugin

    def _plugin_kwargs(self) -> dict[str, Any]:
        raise NotImplementedError

    def _check_params(self) -> None:
        check_positive_int(f"{self.name}: epochs", self.epochs)
        check_positive_int(f"{self.name}: batch_size", self.batch_size)
        check_number(f"{self.name}: lr", self.lr, low=0.0)
        check_number(f"{self.name}: weight_decay", self.weight_decay, low=0.0)
        if not isinstance(self.strict, bool):
            raise TabmemError(f"{self.name}: strict must be true or false, got {self.strict!r}")
        if self.options is not None and not isinstance(self.options, dict):
            raise TabmemError(f"{self.name}: options must be a table of further plugin arguments, got {self.options!r}")
        own = set(self._plugin_kwargs()) | {"random_state", "device", "workspace", "n_iter"}
        clash = sorted(set(self.options or {}) & own)
        if clash:
            raise TabmemError(f"{self.name}: options may not set {', '.join(clash)} (they are this generator's own)")

    def check_params(self) -> _SynthcityGenerator:
        super().check_params()
        self._check_params()
        return self

    # ------------------------------------------------------------------ train
    def _resume_refusal(self) -> str:
        return (
            "synthcity keeps the epoch loop and optimizer state inside fit(), so a checkpoint cannot continue training"
        )

    def _release_fit_state(self) -> None:
        self._fit_table = None

    def _new_plugin(self) -> Any:
        kwargs = {**self._plugin_kwargs(), **(self.options or {})}
        _WORKSPACE.mkdir(parents=True, exist_ok=True)
        with silenced(), python_numpy_rng():  # the plugin seeds the global numpy/Python RNGs when built
            try:
                return self._plugin_class(
                    n_iter=int(self.epochs),
                    random_state=derive_seed(self.seed_, 35) % 2**31,
                    device=self.device_,
                    workspace=_WORKSPACE,
                    **kwargs,
                )
            except (TypeError, ValueError) as exc:  # pydantic's validation of the arguments
                first = str(exc).strip().splitlines()
                raise TabmemError(f"{self.name}: synthcity refused the arguments ({' '.join(first[:3])})") from None

    def _build(self, train_clean: pd.DataFrame, schema: Schema) -> None:
        self._check_params()
        self._init_handoff(derive_seed(self.seed_, 34))
        self._train_call = self._run_fit
        self.plugin_ = self._new_plugin()
        training = getattr(self, "_train_clean", None) is not None  # load() builds on a placeholder table
        self._fit_table = train_clean[list(schema.columns)] if training else None

    def _attach(self, pause: EpochPause) -> Callable[[], dict[str, float]]:
        """Add the epoch hook; returns what removes it and gives the last epoch's losses."""
        hook = _Hook(pause.pause, int(self.epochs))
        self.plugin_.__dict__["_tabmem_hook"] = hook

        def finish() -> dict[str, float]:
            self.plugin_.__dict__.pop("_tabmem_hook", None)
            return hook.finish()

        return finish

    def _run_fit(self, pause: EpochPause) -> None:  # runs in the worker thread
        finish = self._attach(pause)
        try:
            self.plugin_.fit(self._fit_table)
        except Stop:
            self.plugin_.fitted = True  # what Plugin.fit sets after the loop that the stop ended
            raise
        finally:
            last = finish()
        pause.end(last)  # type: ignore[arg-type]

    def _torch_modules(self) -> list[torch.nn.Module]:
        return []  # the package sets its own modes; sampling restores them

    def _network(self) -> torch.nn.Module | None:
        """The trained network (weights compared in tests, modes restored when sampling)."""
        raise NotImplementedError

    # ------------------------------------------------------------------ state
    def _state_dict(self) -> dict[str, Any]:
        if self._network() is None:
            raise TabmemError(f"{self.name}: the package has not trained an epoch yet: nothing to save")
        return {"plugin": _pack(self.plugin_)}

    def _load_state_dict(self, state: dict[str, Any]) -> None:
        self.plugin_ = _unpack(state["plugin"], self.name)
        self.plugin_.fitted = True  # a checkpoint is written mid-fit, before the package sets it

    # ----------------------------------------------------------------- sample
    def _sample_clean(self, n: int, generator: torch.Generator) -> pd.DataFrame:
        network = self._network()
        modes = [(m, m.training) for m in network.modules()]
        fitted, parts, have = self.plugin_.fitted, [], 0
        try:
            self.plugin_.fitted = True  # mid-training (a tracker's sample): the plugin is usable, its flag not yet set
            for _ in range(10):  # strict sampling may return fewer rows: draw again
                seed = int(torch.randint(0, 2**31 - 1, (1,), generator=generator).item())
                with silenced(), python_numpy_rng(seed):
                    torch.manual_seed(seed)  # the global stream, forked by the base class for this call
                    part = self.plugin_.generate(int(n - have), random_state=seed).dataframe()
                parts.append(part)
                have += len(part)
                if have >= n:
                    break
        finally:
            self.plugin_.fitted = fitted
            for m, mode in modes:  # the flag itself: the VAE's hooked train() pauses the worker
                m.training = mode
        if have < n:
            raise TabmemError(
                f"{self.name}: synthcity returned {have} of {n} rows within the training ranges (strict=true); "
                "pass strict=false to keep every row it draws"
            )
        out = pd.concat(parts, ignore_index=True).head(n)
        out = out[list(self.schema_.columns)].copy()
        for c in self.schema_.numerical:
            out[c] = pd.to_numeric(out[c], errors="coerce").astype(float)
        for c in self.schema_.categorical:
            out[c] = out[c].astype(str)
        return out


@register_generator("synthcity_ddpm")
class SynthcityDDPMGenerator(_SynthcityGenerator):
    """TabDDPM (Kotelnikov et al. 2023) as synthcity's ``ddpm`` plugin implements it; arguments are the plugin's.

    ``epochs`` is the plugin's ``n_iter`` (passes over the data); ``n_layers_hidden`` /
    ``n_units_hidden`` go to its ``model_params``; ``options`` passes further plugin arguments. The
    losses logged per epoch are the means of the package's per-step losses (``loss`` =
    ``loss_multinomial`` + ``loss_gaussian``).
    """

    _plugin_class = TabDDPMPlugin
    PRESETS: ClassVar[dict[str, dict[str, Any]]] = {
        "tiny": {"epochs": 3, "batch_size": 100, "num_timesteps": 50, "n_layers_hidden": 2, "n_units_hidden": 32},
        "small": {"epochs": 100, "batch_size": 256, "num_timesteps": 200, "n_layers_hidden": 3, "n_units_hidden": 128},
        "package": {},  # the plugin's defaults (1000 epochs, 1024 rows a batch, 1000 timesteps, 3 x 256)
    }

    def __init__(
        self,
        *,
        epochs: int = 1000,
        batch_size: int = 1024,
        lr: float = 0.002,
        weight_decay: float = 1e-4,
        num_timesteps: int = 1000,
        n_layers_hidden: int = 3,
        n_units_hidden: int = 256,
        strict: bool = True,
        options: dict[str, Any] | None = None,
        random_state: int | None = None,
        device: str = "auto",
    ) -> None:
        self.epochs = epochs
        self.batch_size = batch_size
        self.lr = lr
        self.weight_decay = weight_decay
        self.num_timesteps = num_timesteps
        self.n_layers_hidden = n_layers_hidden
        self.n_units_hidden = n_units_hidden
        self.strict = strict
        self.options = options
        self.random_state = random_state
        self.device = device

    def _check_params(self) -> None:
        super()._check_params()
        for name in ("num_timesteps", "n_layers_hidden", "n_units_hidden"):
            check_positive_int(f"{self.name}: {name}", getattr(self, name))

    def _plugin_kwargs(self) -> dict[str, Any]:
        return {
            "batch_size": int(self.batch_size),
            "lr": float(self.lr),
            "weight_decay": float(self.weight_decay),
            "num_timesteps": int(self.num_timesteps),
            "model_params": {"n_layers_hidden": int(self.n_layers_hidden), "n_units_hidden": int(self.n_units_hidden)},
            "log_interval": 1,  # one loss row per step: the epoch's losses are their means (logging only)
            "strict": bool(self.strict),
        }

    def _attach(self, pause: EpochPause) -> Callable[[], dict[str, float]]:
        model, hook = self.plugin_.model, _EpochEnd(pause.pause, int(self.epochs))
        model.callbacks = [*model.callbacks, hook]

        def finish() -> dict[str, float]:
            model.callbacks = [cb for cb in model.callbacks if cb is not hook]
            return hook.last

        return finish

    def _network(self) -> torch.nn.Module | None:
        return getattr(self.plugin_.model, "diffusion", None)


class _EncodedGenerator(_SynthcityGenerator):
    """CTGAN and TVAE: the plugin subclass whose ``model`` setter attaches the hook."""

    def _network(self) -> torch.nn.Module | None:
        model = self.plugin_.__dict__.get("model")
        return None if model is None else model.model


@register_generator("synthcity_ctgan")
class SynthcityCTGANGenerator(_EncodedGenerator):
    """CTGAN (Xu et al. 2019) as synthcity's ``ctgan`` plugin implements it; arguments are the plugin's.

    ``epochs`` is the plugin's ``n_iter``; ``options`` passes further plugin arguments. The losses
    logged per epoch are the package's mean generator (``loss``) and discriminator (``loss_d``) losses.
    """

    _plugin_class = HookedCTGANPlugin
    PRESETS: ClassVar[dict[str, dict[str, Any]]] = {
        "tiny": {"epochs": 3, "batch_size": 100, "generator_n_units_hidden": 32, "discriminator_n_units_hidden": 32},
        "small": {"epochs": 30, "generator_n_units_hidden": 128, "discriminator_n_units_hidden": 128},
        "package": {},  # the plugin's defaults (2000 epochs, 2 x 500 units)
    }

    def __init__(
        self,
        *,
        epochs: int = 2000,
        batch_size: int = 200,
        lr: float = 1e-3,
        weight_decay: float = 1e-3,
        generator_n_layers_hidden: int = 2,
        generator_n_units_hidden: int = 500,
        discriminator_n_layers_hidden: int = 2,
        discriminator_n_units_hidden: int = 500,
        strict: bool = True,
        options: dict[str, Any] | None = None,
        random_state: int | None = None,
        device: str = "auto",
    ) -> None:
        self.epochs = epochs
        self.batch_size = batch_size
        self.lr = lr
        self.weight_decay = weight_decay
        self.generator_n_layers_hidden = generator_n_layers_hidden
        self.generator_n_units_hidden = generator_n_units_hidden
        self.discriminator_n_layers_hidden = discriminator_n_layers_hidden
        self.discriminator_n_units_hidden = discriminator_n_units_hidden
        self.strict = strict
        self.options = options
        self.random_state = random_state
        self.device = device

    def _check_params(self) -> None:
        super()._check_params()
        for name in ("generator", "discriminator"):
            check_positive_int(f"{self.name}: {name}_n_layers_hidden", getattr(self, f"{name}_n_layers_hidden"))
            check_positive_int(f"{self.name}: {name}_n_units_hidden", getattr(self, f"{name}_n_units_hidden"))

    def _plugin_kwargs(self) -> dict[str, Any]:
        names = ("generator_n_layers_hidden", "generator_n_units_hidden", "discriminator_n_layers_hidden")
        kwargs = {k: int(getattr(self, k)) for k in (*names, "discriminator_n_units_hidden", "batch_size")}
        return {**kwargs, "lr": float(self.lr), "weight_decay": float(self.weight_decay), "strict": bool(self.strict)}


@register_generator("synthcity_tvae")
class SynthcityTVAEGenerator(_EncodedGenerator):
    """TVAE (Xu et al. 2019) as synthcity's ``tvae`` plugin implements it; arguments are the plugin's.

    ``epochs`` is the plugin's ``n_iter``; ``options`` passes further plugin arguments. The loss
    logged per epoch is the mean of the package's training-batch losses in that epoch.
    """

    _plugin_class = HookedTVAEPlugin
    PRESETS: ClassVar[dict[str, dict[str, Any]]] = {
        "tiny": {"epochs": 3, "batch_size": 100, "n_units_embedding": 16, "n_units_hidden": 32},
        "small": {"epochs": 30, "n_units_embedding": 64, "n_units_hidden": 128},
        "package": {},  # the plugin's defaults (1000 epochs, 500 / 3 x 500)
    }

    def __init__(
        self,
        *,
        epochs: int = 1000,
        batch_size: int = 200,
        lr: float = 1e-3,
        weight_decay: float = 1e-5,
        n_units_embedding: int = 500,
        n_layers_hidden: int = 3,
        n_units_hidden: int = 500,
        strict: bool = True,
        options: dict[str, Any] | None = None,
        random_state: int | None = None,
        device: str = "auto",
    ) -> None:
        self.epochs = epochs
        self.batch_size = batch_size
        self.lr = lr
        self.weight_decay = weight_decay
        self.n_units_embedding = n_units_embedding
        self.n_layers_hidden = n_layers_hidden
        self.n_units_hidden = n_units_hidden
        self.strict = strict
        self.options = options
        self.random_state = random_state
        self.device = device

    def _check_params(self) -> None:
        super()._check_params()
        for name in ("n_units_embedding", "n_layers_hidden", "n_units_hidden"):
            check_positive_int(f"{self.name}: {name}", getattr(self, name))

    def _plugin_kwargs(self) -> dict[str, Any]:
        layers, units = int(self.n_layers_hidden), int(self.n_units_hidden)
        return {
            "batch_size": int(self.batch_size),
            "lr": float(self.lr),
            "weight_decay": float(self.weight_decay),
            "n_units_embedding": int(self.n_units_embedding),
            "encoder_n_layers_hidden": layers,
            "encoder_n_units_hidden": units,
            "decoder_n_layers_hidden": layers,
            "decoder_n_units_hidden": units,
            "strict": bool(self.strict),
        }
