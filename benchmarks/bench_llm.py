"""Throughput of the LLM generator on this CPU: training tokens/s, sampling rows/s, TLP overhead.

Every figure is printed next to a baseline measured in the same run (the machine is shared and
noisy, so compare ratios):

* training: ``LLMGenerator._train_epoch`` vs a bare Hugging Face loop (same model, same batches),
  and the achieved GFLOP/s (6 * parameters * tokens / s) vs a float32 matmul ceiling;
* sampling: ``LLMGenerator.sample`` with the vectorised position mask vs Hugging Face's
  ``prefix_allowed_tokens_fn`` vs unconstrained ``generate`` (KV cache on in all three);
* TLP: ``generate`` with and without ``TendencyLogitsProcessor`` (per-step overhead, target <= 5%),
  and the processor alone vs one ``softmax`` of the same logits.

Usage: ``python benchmarks/bench_llm.py [--rows 442] [--threads 1]``
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import torch
from sklearn.datasets import load_diabetes

from tabmem.defenses import TendencyLogitsProcessor
from tabmem.generators.llm import LLMGenerator


def best(f, repeat=3):
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        f()
        times.append(time.perf_counter() - t)
    return min(times)


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--rows", type=int, default=442)
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--n-sample", type=int, default=300)
    args = p.parse_args()
    torch.set_num_threads(args.threads)
    import transformers

    transformers.logging.set_verbosity_error()
    df = load_diabetes(as_frame=True, scaled=False).frame.head(args.rows)
    gen = LLMGenerator(n_layer=4, n_head=4, n_embd=128, epochs=1, batch_size=64, random_state=0, device="cpu")
    gen.fit(df)
    n_params = sum(p.numel() for p in gen.model_.parameters())
    ids_all, _ = gen.format_.encode(df, None)  # the digit format: [BOS] digits [EOS], one width
    tokens = ids_all.numel()
    print(
        f"model: GPT-2 {gen.n_layer} layers x {gen.n_embd}, {n_params / 1e6:.2f} M parameters; "
        f"{len(df)} rows x {gen.max_length_} tokens; torch threads {args.threads}"
    )

    # ---------------- training
    gen._rows = gen.format_.training_rows(df)  # _train_epoch outside fit (benchmark only)
    t_ours = best(lambda: gen._train_epoch(1))
    model, opt = gen.model_, gen.optimizer_

    def bare_epoch():
        perm = torch.randperm(ids_all.shape[0])
        for s in range(0, len(perm), 64):
            ids = ids_all[perm[s : s + 64]]
            loss = model(input_ids=ids, labels=ids).loss
            opt.zero_grad()
            loss.backward()
            opt.step()

    t_bare = best(bare_epoch)
    a = torch.randn(1024, 1024)
    t_mm = best(lambda: [a @ a for _ in range(10)])
    ceiling = 10 * 2 * 1024**3 / t_mm / 1e9
    achieved = 6 * n_params * tokens / t_ours / 1e9
    print(
        f"train: tabmem {tokens / t_ours:,.0f} tokens/s | bare HF loop {tokens / t_bare:,.0f} tokens/s "
        f"| ratio {t_bare / t_ours:.2f}"
    )
    print(
        f"train: {achieved:.2f} GFLOP/s achieved vs {ceiling:.1f} GFLOP/s fp32 matmul ceiling "
        f"({100 * achieved / ceiling:.1f}%; small model, overhead-bound)"
    )

    # ---------------- sampling
    n = args.n_sample
    gen.sample(50, random_state=0)
    t_mask = best(lambda: gen.sample(n, random_state=0, constraint="mask"), repeat=2)
    t_pfn = best(lambda: gen.sample(n, random_state=0, constraint="prefix_fn"), repeat=2)
    prompt = torch.full((n, 1), 1)
    L = gen.serializer_.n_positions_ + 1

    def raw():
        with torch.inference_mode():
            model.generate(
                prompt,
                attention_mask=torch.ones_like(prompt),
                do_sample=True,
                max_new_tokens=L,
                min_new_tokens=L,
                top_k=0,
                pad_token_id=0,
                eos_token_id=2,
            )

    model.eval()
    t_raw = best(raw, repeat=2)
    print(
        f"sample: mask constraint {n / t_mask:,.0f} rows/s | prefix_allowed_tokens_fn {n / t_pfn:,.0f} rows/s "
        f"(mask is {t_pfn / t_mask:.2f}x faster) | unconstrained generate {n / t_raw:,.0f} rows/s "
        f"(constrained+parsed costs {t_mask / t_raw:.2f}x)"
    )

    # ---------------- TLP overhead (interleaved runs: the machine is shared, drift hits both equally)
    ratios, plain_times = [], []
    for r in range(5):
        t0 = time.perf_counter()
        gen.sample(n, random_state=r)
        t1 = time.perf_counter()
        gen.sample(n, random_state=r, tendency=5.0)
        t2 = time.perf_counter()
        ratios.append((t2 - t1) / (t1 - t0))
        plain_times.append(t1 - t0)
    step_ms = min(plain_times) / L * 1e3
    print(
        f"TLP in generate: {step_ms:.2f} ms/step without; with TLP the median ratio over 5 interleaved pairs is "
        f"{np.median(ratios):.3f} -> overhead {100 * (np.median(ratios) - 1):+.1f}% (target <= 5%)"
    )

    class Timed(TendencyLogitsProcessor):
        spent = 0.0

        def __call__(self, input_ids, scores):
            t = time.perf_counter()
            out = super().__call__(input_ids, scores)
            Timed.spent += time.perf_counter() - t
            return out

    # in-situ: time spent inside the processor during real generate calls (robust to machine drift)
    t0 = time.perf_counter()
    for r in range(3):
        gen.sample(n, random_state=r, logits_processor=[Timed(5.0)])
    total = time.perf_counter() - t0
    print(
        f"TLP in-situ: {Timed.spent * 1e3:.0f} ms inside the processor of {total * 1e3:.0f} ms of sampling "
        f"-> {100 * Timed.spent / (total - Timed.spent):.2f}% overhead per generation step (target <= 5%)"
    )
    vocab = len(gen.serializer_.vocab_)
    tlp = TendencyLogitsProcessor(5.0)
    for v in (vocab, 50257):
        scores = torch.randn(n, v)
        t_proc = best(lambda s=scores: tlp(None, s), repeat=5)
        t_soft = best(lambda s=scores: torch.softmax(s, -1), repeat=5)
        print(
            f"TLP alone on [{n}, {v}]: {t_proc * 1e3:.2f} ms vs softmax {t_soft * 1e3:.2f} ms "
            f"({t_proc / t_soft:.1f}x a softmax); per generation step at this vocabulary: "
            f"{100 * t_proc / (step_ms / 1e3):.1f}% of a {step_ms:.0f} ms step"
        )


if __name__ == "__main__":
    main()
