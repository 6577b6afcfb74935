"""Writing model-run archives: :func:`build_archive` (tests, the docs' example, model builders' scripts), the
example run, and the command ``python -m leaderboard.model_runs example run.zip|run.tar.gz`` / ``... check run.zip``
that model builders run before uploading."""

from __future__ import annotations

import datetime as dt
import gzip
import io
import json
import math
import stat
import sys
import tarfile
import zipfile
from typing import Any, Mapping

from leaderboard.model_runs.container import ArchiveError
from leaderboard.model_runs.layout import read_archive


def _toml_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        if isinstance(value, float) and not math.isfinite(value):
            return "nan" if math.isnan(value) else ("inf" if value > 0 else "-inf")
        return repr(value)
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    if isinstance(value, (dt.date, dt.datetime)):
        return value.isoformat()
    raise TypeError(f"cannot write {type(value).__name__} to a flat TOML manifest")


def manifest_toml(manifest: Mapping[str, Any]) -> str:
    """A flat manifest as TOML (the inverse of what :func:`read_archive` accepts)."""
    return "".join(f"{key} = {_toml_value(value)}\n" for key, value in manifest.items())


def build_archive(
    manifest: Mapping[str, Any] | str | bytes | None,
    attempts: Mapping[tuple[str, int], str | bytes],
    trajectories: Mapping[tuple[str, int] | tuple[str, int, str], str | bytes] | None = None,
    *,
    fmt: str = "zip",
    manifest_format: str = "json",
    extra_files: Mapping[str, str | bytes] | None = None,
) -> bytes:
    """Builds a model-run archive in memory (for tests, the docs' example and model builders' scripts).

    ``attempts`` maps ``(problem_id, i)`` to the source of ``attempts/<problem_id>/attempt_<i>.py``;
    ``trajectories`` maps ``(problem_id, i)`` (written as ``.jsonl``) or ``(problem_id, i, ext)`` to text.
    A ``manifest`` given as str or bytes is written as it is (to test malformed ones); None writes none.
    ``extra_files`` adds raw paths. ``fmt`` is "zip" or "tar.gz"; the output is byte-for-byte reproducible.
    """
    if fmt not in ("zip", "tar.gz"):
        raise ValueError(f"fmt must be 'zip' or 'tar.gz', not {fmt!r}")
    if manifest_format not in ("json", "toml"):
        raise ValueError(f"manifest_format must be 'json' or 'toml', not {manifest_format!r}")
    files: dict[str, bytes] = {}

    def put(path: str, content: str | bytes) -> None:
        files[path] = content.encode() if isinstance(content, str) else bytes(content)

    if manifest is not None:
        if isinstance(manifest, (str, bytes)):
            text: str | bytes = manifest
        elif manifest_format == "json":
            text = json.dumps(dict(manifest), indent=2, ensure_ascii=False) + "\n"
        else:
            text = manifest_toml(manifest)
        put(f"manifest.{manifest_format}", text)
    for (pid, index), source in sorted(attempts.items()):
        put(f"attempts/{pid}/attempt_{index}.py", source)
    for key, text in sorted((trajectories or {}).items()):
        pid, index, ext = key if len(key) == 3 else (*key, "jsonl")  # type: ignore[misc]
        put(f"trajectories/{pid}/attempt_{index}.{ext}", text)
    for path, content in (extra_files or {}).items():
        put(path, content)

    out = io.BytesIO()
    if fmt == "zip":
        with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as zf:
            for path, content in files.items():
                info = zipfile.ZipInfo(path, date_time=(1980, 1, 1, 0, 0, 0))
                info.external_attr = (stat.S_IFREG | 0o644) << 16
                info.compress_type = zipfile.ZIP_DEFLATED
                zf.writestr(info, content)
    else:
        with gzip.GzipFile(fileobj=out, mode="wb", mtime=0) as gz:
            with tarfile.open(fileobj=gz, mode="w", format=tarfile.PAX_FORMAT) as tf:  # type: ignore[call-overload]
                for path, content in files.items():
                    info = tarfile.TarInfo(path)
                    info.size, info.mode, info.mtime = len(content), 0o644, 0
                    tf.addfile(info, io.BytesIO(content))
    return out.getvalue()


# --- an example, and a check model builders can run before uploading -----------------------------------------------

EXAMPLE_MANIFEST: dict[str, Any] = {
    "model": "example-model-2026-11",
    "provider": "Example Labs",
    "protocol": "agentic",
    "k": 2,
    "turn_budget": 40,
    "tokens": 2_100_000,
    "wall_time_s": 12_600,
    "hardware": "h200-nvlink-4",
    "date": "2026-11-29",
    "open_weights": True,
    "precision": "bf16",
    "notes": "Each attempt: one agent loop with the `arena eval` tool, at most 40 turns.",
}
EXAMPLE_ATTEMPTS: dict[tuple[str, int], str] = {
    ("collectives/all_reduce", 1): (
        "import torch\nimport torch.distributed as dist\n\n\n"
        "def solution(x: torch.Tensor) -> torch.Tensor:\n"
        "    out = x.clone()\n    dist.all_reduce(out)\n    return out\n"
    ),
    ("collectives/all_reduce", 2): (
        "import torch\nimport torch.distributed as dist\n\n\n"
        "def solution(x: torch.Tensor) -> torch.Tensor:\n"
        "    parts = [torch.empty_like(x) for _ in range(dist.get_world_size())]\n"
        "    dist.all_gather(parts, x)\n    return torch.stack(parts).sum(0).to(x.dtype)\n"
    ),
}
EXAMPLE_TRAJECTORIES: dict[tuple[str, int], str] = {
    ("collectives/all_reduce", 1): "\n".join(
        json.dumps(m)
        for m in (
            {"role": "user", "content": "Write solution(x) for collectives/all_reduce ..."},
            {"role": "assistant", "content": "def solution(x): ..."},
            {"role": "tool", "name": "arena eval", "content": "passed, speedup 1.00"},
        )
    )
    + "\n",
}


def example_archive(fmt: str = "zip") -> bytes:
    """A small valid model run (two attempts at collectives/all_reduce, one trajectory)."""
    return build_archive(EXAMPLE_MANIFEST, EXAMPLE_ATTEMPTS, EXAMPLE_TRAJECTORIES, fmt=fmt)


def main(argv: list[str] | None = None) -> int:
    """``python -m leaderboard.model_runs example run.zip|run.tar.gz`` or ``... check run.zip``."""
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 2 or args[0] not in ("example", "check"):
        print(main.__doc__, file=sys.stderr)
        return 2
    command, path = args
    if command == "example":
        with open(path, "wb") as fh:
            fh.write(example_archive("tar.gz" if path.endswith((".tar.gz", ".tgz")) else "zip"))
        print(f"wrote {path}")
        return 0
    from django.conf import settings

    from problems.registry import catalogue

    if not settings.configured:  # the manifest's fields are Django REST framework fields; no project is needed
        settings.configure(USE_I18N=False)
    with open(path, "rb") as fh:
        payload = fh.read()
    try:
        run = read_archive(payload, path, catalogue())
    except ArchiveError as exc:
        print(exc, file=sys.stderr)
        return 1

    def count(n: int, one: str, many: str) -> str:
        return f"{n} {one if n == 1 else many}"

    print(
        f"{path}: valid; {run.manifest.model} ({run.manifest.as_protocol().label()}), "
        f"{count(len(run.attempts), 'attempt', 'attempts')} at "
        f"{count(len(run.problem_ids), 'problem', 'problems')}, "
        f"{count(len(run.trajectories), 'trajectory', 'trajectories')}, "
        f"{count(len(run.not_attempted), 'problem', 'problems')} not attempted."
    )
    return 0
