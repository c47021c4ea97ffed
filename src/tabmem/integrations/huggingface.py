"""Memorization tracking for a ``transformers.Trainer``: a ``TrainerCallback`` (needs ``pip install 'tabmem[llm]'``).

Every ``every`` epochs (and after the last one) :class:`MemorizationCallback` calls your
``sample_fn(n, seed) -> DataFrame`` (``n`` rows of the training table's columns, from the model as it
is now; decode and parse the model's text your way) and scores the table with
:meth:`MemorizationTracker.observe <tabmem.memorization.tracker.MemorizationTracker.observe>`,
the code behind ``tabmem train --track-every`` and ``tabmem track``::

    from tabmem.integrations.huggingface import MemorizationCallback

    def sample_fn(n, seed):                   # the rows your model writes now
        torch.manual_seed(seed)
        ids = model.generate(prompt_ids.repeat(n, 1), do_sample=True, max_new_tokens=64)
        return parse_rows(decode(ids))        # a DataFrame with the training table's columns

    callback = MemorizationCallback(train_df, sample_fn, every=5, out_dir="runs/gpt2-tracked")
    Trainer(model=model, args=args, train_dataset=ds, callbacks=[callback]).train()
    callback.summary_                         # the final audit; `tabmem rank --run runs/gpt2-tracked`

With ``out_dir`` the callback writes a ``tabmem track`` run directory as training goes
(:class:`tabmem.runs.track.TrackRun`: ``tracking/``, ``samples/epoch=EEEEEE.csv`` with each tracked
epoch's table, ``snapshots.csv``) and, when training ends, the final audit of the last tracked
epoch's table (``synthetic.csv``, ``summary.json``, ``dynamics.json``), so ``tabmem rank``,
``tabmem report`` and ``tabmem attack --run`` read it. Without it the records stay in memory
(``callback.tracker``).

Measuring never changes what is measured: ``sample_fn`` runs under ``torch.no_grad()`` with the model
in eval mode, and the Python, NumPy and torch (CPU and CUDA) random states and every module's train
mode are restored afterwards, so the trained weights are those of a run without the callback (the
tests check it). ``seed`` is a function of the callback's ``seed`` and the epoch only.
"""

from __future__ import annotations

import contextlib
import os
import random
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

try:
    import torch
    from transformers import TrainerCallback
except ModuleNotFoundError as exc:  # the optional dependency: one clear line
    raise ModuleNotFoundError(
        f"tabmem.integrations.huggingface needs the optional dependency {exc.name!r} (transformers and torch): "
        "pip install 'tabmem[llm]'",
        name=exc.name,
    ) from None

from tabmem._checks import check_positive_int
from tabmem._io import write_frame
from tabmem.data.schema import Schema
from tabmem.errors import TabmemError
from tabmem.memorization.tracker import MemorizationTracker
from tabmem.neighbors.distances import DEFAULT_DISTANCE

__all__ = ["MemorizationCallback", "preserved_state"]

SampleFn = Callable[[int, int], pd.DataFrame]


@contextlib.contextmanager
def preserved_state(model: Any = None) -> Iterator[None]:
    """Run a block (a sample drawn mid-training) without changing what training does next: no gradients, the
    model in eval mode, and afterwards every random state (Python, NumPy, torch CPU and CUDA) and every
    module's train mode as they were."""
    # the global NumPy state is what transformers.set_seed seeds and a sample_fn may draw from
    py, np_state, cpu = random.getstate(), np.random.get_state(), torch.get_rng_state()  # noqa: NPY002
    cuda = torch.cuda.get_rng_state_all() if torch.cuda.is_available() else None
    modes = [(m, m.training) for m in model.modules()] if model is not None and hasattr(model, "modules") else []
    try:
        if modes:
            model.eval()
        with torch.no_grad():
            yield
    finally:
        random.setstate(py)
        np.random.set_state(np_state)  # noqa: NPY002
        torch.set_rng_state(cpu)
        if cuda is not None:
            torch.cuda.set_rng_state_all(cuda)
        for module, mode in modes:
            module.train(mode)


class MemorizationCallback(TrainerCallback):
    """Track per-record memorization of a model trained by ``transformers.Trainer`` (module docstring).

    Parameters
    ----------
    train:
        The training table the model is trained on (its serialized rows), in the order of its records.
    sample_fn:
        ``sample_fn(n, seed) -> DataFrame``: ``n`` rows from the model now (the training table's columns;
        fewer rows are scored as they are, a table that does not fit the schema is an error naming the epoch).
    schema:
        The table's column kinds (default: inferred, as ``tabmem track`` infers them from a file).
    every:
        Track epochs that are multiples of ``every`` (and the last epoch of the run).
    n_samples:
        Rows asked of ``sample_fn`` per tracked epoch (default |train|, as the papers do).
    out_dir:
        A run directory (``tabmem track``'s files) written as training goes; ``None``: memory only.
    holdout, distance, seed, generator, overwrite, save_samples:
        The final audit's real unseen rows; the replica distance; the seed of the samples (``seed`` of
        ``sample_fn`` at epoch e is derived from it and e) and of the final audit; the generator's name in
        the run's config; replace a track run in ``out_dir``; write each tracked epoch's table to
        ``out_dir/samples/``.

    After training: ``tracker`` (the :class:`MemorizationTracker`: ``history_``, ``records_``,
    ``dynamics()``), ``epochs_`` (the tracked epochs) and, with ``out_dir``, ``summary_``.
    """

    def __init__(
        self,
        train: pd.DataFrame,
        sample_fn: SampleFn,
        *,
        schema: Schema | None = None,
        every: int = 1,
        n_samples: int | None = None,
        out_dir: str | os.PathLike | None = None,
        holdout: pd.DataFrame | None = None,
        distance: str = DEFAULT_DISTANCE,
        seed: int = 0,
        generator: str = "huggingface",
        overwrite: bool = False,
        save_samples: bool = True,
    ) -> None:
        if not callable(sample_fn):
            raise TabmemError(
                f"MemorizationCallback: sample_fn must be a function (n, seed) -> DataFrame, got {type(sample_fn).__name__}"
            )
        self.train = train
        self.sample_fn = sample_fn
        self.schema = schema if schema is not None else Schema.infer(train)
        self.every = check_positive_int("MemorizationCallback: every", every)
        self.n_samples = check_positive_int("MemorizationCallback: n_samples", n_samples, allow_none=True)
        self.out_dir = Path(out_dir) if out_dir is not None else None
        self.holdout, self.distance, self.seed, self.generator = holdout, distance, int(seed), generator
        self.overwrite, self.save_samples = overwrite, save_samples
        self.tracker = MemorizationTracker(every=self.every, n_samples=n_samples, distance=distance, random_state=seed)
        self.summary_: dict[str, Any] | None = None
        self._run: Any = None

    @property
    def epochs_(self) -> list[int]:
        return [int(e["epoch"]) for e in self.tracker.epochs_]

    # ------------------------------------------------------------ Trainer hooks
    def on_train_begin(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        self._close_previous()
        if not getattr(state, "is_world_process_zero", True):  # distributed training: one process tracks
            return
        if self.out_dir is None:
            self.tracker.start(self.train, self.schema)
            return
        from tabmem.runs.track import TrackRun

        run = TrackRun(self.train, self.schema, self.out_dir, holdout=self.holdout, distance=self.distance,
                       generator=self.generator, seed=self.seed, source={"huggingface": True})  # fmt: skip
        run.open("sample_fn of tabmem.integrations.huggingface.MemorizationCallback", overwrite=self.overwrite)
        self._run, self.tracker = run, run.tracker

    def on_epoch_end(self, args: Any, state: Any, control: Any, model: Any = None, **kwargs: Any) -> None:
        if not getattr(state, "is_world_process_zero", True):
            return
        try:
            self._track(args, state, model)
        except BaseException:
            self._close_previous()  # the lock is released; what was written stays
            raise

    def _track(self, args: Any, state: Any, model: Any) -> None:
        epoch = int(round(float(state.epoch or 0)))
        total = int(round(float(getattr(state, "num_train_epochs", None) or args.num_train_epochs)))
        if epoch < 1 or not (epoch % self.every == 0 or epoch == total):
            return
        if self.epochs_ and epoch <= self.epochs_[-1]:
            return
        n = int(self.n_samples or len(self.train))
        with preserved_state(model):
            synthetic = self.sample_fn(n, self.tracker.sample_seed(epoch))
        if not isinstance(synthetic, pd.DataFrame):
            raise TabmemError(
                f"MemorizationCallback: sample_fn returned a {type(synthetic).__name__} at epoch {epoch}, not a DataFrame"
            )
        if len(synthetic) == 0:
            raise TabmemError(f"MemorizationCallback: sample_fn returned no rows at epoch {epoch}")
        name = f"sample_fn (epoch {epoch})"
        if self._run is None:
            self.tracker.observe(epoch, synthetic, name=name)
            return
        file = None
        if self.save_samples:
            self._run.check(synthetic, name)  # a table that cannot be scored is not written
            file = write_frame(self._run.path / "samples" / f"epoch={epoch:06d}.csv", synthetic)
        self._run.observe(epoch, synthetic, name=name, file=file)

    def on_train_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        if self._run is not None:
            run, self._run = self._run, None
            self.summary_ = run.close()

    def _close_previous(self) -> None:
        """A run left open by a training that raised (its lock released; its files stay)."""
        if self._run is not None:
            self._run.abort()
            self._run = None
