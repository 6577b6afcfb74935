"""The static check: what it flags, what it refuses (with the rule and the line), and that honest code passes."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from evaluator.host.evaluate import evaluate
from evaluator.contract.spec import EvalSpec
from evaluator.analysis.static_checks import check

REPO = Path(__file__).resolve().parents[3]
HONEST_FILES = sorted(
    [
        *REPO.glob("problems/*/*/solutions/correct/*.py"),
        *REPO.glob("problems/*/*/reference.py"),
        *REPO.glob("benchmarks/solutions/*.py"),
        *(REPO / "tests" / "evaluator" / "honest").glob("*.py"),
    ]
)


@pytest.mark.parametrize("path", HONEST_FILES, ids=lambda p: str(p.relative_to(REPO)))
def test_honest_code_in_the_repository_is_not_refused(path: Path) -> None:
    report = check(path.read_text())
    assert report.parsed and report.refusals == [], [str(f) for f in report.refusals]


@pytest.mark.parametrize(
    "source, names",
    [
        (
            "import torch.distributed as dist\ndef solution(x):\n    dist.all_reduce(x)\n",
            ["torch.distributed.all_reduce"],
        ),
        (
            "from torch.distributed import all_gather_into_tensor as ag\nag(a, b)\n",
            ["torch.distributed.all_gather_into_tensor"],
        ),
        ("import torch\ntorch.distributed.reduce_scatter_tensor(a, b)\n", ["torch.distributed.reduce_scatter_tensor"]),
        (
            "import torch.distributed._functional_collectives as funcol\nfuncol.all_reduce(x, 'sum', g)\n",
            ["torch.distributed._functional_collectives.all_reduce"],
        ),
        (
            "import torch\ntorch.ops._c10d_functional.all_reduce(x, 'sum', 'g')\n",
            ["torch.ops._c10d_functional.all_reduce"],
        ),
        (
            "import torch.distributed as dist\nops = [dist.P2POp(dist.isend, x, 1)]\ndist.batch_isend_irecv(ops)\n",
            ["torch.distributed.batch_isend_irecv", "torch.distributed.isend"],
        ),
        ("import torch.distributed._symmetric_memory as symm\nbuf = symm.empty(4)\n", []),
    ],
)
def test_collectives_are_flagged_with_the_names_found(source: str, names: list[str]) -> None:
    report = check(source)
    assert report.refusals == []
    assert report.collectives == names and report.uses_nccl == bool(names)


REFUSED = [
    ("import evaluator.correctness", "harness-import"),
    ("from problems.registry import get", "harness-import"),
    ("import importlib\nimportlib.import_module('evaluator.rank')", "harness-import"),
    ("import sys\nsys.modules['torch.distributed'].all_reduce = f", "sys-modules"),
    ("import sys\nm = sys.modules.get('evaluator.correctness')", "sys-modules"),
    ("import sys\nf = sys._getframe(1)", "introspection"),
    ("import inspect\nfor fr in inspect.stack(): pass", "introspection"),
    (
        "def f():\n    try:\n        raise ValueError\n    except ValueError as e:\n"
        "        return e.__traceback__.tb_frame",
        "introspection",
    ),
    ("import gc\nobjs = gc.get_objects()", "introspection"),
    ("import torch\ng = torch.distributed.all_reduce.__globals__", "introspection"),
    ("import ctypes\nctypes.memmove(a, b, 8)", "ctypes"),
    ("import ctypes\nx = ctypes.c_char.from_address(123)", "ctypes"),
    ("data = open('/proc/self/mem', 'rb')", "memory"),
    ("import os\nos.fork()", "process"),
    ("import os\nos.kill(1234, 9)", "process"),
    ("import subprocess\nsubprocess.run(['ls'])", "process"),
    ("import os\nos._exit(0)", "exit"),
    ("import sys\nsys.exit(0)", "exit"),
    ("raise SystemExit(0)", "exit"),
    ("import sys\nsys.settrace(lambda *a: None)", "hooks"),
    ("import signal\nsignal.signal(signal.SIGALRM, f)", "hooks"),
    ("import gc\ngc.callbacks.append(f)", "hooks"),
    ("import socket\ns = socket.socket()", "network"),
    ("import urllib.request", "network"),
    ("import time\ntime.perf_counter = lambda: 0.0", "patching"),
    ("import torch\ntorch.Tensor.__eq__ = lambda a, b: True", "patching"),
    ("import torch\nsetattr(torch.cuda.Event, 'elapsed_time', f)", "patching"),
    ("import torch.distributed as dist\ndist.all_reduce = f", "patching"),
    ("import builtins\nbuiltins.isinstance = f", "patching"),
    ("def f(): pass\nf.__code__ = g.__code__", "patching"),
    ("import torch\ntorch.backends.cuda.matmul.allow_tf32 = True", "patching"),
    ("import torch\nlib = torch.library.Library('aten', 'IMPL')", "operators"),
    ("import os\nos.environ['NCCL_NVLS_ENABLE'] = '1'", "multicast"),
    ("import glob\nfiles = glob.glob('/tmp/arena-eval-*/solution/*.py')", "other-evaluations"),
    ("import sys\nf = getattr(sys, name)", "obfuscation"),
    # Memory by address without ctypes: torch's storage over a pointer, numpy's view of one, an array interface.
    ("import torch\ns = torch._C._construct_storage_from_data_pointer(123, torch.device('cpu'), 64)", "memory"),
    ("import numpy as np\na = np.ctypeslib.as_array(p, shape=(4,))", "memory"),
    ("import numpy\nclass A:\n    __array_interface__ = {'data': (123, False)}", "memory"),
    ("import numpy\nA = type('A', (), {'__array_interface__': {'data': (123, False)}})", "memory"),
    ("class A:\n    @property\n    def __cuda_array_interface__(self):\n        return {}", "memory"),
    ("a = object()\nsetattr(a, '__array_interface__', {})", "memory"),
]


@pytest.mark.parametrize("source, rule", REFUSED, ids=[r for _, r in REFUSED])
def test_forbidden_code_is_refused_naming_the_rule_and_line(source: str, rule: str) -> None:
    report = check(textwrap.dedent(source))
    assert rule in {f.rule for f in report.refusals}, [str(f) for f in report.refusals]
    assert report.message().startswith("the static check refused the solution: line ")


@pytest.mark.parametrize(
    "source",
    [
        "import torch\ntorch._inductor.config.coordinate_descent_tuning = True",
        "import torch\nimport sys\nif 'triton' in sys.modules:\n    pass",
        "import os\nn = int(os.environ.get('WORLD_SIZE', '1'))",
        "import os\nos.kill(os.getpid(), 0)",
        "import torch\nx = getattr(torch, 'bfloat16')\ny = getattr(torch, name)",
        "import torch\nlib = torch.library.Library('mykernels', 'DEF')",
        "import torch\nfrom torch.utils.cpp_extension import load_inline",
        "import time\nt0 = time.perf_counter()",
        "import torch\ndef f(t):\n    return hasattr(t, '__cuda_array_interface__') and t.__cuda_array_interface__",
    ],
)
def test_ordinary_code_is_not_refused(source: str) -> None:
    assert check(source).refusals == []


def test_source_that_does_not_parse_is_left_to_the_ranks() -> None:
    report = check("def solution(x)\n    return x\n")
    assert not report.parsed and report.refusals == []


def test_a_refused_solution_is_rejected_before_any_process_starts() -> None:
    doc = evaluate(
        EvalSpec(
            problem_id="collectives/all_reduce",
            profile="cpu-gloo-2",
            solution_source="import os\nimport torch.distributed as dist\ndef solution(x):\n    os._exit(0)\n",
        )
    )
    assert doc["verdict"] == "rejected" and "line 4" in doc["message"] and "os._exit" in doc["message"]
    assert doc["phases"]["total"] < 1.0 and doc["logs"] == {}
    assert doc["static_checks"]["rules"] == ["exit"]
    assert doc["flags"]["uses_nccl"] is False


# The names are assembled so that no file of this repository spells a multicast call out (hosts grep for them).
@pytest.mark.parametrize(
    "snippet",
    [
        'CUDA = "CUresult r = cu' + 'MulticastCreate(&handle, &prop);"',
        "out = torch.ops.symm_mem.multi" + "mem_all_reduce_(buf, 'sum', group)",
    ],
)
def test_nvlink_multicast_is_refused_even_inside_cuda_source_strings(snippet):
    report = check("import torch\n" + snippet + "\ndef solution(x):\n    return x\n")
    assert report.refused
    assert report.refusals[0].rule == "multicast" and report.refusals[0].line == 2
