"""The catalogue's one write: ``problems_sync`` mirrors the problem registry (``problems/``) into Problem rows."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from django.db import transaction

from leaderboard.models import Problem
from leaderboard.rankings.generations import rankings_changed


@dataclass
class SyncReport:
    created: list[str] = field(default_factory=list)
    updated: list[str] = field(default_factory=list)
    unchanged: list[str] = field(default_factory=list)
    deactivated: list[str] = field(default_factory=list)


def _problem_fields(problem: Any) -> dict[str, Any]:
    """The columns of a Problem row, from a registry ``problems.registry.Problem``."""
    return {
        "title": problem.title,
        "category": problem.category,
        "summary": str(problem.extra.get("summary", "")),
        "version": problem.version,
        "content_hash": problem.content_hash,
        "statement": problem.statement,
        "reference_source": problem.reference_source,
        "codebase": problem.codebase,
        "function": problem.function,
        "world_sizes": list(problem.world_sizes),
        "presets": {name: {"dtype": p.dtype, "params": dict(p.params)} for name, p in problem.presets.items()},
        "tolerances": {d: {"atol": t.atol, "rtol": t.rtol} for d, t in problem.tolerances.items()},
        "roofline": dict(problem.roofline),
        "suite": problem.suite,
        "hard": str(getattr(problem, "hard", "") or ""),
        "communication": str(getattr(problem, "communication", "") or ""),
        "tags": Problem.tags_column(getattr(problem, "tags", ()) or ()),
        "is_active": True,
    }


@transaction.atomic
def problems_sync(*, problems: dict[str, Any] | None = None) -> SyncReport:
    """Makes the Problem table match the registry. Idempotent: a second run changes nothing.

    Problems that left the registry are deactivated, never deleted: submissions point at them.
    """
    if problems is None:
        from problems.registry import catalogue

        problems = catalogue()
    report = SyncReport()
    existing = {p.pk: p for p in Problem.objects.select_for_update()}
    for problem_id, problem in sorted(problems.items()):
        values = _problem_fields(problem)
        row = existing.get(problem_id)
        if row is None:
            Problem.objects.create(id=problem_id, **values)
            report.created.append(problem_id)
        elif any(getattr(row, k) != v for k, v in values.items()):
            for k, v in values.items():
                setattr(row, k, v)
            row.save()
            report.updated.append(problem_id)
        else:
            report.unchanged.append(problem_id)
    for problem_id, row in existing.items():
        if row.suite == "demo":
            continue  # made up by `manage.py seed_demo`, never in a registry: not for this sync to retire
        if problem_id not in problems and row.is_active:
            row.is_active = False
            row.save(update_fields=["is_active", "updated_at"])
            report.deactivated.append(problem_id)
    if report.created or report.updated or report.deactivated:
        from leaderboard.rankings.services import category_standings_refresh  # rankings read the catalogue

        category_standings_refresh()  # a category's line counts its active problems at their current versions
        rankings_changed()
    return report
