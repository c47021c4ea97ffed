"""The Hugging Face callback: a tiny GPT-2 built from scratch (char-level, offline) trained by
``transformers.Trainer`` on serialized rows; the callback samples through ``sample_fn`` every k epochs,
writes a ``tabmem track`` run directory that rank and report read, and leaves the trained weights as
they are without it."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from cli_run import run

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")
pytest.importorskip("accelerate", reason="transformers.Trainer needs accelerate (in the llm extra)")

from tabmem.integrations.huggingface import MemorizationCallback  # noqa: E402

N_ROWS, LENGTH = 32, 12


def _table() -> pd.DataFrame:
    rng = np.random.default_rng(0)
    return pd.DataFrame(
        {"a": rng.integers(0, 10, N_ROWS), "b": rng.integers(10, 60, N_ROWS), "c": rng.choice(["x", "y"], N_ROWS)}
    )


class CharCodec:
    """Serialized rows ``a,b,c`` as characters; id 0 is the pad/end token, 1 the start token."""

    def __init__(self, table: pd.DataFrame) -> None:
        chars = sorted(set("".join(self.lines(table))) | set("0123456789,xy"))
        self.ids = {ch: i + 2 for i, ch in enumerate(chars)}
        self.chars = {i: ch for ch, i in self.ids.items()}
        self.vocab = len(chars) + 2

    @staticmethod
    def lines(table: pd.DataFrame) -> list[str]:
        return [f"{r.a},{r.b},{r.c}" for r in table.itertuples(index=False)]

    def encode(self, line: str) -> list[int]:
        ids = [1, *(self.ids[ch] for ch in line), 0]
        return ids + [0] * (LENGTH - len(ids))

    def decode(self, ids) -> str:
        out = []
        for i in ids[1:]:
            if int(i) in (0, 1):
                break
            out.append(self.chars[int(i)])
        return "".join(out)


class RowsDataset(torch.utils.data.Dataset):
    def __init__(self, codec: CharCodec, table: pd.DataFrame) -> None:
        self.items = [codec.encode(line) for line in codec.lines(table)]

    def __len__(self) -> int:
        return len(self.items)

    def __getitem__(self, i: int) -> dict:
        ids = torch.tensor(self.items[i])
        labels = ids.clone()
        labels[1:][ids[1:] == 0] = -100
        labels[(ids == 0).nonzero()[0]] = 0  # the end token is learned, the padding after it is not
        return {"input_ids": ids, "labels": labels}


def _model(codec: CharCodec):
    torch.manual_seed(0)
    config = transformers.GPT2Config(vocab_size=codec.vocab, n_positions=LENGTH + 2, n_embd=32, n_layer=1,
                                     n_head=2, bos_token_id=1, eos_token_id=0, pad_token_id=0)  # fmt: skip
    return transformers.GPT2LMHeadModel(config)


def _sample_fn(model, codec: CharCodec, train: pd.DataFrame, calls: list):
    """Generate rows with the model (torch's RNG, eval mode), keep those that parse, fill up with noisy copies."""

    def sample(n: int, seed: int) -> pd.DataFrame:
        calls.append((n, seed, model.training, torch.is_grad_enabled()))
        torch.manual_seed(seed)
        start = torch.ones((n, 1), dtype=torch.long)
        ids = model.generate(start, do_sample=True, max_new_tokens=LENGTH - 1, pad_token_id=0, eos_token_id=0)
        rows = []
        for line in (codec.decode(seq) for seq in ids):
            parts = line.split(",")
            if len(parts) == 3 and parts[0].isdigit() and parts[1].isdigit() and parts[2] in ("x", "y"):
                rows.append({"a": int(parts[0]), "b": int(parts[1]), "c": parts[2]})
        rng = np.random.default_rng(seed)
        fill = train.sample(n - len(rows), replace=True, random_state=seed).reset_index(drop=True)
        fill["b"] = fill["b"] + rng.integers(-1, 2, len(fill))
        return pd.concat([pd.DataFrame(rows, columns=list(train.columns)), fill], ignore_index=True)

    return sample


def _train(tmp_path, callback_kwargs: dict | None, epochs: int = 4):
    table = _table()
    codec = CharCodec(table)
    model = _model(codec)
    args = transformers.TrainingArguments(
        output_dir=str(tmp_path / "hf"), num_train_epochs=epochs, per_device_train_batch_size=8, learning_rate=5e-3,
        use_cpu=True, report_to="none", save_strategy="no", logging_strategy="no", disable_tqdm=True, seed=0,
        dataloader_num_workers=0,
    )  # fmt: skip
    callbacks, calls = [], []
    if callback_kwargs is not None:
        callbacks.append(MemorizationCallback(table, _sample_fn(model, codec, table, calls), **callback_kwargs))
    trainer = transformers.Trainer(model=model, args=args, train_dataset=RowsDataset(codec, table), callbacks=callbacks)
    trainer.train()
    return model, (callbacks[0] if callbacks else None), calls, table


@pytest.fixture(autouse=True)
def _one_thread():
    n = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(n)


def test_the_callback_tracks_every_k_epochs_into_a_run_that_rank_and_report_read(tmp_path, capsys):
    out = tmp_path / "run"
    _, cb, calls, table = _train(tmp_path, {"every": 3, "out_dir": out, "seed": 7})
    assert cb.epochs_ == [3, 4]  # multiples of 3, and the last epoch
    assert [c[0] for c in calls] == [N_ROWS, N_ROWS]
    assert [c[1] for c in calls] == [cb.tracker.sample_seed(3), cb.tracker.sample_seed(4)]
    assert all(not training and not grad for _, _, training, grad in calls)  # eval mode, no gradients
    assert sorted(p.name for p in (out / "samples").iterdir()) == ["epoch=000003.csv", "epoch=000004.csv"]
    epochs = pd.read_csv(out / "tracking" / "epochs.csv")
    assert epochs["epoch"].tolist() == [3, 4] and (epochs["n_samples"] == N_ROWS).all()
    assert cb.summary_["epochs"] == 4 and cb.summary_["model"] == "huggingface"
    assert json.loads((out / "summary.json").read_text())["memorization_rate"] == cb.summary_["memorization_rate"]
    assert pd.read_csv(out / "snapshots.csv")["epoch"].tolist() == [3, 4]
    code, text = run(["rank", "--run", out, "--out", tmp_path / "ranking.csv"], capsys)
    assert code == 0, text
    assert len(pd.read_csv(tmp_path / "ranking.csv")) == N_ROWS
    code, text = run(["report", out, "--out", tmp_path / "report.html"], capsys)
    assert code == 0, text
    # the saved samples are snapshots: `tabmem track` over them gives the same ranking
    table.to_csv(tmp_path / "train.csv", index=False)
    code, text = run(["track", "--train", tmp_path / "train.csv", "--snapshots", out / "samples" / "*.csv",
                      "--out", tmp_path / "again"], capsys)  # fmt: skip
    assert code == 0, text
    code, text = run(["rank", "--run", tmp_path / "again", "--out", tmp_path / "ranking2.csv"], capsys)
    assert (tmp_path / "ranking.csv").read_bytes() == (tmp_path / "ranking2.csv").read_bytes()


def test_tracking_does_not_change_the_trained_weights(tmp_path, monkeypatch):
    plain, _, _, _ = _train(tmp_path / "a", None, epochs=3)
    tracked, cb, calls, _ = _train(tmp_path / "b", {"every": 1}, epochs=3)
    assert cb.epochs_ == [1, 2, 3] and len(calls) == 3 and cb.summary_ is None  # memory only
    assert len(cb.tracker.history_) == 3
    for (name, p), q in zip(plain.state_dict().items(), tracked.state_dict().values()):
        assert torch.equal(p, q), name
    assert tracked.training  # the train mode is restored
    # the check has teeth: sampling without the preserved state (sample_fn reseeds torch) changes the weights
    import contextlib

    import tabmem.integrations.huggingface as hf

    monkeypatch.setattr(hf, "preserved_state", lambda model: contextlib.nullcontext())
    careless, _, _, _ = _train(tmp_path / "c", {"every": 1}, epochs=3)
    assert not all(torch.equal(p, q) for p, q in zip(plain.state_dict().values(), careless.state_dict().values()))


def test_bad_sample_fn_and_a_missing_transformers(tmp_path, monkeypatch):
    from tabmem.errors import TabmemError

    with pytest.raises(TabmemError, match="sample_fn must be a function"):
        MemorizationCallback(_table(), "not a function")
    # a table the training schema refuses: one error naming the epoch, the lock released, nothing written for it
    table = _table()
    codec = CharCodec(table)
    model = _model(codec)
    args = transformers.TrainingArguments(
        output_dir=str(tmp_path / "hf"), num_train_epochs=1, per_device_train_batch_size=8, use_cpu=True,
        report_to="none", save_strategy="no", logging_strategy="no", disable_tqdm=True,
    )  # fmt: skip
    bad = MemorizationCallback(table, lambda n, seed: table.drop(columns=["c"]).head(n), out_dir=tmp_path / "run")
    trainer = transformers.Trainer(model=model, args=args, train_dataset=RowsDataset(codec, table), callbacks=[bad])
    with pytest.raises(TabmemError, match=r"sample_fn \(epoch 1\) table: missing column\(s\): 'c'"):
        trainer.train()
    assert not (tmp_path / "run" / ".lock").exists() and not (tmp_path / "run" / "samples").exists()
    import subprocess
    import sys

    code = (
        "import sys; sys.modules['transformers'] = None\n"
        "try:\n    import tabmem.integrations.huggingface\n"
        "except ModuleNotFoundError as e:\n    print(e)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert "needs the optional dependency 'transformers'" in out.stdout and "tabmem[llm]" in out.stdout, out
