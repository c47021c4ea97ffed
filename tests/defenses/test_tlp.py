"""TendencyLogitsProcessor against an independent numpy reference (LevAtt paper, TLP)."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from tabmem.defenses import TendencyLogitsProcessor
from tabmem.errors import TabmemError

NEG = float("-inf")


def reference_tlp(scores: np.ndarray, t: float, normalize: str = "row") -> np.ndarray:
    """Naive loop: the paper's formula on finite entries, per row or over the whole batch."""
    out = scores.astype(np.float64).copy()
    groups = [list(range(scores.shape[0]))] if normalize == "batch" else [[i] for i in range(scores.shape[0])]
    for rows in groups:
        finite = [(i, j) for i in rows for j in range(scores.shape[1]) if np.isfinite(scores[i, j])]
        if not finite or np.isposinf(scores[rows]).any() or np.isnan(scores[rows]).any():
            continue
        vals = [scores[i, j] for i, j in finite]
        m, mx = min(vals), max(vals)
        if mx == m:
            continue
        for i, j in finite:
            u = (scores[i, j] - m) / (mx - m)
            out[i, j] = m + (mx - m) * u ** (1.0 / t)
    return out


@pytest.mark.parametrize("t", [1.0, 1.5, 3.0, 20.0])
@pytest.mark.parametrize("normalize", ["row", "batch"])
def test_matches_reference_with_masks(t, normalize):
    rng = np.random.default_rng(0)
    scores = rng.normal(size=(5, 17)) * 4
    scores[rng.random(scores.shape) < 0.3] = NEG
    scores[3, :] = NEG  # fully masked row
    scores[4, :] = 2.5  # constant row (M = m)
    scores[4, 0] = NEG
    scores[2, 5] = float("inf")  # never produced by a model: the row (with "batch": all rows) is left as is
    got = TendencyLogitsProcessor(t, normalize=normalize)(None, torch.tensor(scores)).numpy()
    ref = reference_tlp(scores, t, normalize)
    assert np.array_equal(np.isneginf(got), np.isneginf(scores)) and np.isposinf(got[2, 5])
    np.testing.assert_array_equal(got[2], scores[2])
    np.testing.assert_allclose(got[np.isfinite(got)], ref[np.isfinite(ref)], rtol=1e-12, atol=1e-12)
    assert not np.isnan(got).any()


def test_row_and_batch_differ_and_row_is_independent_of_batch_mates():
    rng = np.random.default_rng(1)
    a = rng.normal(size=(1, 10))
    b = rng.normal(size=(1, 10)) * 10 + 5
    both = torch.tensor(np.vstack([a, b]))
    row = TendencyLogitsProcessor(4.0, "row")(None, both).numpy()
    alone = TendencyLogitsProcessor(4.0, "row")(None, torch.tensor(a)).numpy()
    np.testing.assert_allclose(row[0], alone[0])
    batch = TendencyLogitsProcessor(4.0, "batch")(None, both).numpy()
    assert not np.allclose(batch[0], row[0])


def test_order_min_max_preserved_and_probabilities_flatten():
    rng = np.random.default_rng(2)
    scores = torch.tensor(rng.normal(size=(4, 50)) * 3)
    out = TendencyLogitsProcessor(5.0)(None, scores)
    assert torch.equal(out.argsort(dim=-1), scores.argsort(dim=-1))
    assert torch.allclose(out.max(-1).values, scores.max(-1).values)
    assert torch.allclose(out.min(-1).values, scores.min(-1).values)
    # runner-up tokens gain probability: entropy increases, top-1 probability decreases
    p0, p1 = scores.softmax(-1), out.softmax(-1)
    assert (p1.max(-1).values < p0.max(-1).values).all()
    ent = lambda p: -(p * p.log()).sum(-1)  # noqa: E731
    assert (ent(p1) > ent(p0)).all()


def test_input_not_modified_and_dtype_kept():
    scores = torch.tensor([[0.0, 1.0, 3.0, NEG]], dtype=torch.float16)
    before = scores.clone()
    out = TendencyLogitsProcessor(2.0)(None, scores)
    assert torch.equal(scores, before)
    assert out.dtype == torch.float16
    assert torch.allclose(out.float(), torch.tensor([[0.0, 3 * (1 / 3) ** 0.5, 3.0, NEG]]), atol=1e-2)


@pytest.mark.parametrize("bad", [0.5, 0.0, -1.0, float("nan"), float("inf"), "3", True])
def test_validation_names_the_value(bad):
    with pytest.raises(TabmemError, match="tendency"):
        TendencyLogitsProcessor(bad)
    with pytest.raises(TabmemError, match="normalize"):
        TendencyLogitsProcessor(2.0, normalize="global")


def _reference_pipeline(raw: np.ndarray, t: float, temperature: float, top_k: int, top_p: float) -> np.ndarray:
    """TLP -> temperature -> top-k -> top-p, written independently of transformers."""
    z = reference_tlp(raw, t) / temperature
    out = np.full_like(z, NEG)
    for i in range(z.shape[0]):
        order = np.argsort(-z[i], kind="stable")[:top_k]
        p = np.exp(z[i, order] - z[i, order].max())
        p /= p.sum()
        keep = int(np.searchsorted(np.cumsum(p), top_p - 1e-12) + 1)
        out[i, order[:keep]] = z[i, order[:keep]]
    return out


def test_composes_with_temperature_topk_topp_in_generate():
    transformers = pytest.importorskip("transformers")
    cfg = transformers.GPT2Config(vocab_size=40, n_positions=32, n_embd=32, n_layer=2, n_head=2)
    torch.manual_seed(0)
    model = transformers.GPT2LMHeadModel(cfg).eval()
    with torch.no_grad():  # spread the logits so that top-k / top-p actually bind
        model.lm_head.weight.mul_(30.0)
    prompt = torch.tensor([[1, 2], [3, 4], [5, 6]])
    tlp = TendencyLogitsProcessor(3.0)
    torch.manual_seed(123)
    res = model.generate(
        prompt,
        attention_mask=torch.ones_like(prompt),
        do_sample=True,
        max_new_tokens=6,
        temperature=0.7,
        top_k=12,
        top_p=0.8,
        logits_processor=transformers.LogitsProcessorList([tlp]),
        return_dict_in_generate=True,
        output_scores=True,
        output_logits=True,
        pad_token_id=0,
    )
    assert res.sequences.shape == (3, 8)
    for raw, processed in zip(res.logits, res.scores):
        ref = _reference_pipeline(raw.double().numpy(), 3.0, 0.7, 12, 0.8)
        got = processed.double().numpy()
        assert np.array_equal(np.isneginf(got), np.isneginf(ref))
        np.testing.assert_allclose(got[np.isfinite(got)], ref[np.isfinite(ref)], rtol=1e-4, atol=1e-4)
    # every sampled token was allowed by the processed scores
    for step, processed in enumerate(res.scores):
        tok = res.sequences[:, 2 + step]
        assert torch.isfinite(processed[torch.arange(3), tok]).all()


def test_small_logit_ranges_are_warped_too():
    # span 0.5 < 1: u = [0, .5, 1] -> u^(1/2) * 0.5
    out = TendencyLogitsProcessor(2.0)(None, torch.tensor([[0.0, 0.25, 0.5]]))
    torch.testing.assert_close(out, torch.tensor([[0.0, 0.5 * math.sqrt(0.5), 0.5]]))


def test_low_precision_scores_are_warped_in_float32():
    g = torch.Generator().manual_seed(0)
    scores = (torch.randn(4, 200, generator=g) * 5).to(torch.bfloat16)
    out = TendencyLogitsProcessor(3.0)(None, scores)
    assert out.dtype == torch.bfloat16
    expected = TendencyLogitsProcessor(3.0)(None, scores.float()).to(torch.bfloat16)
    assert torch.equal(out, expected)
