"""DP-SGD for TabDDPM (``dp_epsilon``): opacus' accounting, per-sample clipping, determinism, resume, CLI."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
import torch

from tabmem.cli import main
from tabmem.data.schema import Schema
from tabmem.errors import TabmemError
from tabmem.generators import load_generator
from tabmem.generators._diffusion import MLPDenoiser
from tabmem.generators._dp import PrivateSGD
from tabmem.generators.tabddpm import TabDDPM

pytest.importorskip("opacus")
pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")

TINY = {"layers": (16,), "dim_t": 8, "num_timesteps": 4, "batch_size": 16, "cat_input": "onehot"}


@pytest.fixture(autouse=True)
def _one_torch_thread():
    n = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(n)


@pytest.fixture
def table():
    rng = np.random.default_rng(0)
    n = 64
    df = pd.DataFrame(
        {
            "age": rng.integers(20, 70, n),
            "income": rng.normal(1e4, 3e3, n).round(2),
            "city": rng.choice(["Paris", "Oslo", "Rome"], n),
            "label": rng.choice(["yes", "no"], n),
        }
    )
    return df, Schema.infer(df, categorical=["city", "label"], numerical=["age", "income"])


def _fit(table, epochs=3, seed=0, **kw):
    df, schema = table
    params = {**TINY, "epochs": epochs, "dp_epsilon": 4.0, **kw}
    return TabDDPM(**params).fit(df, schema, random_state=seed)


def test_spent_budget_is_opacus_own_accounting(table):
    from opacus.accountants import RDPAccountant
    from opacus.accountants.utils import get_noise_multiplier

    gen = _fit(table, epochs=3)
    q = 1 / 4  # 64 rows, batch 16: 4 expected steps per epoch
    steps = gen.step_
    assert gen.dp_.sample_rate == q and 0 < steps  # empty Poisson batches (none expected here) take no step
    # the noise multiplier is the one opacus picks for (epsilon, delta) over the planned epochs
    sigma = get_noise_multiplier(target_epsilon=4.0, target_delta=1 / 640, sample_rate=q, epochs=3, accountant="rdp")
    assert gen.dp_.noise_multiplier == pytest.approx(sigma)
    ref = RDPAccountant()
    for _ in range(steps):
        ref.step(noise_multiplier=sigma, sample_rate=q)
    eps, delta = gen.privacy_spent_
    assert delta == 1 / 640  # default 1/(10 n)
    assert eps == pytest.approx(ref.get_epsilon(delta), rel=1e-9)
    assert eps <= 4.0 + 0.02  # at most the target (opacus' search tolerance 0.01) when every step was taken
    assert gen.history_[-1]["dp_epsilon"] == pytest.approx(eps)


def test_each_per_sample_gradient_is_clipped_brute_force():
    torch.manual_seed(0)
    model = MLPDenoiser(3, [5], 4)
    x, t, y = torch.randn(5, 3), torch.tensor([0, 1, 2, 3, 1]), torch.randn(5, 3)

    def row_loss(out, target):
        return ((out - target) ** 2).mean(1)

    naive = []  # one backward per row: the per-sample gradients by brute force
    for i in range(5):
        model.zero_grad()
        row_loss(model(x[i : i + 1], t[i : i + 1]), y[i : i + 1]).sum().backward()
        naive.append(torch.cat([p.grad.flatten() for p in model.parameters()]).clone())
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    dp = PrivateSGD(model, opt, n=8, batch_size=4, epochs=1, epsilon=50.0, delta=1e-3, max_grad_norm=0.05,
                    generator=torch.Generator().manual_seed(0))  # fmt: skip
    dp.optimizer.noise_multiplier = 0.0  # isolate the clipping
    dp.optimizer.zero_grad(set_to_none=True)
    row_loss(dp.module(x, t), y).mean().backward()
    params = list(model.parameters())
    sampled = torch.stack([torch.cat([p.grad_sample[i].flatten() for p in params]) for i in range(5)])
    torch.testing.assert_close(sampled, torch.stack(naive), rtol=1e-4, atol=1e-7)
    assert all(g.norm() > 0.05 for g in naive)  # every row is clipped here
    dp.optimizer.pre_step()
    clipped = [g * min(1.0, 0.05 / float(g.norm())) for g in naive]
    assert all(float(c.norm()) <= 0.05 + 1e-7 for c in clipped)
    expected = torch.stack(clipped).sum(0) / dp.optimizer.expected_batch_size  # 4, not the 5 rows drawn
    torch.testing.assert_close(torch.cat([p.grad.flatten() for p in params]), expected, rtol=1e-4, atol=1e-8)


def test_same_seed_same_bytes_and_exact_resume(table, tmp_path):
    a, b = _fit(table, seed=1), _fit(table, seed=1)
    for k, v in a.model_.state_dict().items():
        assert torch.equal(v, b.model_.state_dict()[k]), k
    pd.testing.assert_frame_equal(a.sample(20, random_state=3), b.sample(20, random_state=3))
    c = _fit(table, seed=2)
    assert not torch.equal(a.model_.head.weight, c.model_.head.weight)
    df, schema = table
    ckpt = tmp_path / "ckpt.pt"
    gen = TabDDPM(**TINY, epochs=3, dp_epsilon=4.0)
    from tabmem.callbacks import StopAtEpoch

    gen.fit(df, schema, random_state=1, checkpoint_every=1, checkpoint_path=ckpt, callbacks=[StopAtEpoch(2)])
    resumed = TabDDPM(**TINY, epochs=3, dp_epsilon=4.0).fit(df, schema, resume_from=ckpt)
    for k, v in a.model_.state_dict().items():
        assert torch.equal(v, resumed.model_.state_dict()[k]), k
    assert resumed.privacy_spent_ == a.privacy_spent_
    a.save(tmp_path / "m.pt")
    assert load_generator(tmp_path / "m.pt").privacy_spent_ == pytest.approx(a.privacy_spent_)
    assert TabDDPM(**TINY, epochs=1).fit(df, schema, random_state=0).privacy_spent_ is None


def test_dp_fit_samples_valid_rows(table):
    df, _ = table
    syn = _fit(table, epochs=2, dp_epsilon=1.0, dp_delta=1e-3).sample(50, random_state=0)
    assert list(syn.columns) == list(df.columns) and len(syn) == 50
    assert set(syn.city) <= set(df.city) and set(syn.label) <= set(df.label)
    assert syn[["age", "income"]].notna().all().all() and np.isfinite(syn.income).all()


@pytest.mark.parametrize(
    "params, needle",
    [
        ({"dp_epsilon": 0}, "dp_epsilon must be > 0"),
        ({"dp_epsilon": "ten"}, "dp_epsilon must be > 0"),
        ({"dp_epsilon": 1.0, "dp_delta": 1.5}, "dp_delta must be in (0, 1)"),
        ({"dp_epsilon": 1.0, "dp_max_grad_norm": 0}, "dp_max_grad_norm must be > 0"),
    ],
)
def test_bad_dp_params_one_line(table, params, needle):
    df, schema = table
    with pytest.raises(TabmemError) as exc:
        TabDDPM(**{**TINY, "epochs": 1, **params}).fit(df, schema, random_state=0)
    assert needle in str(exc.value) and "\n" not in str(exc.value)


def test_dp_refuses_sample_weight(table):
    df, schema = table
    with pytest.raises(TabmemError, match="not supported with DP"):
        TabDDPM(**TINY, epochs=1, dp_epsilon=1.0).fit(
            df, schema, random_state=0, sample_weight=np.linspace(0.1, 1, len(df))
        )


def test_cli_train_records_the_spent_budget(table, tmp_path, capsys):
    df, _ = table
    path = tmp_path / "train.csv"
    df.to_csv(path, index=False)
    out = tmp_path / "run"
    argv = ["train", "--train", str(path), "--target", "label", "--epochs", "2", "--seed", "0", "--out", str(out),
            "--quiet", "--param", "dp_epsilon=3", "--param", "dp_delta=0.001"]  # fmt: skip
    for k, v in TINY.items():
        argv += ["--param", f"{k}={json.dumps(list(v) if isinstance(v, tuple) else v)}"]
    main(argv)
    summary = json.loads((out / "summary.json").read_text())
    assert summary["dp_delta"] == 0.001 and 0 < summary["dp_epsilon_spent"] <= 3.02
    assert json.loads((out / "config.json").read_text())["params"]["dp_epsilon"] == 3
