"""The project's documents as pages of the site (``/docs/<name>/``): the protocol, the scoring rules, the
contributor's guide and the documents they link to, rendered from ``docs/*.md`` with Markdown and then sanitised with
nh3, so whatever a document holds, the page carries no script."""

from __future__ import annotations

import functools
import re
from pathlib import Path

import markdown as markdown_lib
from django.conf import settings
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import render
from django.urls import reverse
from django.utils.safestring import SafeString

from leaderboard.web.sanitize import clean_html

DOCS_DIR = Path(settings.BASE_DIR) / "docs"

# The documents the site links to from its forms and messages, first; any other docs/*.md is served too.
FEATURED = {
    "protocol": "How verdicts and timings are produced",
    "model-runs": "Model runs: the archive, the scores and the API",
    "contributing-problems": "Contributing a problem",
}

_LINK = re.compile(r'href="(?!https?:|mailto:|#|/)([\w./-]*?)([\w-]+)\.md(#[^"]*)?"')


def doc_names() -> list[str]:
    found = sorted(p.stem for p in DOCS_DIR.glob("*.md"))
    return [n for n in FEATURED if n in found] + [n for n in found if n not in FEATURED]


def render_markdown(text: str) -> SafeString:
    """Markdown to HTML, then sanitised by nh3: raw HTML, scripts, event handlers and ``javascript:`` links are
    removed whatever the renderer let through; links between documents point at their pages here."""
    md = markdown_lib.Markdown(extensions=["fenced_code", "tables", "codehilite", "sane_lists", "toc"],
                               extension_configs={"codehilite": {"guess_lang": False, "css_class": "highlight"}})
    html = md.convert(text)

    def link(match: re.Match) -> str:
        name = match.group(2)
        if not (DOCS_DIR / f"{name}.md").is_file():
            return match.group(0)
        return f'href="{reverse("site-doc", args=[name])}{match.group(3) or ""}"'

    html = _LINK.sub(link, html)
    return clean_html(html)


@functools.lru_cache(maxsize=64)
def _rendered(name: str, mtime_ns: int) -> tuple[str, SafeString]:
    text = (DOCS_DIR / f"{name}.md").read_text(encoding="utf-8")
    heading = next((line.lstrip("# ").strip() for line in text.splitlines() if line.startswith("# ")), name)
    return heading, render_markdown(text)


def site_doc(request: HttpRequest, name: str) -> HttpResponse:
    path = DOCS_DIR / f"{name}.md"
    if name not in doc_names() or not path.is_file():
        raise Http404(f"No document {name!r}.")
    title, body = _rendered(name, path.stat().st_mtime_ns)
    return render(request, "docs/page.html", {"title": title, "body": body, "name": name,
                                              "docs": [(n, FEATURED.get(n, n)) for n in doc_names()]})


def site_doc_index(request: HttpRequest) -> HttpResponse:
    return render(request, "docs/index.html", {"docs": [(n, FEATURED.get(n, n.replace("-", " ")))
                                                        for n in doc_names()]})
