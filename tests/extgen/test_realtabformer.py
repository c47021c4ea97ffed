"""The ``realtabformer`` generator: the real REaLTabFormer package behind tabmem's interface.

Runs in its own virtualenv (``tests/run_extgen.sh``: realtabformer 0.2.4 needs transformers<5),
where a missing package fails (``TABMEM_REQUIRE_EXTGEN=1``) instead of skipping. Every fit is
tiny: 100 rows of diabetes, 2 layers x 32, 3 epochs (a few seconds each on one core).
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from reference_libs import require

pytestmark = [pytest.mark.extgen, pytest.mark.filterwarnings("ignore")]

require("realtabformer", env="TABMEM_REQUIRE_EXTGEN")
torch = require("torch", env="TABMEM_REQUIRE_EXTGEN")

from tabmem.callbacks import LambdaCallback  # noqa: E402
from tabmem.defenses.tlp import TendencyLogitsProcessor  # noqa: E402
from tabmem.generators import get_generator, load_generator  # noqa: E402
from tabmem.memorization.tracker import MemorizationTracker  # noqa: E402

TINY = {"n_layer": 2, "n_head": 2, "n_embd": 32, "epochs": 3, "lr": 1e-3}


@pytest.fixture(scope="module")
def train() -> pd.DataFrame:
    from sklearn.datasets import load_diabetes

    df = load_diabetes(as_frame=True, scaled=False).frame.head(100).copy()
    df["sex"] = df["sex"].map({1.0: "F", 2.0: "M"})  # one categorical column
    return df


def _weights(gen) -> dict[str, torch.Tensor]:
    return {k: v.detach().clone() for k, v in gen.rtf_.model.state_dict().items()}


def _same(a: dict, b: dict) -> bool:
    return a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a)


@pytest.fixture(scope="module")
def tracked(train):
    tracker = MemorizationTracker(every=1)
    gen = get_generator("realtabformer", random_state=0, **TINY).fit(train, callbacks=[tracker])
    return gen, tracker


def test_train_sample_round_trip(tracked, train):
    gen, _ = tracked
    assert gen.epoch_ == 3 and [h["epoch"] for h in gen.history_] == [1, 2, 3]
    assert all(np.isfinite(h["loss"]) for h in gen.history_)
    out = gen.sample(40, random_state=1)
    assert list(out.columns) == list(train.columns) and len(out) == 40
    assert set(out["sex"]) <= {"F", "M"}
    assert out.drop(columns="sex").notna().all().all()


def test_sampling_is_deterministic_per_seed(tracked):
    gen, _ = tracked
    a, b, c = gen.sample(30, random_state=5), gen.sample(30, random_state=5), gen.sample(30, random_state=6)
    pd.testing.assert_frame_equal(a, b)
    assert not a.equals(c)


def test_sampling_leaves_the_global_rngs_alone(tracked):
    import random

    gen, _ = tracked
    legacy = np.random.get_state  # noqa: NPY002 - the legacy global stream is what is checked
    states = torch.get_rng_state(), legacy()[1].copy(), random.getstate()
    gen.sample(10, random_state=0)
    assert torch.equal(states[0], torch.get_rng_state())
    assert np.array_equal(states[1], legacy()[1]) and states[2] == random.getstate()


def test_tracking_runs_every_epoch(tracked):
    _, tracker = tracked
    assert tracker.history_["epoch"].tolist() == [1, 2, 3]
    assert tracker.history_["memorization_rate"].between(0, 1).all()


def test_weights_identical_with_and_without_tracking(tracked, train):
    gen, _ = tracked
    plain = get_generator("realtabformer", random_state=0, **TINY).fit(train)
    assert _same(_weights(gen), _weights(plain))
    pd.testing.assert_frame_equal(gen.sample(20, random_state=3), plain.sample(20, random_state=3))


def test_tlp_changes_the_samples_through_the_packages_logits_processor(tracked):
    gen, _ = tracked
    base = gen.sample(40, random_state=2)
    warped = gen.sample(40, random_state=2, tendency=20.0)
    assert not base.equals(warped)
    pd.testing.assert_frame_equal(
        warped, gen.sample(40, random_state=2, logits_processor=[TendencyLogitsProcessor(20.0)])
    )
    identity = gen.sample(40, random_state=2, logits_processor=[TendencyLogitsProcessor(1.0)])
    pd.testing.assert_frame_equal(base, identity)


def test_save_load_round_trip(tracked, tmp_path):
    gen, _ = tracked
    path = gen.save(tmp_path / "model.pt")
    payload = torch.load(path, weights_only=True)  # plain tensors and strings only
    assert isinstance(payload["state"]["rtf_config"], str)
    loaded = load_generator(tmp_path)
    assert loaded.name == "realtabformer" and loaded.epoch_ == 3
    pd.testing.assert_frame_equal(gen.sample(25, random_state=4), loaded.sample(25, random_state=4))
    assert _same(_weights(gen), _weights(loaded))


def test_resume_continues_close_to_an_uninterrupted_run(tracked, train, tmp_path):
    """Resume restarts the package's trainer with the checkpoint's weights, optimizer and schedule:
    the run continues at the next epoch, close to (not bit-identical with) an uninterrupted run."""
    gen, _ = tracked
    first = get_generator("realtabformer", random_state=0, **{**TINY, "epochs": 3})
    stop_at_2 = LambdaCallback(on_epoch_end=lambda g, epoch, logs: epoch >= 2)
    first.fit(train, callbacks=[stop_at_2], checkpoint_every=1, checkpoint_path=tmp_path / "ck.pt")
    assert first.epoch_ == 2 and first.stopped_early_
    resumed = get_generator("realtabformer", random_state=0, **TINY).fit(train, resume_from=tmp_path / "ck.pt")
    assert resumed.epoch_ == 3 and [h["epoch"] for h in resumed.history_] == [1, 2, 3]
    a, b = _weights(gen), _weights(resumed)
    assert a.keys() == b.keys()
    assert max(float((a[k] - b[k]).abs().max()) for k in a) < 1e-3
