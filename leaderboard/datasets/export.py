"""Exports the suite and its public results, reproducibly, from the database.

``export_datasets(outdir)`` writes ``outdir/arena-<suite version>-<date>/``::

    README.md                       dataset card: YAML ``configs`` (what ``datasets.load_dataset`` reads) + datasheet
    manifest.json                   versions, row counts, and the sha256 of every file
    data/<config>/train-00000-of-00001.parquet
    jsonl/<config>.jsonl

Configs: ``problems`` (metadata, statement, reference), ``prompts`` (every prompt pack: problem × profile × backend),
``results`` (one row per evaluated attempt: protocol, verdict, timings, intervals, environment; never the source).
Rows are sorted and every value comes from the database (and, for prompts, from the problem folders of the versions
the database holds), so two exports of the same database on the same date are byte for byte the same. Test-mode
evaluations live in their own table and are never read here.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from leaderboard import beyond_contract
from leaderboard.models import Problem, Result
from leaderboard.rankings import metrics

LICENCE = "CC-BY-4.0"
SPLIT_FILE = "train-00000-of-00001"


def _json(value: Any) -> str | None:
    return None if value is None else json.dumps(value, sort_keys=True, ensure_ascii=False)


# (name, arrow type name, description): the schema of each config and the datasheet's field tables.
FIELDS: dict[str, list[tuple[str, str, str]]] = {
    "problems": [
        ("id", "string", "category/name"),
        ("title", "string", ""),
        ("category", "string", ""),
        ("suite", "string", "arena, or an imported suite"),
        ("suite_version", "string", "the suite's version"),
        ("version", "int64", "the problem's version"),
        ("content_hash", "string", "sha256 of its folder's files"),
        ("codebase", "string", "the real codebase it models"),
        ("function", "string", "the function it models"),
        ("world_sizes", "list<int64>", "ranks it runs at"),
        ("presets", "string", "size presets (JSON)"),
        ("tolerances", "string", "atol/rtol per dtype (JSON)"),
        ("roofline", "string", "roofline terms (JSON)"),
        ("summary", "string", ""),
        ("statement", "string", "markdown"),
        ("reference_source", "string", "reference.py: the PyTorch + torch.distributed baseline"),
    ],
    "prompts": [
        ("id", "string", "problem@hardware#backend"),
        ("problem", "string", ""),
        ("problem_version", "int64", ""),
        ("problem_content_hash", "string", ""),
        ("hardware", "string", "hardware profile"),
        ("world_size", "int64", ""),
        ("preset", "string", "size preset of the profile"),
        ("backend", "string", "cuda, triton, symmetric-memory, ..."),
        ("template_version", "int64", "version of the prompt template"),
        ("prompt_version", "string", "hash of everything the prompt was rendered from"),
        ("pack_version", "string", "hash of the pack (backend × hardware); model runs name it"),
        ("suite_version", "string", ""),
        ("prompt", "string", "the exact text a model is given"),
    ],
    "results": [
        ("submission_id", "int64", ""),
        ("kind", "string", "solution (one upload) or model_run_attempt"),
        ("problem", "string", ""),
        ("problem_version", "int64", ""),
        ("problem_hash", "string", ""),
        ("hardware", "string", "hardware profile"),
        ("model_run_id", "int64", "null for single uploads"),
        ("model", "string", ""),
        ("provider", "string", ""),
        ("protocol", "string", "zero-shot or agentic"),
        ("k", "int64", "attempts per problem"),
        ("turn_budget", "int64", ""),
        ("tokens", "int64", "whole run"),
        ("wall_time_s", "double", "whole run"),
        ("prompt_pack", "string", "the run's prompt pack version"),
        ("attempt", "int64", "1..k"),
        ("is_demo", "bool", "made up by seed_demo"),
        ("verdict", "string", "passed, wrong_output, compile_error, runtime_error, timeout, rejected, infra_error"),
        ("message", "string", "the verdict's one-line reason"),
        ("baseline_median_us", "double", "reference, slowest rank per iteration, median"),
        ("solution_median_us", "double", "solution, same statistic"),
        ("speedup", "double", "median of per-iteration ratios"),
        ("speedup_ci_low", "double", "95 % interval"),
        ("speedup_ci_high", "double", "95 % interval"),
        ("roofline_fraction", "double", "roofline time / solution"),
        (
            "speedup_note",
            "string",
            "why the four fields above are null: a CPU profile's timings only check the "
            "pipeline (null on GPU profiles)",
        ),
        ("timing_method", "string", ""),
        ("timing_protocol_revision", "int64", "docs/protocol.md"),
        ("timing_iterations", "int64", ""),
        ("solution_sha256", "string", "hash of the source (never the source)"),
        ("environment", "string", "GPUs, driver, CUDA, torch, NCCL (JSON)"),
        ("flags", "string", "JSON"),
        ("created_at", "string", "ISO 8601"),
    ],
}


def problem_rows() -> list[dict[str, Any]]:
    suite_version = beyond_contract.SUITE_VERSION
    return [
        {
            "id": p.id,
            "title": p.title,
            "category": p.category,
            "suite": p.suite,
            "suite_version": suite_version if p.suite == "arena" else "",
            "version": p.version,
            "content_hash": p.content_hash,
            "codebase": p.codebase,
            "function": p.function,
            "world_sizes": list(p.world_sizes),
            "presets": _json(p.presets),
            "tolerances": _json(p.tolerances),
            "roofline": _json(p.roofline),
            "summary": p.summary,
            "statement": p.statement,
            "reference_source": p.reference_source,
        }
        for p in Problem.objects.filter(is_active=True).order_by("id")
    ]


def prompt_rows(profiles: list[str] | None = None) -> list[dict[str, Any]]:
    """Every pack (backend × profile) over the problems whose folder matches the version the database holds."""
    from evaluator.contract.profiles import PROFILES

    held = dict(Problem.objects.filter(is_active=True).values_list("id", "content_hash"))
    folders = [p for p in beyond_contract.registry_catalogue().values() if held.get(p.id) == p.content_hash]
    keep = [f[0] for f in FIELDS["prompts"]]
    rows: list[dict[str, Any]] = []
    for backend in beyond_contract.prompt_backends():
        for hardware in profiles or list(PROFILES):
            rows += [{k: r.get(k) for k in keep} for r in beyond_contract.prompt_pack(backend, hardware, folders)]
    return sorted(rows, key=lambda r: r["id"])


def result_rows() -> list[dict[str, Any]]:
    rows = []
    results = (
        Result.objects.select_related("submission", "submission__model_run")
        .exclude(submission__state="cancelled")
        .order_by("submission_id")
    )
    for r in results.iterator():
        s, run, doc = r.submission, r.submission.model_run, r.document if isinstance(r.document, dict) else {}
        timing = doc.get("timing") if isinstance(doc.get("timing"), dict) else {}
        rows.append(
            {
                "submission_id": s.pk,
                "kind": "model_run_attempt" if run else "solution",
                "problem": s.problem_id,
                "problem_version": r.problem_version or s.problem_version,
                "problem_hash": r.problem_hash or s.problem_hash,
                "hardware": s.profile,
                "model_run_id": run.pk if run else None,
                "model": run.model if run else None,
                "provider": run.provider if run else None,
                "protocol": run.mode if run else None,
                "k": run.k if run else None,
                "turn_budget": run.turn_budget if run else None,
                "tokens": run.tokens if run else None,
                "wall_time_s": run.wall_time_s if run else None,
                "prompt_pack": (run.manifest or {}).get("prompt_pack") if run else None,
                "attempt": s.attempt,
                "is_demo": bool(run.is_demo) if run else False,
                "verdict": r.verdict,
                "message": str(doc.get("message") or "")[:500],
                "baseline_median_us": r.baseline_median_us,
                "solution_median_us": r.solution_median_us,
                "speedup": metrics.speed_or_none(s.profile, r.speedup),
                "speedup_ci_low": metrics.speed_or_none(s.profile, r.speedup_ci_low),
                "speedup_ci_high": metrics.speed_or_none(s.profile, r.speedup_ci_high),
                "roofline_fraction": metrics.speed_or_none(s.profile, r.roofline_fraction),
                "speedup_note": metrics.speed_note(s.profile),
                "timing_method": timing.get("method"),
                "timing_protocol_revision": timing.get("protocol_revision"),
                "timing_iterations": timing.get("iterations"),
                "solution_sha256": s.sha256,
                "environment": _json(doc.get("environment") or {}),
                "flags": _json(doc.get("flags") or {}),
                "created_at": s.created_at.isoformat(),
            }
        )
    return rows


CONFIGS: dict[str, Callable[[], list[dict[str, Any]]]] = {
    "problems": problem_rows,
    "prompts": prompt_rows,
    "results": result_rows,
}


def arrow_schema(config: str):
    import pyarrow as pa

    types = {
        "string": pa.string(),
        "int64": pa.int64(),
        "double": pa.float64(),
        "bool": pa.bool_(),
        "list<int64>": pa.list_(pa.int64()),
    }
    return pa.schema([pa.field(name, types[kind], nullable=True) for name, kind, _ in FIELDS[config]])


def write_parquet(rows: list[dict[str, Any]], config: str, path: Path) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    schema = arrow_schema(config)
    columns = {name: [row.get(name) for row in rows] for name in schema.names}
    table = pa.Table.from_pydict(columns, schema=schema)
    pq.write_table(table, path, compression="zstd", write_statistics=False)


def to_jsonl(rows: list[dict[str, Any]]) -> str:
    return "".join(json.dumps(row, sort_keys=True, ensure_ascii=False) + "\n" for row in rows)


@dataclass
class Export:
    root: Path
    version: str
    counts: dict[str, int]


def dataset_version(date: dt.date) -> str:
    return f"{beyond_contract.SUITE_VERSION}-{date.isoformat()}"


def export_datasets(outdir: Path | str, *, date: dt.date | None = None, configs: list[str] | None = None) -> Export:
    date = date or dt.date.today()
    version = dataset_version(date)
    root = Path(outdir) / f"arena-{version}"
    counts: dict[str, int] = {}
    for config in configs or list(CONFIGS):
        rows = CONFIGS[config]()
        counts[config] = len(rows)
        (root / "data" / config).mkdir(parents=True, exist_ok=True)
        (root / "jsonl").mkdir(parents=True, exist_ok=True)
        write_parquet(rows, config, root / "data" / config / f"{SPLIT_FILE}.parquet")
        (root / "jsonl" / f"{config}.jsonl").write_text(to_jsonl(rows))
    (root / "README.md").write_text(dataset_card(version, date, counts))
    files = sorted(p for p in root.rglob("*") if p.is_file() and p.name != "manifest.json")
    manifest = {
        "version": version,
        "suite_version": beyond_contract.SUITE_VERSION,
        "date": date.isoformat(),
        "licence": LICENCE,
        "counts": counts,
        "files": {p.relative_to(root).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest() for p in files},
    }
    (root / "manifest.json").write_text(json.dumps(manifest, indent=2, sort_keys=True) + "\n")
    return Export(root=root, version=version, counts=counts)


def datasheet(counts: dict[str, int] | None = None) -> str:
    """The datasheet (markdown): what each config holds, its fields, versions, licence and how it was measured."""
    parts = []
    for config, fields in FIELDS.items():
        rows = "\n".join(f"| `{n}` | {t} | {d} |" for n, t, d in fields)
        count = f" ({counts[config]} rows)" if counts and config in counts else ""
        parts.append(f"### `{config}`{count}\n\n| field | type | meaning |\n|---|---|---|\n{rows}")
    return f"""## Datasheet

**What it is.** The Parallel Kernel Arena suite: multi-GPU problems written as PyTorch + `torch.distributed`
references, the exact prompts a model is given for each problem × hardware profile × backend, and every public
evaluation recorded by the portal (single solutions and model runs' attempts).

**Versions.** The export is named by the suite version and the date it was taken (`arena-<suite>-<date>`). Each
problem row has its own `version` and `content_hash` (sha256 of its folder); each result names the
`problem_version` and `problem_hash` it was measured against and the timing protocol revision; each prompt has a
`prompt_version` (a hash of everything it was rendered from) and belongs to a pack (`pack_version`) that model runs
name in their manifest. `manifest.json` lists the sha256 of every file.

**How results were measured.** Each evaluation ran the solution in a bubblewrap sandbox, separate from the judge
that makes the inputs from secret seeds, runs the reference and compares every output; correctness over several
trials of fresh random inputs on every rank, then timed iterations with the baseline timed under the same compiled
timer (GPU kept busy by a spin kernel, L2 flushed, ranks aligned, slowest rank per iteration, median; the speedup is
the median of per-iteration ratios with a 95 % interval). See docs/protocol.md. CPU profiles (`cpu-gloo-*`) check the
pipeline and say nothing about GPU speed. Rows with `is_demo` true were made up by the demo seeder.

**What is not here.** Solution sources (only their sha256), rank logs and tracebacks, unranked test-mode
evaluations, and anything about the people who submitted beyond a model run's own manifest.

**Licence.** {LICENCE} for the data; the problem references keep the licence of the repository.

**Reproducing it.** `python manage.py export_datasets OUTDIR` on the portal's database writes the same files.

{chr(10).join(parts)}
"""


def dataset_card(version: str, date: dt.date, counts: dict[str, int]) -> str:
    configs = "\n".join(
        f"- config_name: {c}\n  data_files:\n  - split: train\n    path: data/{c}/train-*.parquet" for c in counts
    )
    return f"""---
license: cc-by-4.0
pretty_name: Parallel Kernel Arena {version}
tags:
- code
- gpu
- distributed
- benchmark
configs:
{configs}
---

# Parallel Kernel Arena datasets, {version}

Suite version {beyond_contract.SUITE_VERSION}, exported {date.isoformat()}.

```python
from datasets import load_dataset
problems = load_dataset("path/to/arena-{version}", "problems", split="train")
results = load_dataset("path/to/arena-{version}", "results", split="train")
```

The same rows as JSON lines are under `jsonl/`.

{datasheet(counts)}"""
