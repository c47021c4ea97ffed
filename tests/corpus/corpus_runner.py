"""Run one corpus case through one command, in process, and classify what happened.

A case names its inputs (a variant per role: ``train``, ``synthetic``, ``holdout``, ``model``;
``file:NAME`` for a file-level variant such as a latin-1 file), the commands that read them,
extra arguments and the expected outcome class:

* ``error``: exit code 2, no traceback, exactly one ``Error:`` line (a multi-problem schema
  error may continue on ``  - `` lines), matching ``match`` (which names the option, column,
  row or file);
* ``ok``: exit code 0 and ``check(result)`` passes (the number against a brute-force value);
* ``warn``: exit code 0, a ``warning:`` line matching ``match``, and ``check`` passes.

Every run is also held to the corpus invariants, whatever the case: no uncaught exception, no
numpy ``RuntimeWarning`` reaching the user, no planted secret in the terminal output, every
``--flag`` that a message mentions exists on that command, and a bounded run time (a case that
runs past its ``time_limit`` is a hang).
"""

from __future__ import annotations

import contextlib
import io
import re
import shutil
import signal
import socket
import threading
import time
import traceback
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pandas as pd
from corpus_tables import SECRET, VARIANTS, base_tables

# ----------------------------------------------------------------------------- cases
COMMANDS_READING = {
    "train": ("audit", "train", "attack", "quality", "generate-icl"),
    "synthetic": ("audit", "attack", "quality"),
    "holdout": ("audit", "train", "attack", "quality"),
}


@dataclass(frozen=True)
class Case:
    """One bad or adversarial input and what every command that reads it must do."""

    id: str
    item: str  # the failure class it covers (a group number and a word)
    commands: tuple[str, ...]
    expect: str  # "error" | "ok" | "warn"
    match: str | None = None  # regex on the error line(s) / the warning line
    inputs: dict[str, str] = field(default_factory=dict)  # role -> variant
    args: tuple[str, ...] = ()  # extra arguments (replace the base value of an option they repeat)
    drop: tuple[str, ...] = ()  # base options to leave out
    check: Callable[[Result], None] | None = None
    server: str = "echo"  # generate-icl: behaviour of the local backend
    time_limit: float = 120.0
    note: str = ""  # what the command did before the fix, when that differs from the expectation
    allow_secret: bool = False
    forbid: str | None = None  # regex the output must not match (e.g. an HTTP body)
    setup: Callable[[Path, Path], None] | None = None  # prepares the output directory: setup(tmp, out)


@dataclass
class Result:
    case: Case
    command: str
    argv: list[str]
    code: int | None
    out: str
    err: str
    exception: str | None
    runtime_warnings: list[str]
    seconds: float
    out_dir: Path
    tmp: Path
    files: dict[str, Path]
    tables: dict[str, pd.DataFrame]

    @property
    def text(self) -> str:
        return self.out + self.err

    def json(self, name: str = "summary.json") -> dict[str, Any]:
        import json

        return json.loads((self.out_dir / name).read_text())


# ----------------------------------------------------------------------------- inputs
def _write_file_variant(name: str, base: pd.DataFrame, path: Path) -> Path:
    if name == "latin1":
        t = base.copy()
        t.loc[2, "workclass"] = "Café-Privé"
        path.write_bytes(t.to_csv(index=False).encode("latin-1"))
    elif name == "empty":
        path.write_bytes(b"")
    elif name == "dup_header":
        text = base.to_csv(index=False).splitlines()
        cols = text[0].split(",")
        cols[2] = cols[0]
        path.write_text("\n".join([",".join(cols), *text[1:]]) + "\n")
    elif name == "ragged":
        lines = base.to_csv(index=False).splitlines()
        lines[6] = lines[6] + ",surplus,cells"
        path.write_text("\n".join(lines) + "\n")
    elif name == "semicolon":
        base.to_csv(path, index=False, sep=";")
    elif name == "tab":
        base.to_csv(path, index=False, sep="\t")
    elif name == "bom":
        path.write_bytes(b"\xef\xbb\xbf" + base.to_csv(index=False).encode())
    elif name == "parquet":
        path = path.with_suffix(".parquet")
        base.to_parquet(path, index=False)
    elif name == "corrupt_parquet":
        path = path.with_suffix(".parquet")
        path.write_bytes(b"PAR1 this is not a parquet file")
    elif name == "directory":
        path = path.with_suffix("")
        path.mkdir()
    elif name == "missing":
        path = path.with_name("does-not-exist.csv")
    elif name == "binary":
        path.write_bytes(bytes(range(256)) * 8)
    else:
        raise KeyError(name)
    return path


def materialise(inputs: dict[str, str], tmp: Path) -> tuple[dict[str, Path], dict[str, pd.DataFrame]]:
    """Write the case's tables (base ones where the case does not replace them) into ``tmp``."""
    base = base_tables()
    tables = dict(base)
    kinds: dict[str, str] = {}
    for role, variant in inputs.items():
        if variant.startswith("file:") or role == "model":
            kinds[role] = variant
            continue
        vrole, fn = VARIANTS[variant]
        tables[role] = fn(base)
    files: dict[str, Path] = {}
    for role in ("train", "synthetic", "holdout"):
        path = tmp / f"{role}.csv"
        kind = kinds.get(role)
        if kind is not None and kind.startswith("file:"):
            files[role] = _write_file_variant(kind[5:], tables[role], path)
        else:
            tables[role].to_csv(path, index=False)
            files[role] = path
    return files, tables


# ----------------------------------------------------------------------------- backends
class _Backend(BaseHTTPRequestHandler):
    """An OpenAI-compatible endpoint: ``echo`` answers with the prompt's example rows."""

    mode = "echo"

    def log_message(self, *args: Any) -> None:  # quiet
        pass

    def do_POST(self) -> None:  # noqa: N802
        import json

        body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))))
        prompt = body["messages"][-1]["content"]
        mode = self.server.mode  # type: ignore[attr-defined]
        if mode == "echo":
            block = prompt.split("missing values written NaN):\n", 1)[1].split("\n\n", 1)[0].splitlines()[1:]
            reply = "\n".join(block)
            payload = json.dumps({"choices": [{"message": {"content": reply}}]}).encode()
            self._send(200, payload)
        elif mode == "garbage":
            payload = json.dumps({"choices": [{"message": {"content": "I cannot help with that."}}]}).encode()
            self._send(200, payload)
        elif mode == "error500_echo":
            self._send(500, ("internal error while processing: " + prompt).encode())
        elif mode == "error400_echo":
            self._send(400, ("bad request: " + prompt).encode())
        elif mode == "bad_json":
            self._send(200, b"<html>not json</html>")

    def _send(self, code: int, payload: bytes) -> None:
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)


@contextlib.contextmanager
def backend(mode: str):
    """A local backend; ``silent`` accepts connections and never answers (a listening socket never read)."""
    if mode == "silent":
        sock = socket.socket()
        sock.bind(("127.0.0.1", 0))
        sock.listen(64)
        try:
            yield f"http://127.0.0.1:{sock.getsockname()[1]}/v1"
        finally:
            sock.close()
        return
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Backend)
    server.mode = mode  # type: ignore[attr-defined]
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/v1"
    finally:
        server.shutdown()
        server.server_close()


# ----------------------------------------------------------------------------- commands
TRAIN_FAST = (
    "--model", "tabddpm", "--preset", "small", "--epochs", "2", "--param", "layers=[32,32]",
    "--param", "dim_t=16", "--param", "num_timesteps=20", "--threads", "1", "--quiet",
)  # fmt: skip
#: the corpus checks replica figures against the brute force of the papers' distance (corpus_brute)
BRUTE_DISTANCE = ("--distance", "fang2024")


def base_argv(command: str, files: dict[str, Path], out: Path, model: Path | None, server: str | None) -> list[str]:
    f = {k: str(v) for k, v in files.items()}
    if command == "audit":
        return ["audit", "--train", f["train"], "--synthetic", f["synthetic"], "--holdout", f["holdout"],
                *BRUTE_DISTANCE, "--out", str(out)]  # fmt: skip
    if command == "train":
        return [
            "train",
            "--train",
            f["train"],
            "--holdout",
            f["holdout"],
            *TRAIN_FAST,
            *BRUTE_DISTANCE,
            "--out",
            str(out),
        ]
    if command == "attack":
        return ["attack", "--members", f["train"], "--non-members", f["holdout"], "--synthetic", f["synthetic"],
                "--attacks", "levatt,dcr,mc,density", "--n-bootstrap", "20", "--n-jobs", "1",
                "--out", str(out)]  # fmt: skip
    if command == "quality":
        return ["quality", "--real", f["train"], "--synthetic", f["synthetic"], "--holdout", f["holdout"],
                "--metrics", "shape,trend,mmd,wasserstein,alpha_precision,beta_recall,dcr_share",
                "--out", str(out)]  # fmt: skip
    if command == "risk":  # the holdout is the control
        return ["risk", "--train", f["train"], "--synthetic", f["synthetic"], "--control", f["holdout"],
                "--n-attacks", "50", "--out", str(out)]  # fmt: skip
    if command == "generate-icl":
        return ["generate-icl", "--train", f["train"], "--backend", f"openai:{server}", "--n", "8",
                "--n-context", "8", "--rows-per-request", "8", "--out", str(out / "icl.csv")]  # fmt: skip
    if command == "sample":
        return ["sample", "--model", str(model), "--n", "20", "--threads", "1", "--out", str(out / "sample.csv")]
    if command == "datasets":
        return ["datasets"]
    if command == "run":
        return ["run", str(out.parent / "study.toml"), "--jobs", "1", "--out", str(out)]
    if command == "track":  # the cases' setup writes the snapshots (cases_track.snapshots)
        return ["track", "--train", f["train"], "--holdout", f["holdout"], "--snapshots",
                str(out.parent / "snaps" / "synthetic_epoch*.csv"), *BRUTE_DISTANCE, "--out", str(out)]  # fmt: skip
    if command == "rank":
        return ["rank", "--run", str(out.parent / "rundir"), "--out", str(out / "ranking.csv")]
    if command == "report":
        return ["report", str(out.parent / "rundir"), "--out", str(out / "report.html")]
    if command == "check":
        return ["check", str(out.parent / "rundir"), "--json", str(out.parent / "card.json")]
    if command == "demo":
        return ["demo", "--no-generator", "--no-quality", "--out", str(out)]
    raise KeyError(command)


def merge_args(argv: list[str], extra: tuple[str, ...], drop: tuple[str, ...]) -> list[str]:
    """``argv`` with ``drop`` options removed and ``extra`` options replacing the values of the same options."""
    out = list(argv)
    for opt in drop:
        while opt in out:
            i = out.index(opt)
            del out[i : i + 2]
    i = 0
    extra = list(extra)
    while i < len(extra):
        opt = extra[i]
        takes_value = i + 1 < len(extra) and not (extra[i + 1].startswith("--") and len(extra[i + 1]) > 2)
        if opt.startswith("--") and opt != "--param" and opt in out and takes_value:
            j = out.index(opt)
            out[j + 1] = extra[i + 1]
            i += 2
            continue
        out.append(opt)
        i += 1
    return out


class Hang(Exception):
    pass


def _on_alarm(signum: int, frame: Any) -> None:
    raise Hang()


def run_case(case: Case, command: str, tmp: Path, model: Path | None = None) -> Result:
    """Run ``case`` through ``command`` in process (``tabmem.cli.main``) and capture everything."""
    from tabmem.cli import main

    tmp.mkdir(parents=True, exist_ok=True)
    files, tables = materialise(case.inputs, tmp)
    out = tmp / "out"
    model_path = model
    if case.inputs.get("model"):
        model_path = _model_variant(case.inputs["model"], model, tmp)
    if case.setup is not None:
        case.setup(tmp, out)
    with backend(case.server) as url:
        argv = base_argv(command, files, out, model_path, url)
        argv = merge_args(argv, tuple(a.format(tmp=tmp, out=out, url=url) for a in case.args), case.drop)
        stdout, stderr = io.StringIO(), io.StringIO()
        code: int | None = 0
        exc_text = None
        start = time.perf_counter()
        previous = signal.signal(signal.SIGALRM, _on_alarm)
        signal.setitimer(signal.ITIMER_REAL, case.time_limit)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            try:
                with contextlib.redirect_stdout(stdout), contextlib.redirect_stderr(stderr):
                    main(argv)
            except SystemExit as exc:
                code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
            except Hang:
                code, exc_text = None, "HANG"
            except BaseException as exc:  # noqa: BLE001 - a traceback is what the corpus looks for
                code = None
                exc_text = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))
            finally:
                signal.setitimer(signal.ITIMER_REAL, 0)
                signal.signal(signal.SIGALRM, previous)
        seconds = time.perf_counter() - start
    runtime = [f"{w.category.__name__}: {w.message} ({w.filename}:{w.lineno})" for w in caught
               if issubclass(w.category, RuntimeWarning)]  # fmt: skip
    return Result(case, command, argv, code, stdout.getvalue(), stderr.getvalue(), exc_text, runtime, seconds,
                  out, tmp, files, tables)  # fmt: skip


def _model_variant(kind: str, model: Path | None, tmp: Path) -> Path:
    if kind == "trained":
        assert model is not None
        return model
    if kind == "empty_dir":
        d = tmp / "empty-model"
        d.mkdir()
        return d
    if kind == "corrupt":
        p = tmp / "model.pt"
        p.write_bytes(b"not a torch file")
        return p
    if kind == "pickle":
        import pickle

        p = tmp / "model.pt"

        class Payload:
            def __reduce__(self):
                return (print, ("PWNED",))

        import torch

        torch.save({"format": 2, "payload": Payload()}, p, pickle_module=pickle)
        return p
    if kind == "truncated":
        assert model is not None
        p = tmp / "model.pt"
        p.write_bytes(Path(model, "model.pt").read_bytes()[:200] if model.is_dir() else model.read_bytes()[:200])
        return p
    raise KeyError(kind)


# ----------------------------------------------------------------------------- classification
_FLAG = re.compile(r"(?<![\w-])(--[a-z][a-z0-9-]*)")


def command_flags(command: str) -> set[str]:
    """Every option a command accepts (``--help`` included)."""
    import click

    from tabmem.cli import cli

    ctx = click.Context(cli)
    cmd = cli.get_command(ctx, command)
    flags = {"--help", "-h"}
    for p in cmd.params if cmd is not None else ():
        flags.update(getattr(p, "opts", []))
        flags.update(getattr(p, "secondary_opts", []))
    return flags


def classify(result: Result) -> tuple[str, list[str]]:
    """(outcome, problems): outcome in error / ok / warn / vague / traceback / wrong / hang."""
    case, problems = result.case, []
    if result.exception == "HANG":
        return "hang", [f"ran past {case.time_limit} s"]
    if result.exception is not None:
        return "traceback", [result.exception.strip().splitlines()[-1]]
    if "Traceback (most recent call last)" in result.text:
        return "traceback", ["a traceback was printed"]
    if result.runtime_warnings:
        problems.append(f"RuntimeWarning reached the user: {result.runtime_warnings[0]}")
    if SECRET in result.text and not case.allow_secret:
        problems.append("the planted training secret was printed")
    if case.forbid and re.search(case.forbid, result.text, re.S):
        problems.append(f"the output matches the forbidden {case.forbid!r}")
    known = command_flags(result.command)
    unknown = sorted({f for f in _FLAG.findall(result.text) if f not in known})
    if unknown:
        problems.append(f"a message mentions option(s) {unknown} that `{result.command}` does not have")
    if result.code == 2:
        lines = result.err.strip().splitlines()
        error_lines = [ln for ln in lines if ln.startswith("Error:")]
        if len(error_lines) != 1:
            problems.append(f"{len(error_lines)} 'Error:' lines")
        else:
            i = lines.index(error_lines[0])
            extra = [ln for ln in lines[i + 1 :] if not ln.startswith("  - ")]
            if extra:
                problems.append(f"lines after the error: {extra[:2]}")
        if case.match and not re.search(case.match, result.err, re.S):
            problems.append(f"error does not match {case.match!r}: {error_lines[:1]}")
        return ("error" if not problems else "vague"), problems
    if result.code == 0 or (result.command == "check" and result.code == 1):  # check: exit 1 is the gate's verdict
        outcome = "ok"
        if case.expect == "warn":
            warn_lines = [ln for ln in result.text.splitlines() if ln.lower().lstrip().startswith("warning:")]
            if not any(re.search(case.match or "", ln) for ln in warn_lines):
                problems.append(f"no warning line matching {case.match!r}")
            else:
                outcome = "warn"
        elif case.expect == "ok" and case.match and not re.search(case.match, result.text, re.S):
            problems.append(f"output does not match {case.match!r}")
        if case.check is not None:
            try:
                case.check(result)
            except Exception as exc:  # noqa: BLE001 - a missing key or file is a failed check too
                return "wrong", [f"check failed: {type(exc).__name__}: {exc}"] + problems
        if case.expect == "error":
            return "wrong", ["exit 0 where an error was expected"] + problems
        return (outcome if not problems else "wrong"), problems
    return "vague", [f"exit code {result.code}"] + problems


def cleanup(tmp: Path) -> None:
    shutil.rmtree(tmp, ignore_errors=True)
