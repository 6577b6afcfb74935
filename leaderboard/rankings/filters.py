"""The filters of the overall ranking of model runs: one FilterSet for the page's form and the API.

A filter offers, and accepts, the values some run has (``run_selectors.model_run_filter_choices``: hardware, precision,
k; both protocol modes always). The page shows ``.form`` and ignores a value it does not offer (a stale link still
shows a ranking); the API refuses it with a 400 that names the field.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

import django_filters

from leaderboard.models import ModelRun

ANY = "any"


@dataclass(frozen=True)
class RunFilterChoices:
    """The values each filter offers (``run_selectors.model_run_filter_choices`` reads them from the runs); kept here,
    beside the FilterSet that takes them, so the selectors import the filters and never the other way round."""

    profiles: list[str]
    precisions: list[str]
    modes: list[str]
    ks: list[int]


_FORM_CLASSES: dict[tuple[Any, ...], type] = {}  # RunFilterSet.get_form_class


def form_class_once(kept: dict[tuple[Any, ...], type], offered: tuple[Any, ...], make: Callable[[], type]) -> type:
    """A filter set's form class for the values ``offered``, made by ``make`` the first time and kept in ``kept``
    (at most 64 sets of values, then forgotten at once), its fields shared by its instances (``SharedFields``)."""
    form = kept.get(offered)
    if form is None:
        if len(kept) >= 64:
            kept.clear()
        form = make()
        form.base_fields = SharedFields(form.base_fields)
        kept[offered] = form
    return form


class SharedFields(dict):
    """A filter form's fields, which each form instance shares instead of deep-copying (``Form.__init__`` deep-copies
    ``base_fields``: five choice fields and their widgets, about a twentieth of a ranking page). For a form class made
    once per set of values offered (``RunFilterSet``, the catalogue's ``ProblemFilterSet``), whose fields nothing
    changes once the class is made (validating and rendering only read them)."""

    def __deepcopy__(self, memo: dict[int, Any]) -> dict[str, Any]:
        return dict(self)


class RunFilterSet(django_filters.FilterSet):
    profile = django_filters.ChoiceFilter(label="Hardware", empty_label=ANY)
    precision = django_filters.ChoiceFilter(label="Precision", empty_label=ANY)
    mode = django_filters.ChoiceFilter(label="Protocol", empty_label=ANY)
    k = django_filters.ChoiceFilter(label="K", empty_label=ANY)
    published = django_filters.ChoiceFilter(
        label="Attempts", empty_label=ANY, choices=[("1", "published")], method="only_published"
    )

    class Meta:
        model = ModelRun
        fields = ["profile", "precision", "mode", "k", "published"]

    def __init__(self, data=None, queryset=None, *, choices: RunFilterChoices, **kwargs: Any) -> None:
        super().__init__(data, queryset, **kwargs)
        offered = {
            "profile": choices.profiles,
            "precision": choices.precisions,
            "mode": choices.modes,
            "k": [str(k) for k in choices.ks],
        }
        for name, values in offered.items():
            self.filters[name].extra["choices"] = [(v, v) for v in values]
        self._offered = tuple((name, tuple(values)) for name, values in offered.items())

    def get_form_class(self) -> type:
        """The form of these filters, its class made once per process for each set of values offered: django-filter
        makes a class (and a field per filter) on every request, about a twentieth of a ranking page. A form
        instance copies its class's fields, so sharing the class shares nothing a request changes."""
        return form_class_once(_FORM_CLASSES, self._offered, super().get_form_class)

    def only_published(self, queryset, name: str, value: str):
        """Runs whose owner published their attempts and trajectories."""
        return queryset.filter(published_at__isnull=False) if value else queryset

    def state(self) -> tuple[Any, ...]:
        """Everything ``.qs`` filters by, hashable: the valid values (the page ignores the others), or none when
        nothing is bound."""
        if not self.is_bound:
            return ()
        self.is_valid()  # cleans the form; .qs filters by cleaned_data
        return tuple(self.form.cleaned_data.items())

    def active(self) -> dict[str, Any]:
        """The filters in effect (valid and set), as exports record them."""
        if not self.is_bound:
            return {}
        self.is_valid()  # cleans the form; the valid values are in cleaned_data, as .qs uses them
        values = {name: self.form.cleaned_data.get(name) for name in self.filters}
        return {
            name: int(v) if name == "k" else (True if name == "published" else v) for name, v in values.items() if v
        }
