"""``sample``: draw the table the evaluations read, with sampling options and defences.

Configured by a ``[[sampling]]`` entry (``options``: keyword arguments of the generator's
``sample`` listed in its ``sampling_options`` flag, e.g. ``{ tendency = 9.0 }`` for the LLM;
``defenses``: entries of :data:`tabmem.defenses.DEFENSES`, ``{ name = "digit_modifier", p_min =
0.05, p_max = 0.1 }``) and the ``[sample]`` table. Decoding-stage defences become
``logits_processor`` objects (generators whose ``sampling_options`` accept one);
post-processing defences are fitted on the training rows and transform the sampled table, in
the order given; ``draw = k`` makes an independent draw (another sampling seed). Without a
``[[sampling]]`` axis the step samples with the generator's defaults.
Writes ``synthetic.csv`` and ``summary.json`` (what was asked and the generator's sampling
statistics); like ``tabmem sample``.
"""

from __future__ import annotations

import inspect
from collections.abc import Mapping
from typing import Any

from tabmem._io import write_frame, write_json
from tabmem.errors import ParameterError, TabmemError
from tabmem.studies._fields import Field, integer, string
from tabmem.studies.estimate import sample_seconds
from tabmem.studies.steps.base import CellInfo, Step, StepContext, register_step
from tabmem.studies.store import MetricRow, metric


def _defense(spec: Mapping[str, Any], where: str) -> tuple[str, type, dict[str, Any]]:
    from tabmem.defenses import DEFENSES

    if not isinstance(spec, Mapping) or "name" not in spec:
        raise ParameterError(f"{where}defenses: each entry must be a table with a name, got {spec!r}")
    name = spec["name"]
    if name not in DEFENSES:
        raise ParameterError(f"{where}defenses: unknown defense {name!r} (available: {', '.join(DEFENSES.names())})")
    params = {k: v for k, v in spec.items() if k != "name"}
    return name, DEFENSES.get(name), params


@register_step("sample")
class SampleStep(Step):
    """Sample ``n`` rows from the trained model with the cell's sampling options and defences."""

    options = {
        "n": Field(None, integer(1, none=True), "rows to draw (default: as many as the training rows)"),
        "batch_size": Field(None, integer(1, none=True), "rows generated at once"),
        "device": Field(None, string(), "cpu, cuda or auto (default: the model's)"),
    }
    axis = "sampling"
    needs = ("model",)
    produces = {"synthetic": "synthetic.csv"}

    @classmethod
    def configure(cls, options: Mapping[str, Any], cell: CellInfo, where: str) -> dict[str, Any]:
        from tabmem.generators import GENERATORS

        entry = cell.sampling or {"label": "default", "options": {}, "defenses": [], "n": None, "draw": 0}
        gen_name = cell.generator["name"]
        allowed = tuple(GENERATORS.get(gen_name).sampling_options)
        where = f"{where}[[sampling]] {entry['label']!r}: "
        for key in entry["options"]:
            if key == "logits_processor" or key not in allowed:
                hint = f"its options: {', '.join(a for a in allowed if a != 'logits_processor') or 'none'}"
                raise ParameterError(
                    f"{where}options.{key} is not a sampling option of generator {gen_name!r} ({hint}); "
                    f"exclude the pair with [[exclude]] generator = {cell.generator['label']!r}, sampling = {entry['label']!r}"
                )
        defenses = []
        for spec in entry["defenses"]:
            name, dcls, params = _defense(spec, where)
            stage = getattr(dcls, "stage", "postprocess")
            if stage == "decoding" and "logits_processor" not in allowed:
                raise ParameterError(
                    f"{where}defense {name!r} acts while decoding tokens; generator {gen_name!r} does not decode tokens"
                )
            try:
                dcls(**params)  # the defence checks its own arguments
            except TypeError as exc:
                raise ParameterError(f"{where}defense {name!r}: bad argument ({exc})") from None
            except TabmemError as exc:
                raise ParameterError(f"{where}defense {name!r}: {exc}") from None
            defenses.append({"name": name, "stage": stage, "params": params})
        n = entry["n"] if entry["n"] is not None else options["n"]
        return {
            "n": n,
            "batch_size": options["batch_size"],
            "device": options["device"],
            "options": dict(entry["options"]),
            "defenses": defenses,
            "draw": entry["draw"],
        }

    def run(self, ctx: StepContext) -> list[MetricRow]:
        from tabmem.defenses import DEFENSES
        from tabmem.generators import load_generator

        c = self.config
        gen = load_generator(ctx.artifact("model"), device=c["device"])
        n = int(c["n"] or len(ctx.data.train))
        kwargs = dict(c["options"])
        decoding = [DEFENSES.create(d["name"], **d["params"]) for d in c["defenses"] if d["stage"] == "decoding"]
        if decoding:
            kwargs["logits_processor"] = decoding
        seed = ctx.seed_for(f"sample-{c['draw']}")
        table = gen.sample(n, random_state=seed, batch_size=c["batch_size"], **kwargs)
        stats = dict(getattr(gen, "last_sample_stats_", None) or {})
        for i, d in enumerate(x for x in c["defenses"] if x["stage"] != "decoding"):
            params = dict(d["params"])
            dcls = DEFENSES.get(d["name"])
            if "random_state" in inspect.signature(dcls).parameters:
                params.setdefault("random_state", ctx.seed_for(f"defense-{i}"))
            defense = dcls(**params)
            if hasattr(defense, "fit"):
                defense.fit(ctx.data.train, ctx.data.schema)
            table = defense.transform(table)
        write_frame(ctx.out / "synthetic.csv", table)
        write_json(
            ctx.out / "summary.json",
            {"n": n, "seed": seed, "options": c["options"], "defenses": c["defenses"], "sample_stats": stats},
        )
        return [metric("n_rows", len(table)), metric("invalid_rows", stats.get("invalid", 0))]

    @classmethod
    def estimate(cls, config: Mapping[str, Any], cell: CellInfo) -> float:
        n = float(config["n"] or cell.dataset.n_rows or 10_000)
        return sample_seconds(cell.generator["name"], cell.generator["preset"], n, float(cell.dataset.n_columns))
