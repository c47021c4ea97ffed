"""The study ``audit`` step writes ``tabmem audit``'s distance evidence and its headline numbers as metric rows."""

from __future__ import annotations

import json
import sys
import textwrap

import pytest

from study_fixtures import BASE
from tabmem.cli import main
from tabmem.studies.runner import run_study
from tabmem.studies.store import load_results
from tabmem.studies.study import load_study

PLUGIN = '''
import numpy as np
import pandas as pd

from tabmem._io import write_frame
from tabmem.studies.steps import Step, register_step

@register_step("ev_copy")
class Copy(Step):
    """'Synthetic' rows that are the training rows: a generator that copies."""
    placement = ("instead", "train")
    produces = {"synthetic": "synthetic.csv"}

    def run(self, ctx):
        write_frame(ctx.out / "synthetic.csv", ctx.data.train)
        return []

@register_step("ev_fresh")
class Fresh(Step):
    """'Synthetic' rows drawn afresh from the training rows' distribution: a generator that does not copy."""
    placement = ("instead", "train")
    produces = {"synthetic": "synthetic.csv"}

    def run(self, ctx):
        rng = np.random.default_rng(7)  # the recipe of the study's data files (conftest.make_table)
        c = rng.choice(["red", "green", "blue"], size=80)
        a = rng.normal(size=80).round(3) + (c == "red") * 2.0
        b = rng.integers(0, 50, size=80)
        y = ((a + rng.normal(scale=0.5, size=80)) > 0.5).astype(int)
        write_frame(ctx.out / "synthetic.csv", pd.DataFrame({"a": a, "b": b, "c": c, "y": y}))
        return []
'''

EVIDENCE_KEYS = {"data_copying", "authenticity", "identical_matches", "nndr"}


@pytest.fixture()
def evidence_study(tmp_path, write_study, monkeypatch):
    """Two cells, no training: one 'generator' copies its 80 training rows, one draws 80 fresh rows."""
    from tabmem.studies.steps import STEPS

    monkeypatch.syspath_prepend(str(tmp_path))
    (tmp_path / "plug_ev.py").write_text(textwrap.dedent(PLUGIN))
    text = BASE.replace("[study]", '[study]\nplugins = ["plug_ev"]').replace(
        '"train", "audit", "attack", "quality"', '"train", "audit"'
    )
    text = text.split("[attack]")[0].replace('distances = ["fang2024", "gower"]', 'distances = ["fang2024"]')
    text += '\ncopying_cells = 4\n\n[[mitigations]]\nlabel = "copy"\nstep = "ev_copy"\n'
    text += '\n[[mitigations]]\nlabel = "fresh"\nstep = "ev_fresh"\n'
    path = write_study(text)
    yield path
    for name in ("ev_copy", "ev_fresh"):
        if name in STEPS.names():
            STEPS.unregister(name)  # type: ignore[attr-defined]
    sys.modules.pop("plug_ev", None)


def test_audit_step_writes_the_distance_evidence_and_its_rows(evidence_study, tmp_path):
    out = tmp_path / "out"
    outcome = run_study(evidence_study, out, echo=lambda line: None, jobs=1)
    assert (outcome.done, outcome.failed) == (2, [])
    copy, fresh = load_study(evidence_study).cells
    df = load_results(out)

    def rows(cell):
        sub = df[(df.cell == cell.id) & (df.step == "audit") & (df.component == "fang2024")]
        return {r.metric: r for r in sub.itertuples()}

    for cell in (copy, fresh):
        s = json.loads((out / "cells" / cell.id / "audit" / "fang2024" / "summary.json").read_text())
        assert EVIDENCE_KEYS <= set(s)
        r = rows(cell)
        auth, ident, copying = s["authenticity"], s["identical_matches"], s["data_copying"]
        # each row is the summary's number, read against the holdout's figure
        assert r["authenticity_closer_share"].value == auth["synthetic_closer_share"]
        assert r["authenticity_closer_share"].baseline == auth["holdout_closer_share"]
        assert r["holdout_authenticity_closer_share"].value == auth["holdout_closer_share"]
        assert r["identical_match_share"].value == ident["synthetic_share"]
        assert r["identical_match_share"].baseline == ident["holdout_share"]
        assert r["data_copying_z"].value == copying["z"] and r["data_copying_z"].baseline == 0
        assert r["data_copying_p_value"].value == copying["p_value"]
        assert r["data_copying_cells_flagged"].value == len(copying["cells_flagged"])
        assert r["data_copying_cells_used"].value == copying["n_cells_used"] <= 4
        for q in ("0.01", "0.05", "0.1", "0.25", "0.5"):
            assert r[f"nndr_q{q}"].value == s["nndr"]["synthetic"]["quantiles"][q]
            assert r[f"nndr_q{q}"].baseline == s["nndr"]["holdout"]["quantiles"][q]
            assert r[f"holdout_nndr_q{q}"].value == s["nndr"]["holdout"]["quantiles"][q]
        assert r["nndr_mean"].value == s["nndr"]["synthetic"]["mean"]
    # the copier: every synthetic row is a training row, closer to it than its nearest neighbour, Z << 0
    c = rows(copy)
    assert c["identical_match_share"].value == 1.0 and c["authenticity_closer_share"].value == 1.0
    assert c["nndr_q0.5"].value == 0.0
    assert c["data_copying_z"].value < -3 and c["data_copying_p_value"].value < 0.01
    # the fresh draw: no copies, and about as many 'closer' rows as real unseen rows give
    f = rows(fresh)
    assert f["identical_match_share"].value == 0.0
    assert abs(f["data_copying_z"].value) < 3
    assert abs(f["authenticity_closer_share"].value - f["authenticity_closer_share"].baseline) < 0.15


def test_audit_step_evidence_equals_the_audit_command(evidence_study, tmp_path):
    """Same tables, same distance: the step's summary holds the keys and seed-free numbers of ``tabmem audit``."""
    out = tmp_path / "out"
    run_study(evidence_study, out, echo=lambda line: None, jobs=1)
    fresh = load_study(evidence_study).cells[1]
    step = json.loads((out / "cells" / fresh.id / "audit" / "fang2024" / "summary.json").read_text())
    syn = out / "cells" / fresh.id / "ev_fresh" / "synthetic.csv"
    data = tmp_path / "data"
    args = ["audit", "--train", str(data / "train.csv"), "--synthetic", str(syn), "--holdout", str(data / "test.csv")]
    args += ["--categorical", "c,y", "--unseen", "mismatch", "--copying-cells", "4", "--distance", "fang2024"]
    args += ["--out", str(tmp_path / "cli")]
    main(args)
    cli = json.loads((tmp_path / "cli" / "summary.json").read_text())
    assert EVIDENCE_KEYS <= set(cli)
    for key in ("authenticity", "identical_matches", "nndr"):
        assert step[key] == cli[key]
    assert set(step["data_copying"]) == set(cli["data_copying"])


def test_audit_step_validates_each_table_once_for_every_distance(evidence_study, tmp_path, monkeypatch):
    """Two distances, each with its search and distance evidence: the synthetic and holdout rows are validated once."""
    from collections import Counter

    import tabmem.data.schema as schema_module

    calls: Counter[str] = Counter()
    raw = schema_module._validate_raw

    def counting(table, schema, *, name="synthetic", **kw):
        calls[name] += 1
        return raw(table, schema, name=name, **kw)

    monkeypatch.setattr(schema_module, "_validate_raw", counting)
    text = evidence_study.read_text().replace('distances = ["fang2024"]', 'distances = ["fang2024", "gower"]')
    text = text.split("[[mitigations]]")[0] + '[[mitigations]]\nlabel = "fresh"\nstep = "ev_fresh"\n'
    evidence_study.write_text(text)
    outcome = run_study(evidence_study, tmp_path / "out", echo=lambda line: None, jobs=1)
    assert (outcome.done, outcome.failed) == (1, [])
    cell = load_study(evidence_study).cells[0]
    for d in ("fang2024", "gower"):
        s = json.loads((tmp_path / "out" / "cells" / cell.id / "audit" / d / "summary.json").read_text())
        assert s["authenticity"]["distance"] == d and s["data_copying"] is not None
    assert calls["synthetic"] == 1 and calls["holdout"] == 1
