"""evaluate_risk end to end on Adult: planted truths both ways, defaults, determinism, bad input."""

from __future__ import annotations

import json

import pandas as pd
import pytest

from tabmem.errors import TabmemError
from tabmem.risk import RiskEstimate, RiskSummary, evaluate_risk

N = 400  # attacks per risk: intervals about +-0.05, a run of seconds


@pytest.fixture(scope="module")
def leak_summary(adult_leak):
    train, control, leak, schema = adult_leak
    return evaluate_risk(train, leak, control, schema=schema, secrets=["income", "age"], n_attacks=N, seed=0)


@pytest.fixture(scope="module")
def fresh_summary(adult3):
    train, control, fresh, schema = adult3
    return evaluate_risk(train, fresh, control, schema=schema, secrets=["income", "age"], n_attacks=N, seed=0)


def test_planted_leak_every_risk_interval_lies_above_zero(leak_summary):
    s = leak_summary
    for name, est in [
        ("singling_out_multivariate", s.singling_out_multivariate),
        ("linkability", s.linkability),
        *[(f"inference {c}", e) for c, e in s.inference.items()],
    ]:
        assert est.risk_ci[0] > 0, (name, est)
        assert est.attack_rate > est.control_rate, name


def test_fresh_real_rows_every_risk_interval_holds_zero(fresh_summary):
    s = fresh_summary
    estimates = [s.singling_out_univariate, s.singling_out_multivariate, s.linkability, *s.inference.values()]
    for est in estimates:
        assert est.risk_ci[0] <= 0.0 <= est.risk_ci[1], est


def test_defaults_are_reported_in_chosen(adult3):
    train, control, fresh, schema = adult3
    s = evaluate_risk(train, fresh, control, schema=schema, n_attacks=50)
    assert s.secrets == ["income"] and "target" in s.chosen["secrets"]
    assert s.aux == [list(schema.columns[:8]), list(schema.columns[8:])] and "half" in s.chosen["aux"]
    given = evaluate_risk(train, fresh, control, schema=schema, n_attacks=50, secrets=["age"], aux=(["age"], ["sex"]))
    assert given.chosen == {} and given.secrets == ["age"] and given.aux == [["age"], ["sex"]]
    no_target = schema.__class__(schema.columns, schema.numerical, schema.categorical)
    s2 = evaluate_risk(train.iloc[:300], fresh.iloc[:300], control.iloc[:300], schema=no_target, n_attacks=30)
    assert s2.secrets == list(schema.columns) and "no target" in s2.chosen["secrets"]


def test_same_seed_same_summary_bytes_and_round_trip(adult3):
    train, control, fresh, schema = adult3
    kw = dict(schema=schema, secrets=["income", "hours.per.week"], n_attacks=120)
    a = evaluate_risk(train, fresh, control, seed=7, **kw).with_seconds(None)
    b = evaluate_risk(train, fresh, control, seed=7, **kw).with_seconds(None)
    assert json.dumps(a.to_dict()) == json.dumps(b.to_dict())
    c = evaluate_risk(train, fresh, control, seed=8, **kw).with_seconds(None)
    assert c.to_dict() != a.to_dict()
    d = a.to_dict()
    assert list(d)[:4] == ["singling_out_univariate", "singling_out_multivariate", "linkability", "inference"]
    assert set(d["inference"]) == {"per_column", "worst"} and d["inference"]["worst"]["column"] in kw["secrets"]
    back = RiskSummary.from_dict(json.loads(json.dumps(d)))
    assert back == a and isinstance(back.linkability, RiskEstimate)


def test_adding_a_secret_leaves_the_other_attacks_unchanged(adult3):
    train, control, fresh, schema = adult3
    one = evaluate_risk(train, fresh, control, schema=schema, secrets=["income"], n_attacks=80)
    two = evaluate_risk(train, fresh, control, schema=schema, secrets=["income", "age"], n_attacks=80)
    assert one.linkability == two.linkability and one.inference["income"] == two.inference["income"]


def test_inferred_schema_when_none_is_given(adult3):
    train, control, fresh, _ = adult3
    s = evaluate_risk(train.iloc[:300], fresh.iloc[:300], control.iloc[:300], secrets=["income"], n_attacks=40)
    assert s.n_train == 300 and 0.0 <= s.inference["income"].risk <= 1.0


@pytest.mark.parametrize(
    "kwargs,needle",
    [
        (dict(secrets=["nope"]), "secrets: column 'nope'"),
        (dict(aux=(["age"], ["nope"])), "aux: column 'nope'"),
        (dict(aux=(["age", "sex"], ["sex"])), "aux: column 'sex' is in both"),
        (dict(n_attacks=0), "n_attacks"),
        (dict(confidence=1.5), "confidence"),
    ],
)
def test_bad_options_raise_one_line_naming_them(adult3, kwargs, needle):
    train, control, fresh, schema = adult3
    with pytest.raises(TabmemError) as err:
        evaluate_risk(train, fresh, control, schema=schema, **kwargs)
    assert needle in str(err.value) and "\n" not in str(err.value)


def test_bad_tables_raise(adult3):
    train, control, fresh, schema = adult3
    with pytest.raises(TabmemError, match="control table is empty"):
        evaluate_risk(train, fresh, control.iloc[:0], schema=schema)
    with pytest.raises(TabmemError, match="age"):
        evaluate_risk(train, fresh.drop(columns=["age"]), control, schema=schema)
    with pytest.raises(TabmemError, match="control"):
        evaluate_risk(train, fresh, pd.DataFrame({"x": [1]}), schema=schema)
