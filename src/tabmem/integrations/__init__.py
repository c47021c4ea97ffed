"""Bridges from other training frameworks to tabmem's tracking (each module imports its framework lazily).

* :mod:`tabmem.integrations.huggingface`: a ``transformers`` ``TrainerCallback`` that samples every
  k epochs through a function you give and writes a ``tabmem track`` run directory (needs the
  ``llm`` extra: ``pip install 'tabmem[llm]'``).

Nothing in tabmem's core imports this package.
"""
