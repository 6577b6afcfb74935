"""Solution backends: the names a solution may declare, how it declares one, and which need a GPU host.

A solution declares its backend by a module-level string ``BACKEND = "<name>"`` or by its file name ending in
``_<name>.py`` (``all_gather_parallelkittens.py``, as ParallelKernelBench names its files; ``symmetric-memory`` is
spelled ``_symmetric_memory.py`` there). Both may be given; they must then agree. A solution that declares nothing
is ``cuda``-or-``triton``-or-``symmetric-memory`` alike: plain PyTorch, ``load_inline``, Triton and symmetric memory
need nothing set up for them. Two backends need the evaluator's help before the solution loads:

- ``parallelkittens``: ThunderKittens headers on the GPU host (``ARENA_THUNDERKITTENS``), bound read-only into the
  sandbox, and the runtime helper ``evaluator.rank.backends.parallelkittens`` (flags, parallel tensors, barriers);
- ``nvshmem``: PyTorch's symmetric memory set to its NVSHMEM backend in the rank before the solution's first line.

Both run only on CUDA: the CPU profiles and the CPU known-answer tests skip their files (:func:`runs_on_cpu`).
Standard library only (the web side validates uploads with it)."""

from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import PurePosixPath

BACKENDS = ("cuda", "triton", "symmetric-memory", "parallelkittens", "nvshmem")
GPU_ONLY = frozenset({"parallelkittens", "nvshmem"})
# The symmetric-memory backend each backend needs set in the rank before the solution loads.
SYMM_MEM_BACKEND = {"nvshmem": "NVSHMEM"}
# The environment variable naming the ThunderKittens checkout on a GPU host.
THUNDERKITTENS_ENV = "ARENA_THUNDERKITTENS"
THUNDERKITTENS_COMMIT = "0b55588d2769dde0c7a9a606ffc015b0ca7a9551"


class BackendError(ValueError):
    """The declaration names no known backend, or the file name and the source disagree."""

    def __init__(self, message: str, line: int = 0) -> None:
        super().__init__(message)
        self.line = line


def _suffix(backend: str) -> str:
    return "_" + backend.replace("-", "_") + ".py"


def backend_of_filename(filename: str | None) -> str | None:
    """The backend a file name declares by its suffix (``x_nvshmem.py`` -> ``nvshmem``), or None."""
    name = PurePosixPath((filename or "").replace("\\", "/")).name
    # Longest suffix first: none of the names is a suffix of another today, but keep it unambiguous.
    for backend in sorted(BACKENDS, key=len, reverse=True):
        if name.endswith(_suffix(backend)) and len(name) > len(_suffix(backend)):
            return backend
    return None


def backend_of_source(source: str) -> str | None:
    """The value of a module-level ``BACKEND = "..."`` (plain or annotated assignment), or None. Raises
    :class:`BackendError` for a name that is not a backend or a value that is not a string literal."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return None
    found = None
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "BACKEND" for t in node.targets):
            value = node.value
        elif (
            isinstance(node, ast.AnnAssign)
            and isinstance(node.target, ast.Name)
            and node.target.id == "BACKEND"
            and node.value is not None
        ):
            value = node.value
        else:
            continue
        if not (isinstance(value, ast.Constant) and isinstance(value.value, str)):
            raise BackendError(f"BACKEND must be a string literal, one of {', '.join(BACKENDS)}", node.lineno)
        if value.value not in BACKENDS:
            raise BackendError(
                f"BACKEND = {value.value!r} is not a backend; choose one of {', '.join(BACKENDS)}", node.lineno
            )
        if found is not None and found != value.value:
            raise BackendError(f"BACKEND is set twice, to {found!r} and {value.value!r}", node.lineno)
        found = value.value
    return found


def declared_backend(source: str, filename: str | None = None) -> str | None:
    """The backend a solution declares (source first, then file name), or None when it declares none. Raises
    :class:`BackendError` when the declaration is invalid or the two disagree."""
    by_source = backend_of_source(source)
    by_name = backend_of_filename(filename)
    if by_source and by_name and by_source != by_name:
        raise BackendError(f"the file name declares the backend {by_name!r} but BACKEND = {by_source!r}")
    return by_source or by_name


@dataclass(frozen=True)
class Declaration:
    """A solution's backend declaration, read once (:func:`read_declaration`): where an evaluation starts, its plan
    reads it and hands it to the stages that need it (the static check's refusal, the backend's set-up)."""

    backend: str | None  # the backend declared; None when none is, or when the declaration is invalid
    error: BackendError | None  # why the declaration is invalid (the static check refuses it); None when it is valid


def read_declaration(source: str, filename: str | None = None) -> Declaration:
    """:func:`declared_backend` as a value: the backend, or the error its declaration raises."""
    try:
        return Declaration(declared_backend(source, filename), None)
    except BackendError as exc:
        return Declaration(None, exc)


def runs_on_cpu(source: str, filename: str | None = None) -> bool:
    """False for a solution of a GPU-only backend (or one whose declaration is invalid): CPU profiles and the CPU
    tests of known answers skip it."""
    try:
        return declared_backend(source, filename) not in GPU_ONLY
    except BackendError:
        return False
