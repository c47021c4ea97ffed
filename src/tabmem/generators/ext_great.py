"""``great``: the real GReaT package (``be_great``) behind tabmem's generator interface.

Registered only when ``import be_great`` works (extra ``tabmem[great]``, installed beside
``tabmem[realtabformer]`` in ``.venv-rtf`` by ``tests/run_extgen.sh``). Nothing of the package is
copied: its text encoding (``"col is value, ..."`` in a random column order per row), its
``GReaTTrainer`` (``GReaT.fit``), its sampling (``GReaT.sample``, the legacy sampler) and its
``save()`` / ``load_from_dir()`` are called as they are.

GReaT fine-tunes a pretrained causal LM, which must be a local directory here (``llm=PATH``; no
hub downloads). ``llm=None`` (default) builds a small GPT-2 from scratch in a temporary directory:
a byte-level BPE tokenizer trained on the training rows' GReaT texts (``bpe_vocab_size``) and an
untrained ``GPT2LMHeadModel`` (``n_layer`` x ``n_embd``), initialised from the run's seed. The
saved model keeps that directory's tokenizer and config files (text) so it can be rebuilt offline;
they hold the training vocabulary (treat a saved model as private as the data).

Per-epoch control is :mod:`tabmem.generators._handoff`: ``GReaT.fit`` runs in a worker thread,
its trainer gets the :class:`~tabmem.generators._handoff.Handoff` callback (the package builds its
trainer inside ``fit``; tabmem substitutes a subclass of the package's ``GReaTTrainer`` that only
adds the callback, for the duration of the call). GReaT draws its per-row column orders and its
per-epoch conditional column from Python's global ``random``; the worker runs under private copies
of the global torch, Python and numpy streams, so a tracked run ends with bit-identical weights to
an untracked one (tested). Resuming a GReaT checkpoint is not supported (the error says so).

Sampling: the package's ``sample`` passes only ``temperature`` to ``generate``; ``top_k``,
``top_p``, ``tendency`` (TLP) and ``logits_processor`` are added to the model's ``generate`` call
for the duration of the call (transformers' defaults otherwise, including ``top_k=50``). Rows the
package returns with a missing value or a category not seen in training are dropped and more are
drawn (``max_rounds``).
"""

from __future__ import annotations

import json
import math
import tempfile
from functools import partial
from pathlib import Path
from typing import Any, ClassVar

import be_great  # noqa: F401  - a missing package makes the registry report the extra
import be_great.great as great_module
import pandas as pd
import torch
from be_great import GReaT
from transformers import AutoConfig, AutoModelForCausalLM

from tabmem._checks import check_number, check_positive_int
from tabmem.data.schema import Schema
from tabmem.errors import TabmemError
from tabmem.generators._handoff import HandoffTraining, generate_options, python_numpy_rng, quiet
from tabmem.generators._rng import derive_seed
from tabmem.generators.base import TabularGenerator, register_generator

__all__ = ["GReaTGenerator"]

_WEIGHT_FILES = ("model.safetensors", "pytorch_model.bin")


def _great_texts(df: pd.DataFrame) -> list[str]:
    """The rows as GReaT writes them (``"col is value"``, joined by ``", "``), in the column order."""
    cols = list(df.columns)
    return [", ".join(f"{c} is {str(v).strip()}" for c, v in zip(cols, row)) for row in df.itertuples(index=False)]


def _scratch_backbone(
    where: Path, texts: list[str], *, vocab_size: int, n_layer: int, n_head: int, n_embd: int
) -> None:
    """A GPT-2 saved from scratch (byte-level BPE on ``texts``, untrained weights), loadable offline."""
    from tokenizers import ByteLevelBPETokenizer
    from transformers import GPT2Config, GPT2LMHeadModel, GPT2TokenizerFast

    eos = "<|endoftext|>"
    bpe = ByteLevelBPETokenizer()
    bpe.train_from_iterator(
        texts, vocab_size=int(vocab_size), min_frequency=2, special_tokens=[eos], show_progress=False
    )
    tokenizer = GPT2TokenizerFast(tokenizer_object=bpe._tokenizer, bos_token=eos, eos_token=eos, unk_token=eos)
    longest = max(len(tokenizer(t)["input_ids"]) for t in texts)
    config = GPT2Config(
        vocab_size=len(tokenizer), n_positions=max(256, 2 * longest), n_layer=n_layer, n_head=n_head, n_embd=n_embd,
        bos_token_id=tokenizer.eos_token_id, eos_token_id=tokenizer.eos_token_id,
    )  # fmt: skip
    where.mkdir(parents=True, exist_ok=True)
    tokenizer.save_pretrained(str(where))
    GPT2LMHeadModel(config).save_pretrained(str(where))


@register_generator("great")
class GReaTGenerator(HandoffTraining, TabularGenerator):
    """GReaT (Borisov et al. 2023), the ``be_great`` package.

    Args:
        llm: local directory of a causal LM (``from_pretrained``); ``None`` = a GPT-2 from scratch.
        n_layer, n_head, n_embd, bpe_vocab_size: size of the from-scratch GPT-2 (``llm=None`` only).
        epochs, batch_size, lr, weight_decay: the package's ``TrainingArguments`` (its defaults:
            batch 8, lr 5e-5).
        float_precision: the package's decimals of floats in the texts (``None`` = all).
        max_length: tokens generated per row (``None`` = 1.5 x the longest training row + 8).
        gen_batch: rows per ``generate`` call (the package's ``k``).
        temperature, top_k, top_p, tendency: sampling defaults (the package's temperature 0.7;
            ``None`` = transformers' defaults; ``tendency`` = TLP strength, ``None`` = off).
        max_rounds: sampling rounds before giving up when too few valid rows come back.
    """

    sampling_options = ("temperature", "top_k", "top_p", "tendency", "logits_processor")
    _package_name = "great"
    PRESETS: ClassVar[dict[str, dict[str, Any]]] = {
        # the smallest that writes valid rows: ~30 epochs before an untrained GPT-2 writes "col is value" rows
        "tiny": {
            "n_layer": 2,
            "n_head": 2,
            "n_embd": 64,
            "epochs": 30,
            "lr": 5e-3,
            "batch_size": 16,
            "bpe_vocab_size": 300,
        },
        "small": {"n_layer": 4, "n_head": 4, "n_embd": 192, "epochs": 100, "lr": 5e-4},
    }
    sample_batch_size = 2048
    _RESUME_MUTABLE = frozenset(
        {"epochs", "device", "temperature", "top_k", "top_p", "tendency", "gen_batch", "max_rounds"}
    )

    def __init__(
        self,
        *,
        llm: str | None = None,
        n_layer: int = 4,
        n_head: int = 4,
        n_embd: int = 192,
        bpe_vocab_size: int = 512,
        epochs: int = 100,
        batch_size: int = 8,
        lr: float = 5e-5,
        weight_decay: float = 0.0,
        float_precision: int | None = None,
        max_length: int | None = None,
        gen_batch: int = 100,
        temperature: float = 0.7,
        top_k: int | None = None,
        top_p: float | None = None,
        tendency: float | None = None,
        max_rounds: int = 20,
        random_state: int | None = None,
        device: str = "auto",
    ) -> None:
        self.llm = llm
        self.n_layer = n_layer
        self.n_head = n_head
        self.n_embd = n_embd
        self.bpe_vocab_size = bpe_vocab_size
        self.epochs = epochs
        self.batch_size = batch_size
        self.lr = lr
        self.weight_decay = weight_decay
        self.float_precision = float_precision
        self.max_length = max_length
        self.gen_batch = gen_batch
        self.temperature = temperature
        self.top_k = top_k
        self.top_p = top_p
        self.tendency = tendency
        self.max_rounds = max_rounds
        self.random_state = random_state
        self.device = device

    # ------------------------------------------------------------ validation
    def check_params(self) -> GReaTGenerator:
        super().check_params()
        self._check_params()
        return self

    def _check_params(self) -> None:
        for name in ("n_layer", "n_head", "n_embd", "bpe_vocab_size", "gen_batch", "max_rounds"):
            check_positive_int(f"great: {name}", getattr(self, name))
        check_positive_int("great: max_length", self.max_length, allow_none=True)
        check_positive_int("great: float_precision", self.float_precision, allow_none=True)
        if int(self.n_embd) % int(self.n_head):
            raise TabmemError(f"great: n_embd ({self.n_embd}) must be divisible by n_head ({self.n_head})")
        if self.llm is not None and not Path(str(self.llm)).is_dir():
            raise TabmemError(
                f"great: llm must be a local directory of a causal LM (no hub downloads here), got {self.llm!r}"
            )
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
        """``temperature`` for the package's ``sample``, the rest for the model's ``generate``."""
        temperature = self.temperature if temperature is None else temperature
        return {
            "temperature": check_number("temperature", temperature, low=0.0, low_open=True),
            "generate": generate_options(
                top_k=self.top_k if top_k is None else top_k,
                top_p=self.top_p if top_p is None else top_p,
                tendency=self.tendency if tendency is None else tendency,
                logits_processor=logits_processor,
            ),
        }

    # ----------------------------------------------------------------- build
    def _training_args(self) -> dict[str, Any]:
        return {
            "learning_rate": float(self.lr),
            "weight_decay": float(self.weight_decay),
            "seed": derive_seed(self.seed_, 31) % 2**31,
            "data_seed": derive_seed(self.seed_, 33) % 2**31,
            "use_cpu": self.device_.type == "cpu",
            "report_to": "none",
            "logging_strategy": "epoch",
            "save_strategy": "no",
            "dataloader_num_workers": 0,
        }

    def _build(self, train_clean: pd.DataFrame, schema: Schema) -> None:
        self._check_params()
        self._init_handoff(derive_seed(self.seed_, 34))
        self._train_call = self._run_fit
        self._workdir = tempfile.TemporaryDirectory(prefix="tabmem-great-")
        self._fit_df = None
        if getattr(self, "_train_clean", None) is None:  # load(): the package's model comes from the state
            self.great_ = None
            return
        df = train_clean[list(schema.columns)]
        texts = _great_texts(df)
        backbone = Path(self._workdir.name) / "backbone"
        if self.llm is None:
            with quiet():
                _scratch_backbone(
                    backbone, texts, vocab_size=int(self.bpe_vocab_size), n_layer=int(self.n_layer),
                    n_head=int(self.n_head), n_embd=int(self.n_embd),
                )  # fmt: skip
        else:
            backbone = Path(str(self.llm))
        self._backbone = backbone
        with quiet(), python_numpy_rng():
            self.great_ = GReaT(
                llm=str(backbone),
                experiment_dir=str(Path(self._workdir.name) / "trainer"),
                epochs=int(self.epochs),
                batch_size=int(self.batch_size),
                float_precision=None if self.float_precision is None else int(self.float_precision),
                **self._training_args(),
            )
            self.great_._resolve_device("cuda" if self.device_.type == "cuda" else "cpu")
        longest = max(len(self.great_.tokenizer(t)["input_ids"]) for t in texts)
        self.max_length_ = int(self.max_length) if self.max_length is not None else math.ceil(1.5 * longest) + 8
        self._fit_df = df

    def _run_fit(self, handoff) -> None:  # noqa: ANN001 - runs in the worker thread
        original = great_module.GReaTTrainer

        class _WithHandoff(original):  # the package's trainer, plus tabmem's epoch handoff
            def __init__(self, *args: Any, **kwargs: Any) -> None:
                super().__init__(*args, **kwargs)
                self.add_callback(handoff)

        great_module.GReaTTrainer = _WithHandoff
        try:
            self.great_.fit(self._fit_df)
        finally:
            great_module.GReaTTrainer = original

    def _torch_modules(self) -> list[torch.nn.Module]:
        great = getattr(self, "great_", None)
        return [great.model] if great is not None else []

    def _release_fit_state(self) -> None:
        """The training table is dropped when ``fit`` returns."""
        self._fit_df = None

    # --------------------------------------------------------------- state
    def _state_dict(self) -> dict[str, Any]:
        with tempfile.TemporaryDirectory(prefix="tabmem-great-save-") as tmp, quiet():
            where = Path(tmp) / "great"
            self.great_.save(str(where))
            config = (where / "config.json").read_text()
            weights = torch.load(where / "model.pt", map_location="cpu", weights_only=True)
        files = {
            p.name: p.read_text()
            for p in sorted(Path(self._backbone).iterdir())
            if p.is_file() and p.name not in _WEIGHT_FILES and p.suffix in (".json", ".txt", ".model")
        }
        return {"great_config": config, "model": weights, "backbone_files": files, "max_length": self.max_length_}

    def _load_state_dict(self, state: dict[str, Any]) -> None:
        if self.great_ is not None:
            raise TabmemError("great: resuming a GReaT checkpoint is not supported; train from scratch (--overwrite)")
        root = Path(self._workdir.name)
        backbone = root / "backbone"
        backbone.mkdir(parents=True, exist_ok=True)
        for name, text in dict(state["backbone_files"]).items():
            (backbone / Path(name).name).write_text(text)
        with quiet():  # weights for from_pretrained; replaced by the package's model.pt below
            AutoModelForCausalLM.from_config(AutoConfig.from_pretrained(str(backbone))).save_pretrained(str(backbone))
        saved = root / "great"
        saved.mkdir(parents=True, exist_ok=True)
        config = json.loads(state["great_config"])
        config["llm"] = str(backbone)
        config["experiment_dir"] = str(root / "trainer")
        config["device"] = None
        (saved / "config.json").write_text(json.dumps(config))
        torch.save(dict(state["model"]), saved / "model.pt")
        with quiet():
            self.great_ = GReaT.load_from_dir(str(saved))
            self.great_._resolve_device("cuda" if self.device_.type == "cuda" else "cpu")
        self._backbone = backbone
        self.max_length_ = int(state["max_length"])

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
        """``n`` valid rows from the package's ``GReaT.sample``; keyword arguments override the defaults."""
        kwargs = self._generate_kwargs(
            temperature=temperature, top_k=top_k, top_p=top_p, tendency=tendency, logits_processor=logits_processor
        )
        seed, bs = self._check_sample_args(n, random_state, batch_size)
        return self._sample_batches(n, seed, bs, partial(self._sample_clean, options=kwargs))

    def _sample_clean(self, n: int, generator: torch.Generator, options: dict[str, Any] | None = None) -> pd.DataFrame:
        options = self._generate_kwargs() if options is None else options
        great, columns = self.great_, list(self.schema_.columns)
        model = great.model
        if options["generate"]:
            model.generate = partial(type(model).generate, model, **options["generate"])
        device = "cuda" if self.device_.type == "cuda" else "cpu"
        parts: list[pd.DataFrame] = []
        have = 0
        try:
            for _ in range(int(self.max_rounds)):
                round_seed = int(torch.randint(0, 2**31 - 1, (1,), generator=generator).item())
                with quiet(), python_numpy_rng(round_seed):
                    out = great.sample(
                        n_samples=int(n - have), temperature=options["temperature"], k=int(self.gen_batch),
                        max_length=int(self.max_length_), device=device,
                    )  # fmt: skip
                valid = self._valid_rows(out, columns)
                parts.append(valid)
                have += len(valid)
                if have >= n:
                    break
        finally:
            model.__dict__.pop("generate", None)
        if have < n:
            raise TabmemError(
                f"great: only {have} of {n} rows were valid after {self.max_rounds} rounds "
                "(train longer, or raise max_length / max_rounds)"
            )
        return pd.concat(parts, ignore_index=True).head(n).reset_index(drop=True)

    def _valid_rows(self, out: pd.DataFrame, columns: list[str]) -> pd.DataFrame:
        if len(out) == 0 or any(c not in out.columns for c in columns):
            return pd.DataFrame({c: pd.Series(dtype=float) for c in columns})
        out = out[columns].copy()
        for c in self.schema_.numerical:
            out[c] = pd.to_numeric(out[c], errors="coerce").astype(float)
        keep = out[list(self.schema_.numerical)].notna().all(axis=1) if self.schema_.numerical else True
        for c in self.schema_.categorical:
            values = out[c].astype(str).str.strip()
            keep = keep & out[c].notna() & values.isin(set(self.encoder_.categories_[c]))
            out[c] = values
        return out[keep].reset_index(drop=True)
