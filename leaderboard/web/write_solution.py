"""A problem page's "Write a solution": the exact signature, what each rank holds and returns, the rules, a starter
file per backend to download (``/problems/<id>/starter/<backend>/``), the ``arena`` lines for it, and the backend
guides. Everything comes from the problem's folder through ``evaluator/starters.py`` (via
``leaderboard.beyond_contract``), so the page, the download and ``arena`` agree."""

from __future__ import annotations

from typing import Any

from django.http import Http404, HttpRequest, HttpResponse
from django.urls import reverse

from leaderboard import beyond_contract


def _registry_problem(problem_id: str):
    try:
        return beyond_contract.registry_problem(problem_id)
    except (ValueError, OSError):
        return None


# Sections already built, by problem, with the registry's problem each was built from: the registry reads a problem
# once per process (``problems.registry.get``) and a new one after it is asked to forget, which builds the section
# again. Building one cost a problem page about 4 ms a request.
_BUILT: dict[str, tuple[Any, dict[str, Any] | None]] = {}
# Problems made up by ``seed_demo`` have no folder: the registry is not asked (it lists every folder to say so).
NO_FOLDER_SUITES = ("demo",)


def context(problem_id: str, *, suite: str = "") -> dict[str, Any] | None:
    """What the section shows; None for a problem with no starter (an imported suite's assigned ``solution``) or no
    folder (``suite``: the problem's, when the caller knows it)."""
    if suite in NO_FOLDER_SUITES:
        return None
    problem = _registry_problem(problem_id)
    if problem is None:
        return None
    built = _BUILT.get(problem_id)
    if built is None or built[0] is not problem:
        built = _BUILT[problem_id] = (problem, _context(problem))
    return built[1]


def _context(problem: Any) -> dict[str, Any] | None:
    starters = beyond_contract.solution_starters
    try:
        files = starters.starters(problem)
    except starters.StarterError:
        return None
    return {
        "signature": starters.signature(problem),
        "inputs": starters.statement_part(problem, "Inputs"),
        "returns": starters.statement_part(problem, "Return"),
        "rules": starters.RULES,
        "starters": [
            {
                "backend": s.backend,
                "title": s.title,
                "filename": s.filename,
                "gpu_only": s.gpu_only,
                "url": reverse("problem-starter", args=[problem.id, s.backend]),
                "guide": reverse("site-backend-doc", args=[starters.GUIDES[s.backend]])
                if s.backend in starters.GUIDES
                else None,
                "commands": starters.commands(problem, s.filename, s.gpu_only),
            }
            for s in files
        ],
        "guides": [
            {"name": name, "url": reverse("site-backend-doc", args=[name])}
            for name in beyond_contract.prompt_backends()
        ],
    }


def problem_starter(request: HttpRequest, problem_id: str, backend: str) -> HttpResponse:
    """One starter file as a download, named so that its name declares its backend."""
    starters = beyond_contract.solution_starters
    problem = _registry_problem(problem_id)
    if problem is None or backend not in starters.STARTERS:
        raise Http404("no such starter")
    try:
        starter = starters.starter(problem, backend)
    except starters.StarterError as exc:
        raise Http404(str(exc)) from None
    if starter.gpu_only and not starters.profiles_for(problem, "cuda"):
        raise Http404("this problem runs on no GPU profile")
    response = HttpResponse(starter.source, content_type="text/x-python; charset=utf-8")
    response["Content-Disposition"] = f'attachment; filename="{starter.filename}"'
    return response
