"""Template filters: markdown statements, highlighted code, numbers as people read them."""

from __future__ import annotations

import functools

import html
import json
from typing import Any

import markdown as markdown_lib
from markdown.treeprocessors import Treeprocessor
from django import template
from django.utils.safestring import mark_safe
from pygments import highlight as pygments_highlight
from pygments.formatters import HtmlFormatter
from pygments.lexers import PythonLexer, get_lexer_by_name
from pygments.util import ClassNotFound

from leaderboard.rankings.metrics import Protocol
from leaderboard.web.markdown_lists import loosen_lists
from leaderboard.web.sanitize import clean_html

register = template.Library()


SAFE_URL_SCHEMES = {"http", "https", "mailto"}


def url_is_safe(url: str) -> bool:
    """A link or image target that runs no script: relative, or http(s)/mailto. Entities are decoded and the
    characters browsers skip inside a scheme dropped first, so ``java&#115;cript:`` or ``java&#9;script:`` fail."""
    text = "".join(ch for ch in html.unescape(url or "") if ord(ch) > 32 and ch != "\x7f").lower()
    scheme, colon, _ = text.partition(":")
    if not colon or any(c in scheme for c in "/?#"):
        return True  # no scheme: a path, a query or an anchor on this site
    return scheme in SAFE_URL_SCHEMES


class _DropUnsafeUrls(Treeprocessor):
    def run(self, root):
        for element in root.iter():
            for attribute in ("href", "src"):
                if attribute in element.attrib and not url_is_safe(element.attrib[attribute]):
                    del element.attrib[attribute]


@register.filter
def markdown(text: str) -> str:
    """Renders a problem statement. Raw HTML in the markdown is escaped, not passed through, and links or images
    to anything but http(s), mailto or this site (``javascript:``, ``data:``) lose their target; then nh3 cleans the
    result like the docs pages (``leaderboard.web.sanitize``), whatever the renderer let through. The same text
    renders to the same HTML: it is rendered once per process (a statement cost its page about 5 ms a request)."""
    return _markdown(text or "")


@functools.lru_cache(maxsize=256)
def _markdown(text: str) -> str:
    md = markdown_lib.Markdown(
        extensions=["fenced_code", "tables", "codehilite", "sane_lists"],
        extension_configs={"codehilite": {"guess_lang": False, "css_class": "highlight"}},
    )
    md.preprocessors.deregister("html_block")
    md.inlinePatterns.deregister("html")
    md.treeprocessors.register(_DropUnsafeUrls(md), "drop_unsafe_urls", -10)
    return clean_html(md.convert(loosen_lists(text)))


@register.filter
def highlight(code: str, language: str = "python") -> str:
    """Source highlighted by Pygments, once per process for the same source (a reference cost its page about 5 ms a
    request)."""
    return _highlight(code or "", language)


@functools.lru_cache(maxsize=256)
def _highlight(code: str, language: str) -> str:
    try:
        lexer = get_lexer_by_name(language)
    except ClassNotFound:
        lexer = PythonLexer()
    return mark_safe(pygments_highlight(code, lexer, HtmlFormatter(cssclass="highlight", linenos="table")))


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
    worst = max(
        (
            r.get("max_abs_error")
            for r in ranks
            if isinstance(r, dict) and isinstance(r.get("max_abs_error"), (int, float))
        ),
        default=None,
    )
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


@register.filter
def protocol_label(run: Any) -> str:
    """A model run's protocol in one line: ``agentic · k=3 · 40 turns · 2.1M tokens · 3.5 h`` (the one stored with
    the run when it has one)."""
    stored = getattr(run, "protocol_label", "")
    if stored:
        return stored
    try:
        return Protocol.of_run(run).label()
    except (ValueError, TypeError, AttributeError):
        return f"{getattr(run, 'mode', '?')} · k={getattr(run, 'k', '?')}"


@register.filter
def speed_bucket(speedup: Any) -> str:
    """The grid's colour class for a passed attempt's speedup."""
    if not isinstance(speedup, (int, float)) or isinstance(speedup, bool):
        return "speed-none"
    if speedup > 2.0:
        return "speed-2"
    if speedup > 1.5:
        return "speed-15"
    if speedup > 1.0:
        return "speed-1"
    return "speed-slow"


VERDICT_SHORT = {
    "passed": "pass",
    "wrong_output": "wrong",
    "compile_error": "compile",
    "runtime_error": "runtime",
    "timeout": "timeout",
    "rejected": "rejected",
    "infra_error": "infra",
}


@register.filter
def verdict_short(verdict: Any) -> str:
    return VERDICT_SHORT.get(str(verdict), str(verdict or ""))


@register.filter
def fast_p(mapping: Any, p: Any) -> Any:
    """``score.fast_p_at_k|fast_p:"1.5"`` — a fast_p mapping keyed by float thresholds."""
    if not isinstance(mapping, dict) and not hasattr(mapping, "get"):
        return None
    return mapping.get(float(p))


@register.filter
def divide(a: Any, b: Any) -> float | None:
    try:
        return float(a) / float(b) if b else None
    except (TypeError, ValueError):
        return None


@register.filter
def roughly(seconds: Any) -> str:
    """A duration in seconds as people estimate it: ``under a minute``, ``about 4 min``, ``about 1.5 h``."""
    if not isinstance(seconds, (int, float)) or isinstance(seconds, bool) or seconds < 0:
        return "—"
    if seconds < 60:
        return "under a minute" if seconds >= 1 else "moments"
    if seconds < 3600:
        return f"about {round(seconds / 60)} min"
    return f"about {seconds / 3600:.1f} h"


COMMUNICATION_FLAGS = (
    "uses_nccl",
    "nccl_calls",
    "point_to_point_calls",
    "uses_collectives_api",
    "communication_calls",
    "communication_source",
)
POINT_TO_POINT = frozenset({"send", "recv", "isend", "irecv", "batch_isend_irecv"})
WARNING_FLAGS = frozenset({"suspicious_speedup"})  # the flags a reader should look twice at, shown in warning colour


@register.filter
def flag_summary(flags: Any, profile: Any = None) -> dict[str, Any]:
    """A result's flags for people: what communication the solution called (counted at run time, by kind, through
    which backend), explained and in neutral colour, then the other flags; only WARNING_FLAGS are warnings."""
    if not isinstance(flags, dict):
        return {"communication": None, "others": []}
    if isinstance(profile, str):
        from evaluator.contract.profiles import PROFILES

        profile = PROFILES.get(profile)
    backend = getattr(profile, "backend", None) or ""
    counts = flags.get("communication_calls")
    p2p: dict[str, int] = {}
    collectives: dict[str, int] = {}
    barriers = 0
    if isinstance(counts, dict):
        for name, n in counts.items():
            short = str(name).rsplit(".", 1)[-1]
            n = int(n) if isinstance(n, (int, float)) and not isinstance(n, bool) else 0
            if n <= 0:  # a call the counter knows but the solution never made is not part of its report
                continue
            if short == "barrier":
                barriers += n
            elif short in POINT_TO_POINT:
                p2p[short] = p2p.get(short, 0) + n
            else:
                collectives[short] = collectives.get(short, 0) + n
    else:  # an older result: names only
        for key, target in (("point_to_point_calls", p2p), ("nccl_calls", collectives)):
            names = flags.get(key)
            if isinstance(names, (list, tuple)):
                for short in names:
                    target[str(short)] = 0
    known = any(k in flags for k in COMMUNICATION_FLAGS)
    communication = None
    if known:
        if p2p and collectives:
            kind = "point-to-point and collective calls"
        elif p2p:
            kind = "point-to-point calls only (send/recv), no collective"
        elif collectives:
            kind = "collective calls"
        else:
            kind = "no torch.distributed communication (it moves data some other way, or not at all)"
        communication = {
            "kind": kind,
            "backend": backend,
            "p2p": sorted(p2p.items()),
            "collectives": sorted(collectives.items()),
            "barriers": barriers,
            # the evaluator's phrase starts "counted at run time ...": the page's sentence says "counted" itself
            "source": str(flags.get("communication_source") or "").removeprefix("counted ").strip(),
            "counted": isinstance(counts, dict),
        }
    others = []
    for key, value in flags.items():
        if key in COMMUNICATION_FLAGS:
            continue
        if isinstance(value, bool):
            shown = "yes" if value else "no"
        elif isinstance(value, (list, tuple)):
            shown = ", ".join(str(v) for v in value) or "none"
        else:
            shown = str(value)
        others.append({"key": key, "label": label(key), "value": shown, "warn": key in WARNING_FLAGS and bool(value)})
    return {"communication": communication, "others": others}


# --- rankings you can trust: rank ranges, run standings, how a speedup was formed --------------------------------

RUN_STATUS_REASONS = {
    "ranked": "finished, covers every problem of the current suite version",
    "unfinished": "some attempts have no final verdict yet: its figures are interim",
    "partial": "finished, but it misses problems of the suite version it names",
    "other-version": "it answered another suite version, or was timed under another protocol revision",
}


@register.filter
def rank_range(value: Any) -> str:
    """(best, worst) as "3" or "2–5"."""
    if not value:
        return "—"
    best, worst = value
    return str(best) if best == worst else f"{best}–{worst}"


@register.filter
def run_status_reason(status: Any) -> str:
    return RUN_STATUS_REASONS.get(str(status or "unfinished"), str(status))


@register.simple_tag
def run_options(choices, selected) -> str:
    """``<option>`` elements for the comparison's run pickers, one per (id, label), ``selected`` marked: built in one
    join, not one template loop per run (the list holds every run); labels escaped as the template would
    (``row_html.text``: Django's ``conditional_escape`` without its lazy-text wrapper, a fifth of the comparison
    page's CPU for two lists of a hundred runs)."""
    from leaderboard.web.row_html import text

    return mark_safe(
        "".join(
            f'<option value="{text(pk)}"{" selected" if pk == selected else ""}>{text(label)}</option>'
            for pk, label in choices
        )
    )


@register.filter
def measures_speed(profile: Any) -> bool:
    """Whether results on ``profile`` (a name) are speed measurements: on CPU profiles timings only check the
    pipeline, and every page then says "not computed" for speedups and roofline fractions."""
    from leaderboard.rankings.metrics import measures_speed as timed

    return isinstance(profile, str) and timed(profile)


URL_PREFIXES = ("problems_url", "runs_url", "users_url", "submissions_url")


@register.simple_tag(takes_context=True)
def catalogue_rows(context, problems, leaders) -> str:
    """The rows of one category of the home page's catalogue, built in Python (``web/row_html.py``)."""
    from leaderboard.web import kept_rows, row_html

    urls = {name: context.get(name, "") for name in URL_PREFIXES}
    leaders = leaders if isinstance(leaders, dict) else {}
    page = kept_rows.page_inputs("catalogue_row", tuple(urls.values()))
    return mark_safe(
        "".join(
            kept_rows.kept_row(row_html.catalogue_row, p, kept_rows.problem_key(p, lead), page, lead, urls, times)
            for p in problems
            for lead in (leaders.get(p.id),)
        )
    )


_RUN_FILTERS = {
    "percent": percent,
    "times": times,
    "rank_range": rank_range,
    "run_status_reason": run_status_reason,
    "protocol_label": protocol_label,
}


@register.simple_tag(takes_context=True)
def run_rows(context, runs, ranked=True) -> str:
    """The rows of the ranking of model runs (``ranked``) or of the runs not ranked, built in Python
    (``web/row_html.py``)."""
    from leaderboard.web import kept_rows, row_html

    urls = {name: context.get(name, "") for name in URL_PREFIXES}
    row = row_html.run_ranking_row if ranked else row_html.run_unranked_row
    page = kept_rows.page_inputs(row.__name__, tuple(urls.values()))
    filters = {**_RUN_FILTERS, "date": row_html.page_date_text()}
    return mark_safe("".join(kept_rows.kept_row(row, run, kept_rows.run_key(run), page, urls, filters) for run in runs))


@register.simple_tag
def user_run_rows(runs) -> str:
    """The rows of a user's model runs on their page, built in Python (``web/row_html.py``): one ``reverse()`` for the
    page instead of one per row, and the protocol's ``_protocol.html`` written in place."""
    from django.urls import reverse

    from leaderboard.web import kept_rows, row_html

    run_url = reverse("model-run-detail", args=[0])[: -len("0/")]
    page = kept_rows.page_inputs("user_run_row", run_url)
    filters = {**_RUN_FILTERS, "date": row_html.page_date_text()}
    return mark_safe(
        "".join(
            kept_rows.kept_row(row_html.user_run_row, run, kept_rows.run_key(run), page, run_url, filters)
            for run in runs
        )
    )


@register.simple_tag(takes_context=True)
def run_grid_rows(context, rows, timed, profile) -> str:
    """The rows of a run's grid (one per problem, a cell per attempt), built in Python (``web/row_html.py``)."""
    from leaderboard.web import row_html

    urls = {name: context.get(name, "") for name in URL_PREFIXES}
    filters = {**_RUN_FILTERS, "speed_bucket": speed_bucket, "verdict_short": verdict_short, "fast_p": fast_p}
    built = "".join(row_html.run_grid_row(row, bool(timed), profile, urls, filters) for row in rows)
    return mark_safe(built or '\n      <tr><td colspan="20" class="text">No attempts.</td></tr>\n    ')


@register.simple_tag
def problem_ranking_rows(rows, profile) -> str:
    """The rows of a problem's ranking, built in Python (``web/row_html.py``): no ``{% url %}`` and a few variables a
    row instead of some sixty lookups and filters (``profile``: the ranking's ``Profile``, or None)."""
    from leaderboard.web import kept_rows, links, row_html

    urls = links.url_prefixes()
    name = getattr(profile, "name", "")
    filters = {**_RUN_FILTERS, "us": us}
    # an entry (a frozen dataclass of plain values) is everything its row is built from
    page = kept_rows.page_inputs("problem_ranking_row", name, tuple(urls.values()))
    return mark_safe(
        "".join(kept_rows.kept_row(row_html.problem_ranking_row, e, e, page, name, urls, filters) for e in rows)
    )


@register.simple_tag(takes_context=True)
def table_head(context, table) -> str:
    """A table's header row with its sort links, built in Python (``web/row_html.py``)."""
    from leaderboard.web import row_html

    headers = table.get("headers", []) if isinstance(table, dict) else []
    return mark_safe(row_html.table_head(headers, context.get("extra_headers", "")))


@register.tag
def form_fields(parser, token) -> template.Node:
    """``{% form_fields form %}...{% endform_fields %}``: the body written from memory for a state of the form it
    rendered already (``web/form_memo.FormFieldsNode``)."""
    from leaderboard.web.form_memo import FormFieldsNode

    try:
        _, form = token.split_contents()
    except ValueError:
        raise template.TemplateSyntaxError("form_fields takes one argument: the form") from None
    nodelist = parser.parse(("endform_fields",))
    parser.delete_first_token()
    return FormFieldsNode(parser.compile_filter(form), nodelist)


@register.simple_tag
def comparison_problem_rows(rows) -> str:
    """The comparison's rows, one per problem, built in Python (``web/row_html.py``)."""
    from leaderboard.web import links, row_html

    url = links.url_prefixes()["problems_url"]
    filters = {**_RUN_FILTERS, "fast_p": fast_p}
    return mark_safe("".join(row_html.comparison_problem_row(r, url, filters) for r in rows))


@register.simple_tag
def user_solution_rows(rows) -> str:
    """The rows of a user's best solutions on their page, built in Python (``web/row_html.py``)."""
    from leaderboard.web import links, row_html

    urls = links.url_prefixes()
    return mark_safe("".join(row_html.user_solution_row(s, urls, measures_speed, _RUN_FILTERS) for s in rows))
