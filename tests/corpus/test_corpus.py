"""The bad-input corpus: every case under every command that reads its input.

Each test runs ``tabmem <command>`` in process on the case's inputs and asserts the outcome class
(see ``corpus_runner``): a clear one-line error naming the option, column, row or file; or a
correct result (checked against a brute-force value) with the warning the case calls for. The
invariants hold for every run: no traceback, no hang, no numpy warning, no planted training
secret, no advice naming an option the command does not have.
"""

from __future__ import annotations

import pytest
from corpus_cases import CASES, params
from corpus_runner import classify, run_case


@pytest.fixture(scope="session")
def trained_model(tmp_path_factory):
    """A tiny TabDDPM run directory on the corpus' training table (for the ``sample`` cases)."""
    pytest.importorskip("torch")
    from corpus_runner import TRAIN_FAST, materialise

    from tabmem.cli import main

    tmp = tmp_path_factory.mktemp("corpus-model")
    files, _ = materialise({}, tmp)
    out = tmp / "run"
    try:
        main(["train", "--train", str(files["train"]), *TRAIN_FAST, "--out", str(out)])
    except SystemExit as exc:
        assert not exc.code, "training the corpus model failed"
    return out


@pytest.mark.parametrize(("case", "command"), params(), ids=lambda v: v if isinstance(v, str) else v.id)
def test_case(case, command, tmp_path, request) -> None:
    model = request.getfixturevalue("trained_model") if command == "sample" else None
    result = run_case(case, command, tmp_path / "case", model=model)
    outcome, problems = classify(result)
    detail = (
        "\n".join(problems)
        + f"\n--- argv: {result.argv}\n--- stdout:\n{result.out[-2000:]}\n--- stderr:\n{result.err[-2000:]}"
    )
    if result.exception and result.exception != "HANG":
        detail += f"\n--- exception:\n{result.exception[-3000:]}"
    assert outcome == case.expect, f"{case.id} / {command}: {outcome} (expected {case.expect})\n{detail}"


def test_corpus_size() -> None:
    """At least 60 cases; each case has a unique id and a known outcome class."""
    ids = [c.id for c in CASES]
    assert len(ids) == len(set(ids))
    assert len(CASES) >= 60
    assert {c.expect for c in CASES} <= {"error", "ok", "warn"}
