"""DP-SGD through opacus: per-sample gradients of GPT-2's Conv1D, budget accounting, two stages."""

from __future__ import annotations

import warnings

import pytest
import torch

from tabmem.data.schema import Schema
from tabmem.errors import TabmemError
from tabmem.generators import load_generator
from tabmem.generators.llm import LLMGenerator

pytest.importorskip("opacus")
pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")


def test_conv1d_per_sample_gradients_match_naive_loop():
    import transformers
    from opacus import GradSampleModule

    from tabmem.generators.llm.dp import per_sample_lm_loss, register_conv1d_grad_sampler

    register_conv1d_grad_sampler()
    torch.manual_seed(0)
    cfg = transformers.GPT2Config(
        vocab_size=20,
        n_positions=8,
        n_embd=16,
        n_layer=1,
        n_head=2,
        tie_word_embeddings=False,
        resid_pdrop=0.0,
        embd_pdrop=0.0,
        attn_pdrop=0.0,
    )
    model = transformers.GPT2LMHeadModel(cfg)
    ids = torch.randint(0, 20, (3, 6))
    mask = torch.ones_like(ids)
    naive = []
    for i in range(3):
        model.zero_grad()
        per_sample_lm_loss(model, ids[i : i + 1], mask[i : i + 1]).backward()
        naive.append({n: p.grad.clone() for n, p in model.named_parameters()})
    gsm = GradSampleModule(model)
    gsm.zero_grad()
    per_sample_lm_loss(gsm, ids, mask).backward()
    for name, p in model.named_parameters():
        assert p.grad_sample.shape[0] == 3, name
        for i in range(3):
            # loss_reduction "mean": opacus undoes the batch mean, so grad_sample[i] = gradient of row i's loss
            torch.testing.assert_close(p.grad_sample[i], naive[i][name], rtol=1e-4, atol=1e-6)


def test_dp_fit_spends_at_most_the_budget_and_two_stage(small_table, tmp_path):
    schema = Schema.infer(small_table, categorical=["sex"], numerical=["age", "income"])
    kw = {"n_layer": 1, "n_head": 2, "n_embd": 32, "batch_size": 16, "random_state": 0}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        gen = LLMGenerator(epochs=3, dp_epsilon=3.0, dp_warmup_epochs=1, **kw).fit(small_table, schema)
    eps, delta = gen.privacy_spent_
    assert 0 < eps <= 3.0 + 1e-6 and eps > 2.0 and delta == pytest.approx(1 / (10 * len(small_table)))
    assert [h["stage"] for h in gen.history_] == [1.0, 2.0, 2.0]
    assert gen.history_[0]["dp_epsilon"] == 0.0 and gen.history_[1]["dp_epsilon"] < gen.history_[2]["dp_epsilon"]
    out = gen.sample(10, random_state=0)
    assert len(out) == 10 and set(out["sex"]) <= {"F", "M"}
    gen.save(tmp_path / "dp.pt")
    loaded = load_generator(tmp_path / "dp.pt")
    assert loaded.privacy_spent_ == pytest.approx((eps, delta))
    assert LLMGenerator(epochs=2, **kw).fit(small_table, schema).privacy_spent_ is None


def test_dp_bad_params(small_table):
    with pytest.raises(TabmemError, match="dp_warmup_epochs"):
        LLMGenerator(epochs=2, dp_warmup_epochs=1).fit(small_table)
    with pytest.raises(TabmemError, match="dp_epsilon"):
        LLMGenerator(epochs=2, dp_epsilon=-1.0).fit(small_table)
    with pytest.raises(TabmemError, match="no private epoch"):
        LLMGenerator(epochs=2, dp_epsilon=1.0, dp_warmup_epochs=2, n_layer=1, n_head=2, n_embd=16).fit(small_table)


def test_dp_resume_matches_uninterrupted(small_table, tmp_path):
    from tabmem.generators import CheckpointCallback

    schema = Schema.infer(small_table, categorical=["sex"], numerical=["age", "income"])
    kw = {"n_layer": 1, "n_head": 2, "n_embd": 16, "batch_size": 16, "random_state": 2, "dp_epsilon": 5.0}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        full = LLMGenerator(epochs=3, dp_warmup_epochs=1, **kw).fit(small_table, schema)
        LLMGenerator(epochs=3, dp_warmup_epochs=1, **kw).fit(
            small_table, schema, callbacks=[_StopAfter(2), CheckpointCallback(1, tmp_path / "ck.pt")]
        )
        resumed = LLMGenerator(epochs=3, dp_warmup_epochs=1, **kw).fit(
            small_table, schema, resume_from=tmp_path / "ck.pt"
        )
    for (k, a), b in zip(full.model_.state_dict().items(), resumed.model_.state_dict().values()):
        assert torch.equal(a, b), k
    assert resumed.privacy_spent_ == pytest.approx(full.privacy_spent_)


class _StopAfter:
    def __init__(self, epoch):
        self.epoch = epoch

    def on_epoch_end(self, gen, epoch, logs):
        return epoch >= self.epoch


def test_dp_trainer_is_given_model_optimizer_and_rows():
    """No generator needed: a model, its optimizer, encoded rows and a config."""
    import transformers

    from tabmem.generators.llm.dp import DPConfig, DPTrainer, spent_from_state
    from tabmem.generators.llm.formats import shuffled_batches

    torch.manual_seed(0)
    cfg = transformers.GPT2Config(
        vocab_size=12, n_positions=8, n_embd=16, n_layer=1, n_head=2, tie_word_embeddings=False
    )
    model = transformers.GPT2LMHeadModel(cfg)
    ids = torch.randint(3, 12, (20, 6))
    rows = (ids, torch.ones_like(ids))
    config = DPConfig(epsilon=2.0, delta=None, max_grad_norm=1.0, warmup_epochs=1, epochs=3, batch_size=5, lr=1e-3)
    g = torch.Generator().manual_seed(0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        dp = DPTrainer(
            model, torch.optim.AdamW(model.parameters()), rows, config, generator=g, device=torch.device("cpu")
        )
        assert dp.delta == pytest.approx(1 / 200) and dp.is_warmup(1) and not dp.is_warmup(2)
        logs = dp.warmup_epoch(shuffled_batches(*rows, g, 5))
        assert logs["stage"] == 1.0 and logs["dp_epsilon"] == 0.0 and dp.spent()[0] == 0.0
        for _ in range(2):
            logs = dp.private_epoch()
    assert logs["stage"] == 2.0 and 0 < logs["dp_epsilon"] <= 2.0 + 1e-6
    assert spent_from_state(dp.state_dict()) == pytest.approx(dp.spent())


def test_dp_with_a_pretrained_backbone(small_table, tmp_path):
    """from_pretrained returns a model in eval mode; opacus needs training mode."""
    import transformers

    torch.manual_seed(0)
    cfg = transformers.GPT2Config(vocab_size=50, n_positions=64, n_embd=16, n_layer=2, n_head=2)
    transformers.GPT2LMHeadModel(cfg).save_pretrained(tmp_path / "bb")
    schema = Schema.infer(small_table, categorical=["sex"], numerical=["age", "income"])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        gen = LLMGenerator(
            backbone=str(tmp_path / "bb"),
            n_pretrained_layers=1,
            epochs=2,
            dp_epsilon=4.0,
            batch_size=16,
            random_state=0,
        ).fit(small_table, schema)
    assert 0 < gen.privacy_spent_[0] <= 4.0 + 1e-6 and gen.model_.config.n_layer == 1
    assert len(gen.sample(5, random_state=0)) == 5
