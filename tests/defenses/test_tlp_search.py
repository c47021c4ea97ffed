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


# ------------------------------------------------------------- the schedule at its edges
@pytest.mark.parametrize(
    "metric,step",
    # relative margins exactly 0.30, 0.20, 0.10, 0.05 (exact in binary with threshold 10): the paper's >=
    [(13.0, 3.0), (12.0, 1.5), (11.0, 1.25), (10.5, 1.0), (10.4, 0.5)],
)
def test_steps_at_the_boundaries_use_greater_or_equal(metric, step):
    assert tendency_step(metric, 10.0) == step


def _recorder(table):
    calls = []

    def evaluate(t):
        calls.append(t)
        return table(t)

    return calls, evaluate


def test_trials_record_each_margin_by_its_criterion():
    # before t = 5 the TPR margin (0.04) is the smaller one, the AUC margin is 0.22
    calls, evaluate = _recorder(lambda t: (0.67, 0.13) if t < 5 else (0.5, 0.1))
    res = search_tendency(evaluate, "auc")
    assert list(res.trials.columns) == ["tendency", "auc", "tpr_at_0_1", "margin", "met"]
    first = res.trials.iloc[0]
    assert first["margin"] == pytest.approx((0.67 - 0.55) / 0.55) and not first["met"]
    assert calls == [3.0, 4.5, 6.0]  # auc: +1.5 on the AUC margin
    calls.clear()
    res = search_tendency(evaluate, "tpr")
    assert res.trials.iloc[0]["margin"] == pytest.approx((0.13 - 0.125) / 0.125)
    assert calls == [2.5, 3.0, 3.5, 4.0, 4.5, 5.0]  # tpr: +0.5 on the TPR margin
    calls.clear()
    res = search_tendency(evaluate, "either")
    assert res.trials.iloc[0]["margin"] == pytest.approx((0.13 - 0.125) / 0.125)  # the smaller margin
    assert calls == [3.0, 3.5, 4.0, 4.5, 5.0]  # either: +0.5 on the smaller margin
    assert res.trials["met"].tolist() == [False] * 4 + [True] and res.tpr_at_0_1 == 0.1 and res.auc == 0.5


def test_each_criterion_is_met_only_by_its_own_metric():
    # TPR met but not AUC: the auc criterion goes on; AUC met but not TPR: the tpr criterion goes on
    calls, evaluate = _recorder(lambda t: (0.7, 0.1) if t == 3.0 else (0.5, 0.1))
    assert search_tendency(evaluate, "auc").tendency > 3.0 and calls[0] == 3.0
    calls, evaluate = _recorder(lambda t: (0.5, 0.2) if t == 2.5 else (0.5, 0.1))
    assert search_tendency(evaluate, "tpr").tendency > 2.5
    assert search_tendency(lambda t: (0.5, 0.2), "either").tendency == 3.0  # either: AUC alone suffices


def test_tpr_criterion_follows_the_schedule_on_tpr_margins():
    tprs = {2.5: 0.2, 5.5: 0.16, 7.0: 0.13, 7.5: 0.12}
    calls, evaluate = _recorder(lambda t: (0.9, tprs[t]))
    res = search_tendency(evaluate, "tpr")
    # r = 0.6 -> +3; r = 0.28 -> +1.5; r = 0.04 -> +0.5; 0.12 <= 0.125 is met
    assert calls == [2.5, 5.5, 7.0, 7.5]
    assert res.met is True and res.tendency == 7.5 and res.tpr_at_0_1 == 0.12 and res.auc == 0.9


def test_either_steps_by_the_smaller_margin():
    # auc margin 0.02/0.55 = 0.036 (< tpr margin 1.4): the small step +0.5, not +3
    calls, evaluate = _recorder(lambda t: (0.57, 0.3) if t == 3.0 else (0.56, 0.3) if t == 3.5 else (0.5, 0.3))
    res = search_tendency(evaluate, "either")
    assert calls[:2] == [3.0, 3.5] and res.met


def test_an_auc_equal_to_the_target_is_not_met():
    calls, evaluate = _recorder(lambda t: (0.55, 0.5) if t == 3.0 else (0.54, 0.5))
    res = search_tendency(evaluate, "auc")
    assert calls == [3.0, 3.5] and res.tendency == 3.5  # margin 0 -> +0.5


def test_the_cap_is_inclusive_and_never_passed():
    calls, evaluate = _recorder(lambda t: (0.9, 0.5))  # r = 0.64: always +3
    search_tendency(evaluate, "auc")
    assert calls == [3.0, 6.0, 9.0, 12.0, 15.0, 18.0]  # default cap 20
    calls, evaluate = _recorder(lambda t: (0.9, 0.5))
    search_tendency(evaluate, "auc", max_tendency=9.0)
    assert calls == [3.0, 6.0, 9.0]  # t == cap is tried
    calls, evaluate = _recorder(lambda t: (0.9, 0.5))
    res = search_tendency(evaluate, "auc", max_tendency=8.5)
    assert calls == [3.0, 6.0] and res.met is False
    assert res.trials is not None and len(res.trials) == 2
    assert (res.tendency, res.auc, res.tpr_at_0_1) == (3.0, 0.9, 0.5)  # ties: the first lowest margin


def test_start_and_cap_limits_are_inclusive():
    res = search_tendency(lambda t: (0.5, 0.5), "auc", start=1.0, max_tendency=1.0)
    assert res.tendency == 1.0 and res.met
    with pytest.raises(TabmemError, match=r"max_tendency must be >= start \(3.0\), got max_tendency=2.0"):
        search_tendency(lambda t: (0.5, 0.1), max_tendency=2.0)
