"""tabmem.risk against the anonymeter package itself: same tables, same attacks, same n_attacks.

anonymeter pins numpy < 1.27 (tabmem needs numpy 2), so it runs in its own virtualenv
(``.venv-anon``, made by ``tests/run_reference.sh``; ``$TABMEM_ANONYMETER_PYTHON`` names another
interpreter) through ``tests/reference/anonymeter_ref.py``. Both tools randomise their attacks
with different generators, so the numbers are compared as intervals: for every risk the two
confidence intervals overlap (the estimates differ by less than the sum of their half-widths),
on a planted leak (jittered training rows) and on fresh real rows.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tabmem.risk import evaluate_risk

REPO = Path(__file__).resolve().parents[2]
SCRIPT = REPO / "tests" / "reference" / "anonymeter_ref.py"
N_ATTACKS = 500  # anonymeter's default
SECRETS = ["income", "age"]

pytestmark = pytest.mark.reference


def anonymeter_python() -> str:
    """The interpreter that has anonymeter; skipped without one (a failure in CI's reference run)."""
    exe = os.environ.get("TABMEM_ANONYMETER_PYTHON") or str(REPO / ".venv-anon" / "bin" / "python")
    if Path(exe).is_file():
        return exe
    msg = f"no anonymeter interpreter at {exe} (tests/run_reference.sh makes .venv-anon)"
    if os.environ.get("TABMEM_REQUIRE_REFERENCE") == "1":
        pytest.fail(msg)
    pytest.skip(msg)


def run_anonymeter(tmp: Path, train, synthetic, control, schema, *, aux, secrets, n_attacks, seed=0, attacks=None):
    """anonymeter's numbers on these tables (``anonymeter_ref.py``'s JSON)."""
    paths = {}
    for name, table in (("train", train), ("synthetic", synthetic), ("control", control)):
        paths[name] = str(tmp / f"{name}.csv")
        table.to_csv(paths[name], index=False)
    config = {
        **paths,
        "numerical": list(schema.numerical),
        "categorical": list(schema.categorical),
        "secrets": list(secrets),
        "aux": [list(aux[0]), list(aux[1])],
        "n_attacks": n_attacks,
        "n_cols": 3,
        "n_neighbors": 1,
        "confidence": 0.95,
        "seed": seed,
        "attacks": attacks,
    }
    (tmp / "config.json").write_text(json.dumps(config))
    out = tmp / "anonymeter.json"
    subprocess.run([anonymeter_python(), str(SCRIPT), str(tmp / "config.json"), str(out)], check=True, timeout=900)
    return json.loads(out.read_text())


def side_by_side(ours, theirs) -> list[tuple[str, dict, dict]]:
    """(risk name, tabmem's estimate dict, anonymeter's) for every risk."""
    d = ours.to_dict()
    rows = [(k, d[k], theirs[k]) for k in ("singling_out_univariate", "singling_out_multivariate", "linkability")]
    rows += [(f"inference[{c}]", d["inference"]["per_column"][c], theirs["inference"][c]) for c in ours.secrets]
    return rows


def _overlap(a: list[float], b: list[float]) -> bool:
    return a[0] <= b[1] + 1e-12 and b[0] <= a[1] + 1e-12


@pytest.mark.parametrize("which", ["leak", "fresh"])
def test_risks_agree_with_anonymeter_within_their_intervals(which, adult3, adult_leak, tmp_path):
    train, control, fresh, schema = adult3
    synthetic = adult_leak[2] if which == "leak" else fresh
    ours = evaluate_risk(train, synthetic, control, schema=schema, secrets=SECRETS, n_attacks=N_ATTACKS, seed=0)
    theirs = run_anonymeter(
        tmp_path, train, synthetic, control, schema, aux=ours.aux, secrets=SECRETS, n_attacks=N_ATTACKS
    )
    lines = []
    for name, o, t in side_by_side(ours, theirs):
        lines.append(
            f"{which:5s} {name:27s} tabmem {o['risk']:.3f} [{o['risk_ci'][0]:.3f}, {o['risk_ci'][1]:.3f}]"
            f"  anonymeter {t['risk']:.3f} [{t['risk_ci'][0]:.3f}, {t['risk_ci'][1]:.3f}]"
        )
    sys.stdout.write("\n" + "\n".join(lines) + "\n")
    for name, o, t in side_by_side(ours, theirs):
        assert _overlap(o["risk_ci"], t["risk_ci"]), (name, o["risk_ci"], t["risk_ci"])
        assert _overlap(o["attack_rate_ci"], t["attack_rate_ci"]), (name, "attack", o, t)
        assert _overlap(o["control_rate_ci"], t["control_rate_ci"]), (name, "control", o, t)
