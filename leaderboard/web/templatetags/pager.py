"""``{% pager t %}``: a table's pager and export links, built in Python: the same HTML ``_pager.html``'s template wrote
(kept in ``tests/leaderboard/web/previous_rows/pager.html``), byte for byte, each value escaped as the template escaped
it (``row_html.text``). Some twenty variable lookups and tags a table were about a tenth of a millisecond of every page
with a table."""

from __future__ import annotations

from typing import Any

from django import template
from django.utils.safestring import mark_safe

from leaderboard.web.row_html import _get, text

register = template.Library()


def _item(obj: Any, name: str) -> Any:
    """``obj.name`` as a template reads it from a table's context (a dict: its key first, as the template tries)."""
    if isinstance(obj, dict):
        return obj[name] if name in obj else _get(obj, name)
    return _get(obj, name)


def pager_html(t: Any) -> str:
    """The pager of ``t`` (``tables.Table.context``: its name, page, links and export links)."""
    page, links, export = _item(t, "page"), _item(t, "links"), _item(t, "export")
    paginator = _get(page, "paginator")
    pages, count = _get(paginator, "num_pages"), _get(paginator, "count")
    try:
        several = pages > 1
    except TypeError:  # (a missing page: the template's comparison is false)
        several = False
    if several:
        first, previous, following, last = (_item(links, name) for name in ("first", "previous", "next", "last"))
        body = (
            "\n    "
            + (f'<a href="{text(first)}">« first</a>' if first else "")
            + "\n    "
            + (f'<a href="{text(previous)}" rel="prev">‹ previous</a>' if previous else "")
            + f"\n    <span>page {text(_get(page, 'number'))} of {text(pages)} ({text(count)} rows)</span>\n    "
            + (f'<a href="{text(following)}" rel="next">next ›</a>' if following else "")
            + "\n    "
            + (f'<a href="{text(last)}">last »</a>' if last else "")
            + "\n  "
        )
    else:
        body = f"<span>{text(count)} row{_plural(count)}</span>"
    return (
        f'<nav class="pager small" aria-label="{text(_item(t, "name"))} pages">\n  {body}\n'
        f'  <span class="exports">Download: <a href="{text(_item(export, "csv"))}" data-export="csv">CSV</a> · '
        f'<a href="{text(_item(export, "json"))}" data-export="json">JSON</a></span>\n</nav>'
    )


def _plural(value: Any) -> str:
    """``value|pluralize``: "s" unless ``value`` is a number equal to one or a sequence of one; nothing for a value
    that is neither."""
    try:
        return "" if float(value) == 1 else "s"
    except ValueError:
        pass
    except TypeError:
        try:
            return "" if len(value) == 1 else "s"
        except TypeError:
            pass
    return ""


@register.simple_tag
def pager(t: Any) -> str:
    return mark_safe(pager_html(t))
