"""Starter files: a first solution for one problem, per backend, that a newcomer downloads from the problem's page,
runs with ``arena eval`` as given, and then changes.

Every starter is generated from the problem's own reference (never written by hand per problem): the reference's
``solution`` with the top-level functions and constants it uses, and whatever it takes from the ``problems`` package
(which solutions cannot import: the sandbox does not hold it) copied in, so the file stands alone. As given, a
starter computes what the reference computes, so it passes; it is as fast as the baseline, and the point is to
replace its body.

- ``torch-distributed``: plain PyTorch + torch.distributed. Runs everywhere, CPU profiles included.
- ``cuda``, ``triton``, ``symmetric-memory``: the same code plus that backend's set-up done on the first call (not
  timed) and used in the timed path in the simplest correct way (a copy kernel of each backend, a symmetric-memory
  buffer staged through); they need a GPU profile (the sandbox of a CPU profile has neither nvcc nor Triton's
  compiler nor CUDA memory), and say so.

Torch-free on purpose, like ``evaluator.prompts``: the portal renders them on hosts without torch.
"""

from __future__ import annotations

import ast
import re
import textwrap
from dataclasses import dataclass
from pathlib import Path

from evaluator.contract.profiles import PROFILES
from problems.registry import Problem

REPO = Path(__file__).resolve().parent.parent
PLAIN = "torch-distributed"
STARTERS = (PLAIN, "cuda", "triton", "symmetric-memory")
GPU_ONLY = frozenset({"cuda", "triton", "symmetric-memory"})
TITLES = {
    PLAIN: "plain PyTorch + torch.distributed",
    "cuda": "CUDA via torch.utils.cpp_extension.load_inline",
    "triton": "Triton",
    "symmetric-memory": "PyTorch symmetric memory",
}
GUIDES = {"cuda": "cuda", "triton": "triton", "symmetric-memory": "symmetric-memory"}
RULES = (
    "Define `solution` at module level with the reference's signature; it is called on every rank after the process "
    "group is up and the rank's device is current, and returns what the reference returns (same number of tensors, "
    "shapes, dtypes, on the rank's device; new tensors, inputs left unchanged).",
    "Do not import from `problems` (the reference's helpers are not in the sandbox): copy what you need, as this "
    "file does.",
    'Declare the backend you use with a module-level `BACKEND = "cuda"` (or `"triton"`, `"symmetric-memory"`, '
    '`"parallelkittens"`, `"nvshmem"`); plain PyTorch needs none.',
    "The first call is not timed: build kernels, allocate buffers and rendezvous there, keep them in globals; every "
    "later call is timed.",
    "No files, no network, no threads or processes of your own: the solution runs in a sandbox.",
)


# References whose outputs share memory (views of one buffer), which the judge takes from the baseline but refuses
# from a solution ("outputs must be new tensors"): their plain starter returns a copy of each output. Found by
# running every plain starter through `arena eval` on CPU.
SEPARATE_OUTPUTS = {
    "data-parallel/ddp_bucketed_overlap": "the reference returns views of its all-reduced bucket buffers",
    "sequence-parallel/ring_attention_backward": (
        "the reference returns dk and dv as slices of one reduce-scattered "
        "buffer (`.to()` keeps a view when the dtype is already right)"
    ),
}


class StarterError(ValueError):
    """The problem's reference has no plain ``def solution`` to start from (an imported suite's assignment)."""


@dataclass(frozen=True)
class Starter:
    backend: str
    filename: str
    source: str
    gpu_only: bool
    title: str


def signature(problem: Problem) -> str:
    """``solution(x: torch.Tensor) -> torch.Tensor``, as the reference writes it."""
    node = _solution_def(ast.parse(problem.reference_source))
    if node is None:
        return "solution(*inputs)"
    returns = f" -> {ast.unparse(node.returns)}" if node.returns else ""
    return f"solution({ast.unparse(node.args)}){returns}"


def statement_part(problem: Problem, label: str) -> str:
    """The statement's ``**Inputs ...**`` or ``**Return ...**`` paragraph (with its list), as Markdown; "" if none."""
    lines = problem.statement.splitlines()
    out: list[str] = []
    for line in lines:
        if out and (line.startswith("**") or line.startswith("#") or line.startswith("Sizes:")):
            break
        if out or line.startswith(f"**{label}"):
            out.append(line)
    return "\n".join(out).strip()


def profiles_for(problem: Problem, device: str) -> list[str]:
    """The problem's profiles on ``device``, a multi-node one first for a problem tagged inter-node."""
    names = [n for n, p in PROFILES.items() if p.device == device and p.world_size in problem.world_sizes]
    internode = "inter-node" in problem.tags
    return sorted(names, key=lambda n: (PROFILES[n].nodes > 1) != internode)


def commands(problem: Problem, filename: str, gpu_only: bool) -> list[tuple[str, str]]:
    """(what it does, the command line) for a starter saved as ``filename``."""
    cpu, gpu = (profiles_for(problem, "cpu") or [None])[0], (profiles_for(problem, "cuda") or [None])[0]
    rows = []
    if cpu and not gpu_only:
        rows.append(
            (
                "evaluate it here, on CPU, no portal",
                f"arena eval --problem {problem.id} --solution {filename} --hardware {cpu}",
            )
        )
        rows.append(
            (
                "an unranked test on the portal (after `arena login`)",
                f"arena test --problem {problem.id} --solution {filename} --hardware {cpu}",
            )
        )
    if gpu:
        rows.append(
            (
                "evaluate it on a GPU host of yours" if gpu_only else "evaluate it on a GPU host of yours",
                f"arena eval --problem {problem.id} --solution {filename} --hardware {gpu}",
            )
        )
        rows.append(
            (
                "an unranked test on the portal's GPUs, with quick timing",
                f"arena test --problem {problem.id} --solution {filename} --hardware {gpu} --timing",
            )
        )
        rows.append(
            ("submit it for the ranking", f"arena submit --problem {problem.id} --solution {filename} --hardware {gpu}")
        )
    elif cpu:
        rows.append(("submit it", f"arena submit --problem {problem.id} --solution {filename} --hardware {cpu}"))
    return rows


def starter_filename(problem: Problem, backend: str) -> str:
    name = problem.id.rsplit("/", 1)[-1].replace("-", "_")
    return f"{name}_solution.py" if backend == PLAIN else f"{name}_{backend.replace('-', '_')}.py"


def starters(problem: Problem) -> list[Starter]:
    """Every starter of a problem: plain torch.distributed first; the GPU ones where a GPU profile runs it."""
    backends = [PLAIN] + ([b for b in STARTERS if b != PLAIN] if profiles_for(problem, "cuda") else [])
    return [starter(problem, b) for b in backends]


def starter(problem: Problem, backend: str) -> Starter:
    if backend not in STARTERS:
        raise StarterError(f"no starter for backend {backend!r}; there are {', '.join(STARTERS)}")
    filename = starter_filename(problem, backend)
    imports, body = _standalone(problem)
    header = _header(problem, backend, filename)
    if backend == PLAIN and problem.id in SEPARATE_OUTPUTS:
        code = _separate(problem, header, imports, body)
    elif backend == PLAIN:
        code = "\n".join([header, "", imports, "", "", body]).rstrip() + "\n"
    else:
        code = _gpu(problem, backend, header, imports, body)
    ast.parse(code)  # a starter that is not Python would be a bug here, not the reader's
    return Starter(backend=backend, filename=filename, source=code, gpu_only=backend in GPU_ONLY, title=TITLES[backend])


# --- the reference, made to stand alone ----------------------------------------------------------------------


def _solution_def(tree: ast.Module) -> ast.FunctionDef | None:
    return next((n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == "solution"), None)


def _bound_names(node: ast.stmt) -> list[str]:
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return [node.name]
    if isinstance(node, ast.Assign):  # `A = ...` and `A, B = ...`
        return [n.id for t in node.targets for n in ast.walk(t) if isinstance(n, ast.Name)]
    if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
        return [node.target.id]
    return []


def _segment(lines: list[str], node: ast.stmt) -> str:
    start = min([node.lineno] + [d.lineno for d in getattr(node, "decorator_list", [])])
    return "\n".join(lines[start - 1 : node.end_lineno])


def _module_file(module: str) -> Path:
    path = REPO / Path(*module.split("."))
    return path / "__init__.py" if path.is_dir() else path.with_suffix(".py")


class _Module:
    """One source file's top-level definitions, imports, and what it takes from ``problems``."""

    def __init__(self, source: str) -> None:
        self.lines = source.splitlines()
        self.tree = ast.parse(source)
        self.defs: dict[str, ast.stmt] = {}
        self.imports: list[str] = []
        self.from_problems: dict[str, tuple[str, str]] = {}  # local name -> (module, its name there)
        for node in self.tree.body:
            for name in _bound_names(node):
                self.defs[name] = node
            if isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] == "problems":
                for alias in node.names:
                    self.from_problems[alias.asname or alias.name] = (node.module, alias.name)
            elif isinstance(node, ast.ImportFrom) and node.module == "__future__":
                continue
            elif isinstance(node, ast.Import) and any(a.name.split(".")[0] == "problems" for a in node.names):
                raise StarterError("the reference imports the problems package as a module")
            elif isinstance(node, (ast.Import, ast.ImportFrom)):
                self.imports.append(_segment(self.lines, node))

    def needed(self, roots: list[str]) -> tuple[list[ast.stmt], set[tuple[str, str]]]:
        """The top-level statements ``roots`` use, directly or not, in source order; and the ``problems`` names."""
        seen: set[str] = set()
        outside: set[tuple[str, str]] = set()
        todo = list(roots)
        while todo:
            name = todo.pop()
            if name in seen:
                continue
            seen.add(name)
            if name in self.from_problems:
                outside.add(self.from_problems[name])
                continue
            node = self.defs.get(name)
            if node is None:
                continue
            for sub in ast.walk(node):
                if isinstance(sub, ast.Name) and sub.id not in seen:
                    todo.append(sub.id)
        nodes = [n for n in self.tree.body if any(name in seen for name in _bound_names(n))]
        return nodes, outside


def _standalone(problem: Problem) -> tuple[str, str]:
    """(imports, code): the reference's ``solution`` and what it uses, helpers from ``problems`` copied in."""
    reference = _Module(problem.reference_source)
    if _solution_def(reference.tree) is None:
        raise StarterError(f"{problem.id}'s reference binds `solution` by assignment; start from its file instead")
    nodes, outside = reference.needed(["solution"])
    imports = list(reference.imports)
    copied: list[str] = []
    done: set[tuple[str, str]] = set()
    while outside - done:
        module, name = sorted(outside - done)[0]
        done.add((module, name))
        helper = _Module(_module_file(module).read_text())
        helper_nodes, more = helper.needed([name])
        outside |= more
        imports += [i for i in helper.imports if i not in imports]
        block = "\n\n\n".join(_segment(helper.lines, n) for n in helper_nodes)
        if block and block not in copied:
            where = module.replace(".", "/") + ".py"
            copied.append(f"# Copied here out of {where}: a solution cannot import the `problems` package.\n" + block)
    own = "\n\n\n".join(_segment(reference.lines, n) for n in nodes)
    return "\n".join(dict.fromkeys(imports)), "\n\n\n".join(copied + [own])


def _comment(text: str, width: int = 116) -> list[str]:
    out = []
    for paragraph in text.split("\n"):
        wrapped = textwrap.wrap(paragraph, width, subsequent_indent="  " if paragraph.startswith("- ") else "")
        out += [f"# {line}".rstrip() for line in wrapped] or ["#"]
    return out


def _header(problem: Problem, backend: str, filename: str) -> str:
    gpu_only = backend in GPU_ONLY
    lines = [
        f"# Starter solution for {problem.id} (problem version {problem.version}): {TITLES[backend]}.",
        f"# Signature: {signature(problem)}",
    ]
    for label in ("Inputs", "Return"):
        part = statement_part(problem, label)
        if part:
            lines += _comment(re.sub(r"\*\*", "", part))
    lines += _comment(
        "As given, this file computes what the reference computes, so it passes, at the baseline's "
        "speed. Replace the body of `solution` with your own data movement."
    )
    if gpu_only:
        lines += _comment(
            f"GPU only: {TITLES[backend]} does not run on the CPU profiles. Backend guide: "
            f"/docs/backends/{GUIDES[backend]}/ (docs/backends/{GUIDES[backend]}.md)."
        )
    lines.append("# Rules:")
    lines += _comment("\n".join(f"- {rule}" for rule in RULES))
    lines.append("# Run it:")
    lines += [f"#   {command}" for _, command in commands(problem, filename, gpu_only)]
    return "\n".join(lines)


def _call(args: ast.arguments) -> str:
    parts = [a.arg for a in args.posonlyargs + args.args]
    if args.vararg:
        parts.append(f"*{args.vararg.arg}")
    parts += [f"{a.arg}={a.arg}" for a in args.kwonlyargs]
    if args.kwarg:
        parts.append(f"**{args.kwarg.arg}")
    return ", ".join(parts)


_OUTPUTS = '''

def _each_tensor(result, fn):
    """``fn`` applied to every tensor of the result (one tensor, or a tuple or list of them)."""
    if isinstance(result, torch.Tensor):
        return fn(result)
    if isinstance(result, (tuple, list)):
        return type(result)(_each_tensor(r, fn) for r in result)
    return result
'''

_CUDA = '''
from torch.utils.cpp_extension import load_inline

BACKEND = "cuda"

_CUDA_SOURCE = r"""
#include <torch/extension.h>
#include <ATen/cuda/CUDAContext.h>

__global__ void copy_bytes_kernel(const unsigned char* src, unsigned char* dst, long long n) {
    for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * blockDim.x)
        dst[i] = src[i];
}

torch::Tensor copy_bytes(torch::Tensor src) {
    auto dst = torch::empty_like(src);
    long long n = src.numel() * src.element_size();
    if (n > 0) {
        int threads = 256;
        int blocks = (int)std::min<long long>((n + threads - 1) / threads, 4096);
        copy_bytes_kernel<<<blocks, threads, 0, at::cuda::getCurrentCUDAStream()>>>(
            (const unsigned char*)src.data_ptr(), (unsigned char*)dst.data_ptr(), n);
    }
    return dst;
}
"""
_ext = None


def _setup():
    """First call only (not timed): build the extension once per process; the evaluator's build cache keeps it."""
    global _ext
    if _ext is None:
        _ext = load_inline(name="starter_copy_bytes", cpp_sources="torch::Tensor copy_bytes(torch::Tensor src);",
                           cuda_sources=_CUDA_SOURCE, functions=["copy_bytes"], extra_cuda_cflags=["-O3"])


def _through_kernel(t):
    """The result copied by our own kernel: where your kernels go instead."""
    return _ext.copy_bytes(t.contiguous())
'''

_TRITON = '''
import triton
import triton.language as tl

BACKEND = "triton"


@triton.jit
def _copy_kernel(src, dst, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    tl.store(dst + offsets, tl.load(src + offsets, mask=mask), mask=mask)


_ready = False


def _setup():
    """First call only (not timed): nothing to build ahead here; Triton compiles a kernel at its first launch."""
    global _ready
    _ready = True


def _through_kernel(t):
    """The result copied by a Triton kernel (as bytes, so any dtype): where your kernels go instead."""
    t = t.contiguous()
    out = torch.empty_like(t)
    src, dst = t.view(-1).view(torch.uint8), out.view(-1).view(torch.uint8)
    n = src.numel()
    if n:
        _copy_kernel[(triton.cdiv(n, 1024),)](src, dst, n, BLOCK=1024)
    return out
'''

_SYMM = '''
import torch.distributed._symmetric_memory as symm_mem

BACKEND = "symmetric-memory"

_buffers = {}


def _setup():
    """First call only (not timed): nothing yet; buffers are made per shape by _symmetric (every rank at once)."""


def _symmetric(t):
    """A symmetric-memory buffer of ``t``'s size (made and rendezvoused once per shape and dtype, on every rank at
    the same call), and its handle: ``handle.get_buffer(peer, shape, dtype)`` is a peer's buffer as a tensor you can
    read and write, ``handle.barrier()`` synchronises the ranks, ``handle.buffer_ptrs`` and
    ``handle.signal_pad_ptrs`` are what a CUDA or Triton kernel takes."""
    key = (tuple(t.shape), t.dtype)
    if key not in _buffers:
        buffer = symm_mem.empty(t.shape, dtype=t.dtype, device=t.device)
        _buffers[key] = (buffer, symm_mem.rendezvous(buffer, dist.group.WORLD.group_name))
    return _buffers[key]


def _through_kernel(t):
    """The result staged through this rank's own symmetric buffer: where reading peers' buffers goes instead."""
    buffer, _handle = _symmetric(t)
    buffer.copy_(t)
    return buffer.clone()
'''

_GPU = {"cuda": _CUDA, "triton": _TRITON, "symmetric-memory": _SYMM}


def _wrapper(node: ast.FunctionDef, setup: bool, each: str, note: str) -> str:
    returns = f" -> {ast.unparse(node.returns)}" if node.returns else ""
    return (
        f"def solution({ast.unparse(node.args)}){returns}:\n"
        + ("    _setup()  # builds and allocates on the first call only, which is not timed\n" if setup else "")
        + f"    result = _reference({_call(node.args)})  # the reference's computation: replace it\n"
        + "".join(f"    # {line}\n" for line in textwrap.wrap(note, 110))
        + f"    return _each_tensor(result, {each})\n"
    )


def _separate(problem: Problem, header: str, imports: str, body: str) -> str:
    """The plain starter of a reference whose outputs share memory: each output returned as a copy of its own."""
    node = _solution_def(ast.parse(problem.reference_source))
    reference = re.sub(r"^def solution\(", "def _reference(", body, count=1, flags=re.M)
    extra = "" if "import torch" in imports.splitlines() else "import torch"
    note = f"{SEPARATE_OUTPUTS[problem.id]}, and a solution's outputs must be separate tensors:"
    parts = [
        header,
        "",
        "\n".join(x for x in (imports, extra) if x),
        _OUTPUTS.rstrip(),
        "",
        "",
        "# The reference's code, renamed `_reference`: the part to replace.",
        reference,
        "",
        "",
        _wrapper(node, False, "torch.clone", note),
    ]
    return "\n".join(parts).rstrip() + "\n"


def _gpu(problem: Problem, backend: str, header: str, imports: str, body: str) -> str:
    node = _solution_def(ast.parse(problem.reference_source))
    reference = re.sub(r"^def solution\(", "def _reference(", body, count=1, flags=re.M)
    needs = ["import torch"] + (["import torch.distributed as dist"] if backend == "symmetric-memory" else [])
    extra = "\n".join(i for i in needs if i not in imports.splitlines())
    wrapper = _wrapper(node, True, "_through_kernel", "")
    parts = [
        header,
        "",
        "\n".join(x for x in (imports, extra) if x),
        _GPU[backend].rstrip(),
        _OUTPUTS.rstrip(),
        "",
        "",
        "# The reference's code, renamed `_reference`: the part to replace.",
        reference,
        "",
        "",
        wrapper,
    ]
    return "\n".join(parts).rstrip() + "\n"
