"""Runs: each workflow once, as a library function that writes a resumable run directory.

* :mod:`~tabmem.runs.train`: a generator trained with tracking, checkpoints and the final audit
  (``tabmem train``);
* :mod:`~tabmem.runs.audit`: replica detection and distance evidence, one distance at a time
  (``tabmem audit``, the study's ``audit`` step);
* :mod:`~tabmem.runs.attack` and :mod:`~tabmem.runs.shadows`: membership inference, with shadow
  generators trained in parallel and cached (``tabmem attack``);
* :mod:`~tabmem.runs.dynamiccut`: DynamicCut's warm-up, ranking, pruning and retraining
  (``tabmem dynamiccut``).

The command line (:mod:`tabmem.cli`) and the study steps (:mod:`tabmem.studies.steps`) are thin
adapters over these functions.
"""
