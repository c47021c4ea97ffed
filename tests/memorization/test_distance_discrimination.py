"""A distance that cannot discriminate on the data is said so: in the summary, the CLI, the report.

``fang2024`` min-max normalises each query's distances, so on an all-numerical table every row's
nearest training row is at ``d1 = 0`` and every row, real or synthetic, is a "replica". ``gower``
(the default) scales by the training ranges and does not do that. Exact copies never count
towards the warning, so a planted leak still reads as a leak.
"""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from tabmem.cli import main
from tabmem.data.schema import Schema
from tabmem.memorization.replicas import DEGENERATE_SHARE, ReplicaDetector, discrimination_warning
from tabmem.memorization.summary import NO_DISCRIMINATION, AuditSummary
from tabmem.report.model import Audit
from tabmem.report.verdict import memorization_finding


def _numeric(n: int, seed: int) -> pd.DataFrame:
    return pd.DataFrame(np.random.default_rng(seed).normal(size=(n, 4)), columns=list("abcd"))


@pytest.fixture
def tables():
    train, holdout, fresh = _numeric(300, 0), _numeric(200, 1), _numeric(300, 2)
    return train, holdout, fresh, Schema.infer(train)


def test_fang2024_on_an_all_numerical_table_warns(tables) -> None:
    train, holdout, fresh, schema = tables
    res = ReplicaDetector("fang2024").fit(train, schema).score(fresh, holdout=holdout)
    assert (res.table["d1"] == 0).all() and res.memorization_rate == 1.0  # the degenerate figure itself
    s = res.summary(n_bootstrap=0)
    assert s.distance_discriminates is False and not res.discriminates()
    (message,) = [w for w in s.warnings if NO_DISCRIMINATION in w]
    assert message.startswith("the fang2024 distance cannot discriminate on this data: 100.0% of real rows")
    assert 'distance="gower"' in message  # the library names its parameter
    assert AuditSummary.from_dict(s.to_dict()) == s


def test_gower_on_real_unseen_rows_does_not_warn(tables) -> None:
    train, holdout, fresh, schema = tables
    res = ReplicaDetector().fit(train, schema).score(fresh, holdout=holdout)  # the default: gower
    s = res.summary(n_bootstrap=0)
    assert res.distance == "gower" and s.distance_discriminates is True and s.warnings == []
    assert s.holdout_memorization_rate < 0.05


def test_a_planted_leak_still_reads_as_a_leak(tables) -> None:
    train, holdout, fresh, schema = tables
    leak = pd.concat([train.iloc[:150], fresh.iloc[:150]], ignore_index=True)  # half exact copies
    s = ReplicaDetector().fit(train, schema).score(leak, holdout=holdout).summary(n_bootstrap=0)
    assert s.warnings == [] and s.distance_discriminates is True
    assert s.exact_copy_rate == 0.5 and s.memorization_rate >= 0.5 and s.excess_memorization > 0.45
    # without a holdout, copies at d1 = 0 are not "degenerate" either, under any distance
    for distance in ("fang2024", "gower", "l2"):
        only_copies = ReplicaDetector(distance).fit(train, schema).score(train.iloc[:100])
        assert only_copies.memorization_rate == 1.0 and only_copies.warnings() == []


def test_without_a_holdout_the_synthetic_rows_at_zero_are_the_figure(tables) -> None:
    train, _, fresh, schema = tables
    fang = ReplicaDetector("fang2024").fit(train, schema).score(fresh)
    (message,) = fang.warnings()
    assert "100.0% of the synthetic rows are at d1 = 0" in message
    assert ReplicaDetector("gower").fit(train, schema).score(fresh).warnings() == []


def test_gower_itself_can_be_degenerate_and_then_suggests_no_other_distance(tables) -> None:
    train, _, fresh, schema = tables
    near = train.iloc[:100] + 1e-9  # real rows almost equal to training rows: replicas, not copies
    res = ReplicaDetector("gower").fit(train, schema).score(fresh.iloc[:50], holdout=near)
    message = discrimination_warning(res, res.holdout)
    assert message is not None and message.startswith("the gower distance cannot discriminate")
    assert "gower (" not in message and "exact-copy rate" in message
    assert DEGENERATE_SHARE == 0.5


def test_the_cli_prints_it_writes_it_and_the_report_says_it(tables, tmp_path, capsys) -> None:
    train, holdout, fresh, _ = tables
    paths = {}
    for name, table in (("train", train), ("hold", holdout), ("syn", fresh)):
        paths[name] = tmp_path / f"{name}.csv"
        table.to_csv(paths[name], index=False)
    base = ["audit", "--train", str(paths["train"]), "--synthetic", str(paths["syn"]), "--holdout", str(paths["hold"])]
    for distance, warns in (("fang2024", True), (None, False)):
        out = tmp_path / f"out-{distance}"
        args = base + ["--out", str(out)] + (["--distance", distance] if distance else [])
        try:
            main(args)
        except SystemExit as exc:
            assert exc.code in (0, None)
        text = capsys.readouterr().err
        summary = json.loads((out / "summary.json").read_text())
        assert summary["distance"] == (distance or "gower")
        assert summary["distance_discriminates"] is (not warns)
        if warns:
            assert "warning: the fang2024 distance cannot discriminate on this data" in text
            assert "pass --distance gower" in text  # the command names its flag
            assert any("--distance gower" in w for w in summary["warnings"])
            finding = memorization_finding(Audit(summary))
            assert finding.level == "info" and finding.headline == "distance cannot discriminate"
            assert "Caution: The fang2024 distance cannot discriminate" in finding.text
        else:
            assert NO_DISCRIMINATION not in text and summary["warnings"] == []
            assert "Caution" not in memorization_finding(Audit(summary)).text
