"""Every registered augmenter is held to the same contract (the battery iterates the registry).

* ``fit(train, schema)`` returns self; ``augment(n_new=None, ratio=0.3, random_state=None)`` returns
  new rows only: ``int(ratio * N)`` of them (or ``n_new``), the training columns in order, the
  training dtypes, categories from the training table only;
* the training table is never modified; the same seed gives the same rows, another seed others;
* ``get_params`` returns the constructor arguments; an unknown argument and a bad value raise a
  :class:`TabmemError` naming it (values are checked in ``fit``, scikit-learn style);
* ``needs_target`` methods refuse a table without a target, the others accept it.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from mitigation_tables import mixed_table

from tabmem.data.schema import Schema
from tabmem.errors import NotFittedError, ParameterError, TabmemError
from tabmem.mitigation import AUGMENTERS, augmented_table, get_augmenter

NAMES = AUGMENTERS.names()
# one bad constructor value per augmenter (a new augmenter must add one here)
BAD: dict[str, tuple[dict, str]] = {
    "tabcutmix": ({"mode": "bernoulli"}, "mode"),
    "tabcutmix-plus": ({"threshold": 1.5}, "threshold"),
    "smote": ({"k_neighbors": 0}, "k_neighbors"),
    "mixup": ({"alpha": -1.0}, "alpha"),
    "ijf": ({"ddof": -1}, "ddof"),
}


def test_registry_holds_the_papers_methods():
    assert {"tabcutmix", "tabcutmix-plus", "smote", "mixup", "ijf"} <= set(NAMES)


@pytest.mark.parametrize("name", NAMES)
def test_contract(name):
    df, schema = mixed_table(n=100, seed=5)
    before = df.copy()
    aug = get_augmenter(name)
    assert aug.fit(df, schema) is aug
    new = aug.augment(random_state=0)
    pd.testing.assert_frame_equal(df, before)  # training table untouched
    assert len(new) == int(0.3 * 100)
    assert list(new.columns) == list(df.columns)
    assert (new.dtypes == df.dtypes).all()
    for c in schema.categorical:
        assert set(new[c].astype(str)) <= set(df[c].astype(str)), c
    assert len(aug.augment(n_new=7, random_state=1)) == 7
    assert len(aug.augment(ratio=1.5, random_state=1)) == 150
    empty = aug.augment(n_new=0)
    assert len(empty) == 0 and list(empty.columns) == list(df.columns)
    pd.testing.assert_frame_equal(aug.augment(random_state=3), aug.augment(random_state=3))
    assert not aug.augment(random_state=3).equals(aug.augment(random_state=4))
    full = augmented_table(df, new)
    pd.testing.assert_frame_equal(full.iloc[:100], df)
    assert len(full) == 130


@pytest.mark.parametrize("name", NAMES)
def test_params_and_bad_values(name):
    assert name in BAD, f"add a bad-argument example for the new augmenter {name!r} to this battery"
    cls = AUGMENTERS.get(name)
    assert set(get_augmenter(name).get_params()) == set(cls._param_names())
    with pytest.raises(ParameterError, match="bad argument"):
        get_augmenter(name, no_such_parameter=1)
    params, arg = BAD[name]
    df, schema = mixed_table(n=50)
    with pytest.raises(TabmemError, match=arg):
        get_augmenter(name, **params).fit(df, schema)
    with pytest.raises(NotFittedError):
        get_augmenter(name).augment()
    fitted = get_augmenter(name).fit(df, schema)
    for bad in ({"n_new": -1}, {"ratio": 0.0}, {"random_state": -2}):
        with pytest.raises(ParameterError):
            fitted.augment(**bad)


@pytest.mark.parametrize("name", NAMES)
def test_target_requirement_is_declared(name):
    df, _ = mixed_table(n=50)
    cls = AUGMENTERS.get(name)
    no_target = Schema.infer(df, categorical=["level"])
    if cls.needs_target:
        with pytest.raises(TabmemError, match=f"{name} is label-conditioned"):
            get_augmenter(name).fit(df, no_target)
    else:
        assert len(get_augmenter(name).fit(df, no_target).augment(random_state=0)) == 15


@pytest.mark.parametrize("name", NAMES)
def test_validated_table_and_inferred_schema_accepted(name):
    from tabmem.data.schema import validate

    df, schema = mixed_table(n=60)
    vt = validate(df, schema, name="training")
    a = get_augmenter(name).fit(vt).augment(random_state=2)
    b = get_augmenter(name).fit(df, schema).augment(random_state=2)
    pd.testing.assert_frame_equal(a, b)
    assert np.isfinite(a.select_dtypes("number").to_numpy(dtype=float)).all()
