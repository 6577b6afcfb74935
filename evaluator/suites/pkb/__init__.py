"""ParallelKernelBench (PKB) interoperability: ``arena import-pkb PATH [--into DIR]`` (docs/pkb.md).

A PKB checkout that the user has holds ``reference/<id>_<name>.py`` files, each exporting ``solution(*inputs)``
built on torch.distributed, and ``utils/input_output_tensors.py`` whose ``create_input_tensor`` builds a rank's
inputs. This module reads such a checkout and writes an *imported suite* (default ``$ARENA_SUITES_DIR/pkb``):
``suite.toml`` (where the checkout is, which commit) and one problem folder per reference file, holding a
generated ``problem.toml``, a generated statement and a small adapter ``reference.py`` that loads the checkout's
files by absolute path at evaluation time (``problems/imported.py``). None of the checkout's code or text is
copied. The registry then finds the problems as ``pkb/<id>_<name>`` (``problems.registry.get``/``catalogue``).

Inputs. Because some PKB inputs are constants, imported problems are evaluated on *randomized* inputs (every
floating-point input replaced by seeded random values; see ``problems/imported.py``) unless the reference
itself fails on them, in which case the checkout's *original* inputs are used and every result says so. The
decision comes from a trusted run of the reference alone (no user code loaded; NaN/Inf outputs count as a
failure), on randomized inputs and, if they fail, on original inputs:
  - at import, on ``cpu-gloo-2`` (CPU, gloo, 2 ranks, the ``small`` preset), written to each problem's
    ``probe.toml``; a reference that cannot run on the CPU at all leaves the problem ``undecided``;
  - at evaluation, on the evaluation's own profile, when nothing conclusive was recorded, or when a
    randomized evaluation ended in ``runtime_error``/``timeout`` (the trusted run then tells whether the
    reference or the solution failed). What an evaluation learns is recorded in ``probe.toml`` too.
``probe.toml`` is not part of the content hash, so a portal and a worker that imported the same commit agree
on problem hashes whatever their hosts could run.
"""

from __future__ import annotations

import json
import re

SOURCE = "ParallelKernelBench"
DEFAULT_SUITE = "pkb"
BACKENDS = ("cuda", "triton", "parallelkittens")
REFERENCE_DIR = "reference"
INPUTS_FILE = "utils/input_output_tensors.py"
GENERATOR = "create_input_tensor"
REFERENCE_NAME = re.compile(r"^(?P<number>\d+)_(?P<name>[A-Za-z0-9][A-Za-z0-9_]*)\.py$")
TOLERANCE = 1e-2  # PKB's own absolute and relative tolerance
WORLD_SIZES = (2, 4, 8)
# The checkout's default base shape and dtype on GPUs; a smaller float32 size for the CPU profiles.
PRESETS = {"small": ("float32", "256x256"), "bench": ("bfloat16", "1024x1024")}
PROBE_FILE = "probe.toml"
IMPORT_PROFILE = "cpu-gloo-2"
PROBE_SEED = 20_240_601  # fixed, so two hosts importing the same commit probe the same inputs
PROBE_TIMEOUTS = {"setup": 90.0, "correctness": 90.0, "timing": 10.0}
ORIGINAL_LABEL = "original (reference fails on random inputs)"


def toml_str(value: str) -> str:
    return json.dumps(value, ensure_ascii=False)
