"""run_attacks / tabmem attack: outputs, bad input, privacy of the terminal output; comparison helpers."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner
from scipy.stats import pearsonr, spearmanr

from tabmem.attacks.compare import auc_correlations, risk_table, score_correlations
from tabmem.attacks.leaks import one_digit_leak
from tabmem.attacks.runner import run_attacks
from tabmem.cli import cli
from tabmem.errors import SchemaError, TabmemError


def test_run_attacks_report(tables):
    members, non_members, synthetic, reference, schema = tables
    rep = run_attacks(members, non_members, synthetic, schema, reference=reference, n_bootstrap=20)
    assert list(rep.scores.columns) == ["target_row", "is_member", "levatt", "dcr", "mc", "density", "domias"]
    assert rep.scores.is_member.sum() == 120 and len(rep.scores) == 240
    summ = rep.summary()
    assert set(summ["levatt"].tpr_at_fpr) == {"0", "0.001", "0.01", "0.1"}
    assert summ.meta.n_members == 120
    # without a reference, DOMIAS is skipped and reported
    rep2 = run_attacks(members, non_members, synthetic, schema, n_bootstrap=0)
    assert "domias" in rep2.skipped and "domias" not in rep2.scores


def test_run_attacks_bad_input(tables):
    members, non_members, synthetic, _, schema = tables
    with pytest.raises(SchemaError, match="(?s)non-members.*missing column"):
        run_attacks(members, non_members.drop(columns=["z"]), synthetic, schema)
    with pytest.raises(SchemaError, match="(?s)synthetic.*not in the training data"):
        run_attacks(members, non_members, synthetic.assign(extra=1), schema)
    run_attacks(members, non_members, synthetic.assign(extra=1), schema, extra="ignore", attacks=["dcr"], n_bootstrap=0)
    with pytest.raises(SchemaError, match="empty"):
        run_attacks(members, non_members.iloc[:0], synthetic, schema)
    with pytest.raises(TabmemError, match="exactly the same rows"):
        run_attacks(members, members.sample(frac=1, random_state=0), synthetic, schema)
    nan_members = members.copy()
    nan_members.loc[3, "x"] = np.nan
    with pytest.raises(SchemaError, match="'x' has 1 missing"):
        run_attacks(nan_members, non_members, synthetic, schema)
    rep = run_attacks(
        nan_members, non_members, synthetic, schema, nan="match", attacks=["levatt", "dcr", "density"], n_bootstrap=0
    )
    assert "density" in rep.skipped and np.isfinite(rep.scores.levatt).all()
    with pytest.raises(TabmemError, match="unknown attack"):
        run_attacks(members, non_members, synthetic, schema, attacks=["levatt", "nope"])
    with pytest.raises(TabmemError, match="reference"):
        run_attacks(members, non_members, synthetic, schema, attacks=["domias"])


def test_cli_attack(tmp_path, tables):
    members, non_members, _, reference, schema = tables
    synthetic = one_digit_leak(members, schema, random_state=0)
    for name, t in [("m", members), ("n", non_members), ("s", synthetic), ("r", reference)]:
        t.to_csv(tmp_path / f"{name}.csv", index=False)
    out = tmp_path / "out"
    args = ["attack", "--members", str(tmp_path / "m.csv"), "--non-members", str(tmp_path / "n.csv"), "--synthetic"]
    res = CliRunner().invoke(
        cli,
        [
            *args,
            str(tmp_path / "s.csv"),
            "--reference",
            str(tmp_path / "r.csv"),
            "--out",
            str(out),
            "--n-bootstrap",
            "10",
        ],
    )
    assert res.exit_code == 0, res.output
    summary = json.loads((out / "summary.json").read_text())
    assert summary["levatt"]["auc"] > 0.97
    assert len(summary["levatt"]["auc_ci"]) == 2
    scores = pd.read_csv(out / "scores.csv")
    assert list(scores.columns) == ["target_row", "is_member", "levatt", "dcr", "mc", "density", "domias"]
    risk = pd.read_csv(out / "risk.csv")
    assert risk.best_rank.is_monotonic_increasing and len(risk) == 240 and "levatt_rank" in risk
    # roc.csv: the corners of every attack's curve; interpolating them gives the summary's TPR@FPR
    roc = pd.read_csv(out / "roc.csv")
    assert list(roc.columns) == ["attack", "fpr", "tpr", "threshold"]
    assert set(roc.attack) == {"levatt", "dcr", "mc", "density", "domias"}
    for name, curve in roc.groupby("attack"):
        assert curve.fpr.is_monotonic_increasing and curve.tpr.is_monotonic_increasing
        for f, tpr in summary[name]["tpr_at_fpr"].items():
            assert np.interp(float(f), curve.fpr, curve.tpr) == pytest.approx(tpr, abs=1e-12)
        auc = np.trapezoid(curve.tpr, curve.fpr)
        assert auc == pytest.approx(summary[name]["auc"], abs=1e-12)
    assert summary["_meta"]["config"]["attacks"] == ["levatt", "dcr", "mc", "density", "domias"]
    assert summary["_meta"]["config"]["attack_params"]["levatt"]["serializer"] == "canonical"
    # no raw record value reaches the terminal
    for v in members["y"].astype(str).tolist()[:20]:
        assert v not in res.output
    # bad input: one clear line, exit 2 (through the real entry point)
    pd.DataFrame({"a": [1, 2]}).to_csv(tmp_path / "bad.csv", index=False)
    from tabmem.cli import main

    with pytest.raises(SystemExit) as exc:
        main([*args, str(tmp_path / "bad.csv"), "--out", str(out)])
    assert exc.value.code == 2


def test_score_and_auc_correlations_match_scipy():
    rng = np.random.default_rng(0)
    a = rng.normal(size=200)
    scores = pd.DataFrame({"a": a, "b": a + rng.normal(size=200), "c": rng.integers(0, 5, 200)})
    sp = score_correlations(scores, method="spearman")
    pe = score_correlations(scores, method="pearson")
    assert sp.loc["a", "b"] == pytest.approx(spearmanr(scores.a, scores.b)[0])
    assert sp.loc["a", "c"] == pytest.approx(spearmanr(scores.a, scores.c)[0])
    assert pe.loc["b", "c"] == pytest.approx(pearsonr(scores.b, scores.c)[0])
    runs = pd.DataFrame({"levatt": rng.random(30), "dcr": rng.random(30), "generator": ["g"] * 30})
    ac = auc_correlations(runs)
    assert list(ac.columns) == ["levatt", "dcr"]
    assert ac.loc["levatt", "dcr"] == pytest.approx(pearsonr(runs.levatt, runs.dcr)[0])
    with pytest.raises(TabmemError, match="method"):
        score_correlations(scores, method="kendall")


def test_risk_table():
    scores = pd.DataFrame({"levatt": [-1.0, -5.0, 0.0, -3.0], "dcr": [-0.1, -0.05, -2.0, -1.0]})
    rt = risk_table(scores, [1, 0, 1, 0])
    assert rt.target_row.tolist() == [1, 2, 0, 3]  # best ranks: row1 dcr #1, row2 levatt #1, row0 #2, row3 #3
    assert rt.loc[0, "dcr_rank"] == 1 and rt.loc[1, "levatt_rank"] == 1
    assert rt.is_member.tolist() == [False, True, True, False]


def test_cli_unknown_serializer_is_one_clear_error(tmp_path, tables, capsys):
    from tabmem.cli import main

    members, non_members, synthetic, _, _ = tables
    for name, t in [("m", members), ("n", non_members), ("s", synthetic)]:
        t.to_csv(tmp_path / f"{name}.csv", index=False)
    args = ["attack", "--members", str(tmp_path / "m.csv"), "--non-members", str(tmp_path / "n.csv")]
    with pytest.raises(SystemExit) as exc:
        main(
            [
                *args,
                "--synthetic",
                str(tmp_path / "s.csv"),
                "--attacks",
                "levatt",
                "--serializer",
                "nope",
                "--out",
                str(tmp_path),
            ]
        )
    assert exc.value.code == 2
    assert "unknown serializer 'nope'" in capsys.readouterr().err


def test_nan_match_levatt_and_dcr(tables):
    members, non_members, synthetic, _, schema = tables
    syn = synthetic.copy()
    syn.loc[0, "y"] = np.nan
    mem = members.copy()
    mem.loc[0, "y"] = np.nan
    rep = run_attacks(mem, non_members, syn, schema, nan="match", attacks=["levatt", "dcr", "mc"], n_bootstrap=0)
    assert np.isfinite(rep.scores[["levatt", "dcr", "mc"]].to_numpy()).all()


def test_cli_address_needs_the_ray_executor(tmp_path, tables, capsys):
    from tabmem.cli import main

    members, non_members, synthetic, _, _ = tables
    for name, t in [("m", members), ("n", non_members), ("s", synthetic)]:
        t.to_csv(tmp_path / f"{name}.csv", index=False)
    args = ["--members", str(tmp_path / "m.csv"), "--non-members", str(tmp_path / "n.csv")]
    with pytest.raises(SystemExit) as exc:
        main(["attack", *args, "--synthetic", str(tmp_path / "s.csv"), "--address", "auto", "--out", str(tmp_path)])
    assert exc.value.code == 2
    assert "--address applies to --executor ray" in capsys.readouterr().err
