"""tabmem report: the distance evidence (each figure next to its holdout null) and the privacy audit, on constructed summaries."""

from __future__ import annotations

import copy

import pytest

from tabmem.report import plots, tables
from tabmem.report.model import Attacks, Audit, Cell, ReportData
from tabmem.report.render import render_report
from tabmem.report.verdict import (
    attack_finding,
    cell_verdict,
    evidence_finding,
    evidence_lines,
    privacy_finding,
)

QUANTILES = {"0.01": 0.0, "0.05": 0.02, "0.1": 0.08, "0.25": 0.2, "0.5": 0.41}
HOLD_QUANTILES = {"0.01": 0.05, "0.05": 0.11, "0.1": 0.17, "0.25": 0.33, "0.5": 0.55}


def evidence_summary(z=-4.0, p=3.2e-5):
    """An audit summary as ``tabmem audit`` writes it with a holdout (numbers chosen, not computed)."""
    return {
        "memorization_rate": 0.3,
        "holdout_memorization_rate": 0.25,
        "excess_memorization": 0.05,
        "excess_memorization_ci": [-0.01, 0.11],
        "distance": "gower",
        "threshold": 1 / 3,
        "confidence": 0.95,
        "data_copying": {
            "distance": "gower",
            "c_t": z,
            "z": z,
            "p_value": p,
            "n_cells": 10,
            "n_cells_used": 8,
            "cells_flagged": [1, 3],
            "tau": 0.0125,
            "alpha": 0.05,
            "per_cell": [
                {"cell": i, "n_train": 30, "n_holdout": 9, "n_synthetic": 31, "z": z / 2 - i, "used": i < 8}
                | {"flagged": i in (1, 3)}
                for i in range(10)
            ],
        },
        "authenticity": {
            "synthetic_closer_share": 0.61,
            "synthetic_authenticity": 0.39,
            "holdout_closer_share": 0.32,
            "holdout_authenticity": 0.68,
            "distance": "gower",
        },
        "identical_matches": {"synthetic_share": 0.1875, "holdout_share": 0.0125},
        "nndr": {
            "synthetic": {"quantiles": QUANTILES, "mean": 0.43},
            "holdout": {"quantiles": HOLD_QUANTILES, "mean": 0.57},
            "distance": "gower",
        },
    }


def test_evidence_lines_put_each_figure_next_to_the_holdout():
    lines = evidence_lines(Audit(summary=evidence_summary()))
    assert [lvl for lvl, _ in lines] == ["info", "neutral", "neutral", "neutral"]
    copying, auth, ident, nndr = (t for _, t in lines)
    assert "Z = -4.00, p = 3.2e-05; 2 of 8 tested cells flagged" in copying and "cannot tell copying" in copying
    assert "flagged; 2 of 10 k-means cells hold too few synthetic rows to test; p < 0.05)" in copying
    assert "61.0% of synthetic rows" in auth and "against 32.0% of real unseen rows" in auth
    assert "18.75% of synthetic rows equal a training row, against 1.25% of real unseen rows" in ident
    assert "5% quantile 0.020 (holdout 0.110), median 0.410 (holdout 0.550)" in nndr
    f = evidence_finding(Audit(summary=evidence_summary()))
    assert (f.level, f.headline) == ("info", "closer than real rows")
    assert "61.0% (holdout 32.0%)" in f.text and "median NNDR 0.410 (holdout 0.550)" in f.text


@pytest.mark.parametrize(
    ("z", "p", "level", "headline", "words"),
    [
        (-4.0, 3.2e-5, "info", "closer than real rows", "concentrated on a dense subgroup"),
        (-0.5, 0.31, "ok", "no copying found", "no difference from real unseen rows"),
        (4.0, 0.99997, "info", "underfits", "the generator underfits"),
        (float("nan"), float("nan"), "info", "test not computed", "could not be computed"),
    ],
)
def test_copying_verdict_reads_the_one_sided_p_value(z, p, level, headline, words):
    f = evidence_finding(Audit(summary=evidence_summary(z, p)))
    assert (f.level, f.headline) == (level, headline) and words in f.text


def test_missing_or_partial_evidence_is_said_not_guessed():
    old = evidence_summary()
    for key in ("data_copying", "authenticity", "identical_matches", "nndr"):
        old.pop(key)
    assert evidence_lines(Audit(summary=old)) == [] and tables.evidence_tables(Audit(summary=old)) == []
    f = evidence_finding(Audit(summary=old))
    assert f.level == "missing" and "Not computed" in f.text
    assert plots.evidence_figure(Audit(summary=old)) is None
    # without a holdout: no copying test (None), figures without a null
    alone = evidence_summary()
    alone["data_copying"] = None
    alone["authenticity"] = {"synthetic_closer_share": 0.61, "distance": "gower"}
    alone["identical_matches"] = {"synthetic_share": 0.1875}
    alone["nndr"] = {"synthetic": {"quantiles": QUANTILES, "mean": 0.43}, "distance": "gower"}
    lines = evidence_lines(Audit(summary=alone))
    assert len(lines) == 3 and "(no holdout to compare)" in lines[0][1] and "holdout" not in lines[2][1]
    f = evidence_finding(Audit(summary=alone))
    assert (f.level, f.headline) == ("info", "no test")
    (t,) = tables.evidence_tables(Audit(summary=alone))
    assert ["identical to a training row", "18.75%", "n/a"] in t.rows


def test_the_copying_test_never_sets_the_badge():
    """Z < 0 is also what real unseen rows from one dense subgroup give (issue 23): it is stated, not judged."""
    calm, closer = evidence_summary(-0.5, 0.31), evidence_summary()
    for summary in (calm, closer):
        assert cell_verdict(Cell(name="c", path="", audit=Audit(summary=summary))).level != "alert"
    assert (
        cell_verdict(Cell(name="c", path="", audit=Audit(summary=closer))).badge
        == cell_verdict(Cell(name="c", path="", audit=Audit(summary=calm))).badge
    )


def test_evidence_tables_hold_the_numbers_and_the_per_cell_test():
    summary, per_cell = tables.evidence_tables(Audit(summary=evidence_summary()))
    rows = {r[0]: r[1:] for r in summary.rows}
    assert rows["data-copying test: Z (Z << 0: copying)"][0] == "-4"
    assert rows["data-copying test: cells flagged"][0] == "2 of 8 used"
    assert rows["closer to their training row than its neighbour (authenticity)"] == ["61.00%", "32.00%"]
    assert rows["identical to a training row"] == ["18.75%", "1.25%"]
    assert rows["NNDR d1/d2, 0.5 quantile"] == ["0.41", "0.55"]
    assert rows["NNDR d1/d2, mean"] == ["0.43", "0.57"]
    assert len(per_cell.rows) == 10 and per_cell.rows[1][-1] == "yes" and per_cell.rows[9][-2] == "no"


def test_evidence_figure_draws_synthetic_next_to_holdout():
    svg = plots.evidence_figure(Audit(summary=evidence_summary()))
    assert svg.startswith('<svg class="plot"') and "Distance evidence" in svg
    s = evidence_summary()
    s["data_copying"] = None
    two_panels = plots.evidence_figure(Audit(summary=s))
    assert two_panels is not None and two_panels.count('<g id="axes_') == 2
    assert svg.count('<g id="axes_') == 3


def privacy_attacks(claimed=None, bound=1.2, exceeds=None):
    r = {
        "auc": 0.71,
        "auc_ci": [0.62, 0.8],
        "tpr_at_fpr": {"0.01": 0.05, "0.1": 0.3},
        "tpr_at_fpr_ci": {"0.01": [0.0, 0.1], "0.1": [0.2, 0.4]},
        "n_members": 200,
        "n_non_members": 200,
        "min_resolved_fpr": 0.005,
        "midst_tpr_at_fpr": {
            "0.1": {"tpr": 0.345, "tpr_ci": [0.279, 0.416], "fpr": 0.095, "fpr_upper": 0.14, "threshold": 1.0},
            "0.01": {"tpr": 0.07, "tpr_ci": [0.039, 0.115], "fpr": 0.01, "fpr_upper": 0.03, "threshold": 2.0},
        },
        "epsilon_lower_bound": {"epsilon": 1.31, "delta": 1e-5, "confidence": 0.95},
    }
    weak = copy.deepcopy(r) | {"auc": 0.52, "auc_ci": [0.45, 0.6]}
    weak["epsilon_lower_bound"] = {"epsilon": 0.0, "delta": 1e-5, "confidence": 0.95}
    privacy = {
        "delta": 1e-5,
        "confidence": 0.95,
        "per_attack_confidence": 0.975,
        "epsilon_lower_bound": bound,
        "attack": "lira",
        "claimed_epsilon": claimed,
        "claimed_delta": None,
    }
    if claimed is not None:
        privacy["exceeds_claim"] = exceeds if exceeds is not None else bound > claimed
    return Attacks(summary={"lira": r, "dcr": weak, "_meta": {"n_non_members": 200}, "_privacy": privacy})


@pytest.mark.parametrize(
    ("claimed", "bound", "level", "headline", "words"),
    [
        (3.0, 1.2, "ok", "consistent with the claim", "at most the claimed ε = 3: consistent with the claim"),
        (1.0, 1.2, "alert", "exceeds the claim", "above the claimed ε = 1: exceeds the claim"),
        (None, 1.2, "info", "no claim to check", "no (ε, δ)-DP guarantee at this δ with ε below 1.20"),
        (None, 0.0, "info", "no claim to check", "these attacks certify no leak"),
    ],
)
def test_privacy_finding_puts_the_bound_next_to_the_claim(claimed, bound, level, headline, words):
    f = privacy_finding(privacy_attacks(claimed, bound))
    assert (f.level, f.headline) == (level, headline) and words in f.text
    assert f"Empirical ε lower bound {bound:.2f} at δ = 1e-05 (LiRA" in f.text


def test_privacy_bound_above_the_claim_is_a_leak_in_the_badge():
    cell = Cell(name="c", path="", audit=Audit(summary=evidence_summary(-0.5, 0.31)), attacks=privacy_attacks(1.0))
    cell.attacks.summary["lira"]["auc_ci"] = [0.45, 0.8]  # the attack itself is at chance level
    v = cell_verdict(cell)
    assert v.level == "alert" and v.badge.startswith("Fails the standard policy: dp-claim;")
    assert [f.topic for f in v.findings][-2:] == ["Distance evidence", "Privacy audit"]
    assert privacy_finding(Attacks(summary={"lira": {}, "_meta": {}})) is None  # an older attack output


def test_attack_finding_and_table_show_midst_with_exact_intervals_and_epsilon():
    f = attack_finding(privacy_attacks())
    assert "MIDST TPR@0.1 0.345 (exact CI 0.279 to 0.416)" in f.text
    assert "MIDST TPR@0.01 0.070 (exact CI 0.039 to 0.115)" in f.text and "ε lower bound 1.31" in f.text
    t = tables.privacy_table(Cell(name="c", path="", attacks=privacy_attacks(3.0)))
    assert t.rows[0] == ["LiRA", ("0.345", "0.279 to 0.416"), ("0.07", "0.039 to 0.115"), "0.005", "1.31"]
    assert t.rows[1][0] == "DCR" and t.rows[1][-1] == "0"
    assert "ε >= 1.200 (LiRA), claimed ε = 3: consistent with the claim" in t.caption
    assert tables.privacy_table(Cell(name="c", path="", attacks=Attacks(summary={"dcr": {"auc": 0.5}}))) is None


def test_rendered_page_has_the_section_with_values_and_their_nulls():
    cell = Cell(name="c", path="x", audit=Audit(summary=evidence_summary()), attacks=privacy_attacks(3.0))
    html = render_report(ReportData(title="t", source="x", kind="audit", cells=[cell]))
    assert "Distance evidence (each next to its holdout null)" in html
    section = html.split("Distance evidence (each next to its holdout null)", 1)[1].split("<h3", 1)[0]
    assert "61.0% of synthetic rows" in section and "32.0% of real unseen rows" in section
    assert section.count('<svg class="plot"') == 1
    assert "Privacy audit: MIDST operating points and ε lower bounds" in html
    assert "consistent with the claim" in html and "0.279 to 0.416" in html


def test_train_runs_audits_and_studies_show_the_evidence(tmp_path_factory):
    """Real outputs: a ``tabmem train`` run (with a holdout) writes the evidence; a study cell reads its audit's."""
    import json

    from report_inputs import cached_build
    from tabmem.report import load_report_data

    runs = cached_build(tmp_path_factory)
    train = json.loads((runs / "tabddpm" / "summary.json").read_text())
    audit = json.loads((runs.parent / "ddpm-audits" / "fang2024" / "summary.json").read_text())
    for key in ("authenticity", "identical_matches", "nndr", "data_copying"):
        assert key in train and key in audit
    # the same final table, the same distance: the train run's evidence is the audit command's
    assert train["authenticity"] == audit["authenticity"] and train["nndr"] == audit["nndr"]
    assert train["identical_matches"] == audit["identical_matches"]
    for source in (runs / "tabddpm", runs.parent / "study"):
        html = render_report(load_report_data(source))
        section = html.split("Distance evidence (each next to its holdout null)", 1)[1].split("<h3", 1)[0]
        share = train["authenticity"]["holdout_closer_share"]
        assert f"against {100 * share:.1f}% of real unseen rows" in section
        assert "Not computed" not in section


def test_every_distance_gets_its_block_and_fang2024_its_caution():
    fang = evidence_summary()
    fang["distance"] = fang["authenticity"]["distance"] = fang["nndr"]["distance"] = "fang2024"
    gower = evidence_summary(-0.5, 0.31)
    cell = Cell(name="c", path="x", audit=Audit(summary=fang))
    cell.audits = {"fang2024": cell.audit, "gower": Audit(summary=gower)}
    html = render_report(ReportData(title="t", source="x", kind="study", cells=[cell]))
    section = html.split("Distance evidence (each next to its holdout null)", 1)[1].split("<h3", 1)[0]
    assert section.index("Distance fang2024") < section.index("Distance gower")
    assert section.count('<svg class="plot"') == 2 and section.count("min-max scales the numerical") == 1
    assert "no difference from real unseen rows (Z = -0.50" in section


def test_overview_table_puts_the_copying_test_and_the_bound_next_to_the_rates():
    leaky = Cell(name="a", path="", audit=Audit(summary=evidence_summary()), attacks=privacy_attacks(3.0))
    old = Cell(name="b", path="", audit=Audit(summary={"memorization_rate": 0.2}))
    t = tables.overview_table([leaky, old], ["a", "b"])
    z, eps = t.columns.index("copying Z (p)"), t.columns.index("ε lower bound")
    assert (t.rows[0][z], t.rows[0][eps]) == ("-4.00 (3.2e-05)", ("1.20", "LiRA alone: 1.31"))  # as the cards
    assert (t.rows[1][z], t.rows[1][eps]) == ("-", "-")
    assert len(t.numeric) == len(t.columns)
