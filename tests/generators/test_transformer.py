"""Mode-specific normalisation and the conditional sampler (CTGAN/TVAE input space)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from tabmem.data.schema import Schema
from tabmem.errors import SchemaError, TabmemError
from tabmem.generators._conditional import ConditionalSampler, conditional_loss
from tabmem.generators._transformer import ModeSpecificNormalizer


def _two_mode_table(n: int = 2000, seed: int = 0) -> tuple[pd.DataFrame, Schema]:
    rng = np.random.default_rng(seed)
    side = rng.random(n) < 0.3
    x = np.where(side, rng.normal(-10.0, 1.0, n), rng.normal(20.0, 2.0, n))
    df = pd.DataFrame(
        {
            "x": x,
            "count": rng.integers(0, 50, n),
            "colour": rng.choice(["red", "green", "blue"], n, p=[0.6, 0.3, 0.1]),
            "code": rng.choice([1, 2], n),
        }
    )
    schema = Schema(("x", "count", "colour", "code"), ("x", "count"), ("colour", "code"))
    return df, schema


def test_two_mode_mixture_finds_the_two_modes() -> None:
    df, schema = _two_mode_table()
    norm = ModeSpecificNormalizer(random_state=0).fit(df, schema)
    info = norm.numeric_["x"]
    weights = np.exp(info.log_weights)
    assert 2 <= norm.modes_["x"] <= 10
    # every mode of substance sits on one of the true modes, -10 (sd 1, 30 %) or 20 (sd 2, 70 %);
    # a Dirichlet-process fit may split a true mode into two neighbouring components, which is harmless
    big = weights > 0.05
    near_left = np.abs(info.means - (-10.0)) < 0.5
    near_right = np.abs(info.means - 20.0) < 0.5
    assert np.all(near_left[big] | near_right[big])
    assert weights[near_left].sum() == pytest.approx(0.3, abs=0.04)
    assert weights[near_right].sum() == pytest.approx(0.7, abs=0.04)
    # spreads of the right order (the mixture's covariance prior widens them a little)
    assert np.all((info.stds[near_left & big] > 0.8) & (info.stds[near_left & big] < 1.6))
    assert np.all((info.stds[near_right & big] > 1.6) & (info.stds[near_right & big] < 3.2))
    # the posterior puts every value in a mode of its own side
    post = norm.mode_posterior("x", df["x"].to_numpy())
    left_mass = post[:, near_left].sum(axis=1)
    assert np.mean((left_mass > 0.5) == (df["x"].to_numpy() < 5)) > 0.999


def test_layout_and_encoding_values() -> None:
    df, schema = _two_mode_table()
    norm = ModeSpecificNormalizer(random_state=0).fit(df, schema)
    X = norm.transform(df)
    assert X.dtype == np.float32 and X.shape == (len(df), norm.output_dim_)
    kinds = [(s.column, s.role) for s in norm.spans_]
    assert kinds == [
        ("x", "scalar"),
        ("x", "mode"),
        ("count", "scalar"),
        ("count", "mode"),
        ("colour", "category"),
        ("code", "category"),
    ]
    for span in norm.spans_:
        block = X[:, span.start : span.end]
        if span.kind == "tanh":
            assert np.all(np.abs(block) <= 1.0)
        else:
            np.testing.assert_array_equal(block.sum(axis=1), 1.0)  # exactly one-hot
            assert set(np.unique(block)) == {0.0, 1.0}
    # scalar = (x - mu_k) / (4 sigma_k) for the chosen mode k (independent recomputation)
    info = norm.numeric_["x"]
    mode_span = norm.spans_[1]
    k = X[:, mode_span.start : mode_span.end].argmax(axis=1)
    expected = np.clip((df["x"].to_numpy() - info.means[k]) / (4 * info.stds[k]), -1, 1)
    np.testing.assert_allclose(X[:, 0], expected, atol=1e-5)
    # categories one-hot in sorted canonical order
    colour = norm.spans_[4]
    np.testing.assert_array_equal(norm.categories_["colour"], ["blue", "green", "red"])
    np.testing.assert_array_equal(norm.categories_["colour"][X[:, colour.start : colour.end].argmax(1)], df["colour"])


def _chisquare_merged(observed: np.ndarray, probs: np.ndarray) -> float:
    """Chi-square goodness-of-fit p-value, cells with expected count < 5 merged into one (the usual rule)."""
    expected = probs * observed.sum()
    small = expected < 5
    if small.any():
        observed = np.r_[observed[~small], observed[small].sum()]
        expected = np.r_[expected[~small], expected[small].sum()]
    return float(stats.chisquare(observed, expected).pvalue)


def test_mode_is_sampled_from_the_posterior() -> None:
    """The paper samples the mode from P(k | x) = w_k N(x; mu_k, sd_k) / sum_j w_j N(x; mu_j, sd_j)."""
    df, schema = _two_mode_table()
    norm = ModeSpecificNormalizer(random_state=0).fit(df, schema)
    info = norm.numeric_["count"]
    weights = np.exp(info.log_weights)

    def posterior(x: float) -> np.ndarray:  # Bayes' rule with scipy's normal density
        p = weights * stats.norm.pdf(x, info.means, info.stds)
        return p / p.sum()

    # a value between modes, where the draw really is random
    candidates = np.linspace(df["count"].min(), df["count"].max(), 200)
    x0 = min(candidates, key=lambda x: posterior(x).max())
    post = posterior(x0)
    assert post.max() < 0.8
    n = 10_000
    table = pd.concat([df.iloc[[0]].assign(count=int(round(x0)))] * n, ignore_index=True)
    post = posterior(float(int(round(x0))))
    X = norm.transform(table, random_state=1)
    span = norm.spans_[3]
    counts = X[:, span.start : span.end].sum(axis=0)
    assert _chisquare_merged(counts, post) > 1e-3
    np.testing.assert_allclose(counts / n, post, atol=0.02)


def test_round_trip_and_dtypes() -> None:
    df, schema = _two_mode_table()
    norm = ModeSpecificNormalizer(random_state=0).fit(df, schema)
    back = norm.inverse_transform(norm.transform(df))
    assert list(back.columns) == list(df.columns)
    assert (back.dtypes == df.dtypes).all()
    np.testing.assert_allclose(back["x"], df["x"], rtol=1e-5, atol=1e-4)
    np.testing.assert_array_equal(back["count"], df["count"])
    np.testing.assert_array_equal(back["colour"], df["colour"])
    np.testing.assert_array_equal(back["code"], df["code"])
    assert norm.unrepresentable_["x"] == 0.0


def test_same_seed_same_encoding() -> None:
    df, schema = _two_mode_table()
    a = ModeSpecificNormalizer(random_state=3).fit(df, schema)
    b = ModeSpecificNormalizer(random_state=3).fit(df, schema)
    np.testing.assert_array_equal(a.transform(df), b.transform(df))


def test_inverse_of_soft_outputs_clips_and_rounds() -> None:
    df, schema = _two_mode_table()
    norm = ModeSpecificNormalizer(random_state=0).fit(df, schema)
    rng = np.random.default_rng(0)
    soft = rng.normal(size=(500, norm.output_dim_)) * 3  # out-of-range scalars, non one-hot blocks
    back = norm.inverse_transform(soft)
    assert back["x"].between(df["x"].min(), df["x"].max()).all()
    assert back["count"].dtype == df["count"].dtype and back["count"].between(0, 49).all()
    assert set(back["colour"]) <= set(df["colour"]) and set(back["code"]) <= {1, 2}
    # TVAE's noisy decoding needs sigmas and is seeded
    sig = np.full(norm.output_dim_, 0.1)
    a = norm.inverse_transform(soft, sigmas=sig, random_state=5)
    b = norm.inverse_transform(soft, sigmas=sig, random_state=5)
    pd.testing.assert_frame_equal(a, b)


def test_constant_column_and_errors() -> None:
    df, schema = _two_mode_table(200)
    df["x"] = 7.0
    norm = ModeSpecificNormalizer(random_state=0).fit(df, schema)
    assert norm.modes_["x"] == 1
    back = norm.inverse_transform(norm.transform(df))
    np.testing.assert_array_equal(back["x"], 7.0)
    with pytest.raises(TabmemError, match="not fitted"):
        ModeSpecificNormalizer().transform(df)
    with pytest.raises(TabmemError, match="max_modes"):
        ModeSpecificNormalizer(max_modes=0).fit(df, schema)
    bad = df.copy()
    bad.loc[3, "count"] = np.nan
    with pytest.raises(SchemaError, match="'count'"):
        ModeSpecificNormalizer().fit(bad, schema)
    unseen = df.copy()
    unseen.loc[0, "colour"] = "purple"
    with pytest.raises(SchemaError, match="'colour'"):
        norm.transform(unseen)
    with pytest.raises(TabmemError, match="columns"):
        norm.inverse_transform(np.zeros((2, 3)))


# ---------------------------------------------------------------------------- conditional sampler
def test_condition_frequencies_match_log_frequency() -> None:
    rng = np.random.default_rng(0)
    counts = [[5000, 400, 30, 1], [900, 100]]
    codes = [np.repeat(np.arange(len(c)), c) for c in counts]
    n = len(codes[0])
    codes[1] = rng.permutation(np.resize(codes[1], n))
    sampler = ConditionalSampler(codes, [4, 2])
    batch = sampler.sample_condition(200_000, np.random.default_rng(1))
    # column chosen uniformly
    col_counts = np.bincount(batch.column, minlength=2)
    assert stats.chisquare(col_counts).pvalue > 1e-3
    for j, c in enumerate([counts[0], np.bincount(codes[1])]):
        expected = np.log1p(np.asarray(c, float))
        expected /= expected.sum()
        np.testing.assert_allclose(sampler.probabilities(j), expected)
        observed = np.bincount(batch.category[batch.column == j], minlength=len(c))
        assert stats.chisquare(observed, expected * observed.sum()).pvalue > 1e-3
    # the one-hot condition sits at offset + category
    np.testing.assert_array_equal(batch.cond.sum(axis=1), 1.0)
    np.testing.assert_array_equal(batch.cond.argmax(axis=1), sampler.offsets_[batch.column] + batch.category)
    # generation-time conditions follow the raw frequency
    gen = sampler.sample_condition(100_000, np.random.default_rng(2), training=False)
    observed = np.bincount(gen.category[gen.column == 0], minlength=4)
    expected = np.asarray(counts[0], float) / n
    assert _chisquare_merged(observed, expected) > 1e-3


def test_sampled_rows_carry_the_condition_uniformly() -> None:
    rng = np.random.default_rng(0)
    codes = [rng.integers(0, 3, 600), rng.integers(0, 5, 600)]
    sampler = ConditionalSampler(codes, [3, 5])
    cond = sampler.sample_condition(50_000, np.random.default_rng(1))
    rows = sampler.sample_rows(cond, np.random.default_rng(2))
    for j in range(2):
        sel = cond.column == j
        np.testing.assert_array_equal(codes[j][rows[sel]], cond.category[sel])
    # within a category every matching row is equally likely
    sel = (cond.column == 0) & (cond.category == 1)
    members = np.flatnonzero(codes[0] == 1)
    hits = np.bincount(rows[sel], minlength=600)[members]
    assert stats.chisquare(hits).pvalue > 1e-4
    # same seed, same draws
    again = sampler.sample_rows(cond, np.random.default_rng(2))
    np.testing.assert_array_equal(rows, again)


def test_conditional_loss_matches_naive_cross_entropy() -> None:
    import torch

    rng = np.random.default_rng(0)
    codes = [rng.integers(0, 3, 100), rng.integers(0, 4, 100)]
    sampler = ConditionalSampler(codes, [3, 4])
    cond = sampler.sample_condition(64, np.random.default_rng(1))
    logits = torch.randn(64, 10, generator=torch.Generator().manual_seed(0), dtype=torch.float64)
    spans = [(2, 5), (6, 10)]
    got = conditional_loss(logits, cond, spans).item()
    naive = []
    for i in range(64):
        s, e = spans[cond.column[i]]
        row = logits[i, s:e].numpy()
        naive.append(-(row[cond.category[i]] - np.log(np.exp(row).sum())))
    assert got == pytest.approx(np.mean(naive), rel=1e-10)


def test_sampler_without_discrete_columns_and_bad_codes() -> None:
    sampler = ConditionalSampler([], [])
    cond = sampler.sample_condition(8, np.random.default_rng(0))
    assert cond.cond.shape == (8, 0)
    with pytest.raises(TabmemError, match="outside"):
        ConditionalSampler([np.array([0, 3])], [2])
