"""``tabmem attack --memory-gb``: the blocks of LevAtt and the KDE attacks follow it, the files do not."""

from __future__ import annotations

import numpy as np
import pandas as pd

from cli_run import run
from tabmem.attacks import density
from tabmem.neighbors import levenshtein, settings


def frame(rng: np.random.Generator, n: int) -> pd.DataFrame:
    return pd.DataFrame(
        {
            "age": rng.integers(18, 70, n).astype(float),
            "hours": rng.normal(40.0, 8.0, n).round(1),
            "job": rng.choice(["a", "b", "c", "d"], n),
        }
    )


def test_memory_budget_reaches_the_searches_and_changes_no_file(tmp_path, capsys, monkeypatch) -> None:
    rng = np.random.default_rng(0)
    train, hold = frame(rng, 200), frame(rng, 100)
    syn = pd.concat([train.iloc[:30], frame(rng, 120)], ignore_index=True)
    paths = {}
    for name, df in (("train", train), ("syn", syn), ("hold", hold)):
        paths[name] = tmp_path / f"{name}.csv"
        df.to_csv(paths[name], index=False)
    seen: list[int | None] = []
    real = levenshtein._search_block

    def spy(index, queries):
        seen.append(settings.current_memory())
        return real(index, queries)

    monkeypatch.setattr(levenshtein, "_search_block", spy)
    outs = {}
    for label, extra in (("default", []), ("small", ["--memory-gb", "0.02"])):
        outs[label] = tmp_path / label
        args = ["attack", "--members", paths["train"], "--non-members", paths["hold"], "--synthetic", paths["syn"]]
        args += ["--reference", paths["hold"], "--attacks", "levatt,density", "--n-bootstrap", "0", "--n-jobs", "1"]
        code, text = run([*args, *extra, "--out", outs[label]], capsys)
        assert code == 0, text
    assert None in seen and int(0.02 * 2**30) in seen
    # LevAtt's distances are integers (same bytes); the KDE blocks hold all 300 targets either way here
    assert int(0.02 * 2**30) // density._CELL_BYTES // len(syn) >= 300
    for name in ("scores.csv", "risk.csv", "roc.csv", "summary.json"):
        assert (outs["default"] / name).read_bytes() == (outs["small"] / name).read_bytes(), name
    code, text = run(["attack", "--help"], capsys)
    assert "--memory-gb" in text
