"""The paper's tendency search (start, adaptive steps, cap, fallback)."""

from __future__ import annotations

import pytest

from tabmem.defenses import search_tendency
from tabmem.defenses.tlp_search import tendency_step
from tabmem.errors import TabmemError


@pytest.mark.parametrize(
    "metric,step", [(0.55 * 1.31, 3.0), (0.55 * 1.25, 1.5), (0.55 * 1.15, 1.25), (0.55 * 1.07, 1.0), (0.56, 0.5)]
)
def test_steps(metric, step):
    assert tendency_step(metric, 0.55) == step


def test_search_follows_paper_schedule():
    calls = []

    def evaluate(t):
        calls.append(t)
        return {3.0: 0.80, 6.0: 0.67, 7.5: 0.60, 8.5: 0.56, 9.0: 0.549}[t], 0.5

    res = search_tendency(evaluate, "auc")
    # 0.80: r=.45 -> +3; 0.67: r=.22 -> +1.5; 0.60: r=.09 -> +1.0; 0.56: r=.018 -> +0.5
    assert calls == [3.0, 6.0, 7.5, 8.5, 9.0]
    assert res.met and res.tendency == 9.0 and res.auc == 0.549
    assert len(res.trials) == 5


def test_tpr_criterion_starts_at_2_5_and_uses_le():
    res = search_tendency(lambda t: (0.9, 0.125), "tpr")
    assert res.tendency == 2.5 and res.met


def test_never_met_returns_best_and_caps_at_20():
    calls = []

    def evaluate(t):
        calls.append(t)
        return 0.9 - 0.001 * t if t != 12.0 else 0.7, 0.4

    res = search_tendency(evaluate, "auc")
    assert max(calls) <= 20 and not res.met
    assert res.tendency == 12.0 and res.auc == 0.7


def test_either_and_start():
    res = search_tendency(lambda t: (0.9, 0.1 if t >= 5 else 0.5), "either", start=4.0)
    assert res.tendency == 7.0 and res.met  # at 4.0 the nearer margin (auc r=.64) -> +3


def test_errors():
    with pytest.raises(TabmemError, match="criterion"):
        search_tendency(lambda t: (0.5, 0.1), "f1")
    with pytest.raises(TabmemError, match="start"):
        search_tendency(lambda t: (0.5, 0.1), start=0.5)
    with pytest.raises(TabmemError, match="non-finite"):
        search_tendency(lambda t: (float("nan"), 0.1))
