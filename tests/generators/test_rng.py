"""The seeded random streams of a generator run (tabmem.generators._rng)."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from tabmem.generators._rng import TrainingRNG, derive_seed, sampling_rng


def test_derived_seeds_are_pinned():
    """Seeds derived from a run's seed never change (saved runs and papers' numbers depend on them)."""
    entropy = [(0, 1), (3, 1), (3, 2, 7), (2**40, 11), (5, 12)]
    assert [derive_seed(*e) for e in entropy] == [
        2918264622725855778,
        5712964121383671236,
        1735961936752399922,
        1765107210701161090,
        555160297366410819,
    ]
    assert all(0 <= derive_seed(s, p) < 2**63 for s in (0, 2**63 - 1, 2**64) for p in (1, 2, 3))


def test_training_streams_state_round_trip_and_global_rng_untouched():
    torch.manual_seed(11)
    before = torch.get_rng_state().clone()
    rng = TrainingRNG(7, torch.device("cpu"))
    with rng.private_global():
        a = torch.rand(3)  # draws from the run's private copy of the global stream
    assert torch.equal(torch.get_rng_state(), before)
    state = rng.state_dict()
    x = (torch.rand(4, generator=rng.torch), rng.numpy.random(4))
    with rng.private_global():
        y = torch.rand(3)
    again = TrainingRNG(7, torch.device("cpu"))
    again.load_state_dict(state, epoch=1)
    assert torch.equal(torch.rand(4, generator=again.torch), x[0]) and np.array_equal(again.numpy.random(4), x[1])
    with again.private_global():
        assert torch.equal(torch.rand(3), y)
    assert not torch.equal(a, y)
    assert torch.equal(torch.get_rng_state(), before)


def test_sampling_stream_is_seeded_and_restores_the_global_rng():
    torch.manual_seed(0)
    before = torch.get_rng_state().clone()
    with sampling_rng(5, torch.device("cpu")) as gen:
        first = (torch.rand(2), torch.rand(2, generator=gen))
    with sampling_rng(5, torch.device("cpu")) as gen:
        assert torch.equal(torch.rand(2), first[0]) and torch.equal(torch.rand(2, generator=gen), first[1])
    assert torch.equal(torch.get_rng_state(), before)


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
def test_moving_between_devices_reseeds_the_torch_stream():  # pragma: no cover - GPU machines only
    state = TrainingRNG(3, torch.device("cuda")).state_dict()
    cpu = TrainingRNG(3, torch.device("cpu"))
    cpu.load_state_dict(state, epoch=2)
    ref = torch.Generator().manual_seed(derive_seed(3, 1, 2))
    assert torch.equal(torch.rand(3, generator=cpu.torch), torch.rand(3, generator=ref))
