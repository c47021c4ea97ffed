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
"""

from __future__ import annotations

import json
import math
from typing import Any, ClassVar

import numpy as np
import pandas as pd
import torch

from tabmem.data.schema import Schema
from tabmem.data.serialization.great import GReaTSerializer
from tabmem.data.serialization.realtabformer import BOS_ID, EOS_ID, PAD_ID, REaLTabFormerSerializer
from tabmem.errors import TabmemError
from tabmem.generators.base import TabularGenerator, register_generator
from tabmem.generators.llm.constraints import PositionMaskLogitsProcessor, prefix_allowed_tokens_fn

FORMATS = ("realtabformer", "great")
CONSTRAINTS = ("mask", "prefix_fn", "none")


def _transformers():
    try:
        import transformers
    except ModuleNotFoundError:  # pragma: no cover
        raise TabmemError("LLMGenerator needs transformers: pip install 'tabmem[llm]'") from None
    return transformers


def _cfg_to_json(cfg: Any) -> str:
    return cfg.to_json_string(use_diff=False)


def _cfg_from_json(text: str) -> Any:
    tf = _transformers()
    d = json.loads(text)
    model_type = d.pop("model_type")
    for k in ("transformers_version", "architectures", "_name_or_path"):
        d.pop(k, None)
    return tf.AutoConfig.for_model(model_type, **d)


def _train_bpe(texts: list[str], vocab_size: int) -> Any:
    """A byte-level BPE tokenizer trained on the serialised training rows (deterministic)."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        special_tokens=["[PAD]", "[BOS]", "[EOS]"],
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tok.train_from_iterator(texts, trainer)
    return tok


def _wrap_tokenizer(tok_json: str, special: dict[str, str]) -> Any:
    from tokenizers import Tokenizer

    tf = _transformers()
    return tf.PreTrainedTokenizerFast(tokenizer_object=Tokenizer.from_str(tok_json), **special)


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
        if self.serializer not in FORMATS:
            raise TabmemError(f"LLMGenerator: serializer must be one of {FORMATS}, got serializer={self.serializer!r}")
        if self.constraint not in CONSTRAINTS:
            raise TabmemError(f"LLMGenerator: constraint must be one of {CONSTRAINTS}, got {self.constraint!r}")
        for name in ("n_layer", "n_head", "n_embd", "bpe_vocab_size", "max_resample_rounds"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < 1:
                raise TabmemError(f"LLMGenerator: {name} must be a positive integer, got {name}={v!r}")
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
        self._check_sampling(self.temperature, self.top_k, self.top_p, self.tendency)

    @staticmethod
    def _check_sampling(temperature: Any, top_k: Any, top_p: Any, tendency: Any) -> None:
        if not isinstance(temperature, (int, float)) or isinstance(temperature, bool) or not temperature > 0:
            raise TabmemError(f"temperature must be > 0, got temperature={temperature!r}")
        if top_k is not None and (isinstance(top_k, bool) or not isinstance(top_k, (int, np.integer)) or top_k < 1):
            raise TabmemError(f"top_k must be a positive integer or None, got top_k={top_k!r}")
        if not isinstance(top_p, (int, float)) or not 0 < top_p <= 1:
            raise TabmemError(f"top_p must be in (0, 1], got top_p={top_p!r}")
        if tendency is not None:
            from tabmem.defenses import TendencyLogitsProcessor

            TendencyLogitsProcessor(tendency)  # validates, message names the value

    # ----------------------------------------------------------------- build
    def _build(self, train_clean: pd.DataFrame, schema: Schema) -> None:
        self._check_params()
        tf = _transformers()
        if getattr(self, "_train_clean", None) is None:
            # load(): everything is restored from the state in _load_state_dict (no training values here)
            self._deferred = True
            return
        self._deferred = False
        table = self._train_table  # train_clean, validated once by fit: the serializers use it as it is
        if self.serializer == "realtabformer":
            ser = REaLTabFormerSerializer(numeric_precision=int(self.numeric_precision)).fit(table, schema)
            self.serializer_ = ser
            self.tokenizer_json_ = ""
            self.special_tokens_ = {}
            ids = ser.encode(table, name="training")
            n = len(ids)
            seq = np.concatenate([np.full((n, 1), BOS_ID), ids, np.full((n, 1), EOS_ID)], axis=1)
            self._train_ids = torch.as_tensor(seq, dtype=torch.long)
            self.max_length_ = int(seq.shape[1])
            model = self._make_model(tf, vocab_size=len(ser.vocab_), n_positions=self.max_length_)
        else:
            ser = GReaTSerializer(permute=True).fit(table, schema)
            self.serializer_ = ser
            rng = np.random.default_rng(np.random.SeedSequence([self.seed_, 7]))
            texts = ser.serialize(table, rng=rng) + ser.serialize(table, rng=rng)
            if self.backbone is None:
                tok = _train_bpe(texts, int(self.bpe_vocab_size))
                self.tokenizer_json_ = tok.to_str()
                self.special_tokens_ = {"pad_token": "[PAD]", "bos_token": "[BOS]", "eos_token": "[EOS]"}
                self.tokenizer_ = _wrap_tokenizer(self.tokenizer_json_, self.special_tokens_)
            else:
                self.tokenizer_ = self._load_tokenizer(tf)
                self.tokenizer_json_ = self.tokenizer_.backend_tokenizer.to_str()
                self.special_tokens_ = {
                    k: getattr(self.tokenizer_, k)
                    for k in ("pad_token", "bos_token", "eos_token")
                    if getattr(self.tokenizer_, k, None) is not None
                }
            lengths = [len(self.tokenizer_(t)["input_ids"]) for t in texts]
            self.max_length_ = int(math.ceil(max(lengths) * 1.25)) + 2
            model = self._make_model(tf, vocab_size=len(self.tokenizer_), n_positions=max(64, self.max_length_ + 8))
        self.model_ = model.to(self.device_)
        self._make_optimizer()
        self._dp_setup(train_clean)

    def _load_tokenizer(self, tf: Any) -> Any:
        try:
            tok = tf.AutoTokenizer.from_pretrained(self.backbone)
        except Exception as exc:  # noqa: BLE001
            raise TabmemError(f"cannot load the tokenizer of backbone {self.backbone!r}: {exc}") from None
        if tok.pad_token is None:
            tok.pad_token = tok.eos_token
        if tok.bos_token is None:
            tok.bos_token = tok.eos_token
        return tok

    def _make_model(self, tf: Any, vocab_size: int, n_positions: int) -> torch.nn.Module:
        dp = self.dp_epsilon is not None
        if self.backbone is None:
            cfg = tf.GPT2Config(
                vocab_size=vocab_size,
                n_positions=n_positions,
                n_embd=int(self.n_embd),
                n_layer=int(self.n_layer),
                n_head=int(self.n_head),
                resid_pdrop=self.dropout,
                embd_pdrop=self.dropout,
                attn_pdrop=self.dropout,
                bos_token_id=BOS_ID if self.serializer == "realtabformer" else self.tokenizer_.bos_token_id,
                eos_token_id=EOS_ID if self.serializer == "realtabformer" else self.tokenizer_.eos_token_id,
                pad_token_id=PAD_ID if self.serializer == "realtabformer" else self.tokenizer_.pad_token_id,
                tie_word_embeddings=not dp,
            )
            cfg.loss_type = "ForCausalLM"  # the default; set explicitly to silence a transformers warning
            return tf.GPT2LMHeadModel(cfg)
        try:
            cfg = tf.AutoConfig.from_pretrained(self.backbone)
        except Exception as exc:  # noqa: BLE001
            raise TabmemError(
                f"cannot load backbone {self.backbone!r} ({type(exc).__name__}: {exc}); "
                "give a local directory written by save_pretrained (this machine may be offline)"
            ) from None
        if self.n_pretrained_layers is not None:
            total = int(cfg.num_hidden_layers)
            if int(self.n_pretrained_layers) > total:
                raise TabmemError(
                    f"n_pretrained_layers={self.n_pretrained_layers} but {self.backbone!r} has {total} layers"
                )
            cfg.num_hidden_layers = int(self.n_pretrained_layers)
        kwargs: dict[str, Any] = {"config": cfg}
        if self.serializer == "realtabformer":
            cfg.vocab_size = vocab_size
            cfg.bos_token_id, cfg.eos_token_id, cfg.pad_token_id = BOS_ID, EOS_ID, PAD_ID
            kwargs["ignore_mismatched_sizes"] = True
            if getattr(cfg, "n_positions", n_positions) < n_positions:
                raise TabmemError(
                    f"backbone {self.backbone!r} handles {cfg.n_positions} positions, rows need {n_positions}"
                )
        if dp:
            cfg.tie_word_embeddings = False
        try:
            model = tf.AutoModelForCausalLM.from_pretrained(self.backbone, **kwargs)
        except Exception as exc:  # noqa: BLE001
            raise TabmemError(f"cannot load backbone {self.backbone!r} ({type(exc).__name__}: {exc})") from None
        if self.serializer == "great" and model.get_input_embeddings().num_embeddings < len(self.tokenizer_):
            model.resize_token_embeddings(len(self.tokenizer_))
        return model

    def _make_optimizer(self) -> None:
        self.optimizer_ = torch.optim.AdamW(
            self.model_.parameters(), lr=float(self.lr), weight_decay=float(self.weight_decay)
        )

    def _torch_modules(self) -> list[torch.nn.Module]:
        return [self.model_] if hasattr(self, "model_") else []

    # ------------------------------------------------------------------ DP
    def _dp_setup(self, train_clean: pd.DataFrame) -> None:
        self.dp_ = None
        if self.dp_epsilon is None:
            return
        from tabmem.generators.llm.dp import DPTrainer

        self.dp_ = DPTrainer(self, train_clean)

    @property
    def privacy_spent_(self) -> tuple[float, float] | None:
        """``(epsilon, delta)`` spent so far by DP-SGD (``None`` without DP)."""
        dp = getattr(self, "dp_", None)
        if dp is not None:
            return dp.spent()
        restored = getattr(self, "dp_restored_", None)
        if restored is None:
            return None
        from opacus.accountants import RDPAccountant

        acc = RDPAccountant()
        acc.history = [tuple(h) for h in restored["history"]]
        eps = float(acc.get_epsilon(restored["delta"])) if acc.history else 0.0
        return eps, float(restored["delta"])

    # --------------------------------------------------------------- train
    def _batches_realtabformer(self) -> list[tuple[torch.Tensor, torch.Tensor]]:
        n = self._train_ids.shape[0]
        perm = torch.randperm(n, generator=self.torch_generator_, device=self.torch_generator_.device).cpu()
        out = []
        for s in range(0, n, int(self.batch_size)):
            ids = self._train_ids[perm[s : s + int(self.batch_size)]].to(self.device_)
            out.append((ids, torch.ones_like(ids)))
        return out

    def _encode_texts(self, texts: list[str]) -> tuple[torch.Tensor, torch.Tensor]:
        tok = self.tokenizer_
        rows = [[tok.bos_token_id, *tok(t, add_special_tokens=False)["input_ids"], tok.eos_token_id] for t in texts]
        width = max(len(r) for r in rows)
        ids = torch.full((len(rows), width), tok.pad_token_id, dtype=torch.long)
        mask = torch.zeros((len(rows), width), dtype=torch.long)
        for i, r in enumerate(rows):
            ids[i, : len(r)] = torch.tensor(r)
            mask[i, : len(r)] = 1
        return ids, mask

    def _batches_great(self, table: pd.DataFrame) -> list[tuple[torch.Tensor, torch.Tensor]]:
        texts = self.serializer_.serialize(table, rng=self.rng_)
        n = len(texts)
        perm = torch.randperm(n, generator=self.torch_generator_, device=self.torch_generator_.device).cpu()
        out = []
        for s in range(0, n, int(self.batch_size)):
            ids, mask = self._encode_texts([texts[i] for i in perm[s : s + int(self.batch_size)].tolist()])
            out.append((ids.to(self.device_), mask.to(self.device_)))
        return out

    def _lm_loss(self, model: torch.nn.Module, ids: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        labels = ids.masked_fill(mask == 0, -100)
        return model(input_ids=ids, attention_mask=mask, labels=labels).loss

    def _train_epoch(self, epoch: int) -> dict[str, float]:
        if self.dp_ is not None:
            return self.dp_.train_epoch(epoch)
        batches = (
            self._batches_realtabformer()
            if self.serializer == "realtabformer"
            else self._batches_great(self.training_table_)
        )
        total, count = 0.0, 0
        for ids, mask in batches:
            loss = self._lm_loss(self.model_, ids, mask)
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
            "model": {k: v.detach().cpu().clone() for k, v in self._plain_model().state_dict().items()},
            "model_config": _cfg_to_json(self._plain_model().config),
            "optimizer": self.optimizer_.state_dict(),
            "serializer": self.serializer_.get_state(),
            "tokenizer": self.tokenizer_json_,
            "special_tokens": dict(self.special_tokens_),
            "max_length": int(self.max_length_),
        }
        if self.dp_ is not None:
            state["dp"] = self.dp_.state_dict()
        return state

    def _plain_model(self) -> torch.nn.Module:
        return self.model_

    def _load_state_dict(self, state: dict[str, Any]) -> None:
        tf = _transformers()
        schema = self.schema_
        if self.serializer == "realtabformer":
            self.serializer_ = REaLTabFormerSerializer(numeric_precision=int(self.numeric_precision)).set_state(
                schema, state["serializer"]
            )
        else:
            self.serializer_ = GReaTSerializer(permute=True).set_state(schema, state["serializer"])
        self.tokenizer_json_ = state["tokenizer"]
        self.special_tokens_ = dict(state["special_tokens"])
        if self.tokenizer_json_:
            self.tokenizer_ = _wrap_tokenizer(self.tokenizer_json_, self.special_tokens_)
        self.max_length_ = int(state["max_length"])
        if getattr(self, "_deferred", False):
            cfg = _cfg_from_json(state["model_config"])
            with self._private_global_rng():
                self.model_ = tf.AutoModelForCausalLM.from_config(cfg).to(self.device_)
            self._make_optimizer()
            self.dp_ = None
            self._deferred = False
        self._plain_model().load_state_dict(state["model"])
        self.optimizer_.load_state_dict(state["optimizer"])
        if "dp" in state and getattr(self, "dp_", None) is not None:
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
        opts = {
            "conditions": dict(conditions or {}),
            "temperature": self.temperature if temperature is None else temperature,
            "top_k": self.top_k if top_k is None else top_k,
            "top_p": self.top_p if top_p is None else top_p,
            "tendency": self.tendency if tendency is None else tendency,
            "logits_processor": list(logits_processor or []),
            "constraint": self.constraint if constraint is None else constraint,
        }
        self._check_sampling(opts["temperature"], opts["top_k"], opts["top_p"], opts["tendency"])
        if opts["constraint"] not in CONSTRAINTS:
            raise TabmemError(f"constraint must be one of {CONSTRAINTS}, got {opts['constraint']!r}")
        self._sample_opts = opts
        self.last_sample_stats_ = {"generated": 0, "invalid": 0, "rounds": 0}
        try:
            return super().sample(n, random_state=random_state, batch_size=batch_size)
        finally:
            self._sample_opts = None

    def _processors(self, opts: dict[str, Any], forced: dict[int, int], prompt_length: int) -> tuple[list[Any], Any]:
        tf = _transformers()
        procs: list[Any] = []
        prefix_fn = None
        if self.serializer == "realtabformer":
            ser = self.serializer_
            vocab = self.model_.get_output_embeddings().out_features
            if opts["constraint"] == "mask":
                procs.append(PositionMaskLogitsProcessor(ser.allowed_ids_, vocab, EOS_ID, prompt_length, forced))
            elif opts["constraint"] == "prefix_fn":
                prefix_fn = prefix_allowed_tokens_fn(ser.allowed_ids_, EOS_ID, prompt_length, forced)
            elif forced:
                raise TabmemError("conditional sampling with the digit format needs constraint='mask' or 'prefix_fn'")
        if opts["tendency"] is not None:
            from tabmem.defenses import TendencyLogitsProcessor

            procs.append(TendencyLogitsProcessor(opts["tendency"]))
        procs.extend(opts["logits_processor"])
        return [tf.LogitsProcessorList(procs)], prefix_fn

    def _generate(
        self, prompt: torch.Tensor, k: int, opts: dict[str, Any], forced: dict[int, int], max_new: int
    ) -> torch.Tensor:
        (procs,), prefix_fn = self._processors(opts, forced, prompt.shape[1])
        ids = prompt.to(self.device_).expand(k, -1).contiguous()
        kwargs: dict[str, Any] = {}
        if prefix_fn is not None:
            kwargs["prefix_allowed_tokens_fn"] = prefix_fn
        pad = self.model_.config.pad_token_id
        eos = self.model_.config.eos_token_id if self.serializer == "realtabformer" else self.tokenizer_.eos_token_id
        out = self.model_.generate(
            input_ids=ids,
            attention_mask=torch.ones_like(ids),
            do_sample=True,
            max_new_tokens=max_new,
            temperature=float(opts["temperature"]),
            top_k=int(opts["top_k"] or 0),
            top_p=float(opts["top_p"]),
            logits_processor=procs,
            pad_token_id=pad if pad is not None else eos,
            eos_token_id=eos,
            use_cache=True,
            **kwargs,
        )
        return out[:, prompt.shape[1] :].cpu()

    def _sample_clean(self, n: int, generator: torch.Generator) -> pd.DataFrame:
        opts = getattr(self, "_sample_opts", None) or {
            "conditions": {},
            "temperature": self.temperature,
            "top_k": self.top_k,
            "top_p": self.top_p,
            "tendency": self.tendency,
            "logits_processor": [],
            "constraint": self.constraint,
        }
        stats = getattr(self, "last_sample_stats_", None)
        if stats is None:
            stats = self.last_sample_stats_ = {"generated": 0, "invalid": 0, "rounds": 0}
        conditions = opts["conditions"]
        if self.serializer == "realtabformer":
            forced = self.serializer_.encode_values(conditions) if conditions else {}
            prompt = torch.tensor([[BOS_ID]])
            max_new = self.serializer_.n_positions_ + 1
        else:
            forced = {}
            text = self.serializer_.prompt(conditions).rstrip() if conditions else ""
            tok = self.tokenizer_
            prompt = torch.tensor([[tok.bos_token_id, *tok(text, add_special_tokens=False)["input_ids"]]])
            max_new = max(1, self.max_length_ - prompt.shape[1])
        parts: list[pd.DataFrame] = []
        have, rounds = 0, 0
        while have < n:
            if rounds >= int(self.max_resample_rounds):
                raise TabmemError(
                    f"LLMGenerator: only {have} valid rows of {n} after {rounds} generation rounds "
                    f"({stats['invalid']} of {stats['generated']} generations malformed); train longer, relax the "
                    "conditions or raise max_resample_rounds"
                )
            if stats["generated"] == 0 or stats["invalid"] == 0:
                k = n - have
            else:  # ask for enough to cover the observed malformed rate
                rate = max(0.05, 1 - stats["invalid"] / stats["generated"])
                k = int(min(math.ceil((n - have) / rate * 1.1), 4 * n))
            gen = self._generate(prompt, k, opts, forced, max_new)
            res = self._parse(gen, prompt, conditions)
            stats["generated"] += k
            stats["invalid"] += res.n_invalid
            rounds += 1
            stats["rounds"] += 1
            if len(res.table):
                parts.append(res.table)
                have += len(res.table)
        out = pd.concat(parts, ignore_index=True).iloc[:n].reset_index(drop=True)
        return out

    def _parse(self, gen: torch.Tensor, prompt: torch.Tensor, conditions: dict[str, Any]):
        if self.serializer == "realtabformer":
            seqs = []
            for row in gen.tolist():
                end = row.index(EOS_ID) if EOS_ID in row else len(row)
                seqs.append(row[:end])
            return self.serializer_.decode(seqs)  # rows of the wrong length are counted invalid
        tok = self.tokenizer_
        prefix = tok.decode(prompt[0, 1:].tolist()) if prompt.shape[1] > 1 else ""
        texts = []
        for row in gen.tolist():
            if tok.eos_token_id in row:
                row = row[: row.index(tok.eos_token_id)]
            texts.append(prefix + tok.decode(row, skip_special_tokens=True))
        res = self.serializer_.parse(texts)
        if conditions and len(res.table):
            from tabmem.data.serialization.base import ParseResult

            keep = np.ones(len(res.table), dtype=bool)
            for c, v in conditions.items():
                if c in self.schema_.numerical:
                    keep &= np.isclose(res.table[c].to_numpy(dtype=float), float(v))
                else:
                    from tabmem.data.schema import canonical_category

                    keep &= res.table[c].to_numpy() == canonical_category(v)
            dropped = int((~keep).sum())
            res = ParseResult(res.table[keep], res.n_invalid + dropped, res.invalid_reasons)
        return res
