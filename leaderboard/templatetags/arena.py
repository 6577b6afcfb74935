"""Template filters: markdown statements, highlighted code, numbers as people read them."""

from __future__ import annotations

import json
from typing import Any

import markdown as markdown_lib
from django import template
from django.utils.safestring import mark_safe
from pygments import highlight as pygments_highlight
from pygments.formatters import HtmlFormatter
from pygments.lexers import PythonLexer, get_lexer_by_name
from pygments.util import ClassNotFound

register = template.Library()


@register.filter
def markdown(text: str) -> str:
    """Renders a problem statement. Raw HTML in the markdown is escaped, not passed through."""
    md = markdown_lib.Markdown(
        extensions=["fenced_code", "tables", "codehilite", "sane_lists"],
        extension_configs={"codehilite": {"guess_lang": False, "css_class": "highlight"}},
    )
    md.preprocessors.deregister("html_block")
    md.inlinePatterns.deregister("html")
    return mark_safe(md.convert(text or ""))


@register.filter
def highlight(code: str, language: str = "python") -> str:
    try:
        lexer = get_lexer_by_name(language)
    except ClassNotFound:
        lexer = PythonLexer()
    return mark_safe(pygments_highlight(code or "", lexer, HtmlFormatter(cssclass="highlight", linenos="table")))


@register.filter
def us(value: Any) -> str:
    """Microseconds with sensible precision."""
    if not isinstance(value, (int, float)) or isinstance(value, bool):
        return "—"
    if value >= 1_000_000:
        return f"{value / 1_000_000:.3f} s"
    if value >= 1000:
        return f"{value / 1000:.3f} ms"
    if value >= 100:
        return f"{value:.1f} µs"
    if value >= 1 or value == 0:
        return f"{value:.2f} µs"
    return f"{value:.2g} µs"


@register.filter
def times(value: Any) -> str:
    if not isinstance(value, (int, float)) or isinstance(value, bool):
        return "—"
    return f"{value:.3f}×"


@register.filter
def num(value: Any) -> str:
    """A measured number with four significant digits."""
    if not isinstance(value, (int, float)) or isinstance(value, bool):
        return "—"
    return f"{value:.4g}"


@register.filter
def percent(value: Any) -> str:
    if not isinstance(value, (int, float)) or isinstance(value, bool):
        return "—"
    pct = value * 100
    return f"{pct:.1f} %" if pct >= 1 or pct == 0 else f"{pct:.2g} %"


@register.filter
def trial_summary(trial: Any) -> dict[str, Any]:
    """One trial's ranks folded into a line: how many were right, and each wrong rank's error."""
    ranks = trial.get("ranks", []) if isinstance(trial, dict) else []
    bad = [r for r in ranks if isinstance(r, dict) and not r.get("ok")]
    worst = max((r.get("max_abs_error") for r in ranks if isinstance(r, dict)
                 and isinstance(r.get("max_abs_error"), (int, float))), default=None)
    return {"ok": len(ranks) - len(bad), "total": len(ranks), "bad": bad, "max_abs_error": worst}


@register.filter
def pretty_json(value: Any) -> str:
    return json.dumps(value, indent=2, sort_keys=True, default=str)


@register.filter
def is_dict(value: Any) -> bool:
    return isinstance(value, dict)


@register.filter
def is_list(value: Any) -> bool:
    return isinstance(value, (list, tuple))


@register.filter
def get(mapping: Any, key: Any) -> Any:
    if isinstance(mapping, dict):
        return mapping.get(key)
    return None


@register.filter
def label(key: Any) -> str:
    return str(key).replace("_", " ")
