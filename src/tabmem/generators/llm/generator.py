"""``LLMGenerator``: a Hugging Face causal language model trained on serialised rows.

Backbones
---------
* ``backbone=None`` (CPU default): a GPT-2-architecture model trained from scratch with a
  vocabulary built from the training data, as REaLTabFormer does (Solatorio & Dupriez 2023):
  the position-specific digit vocabulary of the ``"realtabformer"`` format, or a byte-level BPE
  trained on the ``"great"`` texts.
* ``backbone="path/or/hub-name"``: any causal-LM checkpoint through ``from_pretrained``. With the
  ``"great"`` format the model keeps its own tokenizer (GReaT, Borisov et al. 2023). With the
  ``"realtabformer"`` format the model keeps its first ``n_pretrained_layers`` blocks and gets a
  fresh vocabulary (re-initialised embeddings and head), the LevAtt paper's "first k layers of a
  pretrained LLM" variant (Ward et al. 2025).

Training owns its loop (one AdamW step per mini-batch, shuffled with the generator's seeded
``torch.Generator``), so callbacks, checkpoints, resume and seeds behave exactly as for the
other tabmem generators; optional DP-SGD runs through opacus (see :mod:`.dp`).

Sampling calls ``model.generate`` in batches (KV cache on), with temperature, top-k, top-p, any
extra ``logits_processor`` (e.g. :class:`tabmem.defenses.TendencyLogitsProcessor` via
``tendency=``), conditional sampling on given column values and, for the digit format,
constrained decoding. Malformed generations are counted (``last_sample_stats_``) and resampled
until ``n`` valid rows exist; they never reach the output.

Layout: the row format (a :class:`~.formats.RowFormat`, chosen once from ``serializer``) does
everything format-specific; :mod:`.huggingface` builds models and tokenizers; :mod:`.options`
validates a call's sampling options once; :mod:`.decoding` plans and runs a call's decoding;
:mod:`.dp` is handed the model, optimizer and encoded rows.
"""

from __future__ import annotations

from functools import partial
from typing import Any, ClassVar

import numpy as np
import pandas as pd
import torch

from tabmem._checks import check_choice, check_positive_int
from tabmem.data.schema import Schema
from tabmem.errors import TabmemError
from tabmem.generators._dp import privacy_spent
from tabmem.generators._weights import weighted_token_loss
from tabmem.generators.base import TabularGenerator, register_generator
from tabmem.generators.llm import huggingface as hf
from tabmem.generators.llm.decoding import DecodingPlan, plan_decoding, sample_valid_rows
from tabmem.generators.llm.dp import DPConfig, DPTrainer
from tabmem.generators.llm.formats import ROW_FORMATS, RowFormat, TrainingRows, shuffled_batches
from tabmem.generators.llm.options import SamplingOptions

#: constructor parameters that are sampling defaults (``sample()`` may override each)
_SAMPLING_DEFAULTS = ("temperature", "top_k", "top_p", "tendency", "constraint")


@register_generator("llm")
class LLMGenerator(TabularGenerator):
    """Causal LM on serialised rows (REaLTabFormer / GReaT style); see the module docstring.

    Args:
        serializer: ``"realtabformer"`` (digit tokens, default) or ``"great"`` (``col is value`` text).
        backbone: ``None`` (GPT-2 from scratch) or a local path / hub name for ``from_pretrained``.
        n_pretrained_layers: keep only the first k blocks of ``backbone`` (``None`` = all).
        n_layer, n_head, n_embd, dropout: size of the from-scratch GPT-2.
        bpe_vocab_size: vocabulary of the from-scratch BPE (``"great"`` format only).
        numeric_precision: decimals kept by the digit format.
        epochs, batch_size, lr, weight_decay, max_grad_norm: training.
        temperature, top_k, top_p, tendency, constraint: sampling defaults (``top_k=None`` = off;
            ``tendency`` = TLP strength, ``None`` = off; ``constraint`` = ``"mask"``, ``"prefix_fn"``
            or ``"none"`` for the digit format).
        max_resample_rounds: give up (clear error) when this many generation rounds still lack valid rows.
        dp_epsilon, dp_delta, dp_max_grad_norm, dp_warmup_epochs: DP-SGD through opacus (``dp_epsilon=None``
            = off); ``dp_warmup_epochs > 0`` is the two-stage variant (non-private warm-up on pseudo rows
            from independent marginals, then private training on the real rows).
    """

    sampling_options = ("conditions", "temperature", "top_k", "top_p", "tendency", "logits_processor", "constraint")
    supports_sample_weight = True  # each row's tokens weighted in the token-mean loss (not with DP)
    PRESETS: ClassVar[dict[str, dict[str, Any]]] = {
        "tiny": {"n_layer": 2, "n_head": 2, "n_embd": 64, "epochs": 20, "batch_size": 32},
        "small": {"n_layer": 3, "n_head": 4, "n_embd": 96, "epochs": 100, "batch_size": 32, "lr": 1e-3},
        "cpu": {"n_layer": 4, "n_head": 4, "n_embd": 128, "epochs": 100, "batch_size": 32},
        "realtabformer": {"n_layer": 6, "n_head": 12, "n_embd": 768, "epochs": 200, "batch_size": 32, "lr": 5e-5},
    }
    sample_batch_size = 2048
    _RESUME_MUTABLE = frozenset(
        {"epochs", "device", "temperature", "top_k", "top_p", "tendency", "constraint", "max_resample_rounds"}
    )

    def __init__(
        self,
        *,
        serializer: str = "realtabformer",
        backbone: str | None = None,
        n_pretrained_layers: int | None = None,
        n_layer: int = 4,
        n_head: int = 4,
        n_embd: int = 128,
        dropout: float = 0.1,
        bpe_vocab_size: int = 512,
        numeric_precision: int = 4,
        epochs: int = 100,
        batch_size: int = 32,
        lr: float = 5e-4,
        weight_decay: float = 0.0,
        max_grad_norm: float | None = 1.0,
        temperature: float = 1.0,
        top_k: int | None = None,
        top_p: float = 1.0,
        tendency: float | None = None,
        constraint: str = "mask",
        max_resample_rounds: int = 20,
        dp_epsilon: float | None = None,
        dp_delta: float | None = None,
        dp_max_grad_norm: float = 1.0,
        dp_warmup_epochs: int = 0,
        random_state: int | None = None,
        device: str = "auto",
    ) -> None:
        self.serializer = serializer
        self.backbone = backbone
        self.n_pretrained_layers = n_pretrained_layers
        self.n_layer = n_layer
        self.n_head = n_head
        self.n_embd = n_embd
        self.dropout = dropout
        self.bpe_vocab_size = bpe_vocab_size
        self.numeric_precision = numeric_precision
        self.epochs = epochs
        self.batch_size = batch_size
        self.lr = lr
        self.weight_decay = weight_decay
        self.max_grad_norm = max_grad_norm
        self.temperature = temperature
        self.top_k = top_k
        self.top_p = top_p
        self.tendency = tendency
        self.constraint = constraint
        self.max_resample_rounds = max_resample_rounds
        self.dp_epsilon = dp_epsilon
        self.dp_delta = dp_delta
        self.dp_max_grad_norm = dp_max_grad_norm
        self.dp_warmup_epochs = dp_warmup_epochs
        self.random_state = random_state
        self.device = device

    # ------------------------------------------------------------ validation
    def _check_params(self) -> None:
        check_choice("serializer", self.serializer, tuple(ROW_FORMATS.names()))
        for name in ("n_layer", "n_head", "n_embd", "bpe_vocab_size", "max_resample_rounds"):
            check_positive_int(name, getattr(self, name))
        if self.n_embd % self.n_head:
            raise TabmemError(f"LLMGenerator: n_embd ({self.n_embd}) must be divisible by n_head ({self.n_head})")
        if not (isinstance(self.lr, (int, float)) and self.lr >= 0):
            raise TabmemError(f"LLMGenerator: lr must be >= 0, got lr={self.lr!r}")
        if self.n_pretrained_layers is not None and (self.backbone is None or int(self.n_pretrained_layers) < 1):
            raise TabmemError(
                f"LLMGenerator: n_pretrained_layers={self.n_pretrained_layers!r} needs a backbone and must be >= 1"
            )
        if self.dp_epsilon is not None and not (isinstance(self.dp_epsilon, (int, float)) and self.dp_epsilon > 0):
            raise TabmemError(f"LLMGenerator: dp_epsilon must be > 0, got dp_epsilon={self.dp_epsilon!r}")
        if int(self.dp_warmup_epochs) < 0 or (self.dp_warmup_epochs and self.dp_epsilon is None):
            raise TabmemError("LLMGenerator: dp_warmup_epochs (two-stage DP) needs dp_epsilon and must be >= 0")
        self._sampling_options()  # the constructor's sampling defaults must be valid too

    def _sampling_options(self, **overrides: Any) -> SamplingOptions:
        """The constructor's sampling defaults with the non-``None`` overrides, validated once."""
        values = {k: getattr(self, k) for k in _SAMPLING_DEFAULTS}
        values.update({k: v for k, v in overrides.items() if v is not None})
        return SamplingOptions(**values)

    # ----------------------------------------------------------------- build
    def _build(self, train_clean: pd.DataFrame, schema: Schema) -> None:
        self._check_params()
        hf.require_transformers()
        self.format_: RowFormat = ROW_FORMATS.get(self.serializer).from_params(self.get_params())
        self._rows: TrainingRows | None = None
        if getattr(self, "_train_clean", None) is None:
            # load(): format, model and optimizer are restored from the state in _load_state_dict
            self._model_from_state = True
            return
        self._model_from_state = False
        w = getattr(self, "_fit_weights", None)
        if w is not None and self.dp_epsilon is not None:
            raise TabmemError("sample_weight: per-record weights are not supported with DP training (dp_epsilon)")
        self._weights = None if w is None else torch.as_tensor(w, dtype=torch.float32, device=self.device_)
        table = self._train_table  # validated once by fit: the format uses it as it is
        self.format_.fit(table, schema, seed=self.seed_)
        self._rows = self.format_.training_rows(table)
        arch = hf.Architecture(int(self.n_layer), int(self.n_head), int(self.n_embd), self.dropout)
        model = hf.build_model(
            self.format_.model_spec(),
            backbone=self.backbone,
            n_pretrained_layers=self.n_pretrained_layers,
            arch=arch,
            untie=self.dp_epsilon is not None,
        )
        self.model_ = model.to(self.device_)
        self._make_optimizer()
        self.dp_ = None
        if self.dp_epsilon is not None:
            rows = self.format_.encode(train_clean, np.random.default_rng([self.seed_, 9]))
            config = DPConfig(
                epsilon=float(self.dp_epsilon),
                delta=self.dp_delta,
                max_grad_norm=float(self.dp_max_grad_norm),
                warmup_epochs=int(self.dp_warmup_epochs),
                epochs=int(self.epochs),
                batch_size=int(self.batch_size),
                lr=float(self.lr),
            )
            self.dp_ = DPTrainer(
                self.model_, self.optimizer_, rows, config, generator=self.torch_generator_, device=self.device_
            )

    def _make_optimizer(self) -> None:
        self.optimizer_ = torch.optim.AdamW(
            self.model_.parameters(), lr=float(self.lr), weight_decay=float(self.weight_decay)
        )

    def _torch_modules(self) -> list[torch.nn.Module]:
        return [self.model_] if hasattr(self, "model_") else []

    def fit(self, train: pd.DataFrame, schema: Schema | None = None, **kwargs: Any) -> LLMGenerator:
        """:meth:`TabularGenerator.fit`; the encoded training rows are not kept once it returns."""
        try:
            return super().fit(train, schema, **kwargs)  # type: ignore[return-value]
        finally:
            self._rows = None

    # ------------------------------------------------------------ attributes
    @property
    def serializer_(self) -> Any:
        """The fitted row serializer (:mod:`tabmem.data.serialization`) of the format."""
        return self.format_.serializer_

    @property
    def tokenizer_(self) -> Any:
        """The Hugging Face tokenizer (``"great"`` format only)."""
        return self.format_.tokenizer_

    @property
    def max_length_(self) -> int:
        """Longest row in tokens, special tokens included (the generation budget)."""
        return self.format_.max_length_

    @property
    def privacy_spent_(self) -> tuple[float, float] | None:
        """``(epsilon, delta)`` spent so far by DP-SGD (``None`` without DP)."""
        return privacy_spent(self)

    # --------------------------------------------------------------- train
    def _train_epoch(self, epoch: int) -> dict[str, float]:
        bs = int(self.batch_size)
        if self.dp_ is not None and self.dp_.is_warmup(epoch):
            ids, mask = self.format_.pseudo_rows(self.n_train_, self.rng_, self.encoder_)
            return self.dp_.warmup_epoch(shuffled_batches(ids, mask, self.torch_generator_, bs))
        if self.dp_ is not None:
            return self.dp_.private_epoch()
        total, count = 0.0, 0
        weights = getattr(self, "_weights", None)
        rows: list[torch.Tensor] | None = None if weights is None else []
        for b, (ids, mask) in enumerate(self._rows.epoch(self.rng_, self.torch_generator_, bs, rows)):
            ids, mask = ids.to(self.device_), mask.to(self.device_)
            labels = ids.masked_fill(mask == 0, -100)
            if rows is None:
                loss = self.model_(input_ids=ids, attention_mask=mask, labels=labels).loss
            else:
                logits = self.model_(input_ids=ids, attention_mask=mask).logits
                loss = weighted_token_loss(logits, labels, weights[rows[b].to(weights.device)])
            self.optimizer_.zero_grad(set_to_none=True)
            loss.backward()
            if self.max_grad_norm:
                torch.nn.utils.clip_grad_norm_(self.model_.parameters(), float(self.max_grad_norm))
            self.optimizer_.step()
            total += float(loss.detach()) * ids.shape[0]
            count += ids.shape[0]
        return {"loss": total / max(count, 1)}

    # --------------------------------------------------------------- state
    def _state_dict(self) -> dict[str, Any]:
        state = {
            "model": {k: v.detach().cpu().clone() for k, v in self.model_.state_dict().items()},
            "model_config": hf.config_to_json(self.model_),
            "optimizer": self.optimizer_.state_dict(),
            **self.format_.get_state(),
        }
        if self.dp_ is not None:
            state["dp"] = self.dp_.state_dict()
        return state

    def _load_state_dict(self, state: dict[str, Any]) -> None:
        self.format_.set_state(self.schema_, state)
        if self._model_from_state:
            with self._private_global_rng():
                self.model_ = hf.model_from_config_json(state["model_config"]).to(self.device_)
            self._make_optimizer()
            self.dp_ = None
            self._model_from_state = False
        self.model_.load_state_dict(state["model"])
        self.optimizer_.load_state_dict(state["optimizer"])
        if "dp" in state and self.dp_ is not None:
            self.dp_.load_state_dict(state["dp"])
        elif "dp" in state:
            self.dp_restored_ = dict(state["dp"])

    # -------------------------------------------------------------- sample
    def sample(
        self,
        n: int,
        *,
        random_state: int | None = None,
        batch_size: int | None = None,
        conditions: dict[str, Any] | None = None,
        temperature: float | None = None,
        top_k: int | None = None,
        top_p: float | None = None,
        tendency: float | None = None,
        logits_processor: list[Any] | None = None,
        constraint: str | None = None,
    ) -> pd.DataFrame:
        """``n`` valid rows; the keyword arguments override the constructor's sampling defaults.

        ``conditions`` fixes column values (``{"sex": "F", "age": 40}``) in every row;
        ``tendency`` adds a :class:`~tabmem.defenses.TendencyLogitsProcessor` (TLP);
        ``logits_processor`` adds any Hugging Face processors (after the constraint, before the warpers).
        """
        options = self._sampling_options(
            conditions=conditions,
            temperature=temperature,
            top_k=top_k,
            top_p=top_p,
            tendency=tendency,
            logits_processor=logits_processor,
            constraint=constraint,
        )
        self.last_sample_stats_ = stats = {"generated": 0, "invalid": 0, "rounds": 0}
        seed, bs = self._check_sample_args(n, random_state, batch_size)
        plan = plan_decoding(self.model_, self.format_, options)
        return self._sample_batches(n, seed, bs, partial(self._sample_clean, plan=plan, stats=stats))

    def _sample_clean(
        self, n: int, generator: torch.Generator, plan: DecodingPlan | None = None, stats: dict[str, int] | None = None
    ) -> pd.DataFrame:
        """``n`` valid rows decoded with ``plan`` (default: the constructor's sampling options)."""
        if plan is None:
            plan = plan_decoding(self.model_, self.format_, self._sampling_options())
        if stats is None:
            stats = self.last_sample_stats_ = {"generated": 0, "invalid": 0, "rounds": 0}
        return sample_valid_rows(
            self.model_,
            self.format_,
            plan,
            n,
            stats=stats,
            max_rounds=int(self.max_resample_rounds),
            device=self.device_,
        )
