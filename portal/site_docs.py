"""The project's documents as pages of the site (``/docs/<name>/``): the protocol, the scoring rules, the
contributor's guide and the documents they link to, and the backend guides (``docs/backends/<name>.md`` at
``/docs/backends/<name>/``, the same text a prompt pack gives a model), rendered from ``docs/*.md`` with Markdown and
then sanitised with nh3, so whatever a document holds, the page carries no script."""

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

from leaderboard.web.markdown_lists import loosen_lists
from leaderboard.web.sanitize import clean_html

DOCS_DIR = Path(settings.BASE_DIR) / "docs"
BACKENDS_DIR = DOCS_DIR / "backends"

# The documents the site links to from its forms and messages, first; any other docs/*.md is served too.
FEATURED = {
    "protocol": "How verdicts and timings are produced",
    "model-runs": "Model runs: the archive, the scores and the API",
    "contributing-problems": "Contributing a problem",
    "relation-to-pkb": "How these scores relate to ParallelKernelBench",
}

_PROBLEM_LINK = re.compile(r'href="(?:\.\./)*problems/([\w-]+/[\w-]+)/?"')
_LINK = re.compile(r'href="(?!https?:|mailto:|#|/)([\w./-]*?)([\w-]+)\.md(#[^"]*)?"')


def backend_names() -> list[str]:
    """The backend guides, in the contract's order of backends (then any other guide)."""
    from evaluator.contract.backends import BACKENDS

    found = sorted(p.stem for p in BACKENDS_DIR.glob("*.md"))
    return [b for b in BACKENDS if b in found] + [n for n in found if n not in BACKENDS]


def doc_title(name: str, folder: Path = DOCS_DIR) -> str:
    """A document's own heading (its first ``# `` line), the name people know it by; its file name otherwise."""
    path = folder / f"{name}.md"
    return _heading(path, path.stat().st_mtime_ns) if path.is_file() else name


@functools.lru_cache(maxsize=128)
def _heading(path: Path, mtime_ns: int) -> str:
    with path.open(encoding="utf-8") as handle:
        for line in handle:
            if line.startswith("# "):
                return line[2:].strip()
    return path.stem


def doc_names() -> list[str]:
    found = sorted(p.stem for p in DOCS_DIR.glob("*.md"))
    return [n for n in FEATURED if n in found] + [n for n in found if n not in FEATURED]


def render_markdown(text: str) -> SafeString:
    """Markdown to HTML, then sanitised by nh3: raw HTML, scripts, event handlers and ``javascript:`` links are
    removed whatever the renderer let through; links between documents point at their pages here."""
    md = markdown_lib.Markdown(
        extensions=["fenced_code", "tables", "codehilite", "sane_lists", "toc"],
        extension_configs={"codehilite": {"guess_lang": False, "css_class": "highlight"}},
    )
    html = md.convert(loosen_lists(text))

    def link(match: re.Match) -> str:
        folder, name = match.group(1), match.group(2)
        if folder.rstrip("/").endswith("backends") and (BACKENDS_DIR / f"{name}.md").is_file():
            return f'href="{reverse("site-backend-doc", args=[name])}{match.group(3) or ""}"'
        if (DOCS_DIR / f"{name}.md").is_file():
            return f'href="{reverse("site-doc", args=[name])}{match.group(3) or ""}"'
        if (BACKENDS_DIR / f"{name}.md").is_file():
            return f'href="{reverse("site-backend-doc", args=[name])}{match.group(3) or ""}"'
        return match.group(0)

    def problem_link(match: re.Match) -> str:
        # a problem's folder (as the repository shows it) is its page here
        problem_id = match.group(1)
        if (Path(settings.BASE_DIR) / "problems" / problem_id / "problem.toml").is_file():
            return f'href="{reverse("problem-detail", args=[problem_id])}"'
        return match.group(0)

    html = _LINK.sub(link, html)
    html = _PROBLEM_LINK.sub(problem_link, html)
    return clean_html(html)


@functools.lru_cache(maxsize=64)
def _rendered(name: str, mtime_ns: int, folder: Path = DOCS_DIR) -> tuple[str, SafeString]:
    text = (folder / f"{name}.md").read_text(encoding="utf-8")
    heading = next((line.lstrip("# ").strip() for line in text.splitlines() if line.startswith("# ")), name)
    return heading, render_markdown(text)


def site_doc(request: HttpRequest, name: str) -> HttpResponse:
    path = DOCS_DIR / f"{name}.md"
    if name not in doc_names() or not path.is_file():
        raise Http404(f"No document {name!r}.")
    title, body = _rendered(name, path.stat().st_mtime_ns)
    return render(
        request,
        "docs/page.html",
        {
            "title": title,
            "body": body,
            "name": name,
            "docs": [(n, FEATURED.get(n) or doc_title(n)) for n in doc_names()],
        },
    )


def backend_doc(request: HttpRequest, name: str) -> HttpResponse:
    """A backend guide: how to write a solution with that backend (``docs/backends/<name>.md``)."""
    path = BACKENDS_DIR / f"{name}.md"
    if name not in backend_names() or not path.is_file():
        raise Http404(f"No backend guide {name!r}.")
    title, body = _rendered(name, path.stat().st_mtime_ns, BACKENDS_DIR)
    return render(
        request,
        "docs/page.html",
        {"title": title, "body": body, "name": f"backend-{name}", "backend": name, "backends": backend_names()},
    )


def site_doc_index(request: HttpRequest) -> HttpResponse:
    return render(
        request,
        "docs/index.html",
        {
            "docs": [(n, FEATURED.get(n) or doc_title(n)) for n in doc_names()],
            "backends": [(n, doc_title(n, BACKENDS_DIR)) for n in backend_names()],
        },
    )
