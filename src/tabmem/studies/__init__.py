"""Studies (``tabmem run``): grids of cells over datasets, generators, mitigations and seeds.

:func:`~tabmem.studies.study.load_study` reads a TOML study file (axes, grid, cell hashes),
:func:`~tabmem.studies.runner.run_study` runs its cells on an executor (local processes or Ray)
through registered steps (:mod:`tabmem.studies.steps`, thin calls into :mod:`tabmem.runs`), and
:func:`~tabmem.studies.store.load_results` reads the tidy result table. :mod:`~tabmem.studies.demo`
is the demo study (``tabmem demo``).
"""
