"""Everything that loads or builds Hugging Face objects for :class:`~tabmem.generators.llm.LLMGenerator`.

Models come from three places: a GPT-2 built from scratch for the row vocabulary (the CPU
default, as REaLTabFormer does), ``from_pretrained`` on a local checkpoint (optionally keeping
only its first k blocks, and with a fresh vocabulary for the digit format: the LevAtt paper's
"first k layers of a pretrained LLM", Ward et al. 2025), or a saved config (``load``, where the
weights follow from the checkpoint). Tokenizers are a backbone's own or a byte-level BPE
trained on the serialised rows. Every loading failure becomes one :class:`TabmemError`.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import torch

from tabmem.errors import TabmemError

SPECIAL_TOKENS = {"pad_token": "[PAD]", "bos_token": "[BOS]", "eos_token": "[EOS]"}


def require_transformers() -> Any:
    """The ``transformers`` module, or a clear error naming the extra to install."""
    try:
        import transformers
    except ModuleNotFoundError:  # pragma: no cover
        raise TabmemError("LLMGenerator needs transformers: pip install 'tabmem[llm]'") from None
    return transformers


@dataclass(frozen=True)
class ModelSpec:
    """What a row format needs from the model: vocabulary, positions and special token ids.

    ``fresh_vocabulary``: a pretrained backbone gets new embeddings and head of ``vocab_size``
    (digit format); otherwise it keeps its vocabulary, grown to ``vocab_size`` when smaller.
    """

    vocab_size: int
    n_positions: int
    bos_id: int | None
    eos_id: int | None
    pad_id: int | None
    fresh_vocabulary: bool


@dataclass(frozen=True)
class Architecture:
    """Size of a GPT-2 trained from scratch."""

    n_layer: int
    n_head: int
    n_embd: int
    dropout: float


def build_model(
    spec: ModelSpec, *, backbone: str | None, n_pretrained_layers: int | None, arch: Architecture, untie: bool
) -> torch.nn.Module:
    """A GPT-2 from scratch (``backbone=None``) or ``backbone`` through ``from_pretrained``.

    ``untie`` gives the head its own weights (opacus needs untied embeddings for DP-SGD).
    Weights are initialised from the global torch RNG (the caller runs this under its private one).
    """
    tf = require_transformers()
    if backbone is None:
        cfg = tf.GPT2Config(
            vocab_size=spec.vocab_size,
            n_positions=spec.n_positions,
            n_embd=int(arch.n_embd),
            n_layer=int(arch.n_layer),
            n_head=int(arch.n_head),
            resid_pdrop=arch.dropout,
            embd_pdrop=arch.dropout,
            attn_pdrop=arch.dropout,
            bos_token_id=spec.bos_id,
            eos_token_id=spec.eos_id,
            pad_token_id=spec.pad_id,
            tie_word_embeddings=not untie,
        )
        cfg.loss_type = "ForCausalLM"  # the default; set explicitly to silence a transformers warning
        return tf.GPT2LMHeadModel(cfg)
    return _from_pretrained(tf, spec, backbone, n_pretrained_layers, untie)


def _from_pretrained(
    tf: Any, spec: ModelSpec, backbone: str, n_pretrained_layers: int | None, untie: bool
) -> torch.nn.Module:
    try:
        cfg = tf.AutoConfig.from_pretrained(backbone)
    except Exception as exc:  # noqa: BLE001
        raise TabmemError(
            f"cannot load backbone {backbone!r} ({type(exc).__name__}: {exc}); "
            "give a local directory written by save_pretrained (this machine may be offline)"
        ) from None
    if n_pretrained_layers is not None:
        total = int(cfg.num_hidden_layers)
        if int(n_pretrained_layers) > total:
            raise TabmemError(f"n_pretrained_layers={n_pretrained_layers} but {backbone!r} has {total} layers")
        cfg.num_hidden_layers = int(n_pretrained_layers)
    kwargs: dict[str, Any] = {"config": cfg}
    if spec.fresh_vocabulary:
        cfg.vocab_size = spec.vocab_size
        cfg.bos_token_id, cfg.eos_token_id, cfg.pad_token_id = spec.bos_id, spec.eos_id, spec.pad_id
        kwargs["ignore_mismatched_sizes"] = True
        if getattr(cfg, "n_positions", spec.n_positions) < spec.n_positions:
            raise TabmemError(
                f"backbone {backbone!r} handles {cfg.n_positions} positions, rows need {spec.n_positions}"
            )
    if untie:
        cfg.tie_word_embeddings = False
    try:
        model = tf.AutoModelForCausalLM.from_pretrained(backbone, **kwargs)
    except Exception as exc:  # noqa: BLE001
        raise TabmemError(f"cannot load backbone {backbone!r} ({type(exc).__name__}: {exc})") from None
    if not spec.fresh_vocabulary and model.get_input_embeddings().num_embeddings < spec.vocab_size:
        model.resize_token_embeddings(spec.vocab_size)
    return model


def config_to_json(model: torch.nn.Module) -> str:
    """The model's full config as JSON (saved with the weights; no pickles in checkpoints)."""
    return model.config.to_json_string(use_diff=False)


def model_from_config_json(text: str) -> torch.nn.Module:
    """An untrained model of the saved config (``load`` then copies the saved weights into it)."""
    tf = require_transformers()
    d = json.loads(text)
    model_type = d.pop("model_type")
    for k in ("transformers_version", "architectures", "_name_or_path"):
        d.pop(k, None)
    return tf.AutoModelForCausalLM.from_config(tf.AutoConfig.for_model(model_type, **d))


def load_tokenizer(backbone: str) -> Any:
    """The backbone's own tokenizer; a missing pad or BOS token falls back to EOS."""
    tf = require_transformers()
    try:
        tok = tf.AutoTokenizer.from_pretrained(backbone)
    except Exception as exc:  # noqa: BLE001
        raise TabmemError(f"cannot load the tokenizer of backbone {backbone!r}: {exc}") from None
    if tok.pad_token is None:
        tok.pad_token = tok.eos_token
    if tok.bos_token is None:
        tok.bos_token = tok.eos_token
    return tok


def train_bpe(texts: list[str], vocab_size: int) -> Any:
    """A byte-level BPE ``tokenizers.Tokenizer`` trained on the serialised rows (deterministic)."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        special_tokens=list(SPECIAL_TOKENS.values()),
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tok.train_from_iterator(texts, trainer)
    return tok


def wrap_tokenizer(tok_json: str, special: dict[str, str]) -> Any:
    """A ``PreTrainedTokenizerFast`` from a tokenizer's JSON (how tokenizers are saved in checkpoints)."""
    from tokenizers import Tokenizer

    tf = require_transformers()
    return tf.PreTrainedTokenizerFast(tokenizer_object=Tokenizer.from_str(tok_json), **special)
