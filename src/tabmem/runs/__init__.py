"""Runs: each workflow once, as a library function that writes a resumable run directory.

* :mod:`~tabmem.runs.train`: a generator trained with tracking, checkpoints and the final audit
  (``tabmem train``);
* :mod:`~tabmem.runs.audit`: replica detection and distance evidence, one distance at a time
  (``tabmem audit``, the study's ``audit`` step);
* :mod:`~tabmem.runs.attack` and :mod:`~tabmem.runs.shadows`: membership inference, with shadow
  generators trained in parallel and cached (``tabmem attack``);
* :mod:`~tabmem.runs.dynamiccut`: DynamicCut's warm-up, ranking, pruning and retraining
  (``tabmem dynamiccut``);
* :mod:`~tabmem.runs.risk`: the three WP29 risks (singling out, linkability, inference) against a
  control (``tabmem risk``, the study's ``risk`` step).

The command line (:mod:`tabmem.cli`) and the study steps (:mod:`tabmem.studies.steps`) are thin
adapters over these functions.
"""
