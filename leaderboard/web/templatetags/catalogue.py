"""Tags of the home page's catalogue built in Python (``web/catalogue_html.py``)."""

from __future__ import annotations

from typing import Any

from django import template
from django.utils.safestring import mark_safe

from leaderboard.web import catalogue_html
from leaderboard.web.templatetags.arena import times

register = template.Library()


@register.simple_tag(takes_context=True)
def category_summary(context: template.Context, category: Any, summary: Any) -> str:
    """A category's line on the home page: its leader, best speedup and solutions (``catalogue_html``)."""
    return mark_safe(catalogue_html.category_summary(category.key, summary, context.get("problems_url", ""), times))
