"""The scikit-learn parameter convention (tabmem._params.Params) on every registered component."""

from __future__ import annotations

import inspect

import pytest

from tabmem.attacks import ATTACKS
from tabmem.generators import GENERATORS
from tabmem.mitigation import AUGMENTERS, DynamicCut

CLASSES = [
    *(ATTACKS[n] for n in ATTACKS.names()),
    *(AUGMENTERS[n] for n in AUGMENTERS.names()),
    *(GENERATORS[n] for n in GENERATORS.names()),
    DynamicCut,
]


@pytest.mark.parametrize("cls", CLASSES, ids=lambda c: c.__name__)
def test_get_params_are_the_constructor_arguments(cls):
    signature = inspect.signature(cls.__init__).parameters
    obj = cls()
    params = obj.get_params()
    assert list(params) == [p for p in signature if p != "self" and signature[p].kind != inspect.Parameter.VAR_KEYWORD]
    assert params == {k: signature[k].default for k in params}  # stored unchanged
    clone = cls(**params)
    assert clone.get_params() == params
    assert repr(clone) == repr(obj) == f"{cls.__name__}({', '.join(f'{k}={v!r}' for k, v in params.items())})"


def test_generator_params_are_copies():
    gen = GENERATORS.create("tvae", compress_dims=[8, 8])
    params = gen.get_params()
    params["compress_dims"].append(4)
    assert gen.compress_dims == [8, 8]
