"""fit(sample_weight=...): all ones == no weights bit for bit, the weighted losses against brute force,
records of weight 0 have no influence, bad weights fail in one line."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import torch

from tabmem.data.schema import Schema
from tabmem.errors import ParameterError, TabmemError
from tabmem.generators import get_generator
from tabmem.generators._conditional import ConditionalSampler
from tabmem.generators._weights import check_sample_weight, weighted_mean, weighted_token_loss

N = 40
TINY = {
    "tabddpm": {"epochs": 2, "batch_size": 16, "layers": (16,), "dim_t": 8, "num_timesteps": 10},
    "tvae": {"epochs": 2, "batch_size": 16, "embedding_dim": 4, "compress_dims": (8,), "decompress_dims": (8,)},
    "ctgan": {
        "epochs": 2,
        "batch_size": 20,
        "pac": 2,
        "embedding_dim": 4,
        "generator_dims": (8,),
        "discriminator_dims": (8,),
    },  # fmt: skip
    "llm": {"epochs": 2, "batch_size": 16, "n_layer": 1, "n_head": 2, "n_embd": 16},
}


@pytest.fixture(autouse=True)
def _one_thread():
    n = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(n)


@pytest.fixture(scope="module")
def table() -> tuple[pd.DataFrame, Schema]:
    rng = np.random.default_rng(0)
    df = pd.DataFrame(
        {
            "age": rng.integers(20, 70, N).astype(float),
            "income": np.round(rng.normal(50, 15, N), 1),
            "sex": rng.choice(["F", "M"], N),
            "job": rng.choice(["a", "b", "c"], N),
        }
    )
    return df, Schema.infer(df, categorical=["sex", "job"], numerical=["age", "income"])


def _weights() -> np.ndarray:
    w = np.ones(N)
    w[[1, 5, 7, 30]] = [0.0, 0.1, 0.5, 0.0]
    return w


def _state(gen) -> dict[str, torch.Tensor]:
    out = {}
    for i, m in enumerate(gen._torch_modules()):
        out.update({f"{i}.{k}": v for k, v in m.state_dict().items() if torch.is_tensor(v)})
    return out


def _fit(name, table, w=None, seed=3):
    df, schema = table
    return get_generator(name, **TINY[name]).fit(df, schema, random_state=seed, sample_weight=w)


@pytest.mark.parametrize("name", ["tabddpm", "tvae", "ctgan", "llm"])
def test_all_ones_is_bit_identical_to_no_weights_and_other_weights_change_training(name, table):
    plain, ones, weighted = _state(_fit(name, table)), _state(_fit(name, table, np.ones(N))), None
    assert plain.keys() == ones.keys()
    assert all(torch.equal(plain[k], ones[k]) for k in plain)
    weighted = _state(_fit(name, table, _weights()))
    assert any(not torch.equal(plain[k], weighted[k]) for k in plain if plain[k].is_floating_point())


def test_check_sample_weight():
    assert check_sample_weight(None, 3) is None and check_sample_weight([1, 1, 1], 3) is None
    np.testing.assert_array_equal(check_sample_weight([0, 2, 1], 3), [0.0, 2.0, 1.0])


@pytest.mark.parametrize(
    "w, match",
    [
        ([1.0] * (N - 1), "one weight per training record"),
        ([-1.0] + [1.0] * (N - 1), ">= 0"),
        ([0.0] * N, "all weights are zero"),
        ([np.nan] + [1.0] * (N - 1), "finite"),
        (["x"] * N, "numbers"),
    ],
)
def test_bad_weights_fail_in_one_line_naming_the_option(table, w, match):
    with pytest.raises(ParameterError, match=match) as err:
        _fit("tabddpm", table, w)
    assert str(err.value).startswith("sample_weight:") and "\n" not in str(err.value)


def test_a_generator_without_weights_refuses_them(table):
    df, schema = table
    with pytest.raises(TabmemError, match="sample_weight: the noisy_resample generator does not support"):
        get_generator("noisy_resample").fit(df, schema, sample_weight=_weights())


def test_weighted_mean_brute_force():
    losses, w = torch.tensor([1.0, 2.0, 4.0, 8.0]), torch.tensor([0.0, 0.5, 1.0, 2.0])
    assert float(weighted_mean(losses, w)) == pytest.approx((0.5 * 2 + 4 + 16) / 3.5)
    assert float(weighted_mean(losses, torch.zeros(4))) == 0.0


def test_tabddpm_weighted_loss_is_the_weighted_mean_of_the_per_row_losses(table):
    gen = _fit("tabddpm", table)
    x_num, x_codes = gen._x_num[:12], gen._x_codes[:12]
    w = torch.tensor([0.0, 0.3, 1.0, 2.0, 0.5, 1.0, 1.0, 0.0, 4.0, 1.0, 0.2, 1.0])

    def loss(weight):  # the same draws (t, noise, x_t) on every call
        g = torch.Generator().manual_seed(11)
        return [float(v.detach()) for v in gen.diffusion_.loss(gen.model_, x_num, x_codes, g, weight)]

    per_row = np.array([loss(torch.eye(12)[i]) for i in range(12)])  # (12, 2): row i's own loss terms
    want = (w.numpy()[:, None] * per_row).sum(0) / w.sum().item()
    np.testing.assert_allclose(loss(w), want, rtol=1e-5)
    # all-ones weights: the plain mean of the unweighted path, whose code is torch.mean
    np.testing.assert_allclose(loss(torch.ones(12)), loss(None), rtol=1e-6)
    np.testing.assert_allclose(per_row.mean(0), loss(None), rtol=1e-5)


def test_tabddpm_records_of_weight_zero_have_no_influence_on_training(table):
    """Swapping the contents of two weight-0 records leaves the preprocessing (fitted on the whole table,
    order-free) and every draw unchanged, so training is bit for bit the same: their data is not learnt."""
    df, schema = table
    w = _weights()  # records 1 and 30 have weight 0
    swapped = df.copy()
    swapped.iloc[[1, 30]] = df.iloc[[30, 1]].to_numpy()
    assert not swapped.equals(df)
    a = _state(get_generator("tabddpm", **TINY["tabddpm"]).fit(df, schema, random_state=3, sample_weight=w))
    b = _state(get_generator("tabddpm", **TINY["tabddpm"]).fit(swapped, schema, random_state=3, sample_weight=w))
    assert all(torch.equal(a[k], b[k]) for k in a)
    w2 = w.copy()
    w2[1] = 1.0  # with weight 1 the swap matters
    c = _state(get_generator("tabddpm", **TINY["tabddpm"]).fit(swapped, schema, random_state=3, sample_weight=w2))
    d = _state(get_generator("tabddpm", **TINY["tabddpm"]).fit(df, schema, random_state=3, sample_weight=w2))
    assert any(not torch.equal(c[k], d[k]) for k in c)


def test_weighted_token_loss_brute_force_and_hugging_face_mean():
    g = torch.Generator().manual_seed(0)
    logits = torch.randn(3, 5, 7, generator=g)
    labels = torch.randint(0, 7, (3, 5), generator=g)
    labels[0, 3:] = -100
    labels[2, 4] = -100
    w = torch.tensor([0.5, 0.0, 2.0])
    num = den = 0.0
    for i in range(3):
        for t in range(1, 5):
            if labels[i, t] != -100:
                logp = logits[i, t - 1].log_softmax(0)[labels[i, t]].item()
                num += w[i].item() * -logp
                den += w[i].item()
    assert float(weighted_token_loss(logits, labels, w)) == pytest.approx(num / den, rel=1e-5)
    # all ones: the token mean Hugging Face computes
    shift = torch.nn.functional.cross_entropy(logits[:, :-1].reshape(-1, 7), labels[:, 1:].reshape(-1))
    assert float(weighted_token_loss(logits, labels, torch.ones(3))) == pytest.approx(float(shift), rel=1e-6)


class _FixedUniforms:
    def __init__(self, u):
        self.u = np.asarray(u, dtype=float)

    def random(self, size):
        assert size == len(self.u)
        return self.u


def test_ctgan_sampler_draws_real_rows_in_proportion_to_their_weight():
    codes = [np.array([0, 1, 0, 0, 1, 0, 1, 0])]
    w = np.array([1.0, 2.0, 0.0, 3.0, 0.0, 0.5, 1.0, 0.0])
    sampler = ConditionalSampler(codes, [2], log_frequency=True, weights=w)
    u = np.linspace(0.0, 0.999, 400)
    for cat in (0, 1):
        rows_of = np.flatnonzero(codes[0] == cat)
        cond = type("C", (), {"column": np.zeros(len(u), dtype=np.int64), "category": np.full(len(u), cat)})()
        got = sampler.sample_rows(cond, _FixedUniforms(u))
        # brute force: inverse CDF of the category's weights, rows in table order
        cum = np.cumsum(w[rows_of]) / w[rows_of].sum()
        want = rows_of[[int(np.argmax(cum > x)) for x in u]]
        np.testing.assert_array_equal(got, want)
        assert not np.isin(got, np.flatnonzero(w == 0)).any()
    # training conditions by log(1 + weighted count); generation frequencies stay the table's
    np.testing.assert_allclose(sampler.probabilities(0), np.log1p([4.5, 3.0]) / np.log1p([4.5, 3.0]).sum())
    np.testing.assert_allclose(sampler.probabilities(0, training=False), [5 / 8, 3 / 8])


def test_resume_needs_the_same_weights(table, tmp_path):
    df, schema = table
    params = {**TINY["tabddpm"], "epochs": 4}
    ckpt = tmp_path / "ckpt.pt"
    from tabmem.callbacks import StopAtEpoch

    get_generator("tabddpm", **params).fit(df, schema, random_state=1, sample_weight=_weights(),
                                           callbacks=[StopAtEpoch(2)], checkpoint_every=1, checkpoint_path=ckpt)  # fmt: skip
    with pytest.raises(TabmemError, match="other sample_weight"):
        get_generator("tabddpm", **params).fit(df, schema, resume_from=ckpt)
    resumed = get_generator("tabddpm", **params).fit(df, schema, resume_from=ckpt, sample_weight=_weights())
    whole = get_generator("tabddpm", **params).fit(df, schema, random_state=1, sample_weight=_weights())
    a, b = _state(resumed), _state(whole)
    assert all(torch.equal(a[k], b[k]) for k in a)
