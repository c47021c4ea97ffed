"""MitigationReport and DynamicCutSummary: typed, and written exactly as the summary.json of a DynamicCut run."""

from __future__ import annotations

import json
from dataclasses import fields

import numpy as np
import pandas as pd
import pytest
from mitigation_tables import TINY_DDPM, mixed_table

from tabmem._io import dumps_json
from tabmem.data.schema import Schema
from tabmem.mitigation import mitigation_report
from tabmem.mitigation.summary import SUMMARY_KEYS, DynamicCutSummary, MitigationReport, QualityScores
from tabmem.runs.dynamiccut import dynamiccut_to_dir

REPORT_KEYS = [
    "distance",
    "n_train",
    "n_synthetic",
    "memorization_rate",
    "mem_auc",
    "n_replicas",
    "holdout_memorization_rate",
    "excess_memorization",
    "excess_memorization_ci",
    "n_holdout",
    "holdout_mem_auc",
    "n_pruned",
    "replicas_of_pruned_records",
    "memorization_rate_vs_pruned",
    "holdout_memorization_rate_vs_pruned",
    "excess_memorization_vs_pruned",
    "quality",
]
RUN_KEYS = [
    "model",
    "preset",
    "epochs",
    "seed",
    "n_retrain",
    "n_new",
    "prune",
    "prune_by",
    "top_k",
    "warmup_epochs",
    "track_every",
    "ranking_source",
    "mix",
    "mix_ratio",
    "warmup",
    "baseline",
    "timings_s",
]
REWEIGHT_KEYS = ["reweight", "reweight_shape"]  # reweighting runs only (absent when records are pruned)


@pytest.fixture(scope="module")
def data():
    df, schema = mixed_table(n=60, seed=2)
    hold, _ = mixed_table(n=60, seed=3)
    return df, schema, hold


def test_field_order_is_the_file_order():
    # warnings: only in a file that has one (a distance that cannot discriminate on the data)
    assert [f.name for f in fields(MitigationReport)] == REPORT_KEYS + ["warnings"]
    assert [f.name for f in fields(DynamicCutSummary)] == REPORT_KEYS + ["warnings"] + RUN_KEYS + REWEIGHT_KEYS


def test_a_distance_that_cannot_discriminate_is_a_warning_of_the_report():
    rng = np.random.default_rng(0)
    df = pd.DataFrame(rng.normal(size=(120, 3)), columns=list("abc"))
    hold = pd.DataFrame(rng.normal(size=(60, 3)), columns=list("abc"))
    schema = Schema.infer(df)
    synthetic = pd.DataFrame(rng.normal(size=(60, 3)), columns=list("abc"))
    fang = mitigation_report(synthetic, df, schema, holdout=hold, distance="fang2024", quality=False)
    (message,) = fang.warnings
    assert message.startswith("the fang2024 distance cannot discriminate on this data")
    assert MitigationReport.from_dict(fang.to_dict()) == fang
    assert mitigation_report(synthetic, df, schema, holdout=hold, quality=False).warnings is None  # gower
    assert set(SUMMARY_KEYS) <= {f.name for f in fields(DynamicCutSummary)}


def test_mitigation_report_is_typed_and_round_trips(data):
    df, schema, hold = data
    synthetic = df.iloc[:30].reset_index(drop=True)
    rep = mitigation_report(synthetic, df, schema, pruned_rows=np.arange(4), holdout=hold)
    assert isinstance(rep, MitigationReport) and isinstance(rep.quality, QualityScores)
    assert rep.n_pruned == 4 and rep.excess_memorization == pytest.approx(
        rep.memorization_rate - rep.holdout_memorization_rate
    )
    assert list(rep.to_dict()) == REPORT_KEYS and list(rep.to_dict()["quality"]) == ["shape", "trend", "mle", "skipped"]
    assert MitigationReport.from_dict(rep.to_dict()) == rep
    bare = mitigation_report(synthetic, df, schema, quality=False)
    assert [k for k in REPORT_KEYS if k not in bare.to_dict()] == ["n_holdout", "holdout_mem_auc", "quality"]
    assert bare.to_dict()["excess_memorization"] is None  # the holdout figures stay, as null
    assert MitigationReport.from_dict(bare.to_dict()) == bare


def test_the_run_file_is_what_to_dict_writes(data, tmp_path):
    df, schema, hold = data
    out = tmp_path / "dc"
    s = dynamiccut_to_dir(
        df, schema, out, params={**TINY_DDPM, "epochs": 6}, warmup_epochs=4, track_every=2, top_k=2, prune=0.1,
        holdout=hold, test=hold, mle_grid="tiny", seed=0,
    )  # fmt: skip
    assert isinstance(s, DynamicCutSummary) and s.baseline is None and s.n_pruned == 6
    written = json.loads((out / "summary.json").read_text())
    assert list(written) == REPORT_KEYS + RUN_KEYS and written["baseline"] is None
    assert dumps_json(s.to_dict()) == dumps_json(written)
    assert dumps_json(DynamicCutSummary.from_dict(written).to_dict()) == dumps_json(written)
