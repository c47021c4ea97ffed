"""Failure class 'executor': where the neighbour searches run (``--executor``, ``--address``, ``--shards``).

A setting that cannot work is one line naming the option: an address without Ray, an address nothing
answers on (within seconds, not Ray's minutes of retries), a shard count below one; ``--shards``
alone shards the searches in this process and changes no number.
"""

from __future__ import annotations

from corpus_runner import Case

CASES = [
    Case("address_without_ray", "5 options", ("audit", "attack"), "error", args=("--address", "auto"),
         match=r"--address applies to --executor ray"),
    Case("address_unreachable", "5 options", ("audit", "attack"), "error",
         args=("--executor", "ray", "--address", "127.0.0.1:1"), match=r"--address 127\.0\.0\.1:1: cannot join",
         time_limit=60),
    Case("shards_zero", "5 options", ("audit", "attack"), "error", args=("--shards", "0"), match=r"--shards"),
    Case("shards_in_process", "5 options", ("audit",), "ok", args=("--shards", "3")),
]  # fmt: skip
