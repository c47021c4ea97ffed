"""TableEncoder: state round trip (what a saved generator carries) and the placeholder layout table."""

from __future__ import annotations

import io
import json

import numpy as np
import pandas as pd
import pytest

from tabmem.data.encoding import TableEncoder
from tabmem.data.schema import Schema, validate
from tabmem.errors import TabmemError


@pytest.fixture
def fitted() -> tuple[TableEncoder, pd.DataFrame]:
    rng = np.random.default_rng(3)
    n = 50
    df = pd.DataFrame(
        {
            "x": rng.normal(size=n) * 1e5 + 1 / 3,  # values whose float64 bits must survive the round trip
            "k": rng.integers(0, 5, n),
            "city": pd.Series(rng.choice(["Oslo", "Rome", None], n), dtype="str"),
            "flag": rng.random(n) < 0.5,
            "const": np.full(n, 2.0),
        }
    )
    schema = Schema.infer(df, categorical=["k"], numerical=["const"])
    return TableEncoder(schema).fit(df), df


def _assert_same_encoder(a: TableEncoder, b: TableEncoder, table: pd.DataFrame) -> None:
    assert a.schema == b.schema
    assert {c: v.tolist() for c, v in a.categories_.items()} == {c: v.tolist() for c, v in b.categories_.items()}
    for attr in ("min_", "max_", "range_", "mean_", "std_"):
        np.testing.assert_array_equal(getattr(a, attr), getattr(b, attr))
        assert getattr(b, attr).dtype == np.float64
    assert a.n_train_ == b.n_train_
    clean = a.validate(table, nan="match")
    for method in ("codes", "numeric", "standardized", "range_scaled", "one_hot"):
        np.testing.assert_array_equal(getattr(a, method)(clean), getattr(b, method)(clean))


def test_state_round_trip_is_exact(fitted):
    enc, df = fitted
    state = enc.to_state()
    again = TableEncoder.from_state(enc.schema, state)
    _assert_same_encoder(enc, again, df)
    assert again.to_state() == state


def test_state_is_plain_json_and_weights_only_safe(fitted):
    torch = pytest.importorskip("torch")
    enc, df = fitted
    state = enc.to_state()
    assert json.loads(json.dumps(state)) == state  # plain lists, floats, ints and strings only
    buf = io.BytesIO()
    torch.save({"encoder": state}, buf)
    buf.seek(0)
    loaded = torch.load(buf, weights_only=True)["encoder"]
    _assert_same_encoder(enc, TableEncoder.from_state(enc.schema, loaded), df)


def test_format1_tensor_state_is_read(fitted):
    """Generators saved before format 2 hold the statistics as float64 tensors."""
    torch = pytest.importorskip("torch")
    enc, df = fitted
    state = enc.to_state()
    legacy = {
        **state,
        **{k: torch.as_tensor(np.asarray(state[k], dtype=np.float64)) for k in ("min", "max", "mean", "std")},
    }
    _assert_same_encoder(enc, TableEncoder.from_state(enc.schema, legacy), df)


def test_from_state_rejects_a_state_for_another_schema(fitted):
    enc, _ = fitted
    state = enc.to_state()  # 2 numerical columns (x, const)
    with pytest.raises(TabmemError, match="'min' holds 2 values for 3 numerical columns"):
        TableEncoder.from_state(Schema(("a", "b", "c"), ("a", "b", "c"), ()), state)
    with pytest.raises(TabmemError, match=r"no categories for column\(s\) \['z'\]"):
        TableEncoder.from_state(Schema(("x", "const", "z"), ("x", "const"), ("z",)), state)


def test_fit_on_a_validated_table_equals_fit_on_the_frame(fitted):
    enc, df = fitted
    vt = validate(df, enc.schema, name="training", nan="match")
    _assert_same_encoder(enc, TableEncoder(enc.schema).fit(vt), df)


def test_placeholder_table_has_the_training_layout(fitted):
    enc, _ = fitted
    schema = enc.schema
    for n in (1, 3, 50, 10_000):
        table = enc.placeholder_table(n)
        assert list(table.columns) == list(schema.columns)
        assert len(table) == max(2, min(n, 64), *(len(enc.categories_[c]) for c in schema.categorical))
        for c in schema.categorical:
            assert set(table[c]) == set(enc.categories_[c])  # every training category, nothing else
        for j, c in enumerate(schema.numerical):
            assert table[c].min() == enc.min_[j] and table[c].max() == enc.max_[j]
        # it validates against the training categories and fits an encoder with the same categories
        again = TableEncoder(schema).fit(enc.validate(table, name="placeholder"))
        assert {c: v.tolist() for c, v in again.categories_.items()} == {
            c: v.tolist() for c, v in enc.categories_.items()
        }
