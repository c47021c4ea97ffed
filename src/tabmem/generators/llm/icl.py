"""In-context (ICL) tabular generation: prompt an LLM with training rows, parse the rows it writes.

The LevAtt paper's ICL regime (Ward et al. 2025; prompts as in Byun et al., "Risk In Context",
2025): the prompt holds the schema, summary statistics and ``n_context`` serialised training rows
(8 to 128), and asks for new rows in the same format. Rows are written in the ``canonical`` format
(fixed column order, fixed per-column precision, ``,`` delimiter, ``NaN`` token) under a header
line; every reply line is parsed and validated, malformed lines are counted
(``last_sample_stats_``) and dropped, and the model is prompted again until ``n`` valid rows exist.

Backends:

* :class:`HFBackend`: a local Hugging Face causal LM (``from_pretrained`` on a path), chat
  template when the tokenizer has one;
* :class:`OpenAIBackend`: any OpenAI-compatible ``/chat/completions`` endpoint over ``urllib``
  (base URL and key from arguments or ``TABMEM_OPENAI_BASE_URL``/``OPENAI_BASE_URL`` and
  ``OPENAI_API_KEY``), retrying 429/5xx/network errors with exponential backoff and jitter and
  honouring ``Retry-After``.

Bounded time: every attempt waits at most ``timeout`` seconds for the server (default 30; a
server that accepts the connection and never answers costs ``timeout`` per attempt), a request
makes at most ``max_retries + 1`` attempts with backoffs of at most ``max_backoff`` seconds, and
:meth:`ICLGenerator.sample` makes at most ``max_rounds`` requests: the worst case is
``max_rounds * ((max_retries + 1) * timeout + max_retries * max_backoff)``, and a dead backend
fails after the first request's attempts. ``sample(progress=...)`` reports every request.

Privacy note: the prompt sends ``n_context`` training rows to the backend; summary statistics
are computed from those context rows only, so nothing else of the training table leaves. An HTTP
error's response body may echo the prompt (training rows), so messages give the status and its
reason only; ``show_body=True`` adds the first 500 characters of the body, for debugging.
"""

from __future__ import annotations

import json
import os
import random
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from typing import Any

import numpy as np
import pandas as pd

from tabmem._checks import check_int, check_number
from tabmem.data.schema import Schema, validate_table
from tabmem.data.serialization import get_serializer
from tabmem.errors import TabmemError

Messages = list[dict[str, str]]


# ------------------------------------------------------------------ backends
class OpenAIBackend:
    """Chat completions over HTTP (OpenAI-compatible), with retries, backoff and rate-limit handling.

    Args:
        base_url: e.g. ``https://api.openai.com/v1`` (``/chat/completions`` is appended); default from
            ``TABMEM_OPENAI_BASE_URL`` or ``OPENAI_BASE_URL``.
        api_key: default from ``OPENAI_API_KEY`` (may be empty for local servers). Never logged.
        model: model name sent in the request.
        timeout: seconds an attempt waits for the server (connection and each read).
        max_retries: retries after the first attempt (429, 5xx, timeouts, connection errors).
        backoff, max_backoff: delay ``min(max_backoff, backoff * 2**attempt)`` times a jitter in
            [0.5, 1]; a ``Retry-After`` header (seconds) takes precedence, capped at ``max_backoff``.
        show_body: put the first 500 characters of an error response's body in the message
            (off by default: a body may echo the prompt, i.e. training rows).
        on_retry: called with ``(attempt, max_attempts, reason)`` before each retry (progress).
    """

    RETRY_STATUS = frozenset({408, 409, 429, 500, 502, 503, 504})

    def __init__(
        self,
        base_url: str | None = None,
        api_key: str | None = None,
        model: str = "gpt-4o-mini",
        timeout: float = 30.0,
        max_retries: int = 3,
        backoff: float = 1.0,
        max_backoff: float = 30.0,
        random_state: int | None = None,
        sleep: Callable[[float], None] = time.sleep,
        show_body: bool = False,
        on_retry: Callable[[int, int, str], None] | None = None,
    ) -> None:
        url = base_url or os.environ.get("TABMEM_OPENAI_BASE_URL") or os.environ.get("OPENAI_BASE_URL")
        if not url:
            raise TabmemError("OpenAI backend: no base URL (pass base_url or set TABMEM_OPENAI_BASE_URL)")
        if not url.startswith(("http://", "https://")):
            raise TabmemError(f"OpenAI backend: base_url must start with http:// or https://, got {url!r}")
        self.base_url = url.rstrip("/")
        self.api_key = api_key if api_key is not None else os.environ.get("OPENAI_API_KEY", "")
        self.model = model
        self.timeout = check_number("timeout", timeout, low=0.0, low_open=True)
        self.max_retries = check_int("max_retries", max_retries, low=0)
        self.backoff = check_number("backoff", backoff, low=0.0)
        self.max_backoff = check_number("max_backoff", max_backoff, low=0.0)
        self.show_body = bool(show_body)
        self.on_retry = on_retry
        self._jitter = random.Random(random_state)
        self._sleep = sleep
        self.n_requests_ = 0
        self.n_retries_ = 0

    def __repr__(self) -> str:  # never shows the key
        return f"OpenAIBackend(base_url={self.base_url!r}, model={self.model!r})"

    def _delay(self, attempt: int, retry_after: str | None) -> float:
        if retry_after:
            try:
                return min(self.max_backoff, max(0.0, float(retry_after)))
            except ValueError:
                pass
        return min(self.max_backoff, self.backoff * 2**attempt) * (0.5 + 0.5 * self._jitter.random())

    def _http_error(self, exc: urllib.error.HTTPError) -> str:
        """``HTTP 400 (Bad Request)``; the body only with ``show_body`` (it may echo the prompt)."""
        text = f"HTTP {exc.code}" + (f" ({exc.reason})" if exc.reason else "")
        if self.show_body:
            try:
                body = exc.read().decode("utf-8", "replace")[:500]
                text += ": " + body.replace("\r", "\\r").replace("\n", "\\n")  # one line
            except OSError:
                pass
        return text

    def complete(
        self, messages: Messages, *, temperature: float = 1.0, max_tokens: int = 2048, seed: int | None = None
    ) -> str:
        body: dict[str, Any] = {
            "model": self.model,
            "messages": messages,
            "temperature": temperature,
            "max_tokens": max_tokens,
        }
        if seed is not None:
            body["seed"] = int(seed)
        data = json.dumps(body).encode()
        headers = {"Content-Type": "application/json"}
        if self.api_key:
            headers["Authorization"] = f"Bearer {self.api_key}"
        url = self.base_url + "/chat/completions"
        attempts = self.max_retries + 1
        last = ""
        for attempt in range(attempts):
            self.n_requests_ += 1
            req = urllib.request.Request(url, data=data, headers=headers, method="POST")
            try:
                with urllib.request.urlopen(req, timeout=self.timeout) as resp:
                    raw = resp.read()
                payload = json.loads(raw.decode("utf-8", "replace"))
                try:
                    return str(payload["choices"][0]["message"]["content"] or "")
                except (KeyError, IndexError, TypeError):
                    raise TabmemError(f"OpenAI backend: unexpected response shape from {url}") from None
            except urllib.error.HTTPError as exc:
                last = self._http_error(exc)
                if exc.code not in self.RETRY_STATUS:
                    raise TabmemError(f"OpenAI backend: {url}: {last}") from None
                delay = self._delay(attempt, exc.headers.get("Retry-After") if exc.headers else None)
            except (TimeoutError, urllib.error.URLError, ConnectionError, json.JSONDecodeError, OSError) as exc:
                last = self._network_error(exc)
                delay = self._delay(attempt, None)
            if attempt < self.max_retries:
                self.n_retries_ += 1
                if self.on_retry is not None:
                    self.on_retry(attempt + 2, attempts, last)
                self._sleep(delay)
        plural = "s" if attempts != 1 else ""
        raise TabmemError(f"OpenAI backend: {url}: {last}; gave up after {attempts} attempt{plural}")

    def _network_error(self, exc: BaseException) -> str:
        if isinstance(exc, json.JSONDecodeError):
            return "the response is not JSON"
        reason = getattr(exc, "reason", exc)
        if isinstance(exc, TimeoutError) or isinstance(reason, TimeoutError) or "timed out" in str(reason):
            return f"timed out after {self.timeout:g} s"
        if isinstance(reason, ConnectionRefusedError) or isinstance(exc, ConnectionRefusedError):
            return "connection refused"
        return f"network error ({type(reason).__name__})"


class HFBackend:
    """A local Hugging Face causal LM (``from_pretrained(path)``) used as a chat model."""

    def __init__(self, path: str, device: str = "cpu", max_new_tokens: int | None = None) -> None:
        import torch
        import transformers as tf

        try:
            self.tokenizer = tf.AutoTokenizer.from_pretrained(path)
            self.model = tf.AutoModelForCausalLM.from_pretrained(path).to(device).eval()
        except Exception as exc:  # noqa: BLE001
            raise TabmemError(f"HF backend: cannot load {path!r} ({type(exc).__name__}: {exc})") from None
        self.path, self.device, self.max_new_tokens = path, device, max_new_tokens
        self._torch = torch

    def __repr__(self) -> str:
        return f"HFBackend(path={self.path!r})"

    def _prompt_ids(self, messages: Messages):
        tok = self.tokenizer
        if getattr(tok, "chat_template", None):
            ids = tok.apply_chat_template(messages, add_generation_prompt=True, return_tensors="pt")
            return ids if not isinstance(ids, dict) else ids["input_ids"]
        text = "\n\n".join(m["content"] for m in messages) + "\n"
        return tok(text, return_tensors="pt")["input_ids"]

    def complete(
        self, messages: Messages, *, temperature: float = 1.0, max_tokens: int = 2048, seed: int | None = None
    ) -> str:
        torch = self._torch
        ids = self._prompt_ids(messages).to(self.device)
        limit = getattr(self.model.config, "n_positions", None) or getattr(
            self.model.config, "max_position_embeddings", None
        )
        new = int(self.max_new_tokens or max_tokens)
        if limit is not None:
            if ids.shape[1] >= limit:
                raise TabmemError(
                    f"HF backend: the prompt has {ids.shape[1]} tokens, the model handles {limit}; lower n_context"
                )
            new = min(new, int(limit) - ids.shape[1])
        with torch.random.fork_rng(devices=[]), torch.inference_mode():
            torch.manual_seed(0 if seed is None else int(seed))
            pad = (
                self.tokenizer.pad_token_id if self.tokenizer.pad_token_id is not None else self.tokenizer.eos_token_id
            )
            out = self.model.generate(
                ids,
                attention_mask=torch.ones_like(ids),
                do_sample=True,
                temperature=temperature,
                max_new_tokens=new,
                pad_token_id=pad,
                top_k=0,
            )
        return self.tokenizer.decode(out[0, ids.shape[1] :], skip_special_tokens=True)


def make_backend(spec: str, **kwargs: Any) -> OpenAIBackend | HFBackend:
    """``"hf:PATH"`` or ``"openai:URL"`` (``"openai"`` alone reads the URL from the environment)."""
    kind, _, target = spec.partition(":")
    if kind == "hf":
        if not target:
            raise TabmemError("backend 'hf:PATH' needs a local model path")
        return HFBackend(target, **{k: v for k, v in kwargs.items() if k in ("device", "max_new_tokens")})
    if kind == "openai":
        return OpenAIBackend(
            target or None, **{k: v for k, v in kwargs.items() if k not in ("device", "max_new_tokens")}
        )
    raise TabmemError(f"backend must be 'hf:PATH' or 'openai:URL', got {spec!r}")


# ----------------------------------------------------------------- generator
class ICLGenerator:
    """Generate rows by prompting an LLM with ``n_context`` training rows (LevAtt paper, ICL regime).

    Args:
        backend: an object with ``complete(messages, temperature=, max_tokens=, seed=) -> str``
            (:class:`OpenAIBackend`, :class:`HFBackend`, or your own).
        n_context: training rows shown in the prompt (8 to 128 in the paper).
        rows_per_request: rows asked for per request.
        temperature, max_tokens: sent to the backend.
        max_rounds: requests without enough valid rows before a clear error.
        summary_stats: include per-column statistics of the context rows in the prompt.
        random_state: seed of the context choice, the shuffles and the backend seeds.
    """

    def __init__(
        self,
        backend: Any,
        n_context: int = 32,
        rows_per_request: int = 32,
        temperature: float = 1.0,
        max_tokens: int = 4096,
        max_rounds: int = 50,
        summary_stats: bool = True,
        dataset_name: str | None = None,
        random_state: int | None = None,
    ) -> None:
        self.backend = backend
        self.n_context = n_context
        self.rows_per_request = rows_per_request
        self.temperature = temperature
        self.max_tokens = max_tokens
        self.max_rounds = max_rounds
        self.summary_stats = summary_stats
        self.dataset_name = dataset_name
        self.random_state = random_state

    def fit(self, train: pd.DataFrame, schema: Schema | None = None) -> ICLGenerator:
        """Choose the context rows (seeded) and fit the row format on the training table."""
        for name in ("n_context", "rows_per_request", "max_rounds", "max_tokens"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < 1:
                raise TabmemError(f"ICLGenerator: {name} must be a positive integer, got {name}={v!r}")
        if not hasattr(self.backend, "complete"):
            raise TabmemError(f"ICLGenerator: backend {self.backend!r} has no complete(messages, ...) method")
        schema = schema if schema is not None else Schema.infer(train)
        clean = validate_table(train, schema, name="training", nan="match", extra="ignore")
        if self.n_context > len(clean):
            raise TabmemError(f"n_context={self.n_context} but the training table has {len(clean)} rows")
        rng = np.random.default_rng(self.random_state)
        idx = np.sort(rng.choice(len(clean), size=int(self.n_context), replace=False))
        self.schema_ = schema
        self.context_index_ = idx
        context = clean.iloc[idx].reset_index(drop=True)
        self.serializer_ = get_serializer("canonical").fit(clean, schema)
        self.context_rows_ = self.serializer_.serialize(context, name="context")
        self.stats_ = self._stats(context) if self.summary_stats else {}
        self._rng = rng
        return self

    def _stats(self, context: pd.DataFrame) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for c in self.schema_.columns:
            s = context[c]
            if c in self.schema_.numerical:
                v = s.to_numpy(dtype=float)
                out[c] = {
                    "type": "numerical",
                    "min": float(np.nanmin(v)),
                    "max": float(np.nanmax(v)),
                    "mean": round(float(np.nanmean(v)), 4),
                    "std": round(float(np.nanstd(v)), 4),
                }
            else:
                freq = s.value_counts(normalize=True).head(20)
                out[c] = {"type": "categorical", "frequencies": {str(k): round(float(p), 3) for k, p in freq.items()}}
        return out

    def build_messages(self, n_rows: int, rng: np.random.Generator | None = None) -> Messages:
        """The chat messages asking for ``n_rows`` rows (context rows in a seeded random order)."""
        if not hasattr(self, "serializer_"):
            raise TabmemError("ICLGenerator is not fitted: call fit(train) first")
        rows = list(self.context_rows_)
        if rng is not None:
            rows = [rows[i] for i in rng.permutation(len(rows))]
        header = ",".join(self.schema_.columns)
        kinds = ", ".join(
            f"{c} ({'numerical' if c in self.schema_.numerical else 'categorical'})" for c in self.schema_.columns
        )
        system = (
            "You are a synthetic tabular data generator. You reply with data rows only: one row per line, "
            "comma-separated, in the exact column order and number format of the examples, no header, no commentary."
        )
        parts = [f"Dataset: {self.dataset_name}." if self.dataset_name else "", f"Columns: {kinds}."]
        if self.stats_:
            parts.append("Summary statistics: " + json.dumps(self.stats_))
        parts.append(
            f"Here are {len(rows)} example rows (CSV, missing values written NaN):\n{header}\n" + "\n".join(rows)
        )
        parts.append(f"Write {n_rows} new, realistic rows that follow the same distribution. Do not copy the examples.")
        return [{"role": "system", "content": system}, {"role": "user", "content": "\n\n".join(p for p in parts if p)}]

    def parse_reply(self, text: str) -> tuple[pd.DataFrame, int]:
        """Valid rows of a reply and the number of malformed lines (header, fences and blanks ignored)."""
        header = ",".join(self.schema_.columns)
        lines = [ln.strip() for ln in str(text).splitlines()]
        lines = [ln for ln in lines if ln and not ln.startswith("```") and ln != header]
        res = self.serializer_.parse(lines)
        return res.table.reset_index(drop=True), res.n_invalid

    def sample(
        self,
        n: int,
        *,
        random_state: int | None = None,
        progress: Callable[[dict[str, int]], None] | None = None,
    ) -> pd.DataFrame:
        """``n`` valid rows (requests repeated until enough are valid; ``last_sample_stats_`` counts them).

        ``progress(stats)`` is called after every request with ``requests``, ``rows_valid``,
        ``rows_parsed``, ``invalid_lines``, ``retries`` and ``n``.
        """
        if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 1:
            raise TabmemError(f"sample: n must be a positive integer, got {n!r}")
        if not hasattr(self, "serializer_"):
            raise TabmemError("ICLGenerator is not fitted: call fit(train) first")
        rng = np.random.default_rng(self.random_state if random_state is None else random_state)
        parts, have = [], 0
        stats = {"requests": 0, "rows_parsed": 0, "invalid_lines": 0, "retries": 0, "rows_valid": 0, "n": int(n)}
        while have < n:
            if stats["requests"] >= int(self.max_rounds):
                raise TabmemError(
                    f"ICL: only {have} valid rows of {n} after {stats['requests']} requests "
                    f"({stats['invalid_lines']} malformed lines); check the backend or raise max_rounds"
                )
            k = int(min(self.rows_per_request, max(n - have, 1)))
            reply = self.backend.complete(
                self.build_messages(k, rng),
                temperature=float(self.temperature),
                max_tokens=int(self.max_tokens),
                seed=int(rng.integers(2**31 - 1)),
            )
            table, bad = self.parse_reply(reply)
            stats["requests"] += 1
            stats["rows_parsed"] += len(table)
            stats["invalid_lines"] += bad
            stats["retries"] = int(getattr(self.backend, "n_retries_", 0))
            if len(table):
                parts.append(table)
                have += len(table)
            stats["rows_valid"] = min(have, int(n))
            if progress is not None:
                progress(dict(stats))
        self.last_sample_stats_ = stats
        return pd.concat(parts, ignore_index=True).iloc[:n].reset_index(drop=True)
