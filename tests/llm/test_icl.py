"""In-context generator: prompt, parsing, and the OpenAI-compatible backend against a local server."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pandas as pd
import pytest

from tabmem.data.schema import Schema
from tabmem.errors import TabmemError
from tabmem.generators.llm.icl import ICLGenerator, OpenAIBackend, make_backend


class FakeAPI:
    """A scripted chat-completions server on 127.0.0.1: each request pops the next (status, body, headers)."""

    def __init__(self, script):
        self.script = list(script)
        self.requests = []
        api = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                api.requests.append({"path": self.path, "auth": self.headers.get("Authorization"), "body": body})
                status, content, headers = api.script.pop(0) if api.script else (200, "", {})
                payload = (
                    json.dumps({"choices": [{"message": {"role": "assistant", "content": content}}]})
                    if status == 200
                    else json.dumps({"error": {"message": content}})
                ).encode()
                self.send_response(status)
                for k, v in headers.items():
                    self.send_header(k, v)
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/v1"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def train():
    return pd.DataFrame(
        {
            "age": [30, 41, 52, 63, 25, 38, 47, 59],
            "bmi": [21.5, 30.25, 27.0, 24.75, 19.5, 33.0, 28.5, 22.0],
            "sex": ["F", "M", "F", "M", "F", "M", "F", "M"],
        }
    )


@pytest.fixture
def schema(train):
    return Schema.infer(train, categorical=["sex"], numerical=["age", "bmi"])


def test_prompt_contains_context_stats_and_is_seeded(train, schema):
    backend = OpenAIBackend("http://127.0.0.1:1/v1", api_key="", sleep=lambda s: None)
    gen = ICLGenerator(backend, n_context=4, random_state=0, dataset_name="toy").fit(train, schema)
    msgs = gen.build_messages(5)
    text = msgs[1]["content"]
    assert "age,bmi,sex" in text and "Write 5 new" in text and "Dataset: toy." in text
    assert sum(row in text for row in gen.context_rows_) == 4
    stats = json.loads(text.split("Summary statistics: ")[1].split("\n\n")[0])
    ctx = train.iloc[gen.context_index_]
    assert stats["age"]["min"] == ctx["age"].min() and stats["age"]["max"] == ctx["age"].max()
    again = ICLGenerator(backend, n_context=4, random_state=0).fit(train, schema)
    assert list(again.context_index_) == list(gen.context_index_)
    with pytest.raises(TabmemError, match="n_context"):
        ICLGenerator(backend, n_context=20).fit(train, schema)


def test_openai_backend_retries_and_parses(train, schema):
    reply1 = "age,bmi,sex\n```\n44,25.50,F\nnot a row\n51,29.00,X\n"
    reply2 = "36,20.25,M\n70,31.00,F\n"
    script = [
        (429, "slow down", {"Retry-After": "0"}),
        (503, "busy", {}),
        (200, reply1, {}),
        (200, reply2, {}),
    ]
    sleeps = []
    with FakeAPI(script) as api:
        backend = OpenAIBackend(api.url, api_key="sk-test", model="m1", sleep=sleeps.append, random_state=0)
        gen = ICLGenerator(backend, n_context=8, rows_per_request=3, random_state=1).fit(train, schema)
        out = gen.sample(3)
    assert len(out) == 3
    assert out.values.tolist() == [[44.0, 25.5, "F"], [36.0, 20.25, "M"], [70.0, 31.0, "F"]]
    assert gen.last_sample_stats_ == {
        "requests": 2,
        "rows_parsed": 3,
        "invalid_lines": 2,
        "retries": 2,
        "rows_valid": 3,
        "n": 3,
    }
    assert len(api.requests) == 4 and backend.n_retries_ == 2
    assert sleeps[0] == 0.0 and 0.5 * 2.0 <= sleeps[1] <= 2.0  # Retry-After honoured, then backoff*2**1*jitter
    r = api.requests[0]
    assert r["path"] == "/v1/chat/completions" and r["auth"] == "Bearer sk-test" and r["body"]["model"] == "m1"
    assert "sk-test" not in repr(backend)


def test_openai_backend_errors(train, schema):
    with FakeAPI([(401, "bad key: you sent 'hi'", {})]) as api:
        with pytest.raises(TabmemError, match="HTTP 401") as err:
            OpenAIBackend(api.url, api_key="x", sleep=lambda s: None).complete([{"role": "user", "content": "hi"}])
    assert "bad key" not in str(err.value)  # a body may echo the prompt: never shown by default
    with FakeAPI([(401, "bad key", {})]) as api:
        with pytest.raises(TabmemError, match=r"HTTP 401.*bad key"):  # on request only
            OpenAIBackend(api.url, api_key="x", sleep=lambda s: None, show_body=True).complete(
                [{"role": "user", "content": "hi"}]
            )
    with FakeAPI([(500, "down", {})] * 3) as api:
        with pytest.raises(TabmemError, match="after 3 attempts"):
            OpenAIBackend(api.url, max_retries=2, sleep=lambda s: None).complete([{"role": "user", "content": "hi"}])
    with FakeAPI([(200, "garbage", {})] * 3) as api:
        gen = ICLGenerator(OpenAIBackend(api.url, sleep=lambda s: None), n_context=8, max_rounds=3).fit(train, schema)
        with pytest.raises(TabmemError, match="only 0 valid rows"):
            gen.sample(2)
    backend = OpenAIBackend("http://127.0.0.1:9/v1", max_retries=1, timeout=2, sleep=lambda s: None)
    with pytest.raises(TabmemError, match="connection refused; gave up after 2 attempts"):
        backend.complete([{"role": "user", "content": "hi"}])
    with pytest.raises(TabmemError, match="backend must be"):
        make_backend("grpc:x")
    with pytest.raises(TabmemError, match="base_url"):
        OpenAIBackend("ftp://x")


def test_env_configuration(monkeypatch):
    monkeypatch.setenv("TABMEM_OPENAI_BASE_URL", "http://127.0.0.1:5/v1/")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-env")
    b = make_backend("openai")
    assert b.base_url == "http://127.0.0.1:5/v1" and b.api_key == "sk-env"


def test_hf_backend_on_local_tiny_model(tmp_path, train, schema):
    transformers = pytest.importorskip("transformers")
    from tabmem.generators.llm.huggingface import train_bpe as _train_bpe

    texts = ["age,bmi,sex", "44,25.50,F", "36,20.25,M", "Write new rows"]
    tok = transformers.PreTrainedTokenizerFast(
        tokenizer_object=_train_bpe(texts * 5, 300), pad_token="[PAD]", bos_token="[BOS]", eos_token="[EOS]"
    )
    model = transformers.GPT2LMHeadModel(
        transformers.GPT2Config(vocab_size=len(tok), n_positions=2048, n_embd=16, n_layer=1, n_head=2)
    )
    model.save_pretrained(tmp_path / "m")
    tok.save_pretrained(tmp_path / "m")
    backend = make_backend(f"hf:{tmp_path / 'm'}", max_new_tokens=20)
    gen = ICLGenerator(backend, n_context=8, max_rounds=2, random_state=0).fit(train, schema)
    reply = backend.complete(gen.build_messages(2), seed=1)
    assert isinstance(reply, str) and reply == backend.complete(gen.build_messages(2), seed=1)
    with pytest.raises(TabmemError, match="valid rows"):  # an untrained model writes no valid rows: clear error
        gen.sample(2)


def test_cli_generate_icl(tmp_path, train, monkeypatch):
    from click.testing import CliRunner

    from tabmem.cli import cli

    train.to_csv(tmp_path / "train.csv", index=False)
    monkeypatch.setenv("MY_KEY", "sk-cli")
    with FakeAPI([(200, "44,25.50,F\n36,20.25,M\n", {})]) as api:
        res = CliRunner().invoke(
            cli,
            [
                "generate-icl",
                "--train",
                str(tmp_path / "train.csv"),
                "--n-context",
                "8",
                "--backend",
                f"openai:{api.url}",
                "--api-key-env",
                "MY_KEY",
                "--n",
                "2",
                "--categorical",
                "sex",
                "--numerical",
                "age",
                "--out",
                str(tmp_path / "syn.csv"),
            ],
        )
    assert res.exit_code == 0, res.output
    assert "sk-cli" not in res.output and api.requests[0]["auth"] == "Bearer sk-cli"
    out = pd.read_csv(tmp_path / "syn.csv")
    assert out.values.tolist() == [[44.0, 25.5, "F"], [36.0, 20.25, "M"]]
    res = CliRunner().invoke(
        cli,
        ["generate-icl", "--train", str(tmp_path / "train.csv"), "--backend", "bogus:x", "--n", "2", "--out", "x.csv"],
    )
    assert res.exit_code != 0 and "backend must be" in str(res.exception)
