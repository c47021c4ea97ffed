"""Every registered defence is held to the same contract (the battery iterates the registry).

* ``stage`` says where it acts: ``"decoding"`` (a logits processor) or ``"postprocess"`` (a
  table transform);
* decoding: ``processor(input_ids, scores)`` returns a new tensor of the same shape, never edits
  ``scores`` in place, keeps masked (``-inf``) logits masked and keeps the arg-max;
* postprocess: ``fit(train, schema).transform(synthetic)`` returns a new table with the same
  columns, dtypes and row count, leaves its input untouched, and the same seed gives the same
  output;
* a bad argument raises :class:`TabmemError` naming it.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from tabmem.data.schema import Schema
from tabmem.defenses import DEFENSES
from tabmem.errors import TabmemError

# constructor arguments for defences without usable defaults, and one bad argument each
EXAMPLES: dict[str, dict] = {"tlp": {"tendency": 4.0}, "digit_modifier": {"p_min": 0.2, "p_max": 0.5}}
BAD: dict[str, tuple[dict, str]] = {"tlp": ({"tendency": 0.5}, "tendency"), "digit_modifier": ({"p_min": 2.0}, "p_min")}

NAMES = DEFENSES.names()


def test_registry_holds_the_paper_defences():
    assert {"tlp", "digit_modifier"} <= set(NAMES)


@pytest.mark.parametrize("name", NAMES)
def test_declares_stage_and_rejects_bad_arguments(name):
    cls = DEFENSES.get(name)
    assert cls.stage in ("decoding", "postprocess")
    assert name in BAD, f"add a bad-argument example for the new defence {name!r} to this battery"
    params, arg = BAD[name]
    with pytest.raises(TabmemError, match=arg):
        obj = cls(**params)
        if cls.stage == "postprocess":  # scikit-learn style: validated in fit
            obj.fit(_table(), _schema())


def _schema() -> Schema:
    return Schema(("age", "income", "city"), ("age", "income"), ("city",))


def _table(seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    return pd.DataFrame(
        {
            "age": rng.integers(18, 90, 200),
            "income": np.round(rng.lognormal(10, 1, 200), 2),
            "city": rng.choice(["a", "b", "c"], 200).astype(object),
        }
    )


@pytest.mark.parametrize("name", [n for n in NAMES if DEFENSES.get(n).stage == "postprocess"])
def test_postprocess_contract(name):
    cls = DEFENSES.get(name)
    train, syn = _table(0), _table(1)
    before = syn.copy()
    a = cls(**EXAMPLES.get(name, {}), random_state=3).fit(train, _schema()).transform(syn)
    b = cls(**EXAMPLES.get(name, {}), random_state=3).fit(train, _schema()).transform(syn)
    pd.testing.assert_frame_equal(syn, before)  # input untouched
    pd.testing.assert_frame_equal(a, b)  # same seed, same output
    assert list(a.columns) == list(syn.columns) and len(a) == len(syn)
    assert (a.dtypes == syn.dtypes).all()
    assert not a.equals(syn)  # it did something at these settings


@pytest.mark.parametrize("name", [n for n in NAMES if DEFENSES.get(n).stage == "decoding"])
def test_decoding_contract(name):
    torch = pytest.importorskip("torch")
    proc = DEFENSES.get(name)(**EXAMPLES.get(name, {}))
    gen = torch.Generator().manual_seed(0)
    scores = torch.randn(4, 50, generator=gen)
    scores[:, :5] = -float("inf")
    before = scores.clone()
    out = proc(torch.zeros(4, 3, dtype=torch.long), scores)
    assert torch.equal(scores, before)  # never edited in place
    assert out.shape == scores.shape
    assert torch.isinf(out[:, :5]).all()  # masked stays masked
    assert torch.equal(out.argmax(dim=1), scores.argmax(dim=1))
