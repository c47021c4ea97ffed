"""AttackSummary: the typed ``tabmem attack`` summary writes exactly the summary.json layout and reads it back."""

from __future__ import annotations

import json

import pytest

from tabmem._io import dumps_json
from tabmem.attacks.runner import run_attacks
from tabmem.attacks.summary import (
    META_KEY,
    PRIVACY_KEY,
    AttackMeta,
    AttackRecord,
    AttackSummary,
    PrivacyHeadline,
    is_attack_summary,
)
from tabmem.cli import main

RECORD_KEYS = [
    "auc",
    "auc_ci",
    "tpr_at_fpr",
    "tpr_at_fpr_strict",
    "balanced_accuracy",
    "threshold",
    "n_members",
    "n_non_members",
    "tpr_at_fpr_ci",
    "min_resolved_fpr",
    "midst_tpr_at_fpr",
    "conservative_tpr_at_fpr",
    "min_certified_fpr",
    "epsilon_lower_bound",
]
META_KEYS = [
    "n_members",
    "n_non_members",
    "n_member_rows_also_in_non_members",
    "min_resolved_fpr",
    "skipped",
    "warnings",
    "target_row",
    "config",
    "schema",
]
PRIVACY_KEYS = [
    "delta",
    "confidence",
    "per_attack_confidence",
    "epsilon_lower_bound",
    "attack",
    "claimed_epsilon",
    "claimed_delta",
]


def test_run_attacks_summary_is_typed_and_round_trips(tables):
    members, non_members, synthetic, reference, schema = tables
    rep = run_attacks(members, non_members, synthetic, schema, attacks=["dcr", "levatt", "domias"], n_bootstrap=5)
    s = rep.summary()
    assert isinstance(s, AttackSummary) and isinstance(s.meta, AttackMeta) and s.privacy is None
    assert s.names == ["dcr", "levatt"] and s.meta.skipped == {"domias": "needs a reference table (--reference)"}
    assert isinstance(s["dcr"], AttackRecord) and s["dcr"].auc == rep.results["dcr"].auc
    d = s.to_dict()
    assert list(d) == ["dcr", "levatt", META_KEY] and is_attack_summary(d)
    assert list(d["dcr"]) == RECORD_KEYS and list(d[META_KEY]) == META_KEYS
    assert AttackSummary.from_dict(d) == s
    assert d["dcr"] == {**rep.results["dcr"].to_dict(), **rep.audit["dcr"]}  # what the summary always held


def test_the_cli_file_is_what_to_dict_writes(tables, tmp_path, capsys):
    members, non_members, synthetic, _, schema = tables
    paths = {}
    for name, t in (("m", members), ("n", non_members), ("s", synthetic)):
        paths[name] = tmp_path / f"{name}.csv"
        t.to_csv(paths[name], index=False)
    out = tmp_path / "out"
    args = ["attack", "--members", str(paths["m"]), "--non-members", str(paths["n"]), "--synthetic", str(paths["s"])]
    args += ["--categorical", "k", "--attacks", "levatt,dcr", "--n-bootstrap", "5", "--out", str(out)]
    try:
        main(args)
    except SystemExit as exc:
        assert not exc.code, capsys.readouterr()
    text = (out / "summary.json").read_text()
    written = json.loads(text)
    assert list(written) == ["levatt", "dcr", META_KEY, PRIVACY_KEY]
    assert list(written[META_KEY]) == [*META_KEYS, "shadows"] and written[META_KEY]["shadows"] is None
    assert list(written[PRIVACY_KEY]) == PRIVACY_KEYS
    typed = AttackSummary.from_dict(written)
    assert isinstance(typed.privacy, PrivacyHeadline) and typed.privacy.attack in ("levatt", "dcr")
    assert typed.meta.shadows is None and typed.privacy.exceeds_claim is None
    assert dumps_json(typed.to_dict()) == dumps_json(written)  # same keys, order and values


def test_exceeds_claim_is_written_only_with_a_claim():
    base = {"delta": 1e-5, "confidence": 0.95, "per_attack_confidence": 0.975, "epsilon_lower_bound": 0.5}
    base |= {"attack": "dcr", "claimed_epsilon": None, "claimed_delta": None}
    assert list(PrivacyHeadline.from_dict(base).to_dict()) == PRIVACY_KEYS
    claimed = PrivacyHeadline.from_dict({**base, "claimed_epsilon": 0.1, "exceeds_claim": True})
    assert claimed.to_dict()["exceeds_claim"] is True and list(claimed.to_dict())[-1] == "exceeds_claim"
    with pytest.raises(KeyError):
        AttackSummary.from_dict({"dcr": {}})  # no "_meta": not an attack summary
