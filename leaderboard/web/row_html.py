"""The rows of the site's longest tables (the home page's catalogue, the ranking of model runs, a run's grid, a user's
runs), built in Python.

A template loop costs about a microsecond per variable, filter and tag it evaluates: a home page of 170 problems, or
a ranking of 100 runs, spent most of its rendering time there. These functions write the same HTML the loops wrote,
byte for byte (``tests/leaderboard/web/test_row_html.py`` renders both over seeded data), with every value escaped as
the template escaped it and every number formatted by the same filters (``templatetags/arena.py``).
"""

from __future__ import annotations

from datetime import date, datetime
from html import escape as html_escape
from typing import Any, Callable, Mapping
from urllib.parse import quote

from django.conf import settings
from django.template.defaultfilters import date as date_filter
from django.template.defaultfilters import urlencode
from django.utils.http import RFC3986_SUBDELIMS
from django.utils.formats import localize
from django.utils.timezone import get_current_timezone, template_localtime

from leaderboard.web.number_text import fixed, minute_text


DEMO_BADGE = ' <span class="badge">demo</span>'
REVISION = '<div class="muted small">rev {}</div>'


def text(value: Any) -> str:
    """A value as ``{{ value }}`` writes it: localized, turned into text, escaped (a safe string left as it is).
    Django's ``escape`` is ``html.escape`` marked safe; plain strings and integers skip its lazy-text wrapper."""
    kind = type(value)
    if kind is str:
        # Most values have nothing to escape: five membership tests cost half of html.escape's five replaces.
        if "&" in value or "<" in value or ">" in value or '"' in value or "'" in value:
            return html_escape(value)
        return value
    if kind is int:
        return str(value)
    if hasattr(value, "__html__"):
        return value.__html__()
    return html_escape(str(localize(value)))


def _get(obj: Any, name: str) -> Any:
    """``obj.name`` as a template reads it: a missing related row (or attribute) reads as "" ."""
    if obj is None or obj == "":
        return ""
    try:
        return getattr(obj, name)
    except Exception as exc:  # the template engine's rule: failures that say so are silent
        if getattr(exc, "silent_variable_failure", False) or isinstance(exc, AttributeError):
            return ""
        raise


def catalogue_row(problem: Any, lead: Any, urls: Mapping[str, str], times: Callable[[Any], str]) -> str:
    """One problem's row of the home page's catalogue (``lead``: its ``overview.ProblemLeader`` or None)."""
    hard = (
        f'<details class="hard"><summary>Why it is hard</summary>{text(problem.hard)}</details>' if problem.hard else ""
    )
    # (``urlencode`` is ``quote`` of the value as text: called directly, a call fewer per tag)
    tags = "".join(f'<a class="tag" href="?tag={text(quote(str(tag)))}">{text(tag)}</a> ' for tag in problem.tag_list)
    summary = (
        f'<div class="muted small summary" title="{text(problem.summary)}">{text(problem.summary)}</div>'
        if problem.summary
        else ""
    )
    leader = _get(lead, "leader")
    if leader:
        if leader.model_run_id:
            who = f'<a href="{text(urls["runs_url"])}{text(leader.model_run_id)}/">{text(leader.model)}</a>'
        else:
            who = f'<a href="{text(urls["users_url"])}{text(quote(str(leader.username)))}/">{text(leader.username)}</a>'
        best = (
            f'<a href="{text(urls["submissions_url"])}{text(leader.submission_id)}/">{text(times(leader.speedup))}</a>'
        )
    else:
        who, best = '<span class="muted">—</span>', "—"
    solutions = _get(lead, "solutions") or "0"
    world_sizes = ", ".join(text(size) for size in problem.world_sizes)
    return (
        "\n        \n        <tr>\n          \n"
        f'          <td><a href="{text(urls["problems_url"])}{text(problem.id)}/">{text(problem.title)}</a> '
        f'<code class="small muted">{text(problem.id)}</code>\n'
        f'            <span class="small row-notes">{hard}\n'
        f"              {tags}</span>\n"
        f"            {summary}</td>\n"
        f'          <td class="small models" data-label="Models">{text(problem.codebase)}</td>\n'
        f'          <td data-label="World sizes">{world_sizes}</td>\n'
        f'          <td class="small" data-label="Leader">{who}</td>\n'
        f'          <td data-label="Best">{best}</td>\n'
        f'          <td data-label="Solutions">{text(solutions)}</td>\n'
        f'          <td data-label="Version">v{text(problem.version)}</td>\n'
        "        </tr>\n        \n      "
    )


def date_text(value: Any) -> str:
    """``{{ value|date:"Y-m-d" }}``: in the current time zone (the template converts it before the filter), the year
    in four digits and the month and day in two, as ``DateFormat``'s Y, m and d write them."""
    if not isinstance(value, date):
        return text(date_filter(value, "Y-m-d"))  # "" for a missing date, as the filter gives
    day = template_localtime(value) if isinstance(value, datetime) else value
    return f"{day.year:04d}-{day.month:02d}-{day.day:02d}"


def page_date_text() -> Callable[[Any], str]:
    """``date_text`` for the rows of one page, with the current time zone looked up once: a lookup per date was about
    a twentieth of the ranking's CPU, and the rows of a page are written in one zone (``kept_rows.page_inputs`` keeps
    them by its name)."""
    zone = get_current_timezone() if settings.USE_TZ else None

    def day_text(value: Any) -> str:
        # What template_localtime converts (an aware datetime that does not opt out), converted as localtime does.
        if zone is None or not isinstance(value, datetime) or value.utcoffset() is None:
            return date_text(value)
        if not getattr(value, "convert_to_local_time", True):
            return date_text(value)
        day = value.astimezone(zone)
        return f"{day.year:04d}-{day.month:02d}-{day.day:02d}"

    return day_text


def _interval(score: Any, low: str, high: str, fmt: Callable[[Any], str]) -> str:
    if getattr(score, low, None) is None:
        return ""
    return (
        f'<div class="muted small ci"><span>{text(fmt(getattr(score, low)))}</span>–<wbr>'
        f"<span>{text(fmt(getattr(score, high)))}</span></div>"
    )


def _run_cells(run: Any, urls: Mapping[str, str], protocol_label: Callable[[Any], str]) -> tuple[str, str, str, Any]:
    """What both tables of runs show alike: the run's link and badges, its owner's link, its protocol; its score."""
    username = run.user.get_username()
    link = (
        f'<a href="{text(urls["runs_url"])}{text(run.pk)}/">{text(run.model)}</a> '
        f'<span class="muted small">#{text(run.pk)}</span>{DEMO_BADGE if run.is_demo else ""}'
    )
    owner = f'<a href="{text(urls["users_url"])}{text(urlencode(username))}/">{text(username)}</a>'
    protocol = f'<span class="protocol protocol-{text(run.mode)}">{text(protocol_label(run))}</span>'
    return link, owner, protocol, _get(run, "score") or None


def run_ranking_row(run: Any, urls: Mapping[str, str], f: Mapping[str, Callable[[Any], str]]) -> str:
    """One ranked run's row of the ranking of model runs (``f``: the filters ``percent``, ``times``, ``rank_range``,
    ``run_status_reason``, ``protocol_label``, and ``date``, the page's ``page_date_text``, if given)."""
    link, owner, protocol, s = _run_cells(run, urls, f["protocol_label"])
    status = text(_get(s, "status") or "unfinished")
    pct, times = f["percent"], f["times"]
    rank = (
        text(f["rank_range"](run.rank_range))
        if getattr(run, "rank_range", None)
        else f'<span class="badge state-{status}" title="not ranked: {text(f["run_status_reason"](status))}">'
        f"{status}</span>"
    )
    if s is not None and not s.timed:
        timing = (
            f'<td colspan="5" class="text small muted" data-metric="timing">verdicts only: {text(run.profile)} '
            "times as a pipeline check, not a measurement</td>"
        )
    else:
        revision = _get(s, "protocol_revision")
        timing = (
            f'\n      <td class="score" data-metric="fast_1">{text(pct(_get(s, "fast_1_at_k")))}'
            f"{_interval(s, 'fast_1_low', 'fast_1_high', pct)}</td>"
            f'\n      <td class="score" data-metric="fast_1_5">{text(pct(_get(s, "fast_1_5_at_k")))}'
            f"{_interval(s, 'fast_1_5_low', 'fast_1_5_high', pct)}</td>"
            f'\n      <td class="score" data-metric="fast_2">{text(pct(_get(s, "fast_2_at_k")))}'
            f"{_interval(s, 'fast_2_low', 'fast_2_high', pct)}</td>"
            f'\n      <td data-metric="speedup">{text(times(_get(s, "geomean_speedup")))}'
            f"{_interval(s, 'geomean_low', 'geomean_high', times)}"
            f"{REVISION.format(text(revision)) if revision else ''}</td>"
            f'\n      <td data-metric="roofline">{text(pct(_get(s, "mean_roofline_fraction")))}</td>'
        )
    progress = (
        text(run.attempts_total)
        if run.is_done
        else f'<span class="badge state-{text(run.state)}">{text(run.attempts_done)}/{text(run.attempts_total)}</span>'
    )
    return (
        f'\n    <tr data-run="{text(run.pk)}" data-status="{status}">'
        f'\n      <td class="text" data-metric="rank">{rank}</td>'
        f'\n      <td class="text">{link}'
        f'\n        <div class="muted small">{text(run.provider)}{" · open weights" if run.open_weights else ""} · by '
        f"{owner}</div></td>"
        f'\n      <td class="text">{text(run.profile)}<div class="muted small">'
        f"{text(run.precision or 'precision not given')}</div></td>"
        f'\n      <td class="text small">{protocol}</td>'
        f"\n      <td>{text(run.k)}</td>"
        f'\n      <td class="score" data-metric="pass_at_k">{text(pct(_get(s, "pass_at_k")))}'
        f"{_interval(s, 'pass_at_k_low', 'pass_at_k_high', pct)}</td>"
        f'\n      <td class="score" data-metric="pass_at_1">{text(pct(_get(s, "pass_at_1")))}</td>'
        f"\n      {timing}"
        f'\n      <td data-metric="coverage">{text(pct(_get(s, "coverage")))}</td>'
        f'\n      <td class="text">{progress}</td>'
        f'\n      <td class="text small">{f.get("date", date_text)(run.created_at)}</td>'
        "\n    </tr>\n  "
    )


def run_unranked_row(run: Any, urls: Mapping[str, str], f: Mapping[str, Callable[[Any], str]]) -> str:
    """One run's row of the runs not ranked (unfinished, partial, other version), below the ranking."""
    link, owner, protocol, s = _run_cells(run, urls, f["protocol_label"])
    status = text(_get(s, "status") or "unfinished")
    pct = f["percent"]
    suite = f" · suite {text(run.suite)} {text(run.suite_version)}" if run.suite_version else ""
    muted = "".join(
        f'\n      <td class="muted" data-metric="{metric}">{text(fmt(_get(s, field)))}</td>'
        for metric, field, fmt in (
            ("pass_at_k", "pass_at_k", pct),
            ("pass_at_1", "pass_at_1", pct),
            ("fast_1", "fast_1_at_k", pct),
            ("fast_1_5", "fast_1_5_at_k", pct),
            ("fast_2", "fast_2_at_k", pct),
            ("speedup", "geomean_speedup", f["times"]),
            ("roofline", "mean_roofline_fraction", pct),
        )
    )
    return (
        f'\n    <tr data-run="{text(run.pk)}" data-status="{status}">'
        f'\n      <td class="text"><span class="badge state-{status}" title="{text(f["run_status_reason"](status))}">'
        f"{status}</span></td>"
        f'\n      <td class="text">{link}'
        f'\n        <div class="muted small">{text(run.provider)} · by {owner}{suite}</div></td>'
        f'\n      <td class="text">{text(run.profile)}</td>'
        f'\n      <td class="text small">{protocol}</td>'
        f"\n      <td>{text(run.k)}</td>"
        f"{muted}"
        f'\n      <td data-metric="coverage">{text(pct(_get(s, "coverage")))}</td>'
        f'\n      <td class="text" data-metric="progress"><span class="badge state-{text(run.state)}">'
        f"{text(run.attempts_done)}/{text(run.attempts_total)}</span></td>"
        f'\n      <td class="text small">{f.get("date", date_text)(run.created_at)}</td>'
        "\n    </tr>\n  "
    )


PROTOCOL_TITLE = (
    "how the attempts were produced: protocol, attempts per problem, agent turns per attempt, tokens and wall time "
    "of the whole run"
)


def user_run_row(run: Any, run_url: str, f: Mapping[str, Callable[[Any], str]]) -> str:
    """One run's row on its owner's page (``run_url``: a run page's URL without the run's number), the protocol as
    ``_protocol.html`` writes it."""
    s = _get(run, "score") or None
    status = text(_get(s, "status") or "unfinished")
    pct = f["percent"]
    rank = (
        text(f["rank_range"](run.rank_range))
        if getattr(run, "rank_range", None)
        else f'<span class="badge state-{status}" title="not ranked: {text(f["run_status_reason"](status))}">'
        f"{status}</span>"
    )
    if s is not None and not s.timed:
        timing = (
            f'<td colspan="5" class="text small muted" data-metric="timing">verdicts only: {text(run.profile)} '
            "times as a pipeline check, not a measurement</td>"
        )
    else:
        timing = (
            f'\n        <td data-metric="fast_1">{text(pct(_get(s, "fast_1_at_k")))}</td>'
            f'<td data-metric="fast_1_5">{text(pct(_get(s, "fast_1_5_at_k")))}</td>'
            f'<td data-metric="fast_2">{text(pct(_get(s, "fast_2_at_k")))}</td>'
            f'\n        <td data-metric="speedup">{text(f["times"](_get(s, "geomean_speedup")))}</td>'
            f'<td data-metric="roofline">{text(pct(_get(s, "mean_roofline_fraction")))}</td>'
        )
    return (
        f'\n      <tr data-run="{text(run.pk)}" data-status="{status}">'
        f'\n        <td class="text" data-metric="rank">{rank}</td>'
        f'\n        <td class="text"><a href="{text(run_url)}{text(run.pk)}/">{text(run.model)}</a> '
        f'<span class="muted small">#{text(run.pk)}</span>{DEMO_BADGE if run.is_demo else ""}'
        f'\n          <div class="muted small">{text(run.provider)}</div></td>'
        f'\n        <td class="text">{text(run.profile)}<div class="muted small">'
        f"{text(run.precision or 'precision not given')}</div></td>"
        f'\n        <td class="text small"><span class="protocol protocol-{text(run.mode)}" title="{PROTOCOL_TITLE}">'
        f"{text(f['protocol_label'](run))}</span>\n</td>"
        f"\n        <td>{text(run.k)}</td>"
        f'\n        <td data-metric="pass_at_k">{text(pct(_get(s, "pass_at_k")))}</td>'
        f'<td data-metric="pass_at_1">{text(pct(_get(s, "pass_at_1")))}</td>'
        f"\n        {timing}"
        f'\n        <td data-metric="coverage">{text(pct(_get(s, "coverage")))}</td>'
        f'\n        <td class="text">{text(run.attempts_done)}/{text(run.attempts_total)}</td>'
        f'\n        <td class="text small">{f.get("date", date_text)(run.created_at)}</td>'
        "\n      </tr>\n    "
    )


def _grid_cell(cell: Any, timed: bool, submissions_url: str, f: Mapping[str, Callable[[Any], str]]) -> str:
    """One attempt's cell of a run's grid."""
    if not cell:
        return '<td class="cell">—</td>'
    verdict = cell.verdict
    if verdict:
        kind = f"verdict-{text(verdict)}"
        if verdict == "passed":
            kind += f" {text(f['speed_bucket'](cell.speedup))}" if timed else " speed-none"
    else:
        kind = f"state-{text(cell.state)}"
    shown = text(verdict or cell.state)
    speed = f", {text(f['times'](cell.speedup))}" if cell.speedup and timed else ""
    if verdict == "passed":
        label = text(f["times"](cell.speedup)) if timed else "passed"
    elif verdict:
        label = text(f["verdict_short"](verdict))
    else:
        label = text(cell.state)
    return (
        f'\n            <td class="cell {kind}" data-attempt="{text(cell.attempt)}" data-verdict="{shown}"'
        f'\n                title="attempt {text(cell.attempt)}: {shown}{speed}">'
        f'\n              <a href="{text(submissions_url)}{text(cell.submission_id)}/">{label}</a></td>\n          '
    )


def run_grid_row(
    row: Any, timed: bool, profile: str, urls: Mapping[str, str], f: Mapping[str, Callable[[Any], str]]
) -> str:
    """One problem's row of a run's grid: its attempts' cells, then its scores (``timed``: the run's score is timed)."""
    s, pct, times = row.score, f["percent"], f["times"]
    cells = "".join(
        f"\n          {_grid_cell(cell, timed, urls['submissions_url'], f)}\n        " for cell in row.cells
    )
    if timed:
        figures = (
            f"<td>{text(pct(f['fast_p'](s.fast_p_at_k, '1.0')))}</td>"
            f"<td>{text(pct(f['fast_p'](s.fast_p_at_k, '1.5')))}</td>"
            f"\n        <td>{text(pct(f['fast_p'](s.fast_p_at_k, '2.0')))}</td>"
            f"\n        <td>{text(times(s.best_speedup))}</td><td>{text(times(s.geomean_speedup))}</td>"
            f"\n        <td>{text(pct(s.mean_roofline_fraction))}</td>"
        )
    else:
        figures = '<td colspan="6" class="text small muted">not computed</td>'
    return (
        f'\n      <tr data-problem="{text(row.problem_id)}">'
        f'\n        <td class="text"><a href="{text(urls["problems_url"])}{text(row.problem_id)}/'
        f'?profile={text(profile)}">{text(row.problem_id)}</a></td>'
        f'\n        <td class="text small">{text(row.category)}</td>'
        f"\n        {cells}"
        f"\n        <td>{text(s.n)}</td><td>{text(s.c)}</td>"
        f'\n        <td data-metric="pass_at_k">{text(pct(s.pass_at_k))}</td>'
        f"\n        {figures}"
        "\n      </tr>\n    "
    )


def _url_part(value: Any) -> str:
    """A value in a URL's path as ``{% url %}`` puts it there (``reverse``'s quoting: RFC 3986's pchar kept)."""
    return quote(str(value), safe=RFC3986_SUBDELIMS + "/~:@")


def _formed_as(e: Any) -> str:
    return f"{text(e.estimator)} · rev {text(e.protocol_revision or '?')} · v{text(e.problem_version)}"


def _verification(e: Any, f: Mapping[str, Callable[[Any], str]]) -> str:
    v = e.verification
    if not v:
        return ""
    times = f["times"]
    if v.verified:
        where = " on another host" if v.other_host else ""
        return (
            f'<span class="badge verified" title="re-measured{where}: {text(times(v.speedup))} '
            f'({text(fixed(v.low, 3))}–{text(fixed(v.high, 3))}) agrees">✓</span>'
        )
    if v.flagged:
        return (
            f'<span class="badge flagged" title="the re-measurement disagrees">⚠ re-measured {text(times(v.speedup))} '
            f"({text(fixed(v.low, 3))}–{text(fixed(v.high, 3))}) vs {text(times(e.speedup))}</span>"
        )
    return f'<span class="muted small">{text(v.state)}</span>'


def problem_ranking_row(e: Any, profile: str, urls: Mapping[str, str], f: Mapping[str, Callable[[Any], str]]) -> str:
    """One row of a problem's ranking (``e``: a ``solutions.RankingEntry``; ``profile``: the ranking's profile's
    name), as the template loop of ``problem_detail.html`` wrote it."""
    sid = text(e.submission_id)
    if e.timed:
        label = e.rank_label
        rank = text(e.rank) + (
            '<div class="muted small" title="what the intervals allow: 1 + the rows significantly faster">'
            f"{text(label)}</div>"
            if label and label != "%d" % e.rank
            else ""
        )
        formed = f'\n            <div class="muted small formed-as">{_formed_as(e)}</div>'
        low = text(fixed(e.speedup_ci_low, 3)) if e.speedup_ci_low is not None else "—"
        high = text(fixed(e.speedup_ci_high, 3)) if e.speedup_ci_high is not None else "—"
        figures = (
            "\n          \n"
            f'          <td data-metric="speedup"><a href="{text(urls["submissions_url"])}{sid}/" '
            f'title="{_formed_as(e)}">{text(f["times"](e.speedup))}</a></td>\n'
            f"          <td>{low}</td>\n"
            f"          <td>{high}</td>\n          "
        )
        muted, roofline = "", text(f["percent"](e.roofline_fraction))
    else:
        rank, formed = "—", ""
        figures = (
            "\n"
            f'          <td colspan="3" class="text small muted" data-metric="speedup"><a href="'
            f'{text(urls["submissions_url"])}{sid}/">passed</a> · pipeline check: {text(profile)} times on CPU, '
            "not a measurement</td>\n          "
        )
        muted, roofline = ' class="muted"', "—"
    if e.model_run_id:
        who = (
            f'<a href="{text(urls["runs_url"])}{text(e.model_run_id)}/">{text(e.model)}</a>'
            f'<div class="muted small">run #{text(e.model_run_id)} by {text(e.username)}</div>'
        )
    else:
        who = f'<a href="{text(urls["users_url"])}{text(_url_part(e.username))}/">{text(e.username)}</a>'
    protocol = (
        f'<span class="protocol">{text(e.protocol)}</span>' if e.protocol else '<span class="muted">hand-written</span>'
    )
    state = f' data-verification="{text(e.verification.state)}"' if e.verification else ""
    submitted = template_localtime(e.submitted_at)
    return (
        f'\n        <tr data-entry="{sid}" data-evaluations="{text(e.evaluations)}"{state}>\n'
        f"          <td>{rank}</td>\n"
        f'          <td class="text">{who}</td>\n'
        f'          <td class="text small">{protocol}{formed}</td>\n'
        f"          {figures}\n"
        '          <td data-metric="evaluations" title="evaluations of this code pooled into the figure">'
        f"{text(e.evaluations)}</td>\n"
        f'          <td class="text" data-metric="verification">{_verification(e, f)}</td>\n'
        f"          <td{muted}>{text(f['us'](e.solution_median_us))}</td>\n"
        f"          <td{muted}>{text(f['us'](e.baseline_median_us))}</td>\n"
        f"          <td>{roofline}</td>\n"
        f'          <td class="text">{text(minute_text(submitted))}</td>\n'
        "        </tr>\n      "
    )


def table_head(headers: Any, extra: Any = "") -> str:
    """A table's ``<thead>`` (``headers``: ``tables.Table.headers``), as ``_thead.html``'s loop wrote it."""
    cells = []
    for h in headers:
        column = h.column
        numeric = ' class="num"' if column.numeric else ""
        title = f' title="{text(column.title)}"' if column.title else ""
        sort = (' aria-sort="descending"' if h.descending else ' aria-sort="ascending"') if h.active else ""
        label = text(column.label)
        if h.href:
            arrow = (" ▼" if h.descending else " ▲") if h.active else ""
            active = " active" if h.active else ""
            label = f'<a href="{text(h.href)}" class="sort{active}">{label}{arrow}</a>'
        cells.append(f"<th{numeric}{title}{sort}>{label}</th>")
    return f"<thead><tr>{''.join(cells)}{text(extra or '')}</tr></thead>"


def comparison_problem_row(r: Any, problems_url: str, f: Mapping[str, Callable[..., Any]]) -> str:
    """One problem's row of the comparison of two runs (``r``: a ``comparison.ComparisonRow``), as the loop of
    ``model_run_compare.html`` wrote it."""
    pct, times, fast_p = f["percent"], f["times"], f["fast_p"]
    pid = text(r.problem_id)
    a, b = _get(r, "a"), _get(r, "b")
    return (
        f'\n      <tr data-problem="{pid}"><td class="text"><a href="{text(problems_url)}'
        f'{text(_url_part(r.problem_id))}/">{pid}</a></td>'
        f'\n        <td class="text small">{text(r.category)}</td>'
        f"\n        <td>{text(pct(_get(a, 'pass_at_k')))}</td><td>{text(pct(_get(b, 'pass_at_k')))}</td>"
        f"\n        <td>{text(pct(fast_p(_get(a, 'fast_p_at_k'), '1.0')))}</td>"
        f"<td>{text(pct(fast_p(_get(b, 'fast_p_at_k'), '1.0')))}</td>"
        f"\n        <td>{text(times(_get(a, 'best_speedup')))}</td><td>{text(times(_get(b, 'best_speedup')))}</td>"
        f"<td>{text(times(r.speedup_ratio))}</td></tr>\n    "
    )


def user_solution_row(s: Any, urls: Mapping[str, str], measures_speed: Callable[[Any], bool], f: Any) -> str:
    """One best solution's row on its author's page (``s``: a ``selectors.BestSolution``)."""
    if measures_speed(s.profile):
        figures = (
            f'<td data-metric="speedup">{text(f["times"](s.speedup))}</td>'
            f'<td data-metric="roofline">{text(f["percent"](s.roofline_fraction))}</td>'
        )
    else:
        figures = (
            '<td colspan="2" class="text small muted" data-metric="speedup">not computed: '
            f"{text(s.profile)} times on CPU as a pipeline check</td>"
        )
    pid, sid = text(s.problem_id), text(s.submission_id)
    return (
        f'\n      <tr><td class="text"><a href="{text(urls["problems_url"])}{text(_url_part(s.problem_id))}/'
        f'?profile={text(s.profile)}">{pid}</a></td>'
        f'\n        <td class="text">{text(s.profile)}</td>{figures}'
        f'\n        <td class="text small">{text(minute_text(template_localtime(s.submitted_at)))}</td>'
        f'\n        <td><a href="{text(urls["submissions_url"])}{sid}/">#{sid}</a></td></tr>\n    '
    )
