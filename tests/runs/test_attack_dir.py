"""``tabmem attack`` with shadow generators: the command-line contract, the risk ledger, one-line errors, DP claims."""

from __future__ import annotations

import json
import warnings

import numpy as np
import pandas as pd
import pytest

from cli_run import run
from tabmem.data.schema import Schema
from tabmem.runs.attack import attack_to_dir

pytest.importorskip("torch")


def _table(n: int, seed: int) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    return pd.DataFrame(
        {
            "a": np.round(rng.normal(0, 1, n), 3),
            "b": np.round(rng.exponential(2, n), 3),
            "c": rng.choice(["x", "y", "z"], n),
        }
    )


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    d = tmp_path_factory.mktemp("attack")
    members, non_members, population = _table(30, 0), _table(30, 1), _table(60, 2)
    synthetic = pd.concat([members.iloc[:15], _table(15, 3)], ignore_index=True)  # half the members leaked
    for name, t in (("m", members), ("n", non_members), ("p", population), ("s", synthetic)):
        t.to_csv(d / f"{name}.csv", index=False)
    return d


def _args(d, out, *extra):
    return [
        "attack",
        "--members",
        str(d / "m.csv"),
        "--non-members",
        str(d / "n.csv"),
        "--synthetic",
        str(d / "s.csv"),
        "--out",
        str(out),
        "--n-bootstrap",
        "10",
        *extra,
    ]


SHADOW_ARGS = ["--population", "{p}", "--model", "tabddpm", "--preset", "small", "--epochs", "2"]
SHADOW_ARGS += ["--param", "batch_size=16", "--n-shadows", "4", "--seed", "0"]


def _shadow_args(d):
    return [a.replace("{p}", str(d / "p.csv")) for a in SHADOW_ARGS]


def test_cli_attack_with_shadows_contract(files, tmp_path, capsys):
    out = tmp_path / "out"
    attacks = ["--attacks", "lira,lira_offline,lira_levatt,groundhog,dcr,levatt"]
    code, text = run(_args(files, out, *attacks, *_shadow_args(files)), capsys)
    assert code == 0, text
    for f in (
        "summary.json",
        "scores.csv",
        "risk.csv",
        "roc.csv",
        "shadows/plan.json",
        "shadows/003/synthetic.parquet",
    ):
        assert (out / f).is_file(), f
    summary = json.loads((out / "summary.json").read_text())
    for name in ("lira", "lira_offline", "lira_levatt", "groundhog", "dcr", "levatt"):
        block = summary[name]
        assert set(block["midst_tpr_at_fpr"]) == {"0.1", "0.01"} and set(block["conservative_tpr_at_fpr"]) == {
            "0.1",
            "0.01",
        }
        assert block["min_resolved_fpr"] == pytest.approx(1 / 30)
        assert {"epsilon", "epsilon_all_thresholds", "delta"} <= set(block["epsilon_lower_bound"])
        assert "auc" in block and "tpr_at_fpr" in block  # existing keys kept
    assert summary["_meta"]["shadows"]["n_shadows"] == 4 and summary["_meta"]["shadows"]["model"] == "tabddpm"
    assert summary["_privacy"]["delta"] == 1e-5 and summary["_privacy"]["claimed_epsilon"] is None
    assert summary["levatt"]["auc"] > 0.6  # half the members are copied
    risk = pd.read_csv(out / "risk.csv")
    for col in ("target_row", "replica_count", "levatt_distance", "lira", "best_rank", "is_member"):
        assert col in risk
    members_risk = risk[risk.is_member]
    assert members_risk.replica_count.notna().all() and risk[~risk.is_member].replica_count.isna().all()
    leaked = members_risk[members_risk.target_row < 15]
    assert (leaked.levatt_distance == 0).all() and (leaked.replica_count >= 1).all()
    assert "empirical ε lower bound" in text
    members = pd.read_csv(files / "m.csv")
    for v in members["b"].astype(str).tolist()[:10]:  # no raw value on the terminal
        assert v not in text
    # a second run reuses the shadows (nothing retrained) and gives the same scores
    mtime = (out / "shadows" / "000" / "synthetic.parquet").stat().st_mtime_ns
    code, text = run(_args(files, out, *attacks, *_shadow_args(files)), capsys)
    assert code == 0, text
    assert (out / "shadows" / "000" / "synthetic.parquet").stat().st_mtime_ns == mtime


@pytest.mark.parametrize(
    "extra, match",
    [
        (["--attacks", "lira"], "need --population"),
        (["--attacks", "lira", "--population", "{p}", "--model", "tabddpm", "--n-shadows", "2"], "at least 4"),
        (["--attacks", "lira", "--population", "{p}", "--model", "nope"], "unknown generator 'nope'"),
        (["--attacks", "lira", "--population", "{m}", "--model", "tabddpm"], "equal a target row"),
    ],
)
def test_cli_shadow_errors_are_one_line(files, tmp_path, capsys, extra, match):
    extra = [a.replace("{p}", str(files / "p.csv")).replace("{m}", str(files / "m.csv")) for a in extra]
    code, text = run(_args(files, tmp_path / "o", *extra), capsys)
    assert code == 2 and match in text and "Traceback" not in text
    assert len([ln for ln in text.strip().splitlines() if ln.startswith("Error")]) == 1


def test_risk_ledger_with_a_tracked_run(files, tmp_path):
    from tabmem.runs.train import train_to_dir

    members, non_members = pd.read_csv(files / "m.csv"), pd.read_csv(files / "n.csv")
    synthetic = pd.read_csv(files / "s.csv")
    schema = Schema.infer(members)
    run_dir = tmp_path / "run"
    train_to_dir(members, schema, run_dir, params={"epochs": 2, "batch_size": 16}, track_every=1, seed=0)
    attack_to_dir(
        members, non_members, synthetic, schema, tmp_path / "a", attacks=["dcr"], run_dir=run_dir, n_bootstrap=0
    )
    risk = pd.read_csv(tmp_path / "a" / "risk.csv")
    assert risk[risk.is_member].intensity.notna().all() and risk[~risk.is_member].intensity.isna().all()
    from tabmem.memorization.dynamics import TrainingDynamics

    want = TrainingDynamics.load(run_dir / "tracking").intensity_score(1)
    m = risk[risk.is_member].sort_values("target_row")
    np.testing.assert_allclose(m.intensity.to_numpy(), want)
    from tabmem.errors import TabmemError

    with pytest.raises(TabmemError, match="another table than members"):  # the library names the parameter
        attack_to_dir(
            non_members, members, synthetic, schema, tmp_path / "b", attacks=["dcr"], run_dir=run_dir, n_bootstrap=0
        )


def test_dp_generator_audited_bound_does_not_exceed_its_claim(tmp_path):
    """A DP-SGD LLM at ε = 1: the audited lower bound (best of LevAtt and DCR, Bonferroni) stays below the claim,
    while a non-private leak at the same sizes exceeds it (so the check has the power to fail)."""
    pytest.importorskip("opacus")
    from tabmem.generators.llm import LLMGenerator

    rng = np.random.default_rng(0)
    table = pd.DataFrame(
        {
            "age": rng.integers(20, 70, 240),
            "income": np.round(rng.normal(50, 15, 240), 1),
            "sex": rng.choice(["F", "M"], 240),
        }
    )
    members, non_members = table.iloc[:120].reset_index(drop=True), table.iloc[120:].reset_index(drop=True)
    schema = Schema.infer(members, categorical=["sex"], numerical=["age", "income"])
    kw = {"n_layer": 1, "n_head": 2, "n_embd": 32, "batch_size": 16, "random_state": 0}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        gen = LLMGenerator(epochs=3, dp_epsilon=1.0, **kw).fit(members, schema)
    synthetic = gen.sample(120, random_state=0)
    params = {"dp_epsilon": 1.0}
    dp = attack_to_dir(
        members,
        non_members,
        synthetic,
        schema,
        tmp_path / "dp",
        attacks=["levatt", "dcr"],
        params=params,
        n_bootstrap=0,
    )
    p = dp.privacy
    assert (
        p is not None and p.claimed_epsilon == 1.0 and p.delta == pytest.approx(1 / 1200)
    )  # the generator's default δ
    assert p.epsilon_lower_bound <= 1.0 and p.exceeds_claim is False
    leak = attack_to_dir(
        members,
        non_members,
        members,
        schema,
        tmp_path / "leak",
        attacks=["levatt", "dcr"],
        params=params,
        n_bootstrap=0,
    )
    assert leak.privacy is not None and leak.privacy.epsilon_lower_bound > 1.0 and leak.privacy.exceeds_claim is True


def test_cli_claimed_epsilon_of_an_external_generator(files, tmp_path, capsys):
    out = tmp_path / "claim"
    code, text = run(_args(files, out, "--attacks", "dcr,levatt", "--claimed-epsilon", "0.5"), capsys)
    assert code == 0, text
    p = json.loads((out / "summary.json").read_text())["_privacy"]
    assert p["claimed_epsilon"] == 0.5 and p["delta"] == pytest.approx(1 / 300)
    assert p["exceeds_claim"] == (p["epsilon_lower_bound"] > 0.5)
    assert "claimed ε = 0.5" in text


def test_shadow_config_or_its_former_keywords(files, tmp_path, monkeypatch):
    """``shadows=ShadowConfig(...)`` and the former keywords (``model=``, ``shadow_design=``...) train the same
    shadows; mixing both, or a misspelt keyword, is a TypeError before any work."""
    import tabmem.runs.shadows as shadows_module
    from tabmem.runs.attack import ShadowConfig

    members, non_members = pd.read_csv(files / "m.csv"), pd.read_csv(files / "n.csv")
    synthetic, population = pd.read_csv(files / "s.csv"), pd.read_csv(files / "p.csv")
    schema = Schema.infer(members)
    calls: list[dict] = []

    def fake_train_shadows(*args, **kw):
        calls.append(kw)
        raise RuntimeError("stop after the call")

    monkeypatch.setattr(shadows_module, "train_shadows", fake_train_shadows)
    tables = (members, non_members, synthetic, schema)
    config = ShadowConfig(model="tabddpm", params={"epochs": 2}, n_shadows=4, design="offline", overlap="drop")
    for kw in (
        {"shadows": config},
        {"model": "tabddpm", "params": {"epochs": 2}, "n_shadows": 4, "shadow_design": "offline"}
        | {"population_overlap": "drop"},
    ):
        with pytest.raises(RuntimeError, match="stop after the call"):
            attack_to_dir(*tables, tmp_path / "a", attacks=["lira_offline"], population=population, **kw)
    assert calls[0] == calls[1]
    assert calls[0]["design"] == "offline" and calls[0]["overlap"] == "drop" and calls[0]["n_shadows"] == 4
    assert calls[0]["params"] == {"epochs": 2} and calls[0]["n_train"] == len(members)
    with pytest.raises(TypeError, match="not next to it"):
        attack_to_dir(*tables, tmp_path / "b", shadows=config, n_shadows=8)
    with pytest.raises(TypeError, match="unexpected keyword argument 'n_shadow'"):
        attack_to_dir(*tables, tmp_path / "b", n_shadow=8)
    assert not (tmp_path / "b").exists()
