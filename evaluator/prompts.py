"""Prompt packs: the exact task a model is given for one problem on one hardware profile with one backend.

A prompt is rendered from the problem's folder (its statement, metadata and reference code), the profile's topology
(``evaluator.contract.profiles``), the backend's guide (``docs/backends/<backend>.md``; a backend is offered once its
guide exists) and the required output format. Each prompt carries ``prompt_version``, a hash of everything that went
into it (the problem's content hash covers every file of its folder), so a new problem version is a new prompt; a
pack (one backend × one profile, every problem that runs on it) has ``pack_version``, a hash over its prompts, which a
model run's manifest names.

Torch-free on purpose: it imports only the registry (which reads the folder as text and parses it, never imports a
reference) and the contract, so the portal renders the same packs the CLI writes, on hosts without GPUs or torch, and
``arena prompts`` answers in a fraction of a second.
"""

from __future__ import annotations

import ast
import hashlib
import json
from pathlib import Path
from typing import Any, Iterable, Iterator

from evaluator.contract.backends import BACKENDS
from evaluator.contract.profiles import PROFILES, HardwareProfile, get_profile
from problems.registry import SUITE_VERSION, Problem

# Raise whenever the template below changes what a model reads (a new section, different wording): every prompt's
# version changes with it.
TEMPLATE_VERSION = 1
GUIDES_DIRS = (Path(__file__).resolve().parent.parent / "docs" / "backends",)


def guide_path(backend: str) -> Path | None:
    for folder in GUIDES_DIRS:
        path = folder / f"{backend}.md"
        if path.is_file():
            return path
    return None


def available_backends() -> list[str]:
    """The backends with a guide, in the contract's order (a backend without one is not offered yet)."""
    return [b for b in BACKENDS if guide_path(b) is not None]


def guide(backend: str) -> str:
    path = guide_path(backend)
    if path is None:
        known = ", ".join(available_backends())
        raise ValueError(f"no guide for backend {backend!r}; prompts exist for {known} (docs/backends/<name>.md)")
    return path.read_text()


def _signature(reference_source: str) -> str:
    """``solution(x: torch.Tensor) -> torch.Tensor`` as the reference writes it."""
    tree = ast.parse(reference_source)
    for node in tree.body:
        if isinstance(node, ast.FunctionDef) and node.name == "solution":
            returns = f" -> {ast.unparse(node.returns)}" if node.returns else ""
            return f"solution({ast.unparse(node.args)}){returns}"
    for node in tree.body:  # an imported suite's `solution = ...`
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "solution" for t in node.targets):
            return "solution(*inputs)"
    return "solution(*inputs)"


def topology(profile: HardwareProfile, dtype: str) -> str:
    lines = [
        f"- {profile.description}.",
        f"- {profile.world_size} ranks, one process per {'GPU' if profile.device == 'cuda' else 'CPU process'}"
        + (
            f", {profile.nodes} nodes of {profile.ranks_per_node} (consecutive ranks share a node; "
            f"LOCAL_WORLD_SIZE, LOCAL_RANK and GROUP_RANK are set)"
            if profile.nodes > 1
            else ""
        )
        + ".",
        f"- The process group is initialised ({profile.backend}) and each rank's device is current before "
        f"`solution` is first called.",
        f"- Interconnect: {profile.link_gbps:g} GB/s per device per direction (nominal)"
        + (f"; NCCL measured {profile.measured_link_gbps:g} GB/s bus bandwidth" if profile.measured_link_gbps else "")
        + (f"; between nodes {profile.internode_gbps:g} GB/s per GPU" if profile.nodes > 1 else "")
        + ".",
        f"- Memory bandwidth {profile.hbm_gbps:g} GB/s per device; dense peak for {dtype}: "
        f"{profile.peak_tflops.get(dtype, 0):g} TFLOP/s.",
    ]
    if profile.device == "cuda":
        lines.append(
            "- NVLink multicast is off (NCCL_NVLS_ENABLE=0, TORCH_SYMM_MEM_DISABLE_MULTICAST=1, "
            "NVSHMEM_DISABLE_NVLS=1): multimem instructions and multicast objects are unavailable."
        )
    else:
        lines.append(
            "- CPU profile: for checking correctness of the whole pipeline; its timings say nothing about GPU kernels."
        )
    return "\n".join(lines)


def output_format(problem: Problem, backend: str) -> str:
    return (
        f"Reply with exactly one Python file in one fenced ```python block, nothing else required. The file "
        f"must define `{_signature(problem.reference_source)}` with the reference's signature and return what "
        f"the reference returns (the same number of tensors, shapes, dtypes, on the rank's device; new "
        f'tensors, inputs left unchanged). Put `BACKEND = "{backend}"` at module level. Set-up done on the '
        f"first call (buffers, rendezvous, compilation) is not timed; every later call is. Do not import from "
        f"`problems` (the reference's helpers are not available to solutions) and do not read files or the "
        f"network: the solution runs in a sandbox."
    )


def _hash(*parts: Any) -> str:
    h = hashlib.sha256()
    for part in parts:
        h.update(json.dumps(part, sort_keys=True, default=str).encode())
        h.update(b"\0")
    return h.hexdigest()


def render(problem: Problem, profile: HardwareProfile | str, backend: str) -> dict[str, Any]:
    """One prompt as a JSON-ready record: the text a model is given, its parts, and the versions that name it."""
    profile = get_profile(profile) if isinstance(profile, str) else profile
    if backend not in BACKENDS:
        raise ValueError(f"unknown backend {backend!r}; use one of {', '.join(BACKENDS)}")
    preset = problem.presets[profile.preset]
    sizes = ", ".join(f"{k}={v}" for k, v in preset.params.items())
    tol = problem.tolerances[preset.dtype]
    backend_guide = guide(backend)
    text = (
        "\n\n".join(
            [
                f"# Task: {problem.title} ({problem.id}, version {problem.version})",
                "Replace the PyTorch + torch.distributed reference below with a faster implementation that moves the "
                f"data between devices itself, using the {backend} backend. It is checked for correctness against the "
                "reference on fresh random inputs and timed against it.",
                "## Problem statement\n\n" + problem.statement.strip(),
                f"## Hardware: {profile.name}\n\n" + topology(profile, preset.dtype),
                f"## Sizes and tolerance\n\nPreset `{profile.preset}`: dtype {preset.dtype}, {sizes}. "
                f"Outputs must match "
                f"the reference within atol={tol.atol:g}, rtol={tol.rtol:g}"
                + (" (exactly, for integer outputs)." if preset.dtype.startswith(("int", "uint")) else "."),
                "## Reference (reference.py)\n\n```python\n" + problem.reference_source.rstrip() + "\n```",
                f"## Backend guide: {backend}\n\n" + backend_guide.strip(),
                "## Output format\n\n" + output_format(problem, backend),
            ]
        )
        + "\n"
    )
    return {
        "id": f"{problem.id}@{profile.name}#{backend}",
        "problem": problem.id,
        "title": problem.title,
        "category": problem.category,
        "problem_version": problem.version,
        "problem_content_hash": problem.content_hash,
        "suite": problem.suite,
        "suite_version": SUITE_VERSION,
        "hardware": profile.name,
        "world_size": profile.world_size,
        "preset": profile.preset,
        "backend": backend,
        "template_version": TEMPLATE_VERSION,
        "prompt_version": _hash(
            TEMPLATE_VERSION, problem.content_hash, profile.as_dict(), backend, backend_guide, text
        )[:16],
        "prompt": text,
    }


def problems_for(profile: HardwareProfile, problems: Iterable[Problem]) -> list[Problem]:
    return [p for p in problems if profile.world_size in p.world_sizes]


def pack(backend: str, hardware: str, problems: Iterable[Problem] | None = None) -> list[dict[str, Any]]:
    """Every problem that runs on ``hardware``, rendered for ``backend``, each row stamped with the pack's
    version (a hash over the rows' prompt versions)."""
    if problems is None:
        from problems.registry import catalogue

        problems = catalogue().values()
    profile = get_profile(hardware)
    rows = [render(p, profile, backend) for p in sorted(problems_for(profile, problems), key=lambda p: p.id)]
    version = pack_version(rows)
    for row in rows:
        row["pack_version"] = version
    return rows


def pack_version(rows: Iterable[dict[str, Any]]) -> str:
    rows = list(rows)
    if not rows:
        return ""
    head = rows[0]
    return "pp-" + _hash(head["backend"], head["hardware"], [(r["id"], r["prompt_version"]) for r in rows])[:12]


def problem_prompts(problem: Problem) -> Iterator[dict[str, Any]]:
    """A problem's prompts on every profile it runs on, for every backend with a guide."""
    for profile in PROFILES.values():
        if profile.world_size in problem.world_sizes:
            for backend in available_backends():
                yield render(problem, profile, backend)


def jsonl(rows: Iterable[dict[str, Any]]) -> str:
    return "".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows)
