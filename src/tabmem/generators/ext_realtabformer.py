"""``realtabformer``: the real REaLTabFormer package (tabular mode) behind tabmem's generator interface.

Registered only when ``import realtabformer`` works (extra ``tabmem[realtabformer]``; realtabformer
0.2.4 needs ``transformers<5``, so it lives in its own virtualenv: ``tests/run_extgen.sh``).
Nothing of the package is copied: preprocessing, vocabulary, the GPT-2 model, the
``transformers.Trainer`` loop (its ``ResumableTrainer``), sampling and save/load are the
package's own calls.

How tabmem gets per-epoch control
---------------------------------
``REaLTabFormer._fit_tabular`` builds the package's trainer without training; tabmem runs that
trainer's ``train()`` once, for all epochs, in a worker thread, with one extra
``transformers.TrainerCallback`` that hands control back at each epoch boundary
(``on_epoch_begin`` of the next epoch, after the epoch's log; ``on_train_end`` after the last).
While the worker waits, the base class's callbacks run (``MemorizationTracker`` samples,
checkpoints are written); only one thread runs at any time, and the worker runs only inside
``_train_epoch``, under the generator's private copy of the global torch RNG (the package's
trainer draws its shuffling and dropout from the global stream). So the trajectory is the
package's own uninterrupted ``train()``, and measuring in between does not change it: the
tests check that the final weights are bit-identical with and without tracking. The package's
``SaveEpochEndCallback`` (a checkpoint on disk every epoch) is removed; tabmem's checkpoints
are used instead; resuming one writes it back in the trainer's own checkpoint format and calls
``train(resume_from_checkpoint=...)`` (the trainer restarts at the next epoch; the shuffling is
seeded by ``data_seed`` + epoch, the dropout stream is the run's checkpointed private copy).

What differs from ``REaLTabFormer.fit``: ``n_critic=0`` (no sensitivity-based early stop; the
epochs are tabmem's), the seeds are tabmem's (the trainer's ``seed`` is derived from the run's
seed; Python's and numpy's global RNGs, which the trainer's ``set_seed`` reseeds, are restored),
and ``train_size=1`` (no validation split).

Sampling calls ``REaLTabFormer.sample`` (the package's constrained decoding); ``tendency`` (TLP,
:class:`tabmem.defenses.tlp.TendencyLogitsProcessor`) and any ``logits_processor`` go through the
package's own ``logits_processor`` keyword of ``generate``, applied after its token constraint.
The package subsamples its generated rows with its ``random_state``; tabmem sets it per call
from the sampling seed, so a seed gives the same rows.

Saving uses the package's ``save()`` (to a temporary directory; it needs its paths as strings)
and keeps its ``rtf_config.json`` text and weights in the tabmem file (plain tensors and strings,
``weights_only`` loadable); loading writes them back and calls ``REaLTabFormer.load_from_dir``.
The config holds the package's vocabulary: every category and the digits of every numerical
position (treat a saved model as private as the data).
"""

from __future__ import annotations

import dataclasses
import json
import math
import tempfile
from functools import partial
from pathlib import Path
from typing import Any, ClassVar

import pandas as pd
import realtabformer  # noqa: F401  - a missing package makes the registry report the extra
import torch
from realtabformer import REaLTabFormer
from realtabformer.data_utils import ModelFileName
from realtabformer.rtf_trainer import SaveEpochEndCallback
from transformers import GPT2Config

from tabmem._checks import check_number, check_positive_int
from tabmem.data.schema import Schema
from tabmem.errors import TabmemError
from tabmem.generators._handoff import HandoffTraining, check_transformers, generate_options, python_numpy_rng, quiet
from tabmem.generators._rng import derive_seed
from tabmem.generators.base import TabularGenerator, register_generator

__all__ = ["REaLTabFormerGenerator"]

_EXPERIMENT = "tabmem"


@register_generator("realtabformer")
class REaLTabFormerGenerator(HandoffTraining, TabularGenerator):
    """REaLTabFormer (Solatorio & Dupriez 2023), the ``realtabformer`` package, tabular mode.

    Args:
        n_layer, n_head, n_embd: the package's ``GPT2Config`` (its default is 6 layers x 768).
        epochs, batch_size, gradient_accumulation_steps, lr, weight_decay: the trainer's
            ``TrainingArguments`` (the package's defaults: batch 8 x 4 accumulation steps, lr 5e-5).
        numeric_precision, numeric_max_len, numeric_nparts, mask_rate: the package's preprocessing.
        gen_batch: most rows generated per ``generate`` call while sampling (fewer for small ``n``).
        temperature, top_k, top_p, tendency: sampling defaults (``None`` = the package's, i.e.
            transformers' generation defaults; ``tendency`` = TLP strength, ``None`` = off).
    """

    sampling_options = ("temperature", "top_k", "top_p", "tendency", "logits_processor")
    _package_name = "realtabformer"
    PRESETS: ClassVar[dict[str, dict[str, Any]]] = {
        "tiny": {"n_layer": 2, "n_head": 2, "n_embd": 32, "epochs": 3, "lr": 1e-3},
        "small": {"n_layer": 4, "n_head": 4, "n_embd": 192, "epochs": 100, "lr": 5e-4},
        "package": {"n_layer": 6, "n_head": 12, "n_embd": 768, "epochs": 100, "lr": 5e-5},
    }
    sample_batch_size = 2048
    _RESUME_MUTABLE = frozenset({"epochs", "device", "temperature", "top_k", "top_p", "tendency", "gen_batch"})

    def __init__(
        self,
        *,
        n_layer: int = 6,
        n_head: int = 12,
        n_embd: int = 768,
        epochs: int = 100,
        batch_size: int = 8,
        gradient_accumulation_steps: int = 4,
        lr: float = 5e-5,
        weight_decay: float = 0.0,
        numeric_precision: int = 4,
        numeric_max_len: int = 10,
        numeric_nparts: int = 1,
        mask_rate: float = 0.0,
        gen_batch: int = 512,
        temperature: float | None = None,
        top_k: int | None = None,
        top_p: float | None = None,
        tendency: float | None = None,
        random_state: int | None = None,
        device: str = "auto",
    ) -> None:
        self.n_layer = n_layer
        self.n_head = n_head
        self.n_embd = n_embd
        self.epochs = epochs
        self.batch_size = batch_size
        self.gradient_accumulation_steps = gradient_accumulation_steps
        self.lr = lr
        self.weight_decay = weight_decay
        self.numeric_precision = numeric_precision
        self.numeric_max_len = numeric_max_len
        self.numeric_nparts = numeric_nparts
        self.mask_rate = mask_rate
        self.gen_batch = gen_batch
        self.temperature = temperature
        self.top_k = top_k
        self.top_p = top_p
        self.tendency = tendency
        self.random_state = random_state
        self.device = device

    # ------------------------------------------------------------ validation
    def check_params(self) -> REaLTabFormerGenerator:
        super().check_params()
        self._check_params()
        return self

    def _check_params(self) -> None:
        for name in ("n_layer", "n_head", "n_embd", "gradient_accumulation_steps", "numeric_precision"):
            check_positive_int(f"realtabformer: {name}", getattr(self, name))
        check_positive_int("realtabformer: numeric_max_len", self.numeric_max_len)
        check_positive_int("realtabformer: numeric_nparts", self.numeric_nparts)
        check_positive_int("realtabformer: gen_batch", self.gen_batch)
        if int(self.n_embd) % int(self.n_head):
            raise TabmemError(f"realtabformer: n_embd ({self.n_embd}) must be divisible by n_head ({self.n_head})")
        check_number("realtabformer: mask_rate", self.mask_rate, low=0.0, high=1.0)
        self._generate_kwargs()

    def _generate_kwargs(
        self,
        *,
        temperature: float | None = None,
        top_k: int | None = None,
        top_p: float | None = None,
        tendency: float | None = None,
        logits_processor: list[Any] | None = None,
    ) -> dict[str, Any]:
        """Keyword arguments for the package's ``sample`` (``generate``): defaults, then the call's."""
        return generate_options(
            temperature=self.temperature if temperature is None else temperature,
            top_k=self.top_k if top_k is None else top_k,
            top_p=self.top_p if top_p is None else top_p,
            tendency=self.tendency if tendency is None else tendency,
            logits_processor=logits_processor,
        )

    # ----------------------------------------------------------------- build
    def _training_args(self) -> dict[str, Any]:
        return {
            "learning_rate": float(self.lr),
            "weight_decay": float(self.weight_decay),
            "gradient_accumulation_steps": int(self.gradient_accumulation_steps),
            "seed": derive_seed(self.seed_, 31) % 2**31,
            # the shuffling seed: accelerate's seedable sampler draws epoch e's order from data_seed + e,
            # so a resumed trainer (which restarts at epoch e) shuffles as an uninterrupted one
            "data_seed": derive_seed(self.seed_, 33) % 2**31,
            "use_cpu": self.device_.type == "cpu",
            "report_to": "none",
            "disable_tqdm": True,
            "logging_strategy": "epoch",
            "save_strategy": "no",
            "dataloader_num_workers": 0,
        }

    def _new_rtf(self, workdir: str) -> REaLTabFormer:
        config = GPT2Config(n_layer=int(self.n_layer), n_head=int(self.n_head), n_embd=int(self.n_embd))
        with quiet():
            return REaLTabFormer(
                model_type="tabular",
                tabular_config=config,
                checkpoints_dir=str(Path(workdir) / "checkpoints"),
                samples_save_dir=str(Path(workdir) / "samples"),
                full_save_dir=str(Path(workdir) / "full"),
                epochs=int(self.epochs),
                batch_size=int(self.batch_size),
                random_state=derive_seed(self.seed_, 32) % 2**31,
                train_size=1,
                mask_rate=float(self.mask_rate),
                numeric_nparts=int(self.numeric_nparts),
                numeric_precision=int(self.numeric_precision),
                numeric_max_len=int(self.numeric_max_len),
                **self._training_args(),
            )

    def _build(self, train_clean: pd.DataFrame, schema: Schema) -> None:
        check_transformers("realtabformer", "realtabformer")
        self._check_params()
        self._init_handoff(derive_seed(self.seed_, 34))
        self._train_call = self._run_trainer
        self._trainer = None
        self._resume_checkpoint: str | None = None
        self._workdir = tempfile.TemporaryDirectory(prefix="tabmem-rtf-")
        if getattr(self, "_train_clean", None) is None:  # load(): the package's model comes from the state
            self.rtf_ = None
            return
        self.rtf_ = self._new_rtf(self._workdir.name)
        device = "cuda" if self.device_.type == "cuda" else "cpu"
        with python_numpy_rng(), quiet():
            # the package's preprocessing, vocabulary, GPT2LMHeadModel and ResumableTrainer; not trained yet
            self._trainer = self.rtf_._fit_tabular(
                train_clean[list(schema.columns)], device=device, num_train_epochs=int(self.epochs),
                target_epochs=int(self.epochs),
            )  # fmt: skip
        self._trainer.remove_callback(SaveEpochEndCallback)  # tabmem writes the checkpoints
        self.rtf_.experiment_id = _EXPERIMENT

    def _run_trainer(self, handoff) -> None:  # noqa: ANN001 - runs in the worker thread
        self._trainer.add_callback(handoff)
        self._trainer.args.num_train_epochs = int(self.epochs)
        self._trainer.train(resume_from_checkpoint=self._resume_checkpoint)

    def _torch_modules(self) -> list[torch.nn.Module]:
        rtf = getattr(self, "rtf_", None)
        return [rtf.model] if rtf is not None and rtf.model is not None else []

    # --------------------------------------------------------------- train
    def _release_fit_state(self) -> None:
        """The package's trainer and dataset are dropped when ``fit`` returns."""
        self._trainer = None
        if getattr(self, "rtf_", None) is not None:
            self.rtf_.__dict__.pop("dataset", None)

    # --------------------------------------------------------------- state
    def _package_files(self) -> tuple[str, dict[str, torch.Tensor]]:
        """The package's ``save()``: its ``rtf_config.json`` text and its weights."""
        rtf = self.rtf_
        dataset = rtf.__dict__.pop("dataset", None)
        full_save_dir = rtf.full_save_dir
        try:
            rtf.full_save_dir = str(full_save_dir)  # save() json-dumps it: a Path fails
            with tempfile.TemporaryDirectory(prefix="tabmem-rtf-save-") as tmp, quiet():
                rtf.save(str(tmp), allow_overwrite=True)
                where = Path(tmp) / _EXPERIMENT
                config = (where / ModelFileName.rtf_config_json).read_text()
                weights = torch.load(where / ModelFileName.rtf_model_pt, map_location="cpu", weights_only=True)
        finally:
            rtf.full_save_dir = full_save_dir
            if dataset is not None:
                rtf.dataset = dataset
        return config, weights

    def _state_dict(self) -> dict[str, Any]:
        config, weights = self._package_files()
        state: dict[str, Any] = {"rtf_config": config, "model": weights}
        trainer = self._trainer
        if trainer is not None and trainer.optimizer is not None:
            state["optimizer"] = trainer.optimizer.state_dict()
            state["scheduler"] = trainer.lr_scheduler.state_dict()
            # the trainer's own state (global step, epoch, log history), as its checkpoints hold it
            state["trainer_state"] = json.dumps(dataclasses.asdict(trainer.state), sort_keys=True)
        return state

    def _load_state_dict(self, state: dict[str, Any]) -> None:
        if self.rtf_ is None:  # load(): the package's own load_from_dir
            where = Path(self._workdir.name) / "saved"
            where.mkdir(parents=True, exist_ok=True)
            (where / ModelFileName.rtf_config_json).write_text(state["rtf_config"])
            torch.save(dict(state["model"]), where / ModelFileName.rtf_model_pt)
            with quiet():
                self.rtf_ = REaLTabFormer.load_from_dir(str(where))
            self.rtf_.model.to(self.device_)
            return
        # resume: a checkpoint directory in the trainer's own format (weights, optimizer, schedule,
        # trainer state), which the package's trainer resumes from (train(resume_from_checkpoint=...)):
        # it restarts at the next epoch; the global torch RNG is the run's private copy (base class)
        json.loads(state["rtf_config"])  # a damaged entry fails here, naming the file (base class)
        self.rtf_.model.load_state_dict(state["model"])
        if "trainer_state" not in state:
            raise TabmemError(
                "realtabformer: this file holds a final model without the trainer's state; resume from checkpoint.pt"
            )
        ck = Path(self._workdir.name) / "resume-checkpoint"
        ck.mkdir(parents=True, exist_ok=True)
        with quiet():
            self.rtf_.model.save_pretrained(str(ck))
        torch.save(state["optimizer"], ck / "optimizer.pt")
        torch.save(state["scheduler"], ck / "scheduler.pt")
        (ck / "trainer_state.json").write_text(state["trainer_state"])
        self._resume_checkpoint = str(ck)

    # -------------------------------------------------------------- sample
    def sample(
        self,
        n: int,
        *,
        random_state: int | None = None,
        batch_size: int | None = None,
        temperature: float | None = None,
        top_k: int | None = None,
        top_p: float | None = None,
        tendency: float | None = None,
        logits_processor: list[Any] | None = None,
    ) -> pd.DataFrame:
        """``n`` rows from the package's ``REaLTabFormer.sample``; keyword arguments override the defaults.

        ``tendency`` adds a :class:`~tabmem.defenses.tlp.TendencyLogitsProcessor` (TLP) and
        ``logits_processor`` any Hugging Face processors, both through the package's own
        ``logits_processor`` argument (applied after its token constraint).
        """
        kwargs = self._generate_kwargs(
            temperature=temperature, top_k=top_k, top_p=top_p, tendency=tendency, logits_processor=logits_processor
        )
        seed, bs = self._check_sample_args(n, random_state, batch_size)
        return self._sample_batches(n, seed, bs, partial(self._sample_clean, generate_kwargs=kwargs))

    def _sample_clean(
        self, n: int, generator: torch.Generator, generate_kwargs: dict[str, Any] | None = None
    ) -> pd.DataFrame:
        if generate_kwargs is None:
            generate_kwargs = self._generate_kwargs()
        rtf = self.rtf_
        subsample_seed = int(torch.randint(0, 2**31 - 1, (1,), generator=generator).item())
        saved_seed = rtf.random_state
        device = "cuda" if self.device_.type == "cuda" else "cpu"
        try:
            rtf.random_state = subsample_seed  # the package's final subsampling of its generated rows
            with quiet(), python_numpy_rng(subsample_seed):
                # a round generates gen_batch rows and the package keeps n of the valid ones: no more than needed
                batch = min(int(self.gen_batch), max(16, math.ceil(1.25 * n)))
                out = rtf.sample(n_samples=int(n), gen_batch=batch, device=device, **generate_kwargs)
        finally:
            rtf.random_state = saved_seed
        out = out.reset_index(drop=True)
        columns = list(self.schema_.columns)
        missing = [c for c in columns if c not in out.columns]
        if missing:
            raise TabmemError(f"realtabformer: the package's samples lack the column(s) {missing}")
        out = out[columns].copy()
        for c in self.schema_.numerical:
            out[c] = pd.to_numeric(out[c], errors="coerce").astype(float)
        for c in self.schema_.categorical:
            out[c] = out[c].astype(str)
        return out
