"""Prints the built-in suite's catalogue as markdown (docs/problems.md), read from the problem registry.

    python scripts/problem_catalogue.py            # print the catalogue section
    python scripts/problem_catalogue.py --write    # replace it in docs/problems.md, between the markers

For each problem: id, title, the codebase and function it models, world sizes, tags, and what communication it
needs: the problem.toml field ``communication`` where given, else the torch.distributed calls its reference makes.
"""

from __future__ import annotations

import argparse
import ast
import sys
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from problems.registry import CATEGORIES, SUITE_VERSION, Problem, discover  # noqa: E402

DOC = ROOT / "docs" / "problems.md"
START, END = "<!-- catalogue:start -->", "<!-- catalogue:end -->"

_COLLECTIVE_NAMES = {
    "all_reduce": "all-reduce",
    "all_gather": "all-gather",
    "all_gather_into_tensor": "all-gather",
    "reduce_scatter": "reduce-scatter",
    "reduce_scatter_tensor": "reduce-scatter",
    "all_to_all": "all-to-all",
    "all_to_all_single": "all-to-all",
    "broadcast": "broadcast",
    "reduce": "reduce",
    "gather": "gather",
    "scatter": "scatter",
    "send": "send/recv",
    "recv": "send/recv",
    "isend": "send/recv",
    "irecv": "send/recv",
    "batch_isend_irecv": "send/recv",
    "barrier": "barrier",
}


def reference_collectives(problem: Problem) -> list[str]:
    """The collectives the reference calls (``dist.<name>(...)``), in first-use order."""
    seen: list[str] = []
    for node in ast.walk(ast.parse(problem.reference_source)):
        if (
            isinstance(node, ast.Attribute)
            and isinstance(node.value, ast.Name)
            and node.value.id == "dist"
            and node.attr in _COLLECTIVE_NAMES
        ):
            name = _COLLECTIVE_NAMES[node.attr]
            if name not in seen:
                seen.append(name)
    return seen


def communication(problem: Problem) -> str:
    return problem.communication or ", ".join(reference_collectives(problem)) or "none"


def _cell(text: str) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def catalogue_markdown(problems: dict[str, Problem]) -> str:
    counts = Counter(p.category for p in problems.values())
    inter = sum(1 for p in problems.values() if p.has_tag("inter-node"))
    lines = [
        f"Suite version **{SUITE_VERSION}**: {len(problems)} problems, {inter} of them inter-node (tag `inter-node`).",
        "",
        "| category | problems |",
        "| --- | ---: |",
    ]
    lines += [f"| {CATEGORIES[c]} | {counts[c]} |" for c in CATEGORIES if counts[c]]
    for key, label in CATEGORIES.items():
        members = sorted((p for p in problems.values() if p.category == key), key=lambda p: p.id)
        if not members:
            continue
        lines += [
            "",
            f"### {label}",
            "",
            "| id | title | source | world sizes | tags | communication |",
            "| --- | --- | --- | --- | --- | --- |",
        ]
        for p in members:
            lines.append(
                "| "
                + " | ".join(
                    [
                        f"`{p.id}`",
                        _cell(p.title),
                        _cell(f"{p.codebase}: {p.function}"),
                        ", ".join(map(str, p.world_sizes)),
                        ", ".join(p.tags),
                        _cell(communication(p)),
                    ]
                )
                + " |"
            )
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--write", action="store_true", help=f"replace the catalogue section of {DOC.name}")
    args = parser.parse_args(argv)
    text = catalogue_markdown(discover())
    if not args.write:
        sys.stdout.write(text)
        return 0
    doc = DOC.read_text()
    if START not in doc or END not in doc:
        print(f"{DOC}: the markers {START} and {END} are missing", file=sys.stderr)
        return 1
    head, rest = doc.split(START, 1)
    _, tail = rest.split(END, 1)
    DOC.write_text(f"{head}{START}\n{text}{END}{tail}")
    print(f"wrote {DOC.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
