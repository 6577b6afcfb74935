"""A problem page's "Write a solution": the exact signature, what each rank holds and returns, the rules, starter files
to download (plain torch.distributed for every profile; CUDA, Triton and symmetric memory marked GPU only), the
`arena` lines for each, and the backend guides served as pages, linked from there, from /docs/ and from /submit/."""

from __future__ import annotations

import ast
import re

import pytest
from django.utils.html import escape

from tests.leaderboard.helpers import ALL_REDUCE, ROOT

pytestmark = pytest.mark.django_db

GUIDES = sorted(p.stem for p in (ROOT / "docs/backends").glob("*.md"))


def test_the_problem_page_says_how_to_write_a_solution(problems, client):
    page = client.get(f"/problems/{ALL_REDUCE}/").content.decode()
    section = page.split('id="write-a-solution"', 1)[1].split("</section>", 1)[0]
    assert "def solution(x: torch.Tensor) -&gt; torch.Tensor" in section
    assert "Inputs (per rank)" in section and "element-wise sum" in section  # what a rank holds and returns
    assert "Do not import from <code>problems</code>" in section
    assert "BACKEND = &quot;cuda&quot;" in section or 'BACKEND = "cuda"' in section
    assert "The first call is not timed" in section
    for backend in ("torch-distributed", "cuda", "triton", "symmetric-memory"):
        assert f"/problems/{ALL_REDUCE}/starter/{backend}/" in section, backend
    assert section.count("GPU only") == 3
    for line in (
        "arena eval --problem collectives/all_reduce --solution all_reduce_solution.py --hardware cpu-gloo-2",
        "arena test --problem collectives/all_reduce --solution all_reduce_solution.py --hardware cpu-gloo-2",
        "arena submit --problem collectives/all_reduce --solution all_reduce_solution.py --hardware ",
    ):
        assert line in section, line
    for name in GUIDES:
        assert f'href="/docs/backends/{name}/"' in section, name
    assert 'href="#starters"' in page  # the reference section sends copiers of its imports to the starters


def test_every_problem_page_offers_starters_that_download_as_python(problems, client):
    for problem in problems:
        page = client.get(f"/problems/{problem.id}/").content.decode()
        urls = re.findall(r'href="(/problems/[^"]+/starter/[\w-]+/)" download="([\w.]+)"', page)
        assert urls and urls[0][0].endswith("/starter/torch-distributed/"), problem.id
        for url, filename in urls:
            response = client.get(url)
            assert response.status_code == 200, url
            assert response["Content-Disposition"] == f'attachment; filename="{filename}"'
            source = response.content.decode()
            ast.parse(source)
            assert not re.search(r"^\s*(from|import) problems\b", source, re.M), url
    assert client.get(f"/problems/{ALL_REDUCE}/starter/nccl/").status_code == 404


def test_backend_guides_are_pages_linked_from_the_docs_and_the_submit_page(problems, client, web_client):
    assert GUIDES
    for name in GUIDES:
        page = client.get(f"/docs/backends/{name}/")
        assert page.status_code == 200, name
        heading = next(
            line for line in (ROOT / f"docs/backends/{name}.md").read_text().splitlines() if line.startswith("# ")
        )
        assert f"<title>{escape(heading[2:])}" in page.content.decode()
    assert client.get("/docs/backends/no-such/").status_code == 404
    index = client.get("/docs/").content.decode()
    submit = web_client.get("/submit/").content.decode()
    for name in GUIDES:
        assert f'href="/docs/backends/{name}/"' in index and f'href="/docs/backends/{name}/"' in submit, name
