"""ParallelKittens without NVLink multicast for ``BACKEND = "parallelkittens"`` solutions
(docs/backends/parallelkittens.md), under its public name; the definition is
``problems/backends/parallelkittens.py``."""

from __future__ import annotations

from problems.backends.parallelkittens import *  # noqa: F403  (everything the definition exports: its __all__)
from problems.backends.parallelkittens import __all__  # noqa: F401
