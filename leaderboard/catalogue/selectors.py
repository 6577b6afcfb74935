"""Reads of the problem catalogue: the active problems (by category), one problem, and the profile a problem's
pages show by default."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from django.conf import settings
from django.db.models import QuerySet
from django.http import Http404

from evaluator.contract.profiles import PROFILES
from leaderboard.models import Problem
from leaderboard.rankings import prepared
from problems.registry import CATEGORIES


def problem_list(*, category: str | None = None) -> QuerySet[Problem]:
    problems = Problem.objects.filter(is_active=True)
    if category:
        problems = problems.filter(category=category)
    return problems.order_by("category", "title")


# What the home page's catalogue shows of a problem (its statement, reference and presets, most of a row's bytes,
# are left in the database).
LISTED_FIELDS = ("id", "title", "category", "summary", "version", "codebase", "world_sizes", "suite", "hard", "tags")
_SIZES = LISTED_FIELDS.index("world_sizes")


# The profiles a problem of these world sizes supports (``Problem.supported_profiles``), per tuple of world sizes: the
# catalogue asks it of every problem, twice a page, and a handful of distinct sets of world sizes cover them all.
_SUPPORTED: dict[tuple[Any, int], tuple[str, ...]] = {}


class ListedProblem:
    """A problem as the catalogue lists it, read with ``.values_list()`` (no model instance): the columns of
    ``LISTED_FIELDS`` and what ``Problem`` derives from them (``tag_list``, ``supports``, ``supported_profiles``);
    ``read``: the columns as read, hashable (the world sizes as a tuple): what a memo of its row keys on."""

    def __init__(self, values: tuple[Any, ...]) -> None:
        mine = self.__dict__
        mine.update(zip(LISTED_FIELDS, values))
        self.pk = values[0]
        sizes = mine["world_sizes"]
        self.read = (*values[:_SIZES], tuple(sizes) if type(sizes) is list else sizes, *values[_SIZES + 1 :])

    tag_list = Problem.tag_list
    supports = Problem.supports

    @property
    def supported_profiles(self) -> list[str]:
        key = (self.read[_SIZES], len(PROFILES))  # (a profile added to the table, as a test may: computed anew)
        try:
            found = _SUPPORTED.get(key)
        except TypeError:  # world sizes that are not a list of numbers: as the model computes them
            return Problem.supported_profiles.fget(self)
        if found is None:
            found = _SUPPORTED[key] = tuple(Problem.supported_profiles.fget(self))
        return list(found)

    def __str__(self) -> str:
        return self.id


def listed_problems(problems: QuerySet[Problem]) -> list[ListedProblem]:
    """``problems`` (e.g. the filters' ``.qs``), in their order, as the catalogue lists them: one query."""
    return [ListedProblem(values) for values in problems.values_list(*LISTED_FIELDS)]


def filtered_catalogue(data=None) -> tuple[Any, list[ListedProblem]]:
    """The catalogue's filters bound to ``data`` (``problem_filters``) and the problems they list, as
    ``listed_problems`` reads them. Unfiltered (``data`` None), the whole active catalogue is read once, for the
    filters' choices and the list alike: one query instead of two."""
    if data is not None:
        filters = problem_filters(data)
        return filters, listed_problems(filters.qs)
    from leaderboard.catalogue.filters import ProblemFilterSet

    # An unbound filter set lists its whole queryset, in its order: read as ``listed_problems`` reads it, the query
    # compiled once per process (``rankings.prepared``).
    problems = [
        ListedProblem(values)
        for values in prepared.rows(("listed-catalogue",), lambda: problem_list().values_list(*LISTED_FIELDS))
    ]
    choices = [(p.category, p.world_sizes, p.tags) for p in problems]
    return ProblemFilterSet(None, queryset=problem_list(), choices_from=choices), problems


@dataclass(frozen=True)
class Category:
    key: str
    label: str
    problems: list[Problem]


def problem_filters(data=None):
    """The catalogue's filters bound to ``data`` (a query string; None: no filter) over the active problems. The home
    page shows ``.form`` and lists ``.qs``; the API validates with ``.is_valid()``."""
    from leaderboard.catalogue.filters import ProblemFilterSet

    return ProblemFilterSet(data, queryset=problem_list())


def problem_list_by_category(*, problems: QuerySet[Problem] | None = None) -> list[Category]:
    """Active problems (or ``problems``, e.g. a filtered list) grouped by category, categories in the suite's
    order."""
    return problems_by_category(list(problem_list() if problems is None else problems.order_by("category", "title")))


def problems_by_category(problems: list[Problem]) -> list[Category]:
    """``problems`` (read already, in ``problem_list``'s order: category, then title) grouped by category, categories
    in the suite's order: no query."""
    grouped: dict[str, list[Problem]] = {}
    for problem in problems:
        grouped.setdefault(problem.category, []).append(problem)
    order = list(CATEGORIES) + sorted(set(grouped) - set(CATEGORIES))
    return [Category(key, CATEGORIES.get(key, key), grouped[key]) for key in order if key in grouped]


def category_order(key: str) -> tuple[int, str]:
    """The sort key of a category on every page: the suite's order (problems.registry.CATEGORIES), unknown ones
    after it by name (the same order as the comparison's categories)."""
    order = list(CATEGORIES)
    return (order.index(key) if key in CATEGORIES else len(order), key)


def problem_detail(*, problem_id: str) -> Problem:
    """The problem, or Http404 (which pages and the API both turn into a 404), as ``get_object_or_404`` reads it,
    its query compiled once per process for the same id (``rankings.prepared.get``)."""
    problem = prepared.get(Problem, pk=problem_id)
    if problem is None:
        raise Http404(f"No {Problem._meta.object_name} matches the given query.")
    return problem


def problem_default_profiles(problems: list[Any]) -> dict[str, str | None]:
    """``problem_default_profile`` of each of ``problems`` (no preference), by id: found once for each set of
    profiles they support (a handful cover the catalogue)."""
    found: dict[tuple[str, ...], str | None] = {}
    defaults = {}
    for problem in problems:
        supported = tuple(problem.supported_profiles)
        if supported not in found:
            found[supported] = problem_default_profile(problem=problem)
        defaults[problem.id] = found[supported]
    return defaults


def problem_default_profile(*, problem: Problem, preferred: str | None = None) -> str | None:
    supported = problem.supported_profiles
    if preferred in supported:
        return preferred
    if settings.ARENA_DEFAULT_PROFILE in supported:
        return settings.ARENA_DEFAULT_PROFILE
    return supported[0] if supported else None
