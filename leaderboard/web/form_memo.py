"""A template body rendered once per state of the form it shows (``{% form_fields form %}``, ``templatetags/arena``)."""

from __future__ import annotations

from typing import Any

from django import template


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
