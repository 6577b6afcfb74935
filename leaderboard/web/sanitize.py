"""The one HTML sanitiser after the Markdown renderer (problem statements, the docs pages): nh3 keeps the markup
Markdown and code highlighting make (ids and classes, table alignment) and drops raw HTML, scripts, event handlers and
links to anything but http(s), mailto and this site."""

from __future__ import annotations

import copy
import functools

import nh3
from django.utils.safestring import SafeString, mark_safe


@functools.cache
def _attributes() -> dict[str, set[str]]:
    attributes = copy.deepcopy(nh3.ALLOWED_ATTRIBUTES)
    attributes.setdefault("*", set()).update({"id", "class"})
    for tag in ("td", "th"):
        attributes.setdefault(tag, set()).update({"align", "style"})
    return attributes


def clean_html(html: str) -> SafeString:
    return mark_safe(
        nh3.clean(
            html,
            attributes=_attributes(),
            url_schemes={"http", "https", "mailto"},
            filter_style_properties={"text-align"},
        )
    )
