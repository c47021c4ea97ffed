"""Task functions of tests/runs/test_pool.py: top-level in an importable module, as the pool's workers need."""

from __future__ import annotations

import os
import signal


def task(p: dict) -> dict:
    """``op``: ``square`` returns x², ``raise`` raises, ``die`` kills its own process (never in the test's)."""
    if p["op"] == "raise":
        raise ValueError(f"bad x={p['x']}\nsecond line")
    if p["op"] == "die":
        if os.getpid() == p["parent"]:
            raise AssertionError("a dying task ran in the test's process")
        os.kill(os.getpid(), signal.SIGKILL)
    return {"x": p["x"], "y": p["x"] ** 2, "pid": os.getpid()}
