"""The rest of a newcomer's list of page defects (issue 30), each checked gone on the server side: the password-reset
and error pages in the site's own look, the navigation, the documents (lists, titles, links), the communication
report, the admin and the console log of a refused page."""

from __future__ import annotations

import io
import logging
import re
from html import unescape
from urllib.parse import urljoin, urlsplit

import pytest
from django.apps import apps
from django.contrib import admin
from django.test import RequestFactory

from leaderboard.submissions.results import result_record
from leaderboard.submissions.services import submission_create
from portal import site_docs
from tests.leaderboard.helpers import ALL_REDUCE, CORRECT, passed_document

pytestmark = pytest.mark.django_db

SITE_LAYOUT = 'class="site-header"'
ADMIN_LOOK = "Django administration"


def _page(response) -> str:
    return response.content.decode()


# --- password reset in the site's look --------------------------------------------------------------------------


def test_password_reset_pages_have_the_site_layout_from_request_to_new_password(client, django_user_model, mailoutbox):
    django_user_model.objects.create_user("ada", email="ada@example.org", password="old-password-long-1")
    form = client.get("/accounts/password-reset/")
    assert SITE_LAYOUT in _page(form) and ADMIN_LOOK not in _page(form) and 'href="/admin/"' not in _page(form)
    sent = client.post("/accounts/password-reset/", {"email": "ada@example.org"}, follow=True)
    assert SITE_LAYOUT in _page(sent) and 'id="reset-sent"' in _page(sent) and ADMIN_LOOK not in _page(sent)
    link = re.search(r"http://[^\s]+/accounts/reset/[^\s]+/", mailoutbox[0].body).group(0)
    choose = client.get(link, follow=True)
    assert 'id="password-set-form"' in _page(choose) and ADMIN_LOOK not in _page(choose)
    done = client.post(
        choose.redirect_chain[-1][0],
        {"new_password1": "new-password-long-2", "new_password2": "new-password-long-2"},
        follow=True,
    )
    assert 'id="reset-complete"' in _page(done) and SITE_LAYOUT in _page(done) and ADMIN_LOOK not in _page(done)
    used = client.get(choose.redirect_chain[-1][0])  # the link works once
    assert 'id="reset-invalid"' in _page(used) and SITE_LAYOUT in _page(used)


# --- 404 and 500 in the site's look, 403 without a traceback in the console -----------------------------------------


def test_a_missing_page_is_a_site_page_with_links_back(client):
    response = client.get("/no/such/page/")
    assert response.status_code == 404
    page = _page(response)
    assert SITE_LAYOUT in page and 'id="not-found"' in page and "/no/such/page/" in page and 'href="/docs/"' in page


def test_a_server_error_is_a_site_page_that_needs_no_database(django_assert_num_queries):
    from django.views.defaults import server_error

    with django_assert_num_queries(0):
        response = server_error(RequestFactory().get("/"))
    page = _page(response)
    assert response.status_code == 500 and SITE_LAYOUT in page and 'id="server-error"' in page


def test_a_refused_page_logs_one_line_and_no_traceback(web_client):
    console = next(h for h in logging.getLogger("django").handlers if isinstance(h, logging.StreamHandler))
    captured = io.StringIO()
    previous = console.setStream(captured)
    try:
        response = web_client.get("/contribute/review/")  # a signed-in user who is not a moderator
    finally:
        console.setStream(previous)
    assert response.status_code == 403
    log = captured.getvalue()
    assert "Forbidden" in log and "/contribute/review/" in log
    assert "Traceback" not in log and "PermissionDenied" not in log


# --- navigation ------------------------------------------------------------------------------------------------------


def test_the_navigation_links_docs_queues_and_datasets(client, problems):
    page = _page(client.get("/"))
    nav = page[page.index('<nav class="container nav">') : page.index("</nav>")]
    for href in ("/docs/", "/queues/", "/datasets/"):
        assert f'href="{href}"' in nav, href
        assert client.get(href).status_code == 200, href


# --- documents: lists, titles, links ----------------------------------------------------------------------------------


def _doc_urls() -> list[str]:
    return [f"/docs/{n}/" for n in site_docs.doc_names()] + [f"/docs/backends/{n}/" for n in site_docs.backend_names()]


def test_markdown_lists_right_after_a_line_of_text_are_lists_in_every_document(client):
    for url in _doc_urls():
        body = _page(client.get(url))
        article = body[body.index("<article") : body.index("</article>")]
        # a paragraph whose text has a line starting "- " is a list rendered as text
        as_paragraph = [
            p for p in re.findall(r"<p>(.*?)</p>", article, re.S) if re.search(r"\n[-*] ", re.sub(r"<[^>]+>", "", p))
        ]
        assert not as_paragraph, (url, as_paragraph[0][:300] if as_paragraph else None)
    baselines = _page(client.get("/docs/baselines/"))
    assert re.search(r"<li>\s*(<p>)?This table was measured before commit", baselines)


def test_the_docs_index_and_pages_name_documents_by_their_heading(client):
    index = _page(client.get("/docs/"))
    for name in site_docs.doc_names():
        heading = site_docs.doc_title(name)
        assert heading != name
        label = site_docs.FEATURED.get(name) or heading
        assert f'<a href="/docs/{name}/">{label}</a>' in unescape(index), (name, label)
    for name in site_docs.backend_names():
        assert f'<a href="/docs/backends/{name}/">{site_docs.doc_title(name, site_docs.BACKENDS_DIR)}</a>' in unescape(
            index
        ), name
    page = _page(client.get("/docs/architecture/"))
    assert f"<title>{site_docs.doc_title('architecture')} — " in unescape(page)


def test_every_link_inside_the_documents_leads_to_a_page(client, problems):
    """The contributor's guide linked its example problem as a repository folder (../problems/...), a 404 here."""
    broken = []
    for url in _doc_urls():
        body = _page(client.get(url))
        article = body[body.index("<article") : body.index("</article>")]
        for href in set(re.findall(r'href="([^"#]+)', article)):
            if href.startswith(("http://", "https://", "mailto:")):
                continue
            target = urlsplit(urljoin(f"http://testserver{url}", unescape(href)))
            status = client.get(target.path).status_code
            if status != 200:
                broken.append((url, href, status))
    assert not broken, broken
    guide = _page(client.get("/docs/contributing-problems/"))
    assert f'href="/problems/{ALL_REDUCE}/"' in guide


# --- the communication report -------------------------------------------------------------------------------------


def test_communication_report_lists_only_calls_made_and_says_counted_once(
    web_client, user, problems, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=True):
        submission = submission_create(
            user=user, problem=ALL_REDUCE, profile="cpu-gloo-2", filename="s.py", source=CORRECT.read_text()
        )
    document = passed_document(1.1)
    document["flags"] = {
        "uses_nccl": False,
        "uses_collectives_api": True,
        "suspicious_speedup": False,
        "communication_calls": {
            "torch.distributed.all_reduce": 6,
            "torch.distributed.send": 0,
            "torch.distributed.recv": 0,
            "torch.distributed.barrier": 0,
        },
        "communication_source": "counted at run time inside the sandbox, from the dispatcher's operators",
    }
    result_record(submission_id=submission.pk, document=document)
    page = _page(web_client.get(f"/submissions/{submission.pk}/"))
    report = page[page.index('id="communication"') :]
    report = report[: report.index("</p>")]
    assert "counted counted" not in report and "Calls counted at run time inside the sandbox" in report
    assert "<code>all_reduce</code> ×6" in report
    assert "send" not in report and "recv" not in report and "Barriers" not in report
    assert "Point-to-point" not in report


# --- the admin ------------------------------------------------------------------------------------------------------


def test_every_model_of_the_project_is_in_the_admin(admin_client):
    ours = ("portal", "accounts", "contributions", "leaderboard")
    missing = [m.__name__ for m in apps.get_models() if m._meta.app_label in ours and not admin.site.is_registered(m)]
    assert not missing, missing
    for model in apps.get_models():
        if model._meta.app_label in ours:
            url = f"/admin/{model._meta.app_label}/{model._meta.model_name}/"
            assert admin_client.get(url).status_code == 200, url


# --- how these scores relate to ParallelKernelBench's -----------------------------------------------------------------


def test_the_relation_to_parallelkernelbench_is_a_doc_linked_from_home_docs_and_run_pages(client, user, problems):
    from tests.leaderboard import run_fixtures as fx

    page = _page(client.get("/docs/relation-to-pkb/"))
    assert "<title>How these scores relate to ParallelKernelBench" in page
    for topic in (
        "pass@k",
        "fast_p",
        "lower bound",
        "pooled",
        "roofline",
        "run_local.py",
        "500 warm-up",
        "import-pkb",
        "baseline",
    ):
        assert topic in page, topic
    link = 'href="/docs/relation-to-pkb/"'
    assert link in _page(client.get("/")) and link in _page(client.get("/docs/"))
    run = fx.make_run(user)
    run_page = _page(client.get(f"/runs/{run.pk}/"))
    assert 'id="run-pkb-relation"' in run_page and link in run_page


# --- ?format= on the queues, the datasets and the comparison ----------------------------------------------------------


def test_queues_and_datasets_export_as_json_and_csv_and_refuse_other_formats(client, problems, redis_conn):
    queues = client.get("/queues/?format=json")
    assert queues["content-type"] == "application/json"
    rows = queues.json()["queues"]
    assert {r["profile"] for r in rows} >= {"cpu-gloo-2", "h200-nvlink-4"} and "live_workers" in rows[0]
    csv_queues = client.get("/queues/?format=csv")
    assert csv_queues["content-type"].startswith("text/csv")
    text = csv_queues.content.decode()
    assert text.splitlines()[0].startswith("profile,queue,live_workers,waiting") and "cpu-gloo-2" in text

    datasets = client.get("/datasets/?format=json")
    assert datasets["content-type"] == "application/json"
    body = datasets.json()
    assert body["licence"] and body["rows"] and body["rows"][0]["jsonl"].endswith(".jsonl")
    assert client.get("/datasets/?format=csv")["content-type"].startswith("text/csv")

    for url in ("/queues/?format=xml", "/datasets/?format=yaml", "/runs/compare/?format=xlsx"):
        refused = client.get(url)
        assert refused.status_code == 400, url
        assert "?format=csv or ?format=json" in refused.content.decode(), url


@pytest.fixture
def two_runs(user):
    from tests.leaderboard import run_fixtures as fx

    return fx.make_run(user), fx.make_run(user, manifest=dict(fx.MANIFEST, model="second-coder"))


def test_compare_refuses_a_run_against_itself_and_says_when_a_run_is_missing(client, problems, two_runs):
    a, _ = two_runs
    itself = _page(client.get(f"/runs/compare/?a={a.pk}&b={a.pk}"))
    assert 'id="compare-problems-list"' in itself and f"both run #{a.pk}" in itself
    assert 'id="compare-summary"' not in itself
    missing = _page(client.get(f"/runs/compare/?a={a.pk}&b=999999"))
    assert "there is no model run #999999" in missing and 'id="compare-summary"' not in missing
    assert client.get(f"/runs/compare/?a={a.pk}&b={a.pk}&format=csv").status_code == 400


def test_compare_exports_each_of_its_tables_once_computed(client, problems, two_runs, run_worker):
    a, b = two_runs
    url = f"/runs/compare/?a={a.pk}&b={b.pk}"
    client.get(url)  # asks the web worker for the comparison
    run_worker("web")
    page = _page(client.get(url))
    assert 'id="compare-summary"' in page
    for figure in ("fast₁@k", "Geomean speedup"):  # more than pass@k
        assert figure in page, figure
    import json

    chart = json.loads(
        re.search(r'<script id="compare-data" type="application/json">(.*?)</script>', page, re.S).group(1)
    )
    collectives = chart["categories"].index("collectives")
    assert chart["a_fast_1"][collectives] == pytest.approx(2 / 3) and len(chart["b_fast_1"]) == len(chart["categories"])
    summary = client.get(url + "&table=summary&format=json").json()
    assert [r["figure"] for r in summary["rows"]][:2] == ["pass@k", "fast₁@k"]
    categories = client.get(url + "&table=categories&format=csv")
    assert categories["content-type"].startswith("text/csv")
    assert categories.content.decode().splitlines()[0].startswith("category,a_pass_at_k,b_pass_at_k,a_fast_1")
    assert client.get(url + "&format=json").json()["table"] == "problems"
    wrong_table = client.get(url + "&table=nope&format=json")
    assert wrong_table.status_code == 400 and "summary" in wrong_table.content.decode()


# --- CPU results: "not computed" everywhere, never a speedup, no empty chart ------------------------------------------


def test_a_cpu_result_is_not_computed_on_every_page_and_the_counts_agree(
    web_client, user, problems, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=True):
        submission = submission_create(
            user=user, problem=ALL_REDUCE, profile="cpu-gloo-2", filename="s.py", source=CORRECT.read_text()
        )
    result_record(submission_id=submission.pk, document=passed_document(1.3))  # a CPU host's figures, not speed

    result = _page(web_client.get(f"/submissions/{submission.pk}/"))
    assert 'id="speedup-not-computed"' in result and 'id="roofline-not-computed"' in result
    timing = result[result.index("<h2>Timing</h2>") : result.index('id="roofline-not-computed"')]
    assert "1.300×" not in timing and "of the roofline" not in result

    problem = _page(web_client.get(f"/problems/{ALL_REDUCE}/?profile=cpu-gloo-2"))
    assert "pipeline check" in problem and 'id="distribution-not-computed"' in problem
    best = problem[problem.index('id="best-solutions"') : problem.index("</ol>")]
    assert "passed, not timed" in best and "—" not in best
    assert "No passed solution" not in problem  # the ranking above shows one
    assert "Baseline's roofline fraction" not in problem and "1.300×" not in problem

    mine = _page(web_client.get("/submissions/"))
    assert '<td data-metric="speedup"><span class="muted small">not computed</span></td>' in mine
    assert "1.300×" not in mine

    person = _page(web_client.get(f"/users/{user.username}/"))
    solutions = person[person.index('id="user-solutions"') :]
    assert "not computed: cpu-gloo-2 times on CPU" in solutions and "1.300×" not in solutions

    home = _page(web_client.get("/"))
    line = home[home.index('data-category="collectives"') :]
    line = line[: line.index("</p>")]
    assert "No passed solution yet" not in line and '<span class="solutions">1</span> passed solution' in line


def test_a_cpu_run_page_says_not_computed_and_draws_no_empty_chart(client, user, problems):
    from tests.leaderboard import run_fixtures as fx

    cpu = fx.make_run(user, manifest=dict(fx.MANIFEST, hardware="cpu-gloo-2", model="cpu-coder"))
    page = _page(client.get(f"/runs/{cpu.pk}/"))
    for metric in ("fast_1", "fast_2", "speedup", "roofline"):
        cell = page[page.index(f'<td data-metric="{metric}">') :]
        assert cell[: cell.index("</td>")].endswith('<span class="muted">not computed</span>'), metric
    assert 'id="run-fastp-chart"' not in page and 'id="run-roofline-chart"' not in page
    assert 'id="run-passk-chart"' in page
    assert "1.800×" not in page and "50.0 %" not in page  # the fixture's attempt figures, recorded but not speed
    gpu = _page(client.get(f"/runs/{fx.make_run(user).pk}/"))
    assert 'id="run-fastp-chart"' in gpu and 'id="run-roofline-chart"' in gpu and "not computed" not in gpu


def test_the_api_docs_show_no_raw_markdown(client):
    """Two parameter descriptions showed their Markdown as typed (backticks, a list as hyphens)."""
    page = _page(client.get("/api/docs/"))
    text = unescape(re.sub(r"<[^>]+>", "", page[page.index("<main") : page.index("</main>")]))
    raw = re.findall(r"`[^`\n]+`|\*\*[^*\n]+\*\*|\[[^\]\n]+\]\([^)\n]+\)|^\s*[-*] \S", text, re.M)
    assert not raw, raw[:5]
