"""The ``great`` generator: the real GReaT package (``be_great``) behind tabmem's interface.

Runs in the extgen virtualenv (``tests/run_extgen.sh``). The LLM is a GPT-2 built from scratch
into a local directory (no hub downloads). Every fit is tiny: 100 rows of diabetes, 2 layers x 32,
30 epochs (about 15 s), tracked every 10 epochs.
"""

from __future__ import annotations

import pandas as pd
import pytest
import torch

from reference_libs import require
from tabmem.defenses.tlp import TendencyLogitsProcessor
from tabmem.errors import TabmemError
from tabmem.generators import get_generator, load_generator
from tabmem.memorization.tracker import MemorizationTracker

pytestmark = [pytest.mark.extgen, pytest.mark.filterwarnings("ignore")]


@pytest.fixture(scope="module", autouse=True)
def _package():
    """The package (in a fixture, so that a deselected module is not a skip in the main environment)."""
    require("be_great", env="TABMEM_REQUIRE_EXTGEN")


# 30 epochs: an untrained GPT-2 needs about that many to write "col is value" rows at all
TINY = {"n_layer": 2, "n_head": 2, "n_embd": 64, "epochs": 30, "lr": 5e-3, "batch_size": 16, "bpe_vocab_size": 300}
TINY["gen_batch"] = 20
TINY["max_rounds"] = 8


@pytest.fixture(scope="module")
def train() -> pd.DataFrame:
    from sklearn.datasets import load_diabetes

    df = load_diabetes(as_frame=True, scaled=False).frame.head(100).copy()
    df["sex"] = df["sex"].map({1.0: "F", 2.0: "M"})
    return df[["age", "sex", "bmi", "bp", "target"]]


def _weights(gen) -> dict:
    return {k: v.detach().clone() for k, v in gen.great_.model.state_dict().items()}


def _same(a: dict, b: dict) -> bool:
    return a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a)


@pytest.fixture(scope="module")
def tracked(train):
    tracker = MemorizationTracker(every=10, n_samples=10)
    gen = get_generator("great", random_state=0, **TINY).fit(train, callbacks=[tracker])
    return gen, tracker


def test_round_trip_and_tracking_every_epoch(tracked, train):
    gen, tracker = tracked
    assert gen.epoch_ == 30 and tracker.history_["epoch"].tolist() == [10, 20, 30]
    out = gen.sample(10, random_state=1)
    assert list(out.columns) == list(train.columns) and len(out) == 10
    assert set(out["sex"]) <= {"F", "M"}


def test_sampling_is_deterministic_per_seed(tracked):
    gen, _ = tracked
    pd.testing.assert_frame_equal(gen.sample(10, random_state=5), gen.sample(10, random_state=5))
    assert not gen.sample(10, random_state=5).equals(gen.sample(10, random_state=6))


def test_weights_identical_with_and_without_tracking(tracked, train):
    gen, _ = tracked
    plain = get_generator("great", random_state=0, **TINY).fit(train)
    assert _same(_weights(gen), _weights(plain))


def test_tlp_changes_the_samples(tracked):
    """TLP (mild: a stronger tendency breaks the untrained format of so tiny a model) through ``generate``."""
    gen, _ = tracked
    base = gen.sample(5, random_state=2)
    warped = gen.sample(5, random_state=2, tendency=2.0)
    assert not base.equals(warped)
    pd.testing.assert_frame_equal(
        warped, gen.sample(5, random_state=2, logits_processor=[TendencyLogitsProcessor(2.0)])
    )


def test_save_load_round_trip_offline(tracked, tmp_path):
    gen, _ = tracked
    gen.save(tmp_path / "model.pt")
    loaded = load_generator(tmp_path / "model.pt")
    assert loaded.name == "great"
    assert _same(_weights(gen), _weights(loaded))
    pd.testing.assert_frame_equal(gen.sample(10, random_state=4), loaded.sample(10, random_state=4))


def test_a_hub_name_is_refused():
    with pytest.raises(TabmemError, match="local directory"):
        get_generator("great", llm="gpt2").check_params()
