"""The filters of the problem catalogue: one FilterSet for the home page's search form and ``GET /api/problems/``.

``q`` searches the id, title, summary, "why it is hard", the communication it needs and the tags; ``category``,
``world_size`` and ``tag`` offer the values some active problem has. The page ignores a value it does not offer; the
API refuses it with a 400 that names the field.
"""

from __future__ import annotations

from typing import Any

import django_filters
from django.db.models import Q, QuerySet

from leaderboard.models import Problem
from leaderboard.rankings.filters import form_class_once
from problems.registry import CATEGORIES

ANY = "any"


def catalogue_choices(problems: QuerySet[Problem]) -> dict[str, list[tuple[str, str]]]:
    """The values the filters offer: those some active problem has (one query)."""
    return choices_of(list(problems.values_list("category", "world_sizes", "tags")))


def choices_of(rows: list[tuple[str, Any, str]]) -> dict[str, list[tuple[str, str]]]:
    """The values the filters offer, from the (category, world sizes, tags) of every problem they filter (no
    query)."""
    categories = {c for c, _, _ in rows}
    order = [c for c in CATEGORIES if c in categories] + sorted(categories - set(CATEGORIES))
    sizes = sorted({int(w) for _, ws, _ in rows for w in (ws or []) if isinstance(w, int)})
    tags = sorted({t for _, _, ts in rows for t in (ts or "").split(",") if t})
    return {
        "category": [(c, CATEGORIES.get(c, c)) for c in order],
        "world_size": [(str(w), str(w)) for w in sizes],
        "tag": [(t, t) for t in tags],
    }


SEARCH_ATTRS = {"placeholder": "name, summary, tag…", "type": "search"}  # the search box's, on the form's field
_FORM_CLASSES: dict[tuple[Any, ...], type] = {}  # ProblemFilterSet.get_form_class


class ProblemFilterSet(django_filters.FilterSet):
    q = django_filters.CharFilter(label="Search", method="search", max_length=200)
    category = django_filters.ChoiceFilter(label="Category", empty_label=ANY)
    world_size = django_filters.ChoiceFilter(label="World size", empty_label=ANY, method="on_world_size")
    tag = django_filters.ChoiceFilter(label="Tag", empty_label=ANY, method="with_tag")

    class Meta:
        model = Problem
        fields = ["q", "category", "world_size", "tag"]

    def __init__(self, data=None, queryset=None, *, choices_from=None, **kwargs: Any) -> None:
        """``choices_from``: the (category, world sizes, tags) of every problem of ``queryset``, read already (None:
        read here, one query)."""
        super().__init__(data, queryset, **kwargs)
        choices = catalogue_choices(self.queryset) if choices_from is None else choices_of(choices_from)
        for name, values in choices.items():
            self.filters[name].extra["choices"] = values
        self._offered = tuple((name, tuple(values)) for name, values in choices.items())
        self.filters["q"].field.widget.attrs.update(SEARCH_ATTRS)

    def get_form_class(self) -> type:
        """The form of these filters, its class made once per process for each set of values offered and its fields
        shared by its instances (``SharedFields``), as ``RunFilterSet``'s: django-filter made a class and its fields
        on every request, and each form deep-copied them."""
        return form_class_once(_FORM_CLASSES, self._offered, super().get_form_class)

    def search(self, queryset: QuerySet[Problem], name: str, value: str) -> QuerySet[Problem]:
        for word in value.split():
            queryset = queryset.filter(
                Q(id__icontains=word)
                | Q(title__icontains=word)
                | Q(summary__icontains=word)
                | Q(hard__icontains=word)
                | Q(communication__icontains=word)
                | Q(tags__icontains=word)
                | Q(codebase__icontains=word)
            )
        return queryset

    def on_world_size(self, queryset: QuerySet[Problem], name: str, value: str) -> QuerySet[Problem]:
        # world_sizes is a JSON list; containment lookups differ between databases, and the catalogue is small.
        size = int(value)
        return queryset.filter(
            pk__in=[pk for pk, sizes in queryset.values_list("pk", "world_sizes") if size in (sizes or [])]
        )

    def with_tag(self, queryset: QuerySet[Problem], name: str, value: str) -> QuerySet[Problem]:
        return queryset.filter(tags__contains=f",{value},")

    def active(self) -> dict[str, Any]:
        if not self.is_bound:
            return {}
        self.is_valid()
        return {name: v for name in self.filters if (v := self.form.cleaned_data.get(name))}
