"""Template bodies rendered once and then written from memory (``templatetags/arena``): a filter form's fields once
per state of the form (``{% form_fields form %}``), and a block that reads nothing of its page once per process
(``{% fixed %}``)."""

from __future__ import annotations

from typing import Any

from django import template
from django.core.signals import setting_changed
from django.dispatch import receiver
from django.urls import get_script_prefix, get_urlconf


class FormFieldsNode(template.Node):
    """``{% form_fields form %}...{% endform_fields %}``: its body rendered once per process for each state of the
    form it shows (each field's name, label, choices, value and errors), then written from memory. The body may read
    only the form's fields (a filter form of a few selects cost a page about a millisecond of template rendering)."""

    LIMIT = 512  # states kept; then forgotten all at once

    def __init__(self, form: template.base.FilterExpression, nodelist: template.NodeList) -> None:
        self.form, self.nodelist = form, nodelist
        self.rendered: dict[Any, str] = {}

    @staticmethod
    def _state(form: Any) -> Any:
        fields = []
        for field in form:
            value = field.value()
            choices = getattr(field.field, "choices", None)
            fields.append(
                (
                    field.name,
                    str(field.label),
                    tuple(value) if isinstance(value, list) else value,
                    tuple((str(k), str(v)) for k, v in choices) if choices is not None else None,
                    tuple(str(e) for e in field.errors),
                )
            )
        return (type(form).__name__, tuple(fields))  # a FilterSet makes its form's class anew each time

    def render(self, context: template.Context) -> str:
        form = self.form.resolve(context)
        try:
            key = self._state(form)
            hash(key)
        except (TypeError, ValueError):  # a state that cannot be a key: rendered every time
            return self.nodelist.render(context)
        html = self.rendered.get(key)
        if html is None:
            if len(self.rendered) >= self.LIMIT:
                self.rendered.clear()
            html = self.rendered[key] = self.nodelist.render(context)
        return html


_settings_changed = 0  # how many times a setting changed (tests: URLs, static files' storage): a fixed block anew


@receiver(setting_changed)
def _forget_fixed(**_: Any) -> None:
    global _settings_changed
    _settings_changed += 1


def settings_changes() -> int:
    """How many times a setting changed in this process (a test's ``settings``): what links kept once found key on."""
    return _settings_changed


class FixedNode(template.Node):
    """``{% fixed %}...{% endfixed %}``: a block of links and static files the same on every page (the site's header
    and footer, some twenty ``{% url %}`` and ``{% static %}`` tags, about half a millisecond a page), rendered once
    per process for each URL prefix and then written from memory. The body is rendered with none of the page's
    variables, so a variable in it reads as empty on the first render as on every later one: it cannot show one
    reader's data to another."""

    def __init__(self, nodelist: template.NodeList) -> None:
        self.nodelist = nodelist
        self.rendered: dict[Any, str] = {}

    def render(self, context: template.Context) -> str:
        request = getattr(context, "request", None)
        match = getattr(request, "resolver_match", None)
        # What ``{% url %}`` and ``{% static %}`` read besides their names: the settings, the prefix the site is
        # served under, the URL configuration, and the application namespace a namespaced name resolves in.
        key = (
            _settings_changed,
            get_script_prefix(),
            get_urlconf(),
            getattr(request, "current_app", None),
            getattr(match, "namespace", None),
        )
        html = self.rendered.get(key)
        if html is None:
            if len(self.rendered) >= 64:
                self.rendered.clear()
            html = self.rendered[key] = self.nodelist.render(context.new())
        return html
