"""The defects a newcomer met on the site (issue 16, part A), each checked gone on the server side; the browser
checks are in test_newcomer_browser.py."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone
from rq import Queue
from rq.serializers import JSONSerializer

from evaluator.host.worker import ArenaWorker
from leaderboard.models import Submission
from leaderboard.submissions import selectors
from leaderboard.submissions.results import result_record
from leaderboard.submissions.services import submission_create
from tests.leaderboard.helpers import ALL_REDUCE, CORRECT, failed_document, passed_document

pytestmark = pytest.mark.django_db


@pytest.fixture
def create(problems, user, django_capture_on_commit_callbacks):
    def make(profile: str = "cpu-gloo-2", who=None) -> Submission:
        with django_capture_on_commit_callbacks(execute=True):
            return submission_create(
                user=who or user, problem=ALL_REDUCE, profile=profile, filename="s.py", source=CORRECT.read_text()
            )

    return make


def _worker(redis_conn, queue: str, *, busy: bool) -> ArenaWorker:
    """A live worker as deployments run it (the arena's class: JSON, allow-listed jobs, signed replies), registered
    with a fresh heartbeat; it runs no job here."""
    worker = ArenaWorker([queue], connection=redis_conn)
    worker.register_birth()
    worker.heartbeat()
    worker.set_state("busy" if busy else "idle")
    return worker


# --- 2: the queued page says whether the worker is busy, gives an estimate and the limit; timeouts say why -------


def test_queued_page_shows_busy_worker_and_an_estimate(create, web_client, redis_conn, django_user_model):
    done = create()
    start = timezone.now() - timedelta(minutes=5)
    Submission.objects.filter(pk=done.pk).update(
        state=Submission.State.FINISHED, started_at=start, finished_at=start + timedelta(seconds=120)
    )
    # it ran: it waits no more
    Queue("cpu-gloo-2", connection=redis_conn, serializer=JSONSerializer).remove(done.job_id)
    _worker(redis_conn, "cpu-gloo-2", busy=True)
    # someone else's job ahead (the fair queue holds a user's second job in the database, out of RQ)
    ahead, mine = create(who=django_user_model.objects.create_user("bea")), create()
    status = selectors.submission_queue_status(submission=mine)
    assert (status.position, status.length, status.workers, status.busy) == (2, 2, 1, 1)
    assert status.typical_s == 120 and status.estimate_s == 2 * 120  # one ahead + one running, one worker
    page = web_client.get(f"/submissions/{mine.pk}/").content.decode()
    progress = page[page.index('id="progress"') :][:1500]
    assert "1 worker serves this queue" in progress and "1 is busy" in progress, progress
    assert "Estimated start: in about 4 min" in page and "recent evaluations here took about 2 min" in page
    assert "one may take up to" in page
    assert ahead.pk != mine.pk


def test_queued_page_without_worker_says_so(create, web_client, redis_conn):
    mine = create()
    page = web_client.get(f"/submissions/{mine.pk}/").content.decode()
    assert "No worker serves this profile right now" in page and "Estimated start" not in page


def test_timeout_message_with_its_limit_and_stuck_ranks_is_on_the_page(create, web_client):
    mine = create()
    message = (
        "the setup phase passed its limit of 30 s: rank(s) 1 did not finish it (stuck in a collective, a "
        "send/recv whose peer never came, or a loop)"
    )
    result_record(submission_id=mine.pk, document=failed_document("timeout", message))
    page = web_client.get(f"/submissions/{mine.pk}/").content.decode()
    assert "passed its limit of 30 s" in page and "send/recv" in page


# --- 10: live workers per queue ----------------------------------------------------------------------------------


def test_live_queues_counts_workers_with_fresh_heartbeats(redis_conn):
    _worker(redis_conn, "cpu-gloo-2", busy=False)
    _worker(redis_conn, "web", busy=False)
    stale = _worker(redis_conn, "cpu-gloo-4", busy=False)
    redis_conn.hset(stale.key, "last_heartbeat", "2000-01-01T00:00:00.000000Z")
    live = selectors.live_queues()
    assert live["cpu-gloo-2"] == 1 and live["web"] == 1
    assert live["cpu-gloo-4"] == 0 and live["h200-nvlink-4"] == 0


# --- 3: the proposal form keeps every file and text after a validation error ----------------------------------------


def test_proposal_form_keeps_uploads_and_text_after_an_error_and_succeeds_without_uploading_again(web_client):
    from html import unescape
    import re

    from django.core.files.uploadedfile import SimpleUploadedFile

    from portal.contributions.models import ProblemProposal
    from problems.registry import PROBLEMS_ROOT

    example = PROBLEMS_ROOT / "collectives" / "all_reduce"
    files = {n: (example / n).read_text() for n in ("problem.toml", "reference.py", "README.md")}
    correct = example / "solutions" / "correct" / "nccl_inplace_copy.py"
    wrong = example / "solutions" / "wrong" / "off_on_one_rank.py"

    def up(name, text):
        return SimpleUploadedFile(name, text.encode(), content_type="text/plain")

    first = web_client.post(
        "/contribute/",
        {
            "category": "collectives",
            "name": "Not A Valid Name",
            "problem_toml_file": up("problem.toml", files["problem.toml"]),
            "reference_py": files["reference.py"],
            "readme_md_file": up("README.md", files["README.md"]),
            "correct": [up(correct.name, correct.read_text())],
            "wrong": [up(wrong.name, wrong.read_text())],
            "wrong_source": "def solution(x):\n    return x  # pasted\n",
        },
    )
    assert first.status_code == 400
    page = first.content.decode()
    assert "your upload problem.toml is kept" in page and "your upload README.md is kept" in page
    assert f"solutions/correct/{correct.name}" in page and f"solutions/wrong/{wrong.name}" in page

    def textarea(name):
        return unescape(re.search(rf'<textarea name="{name}"[^>]*>\n?(.*?)</textarea>', page, re.S).group(1))

    assert textarea("problem_toml") == files["problem.toml"]
    assert textarea("reference_py") == files["reference.py"]
    assert textarea("readme_md") == files["README.md"]
    assert "return x  # pasted" in textarea("wrong_source")
    kept = unescape(re.search(r'name="kept_answers" value="([^"]*)"', page).group(1))
    # The second try: the name fixed, everything else as the page gave it back, no file uploaded again.
    second = web_client.post(
        "/contribute/",
        {
            "category": "collectives",
            "name": "sum_over_ranks",
            "kept_answers": kept,
            **{f: textarea(f) for f in ("problem_toml", "reference_py", "readme_md", "wrong_source")},
        },
    )
    assert second.status_code == 302, second.content.decode()[:2000]
    proposal = ProblemProposal.objects.get()
    assert sorted((a["kind"], a["filename"]) for a in proposal.solutions) == sorted(
        [("correct", correct.name), ("wrong", "pasted.py"), ("wrong", wrong.name)]
    )


# --- 6: the API docs read as Markdown; the schema link opens in the browser ------------------------------------------


def test_api_docs_have_no_restructuredtext_and_the_schema_opens_inline(client):
    page = client.get("/api/docs/").content.decode()
    assert "``" not in page
    assert "<code>multipart/form-data</code>" in page  # a description rendered from Markdown
    schema = client.get("/api/schema.json")
    assert schema.status_code == 200 and schema["Content-Type"].startswith("application/json")
    assert "attachment" not in schema.get("Content-Disposition", "")
    assert "``" not in schema.content.decode()
    assert 'href="/api/schema.json"' in page


# --- 7: the site's own 403 page; moderators' header links ------------------------------------------------------


def test_non_moderator_gets_the_sites_403_page_and_moderators_see_review_and_admin_links(
    web_client, client, django_user_model
):
    response = web_client.get("/contribute/review/")
    assert response.status_code == 403
    page = response.content.decode()
    assert 'class="site-header"' in page and "The review queue is for moderators." in page
    assert 'id="nav-review"' not in page
    staff = django_user_model.objects.create_user(username="mo", password="a-long-test-password-2", is_staff=True)
    client.force_login(staff)
    page = client.get("/").content.decode()
    assert 'href="/contribute/review/" id="nav-review"' in page
    assert 'id="nav-admin"' in page and 'href="/admin/"' in page


# --- 8: point-to-point calls are explained, in neutral colour ----------------------------------------------------


def test_a_gloo_solution_with_only_isend_irecv_shows_point_to_point_in_neutral_colour(create, web_client):
    mine = create()
    document = passed_document(1.4)
    document["flags"] = {
        "uses_nccl": True,
        "nccl_calls": [],
        "point_to_point_calls": ["irecv", "isend"],
        "uses_collectives_api": False,
        "suspicious_speedup": False,
        "communication_calls": {"torch.distributed.isend": 6, "torch.distributed.irecv": 6},
        "communication_source": "counted at run time inside the sandbox",
    }
    result_record(submission_id=mine.pk, document=document)
    page = web_client.get(f"/submissions/{mine.pk}/").content.decode()
    assert "point-to-point calls only (send/recv), no collective, through gloo" in page
    assert "<code>irecv</code> ×6, <code>isend</code> ×6" in page
    assert "uses nccl: yes" not in page and "nccl calls" not in page
    assert 'class="flag on"' not in page  # no warning colour


# --- 9: ?format=csv|json on the catalogue, one's submissions and one's proposals -------------------------------------


def test_home_submissions_and_proposals_answer_csv_and_json(create, web_client):
    import json

    create()
    home = web_client.get("/?format=json")
    assert home["Content-Type"] == "application/json"
    rows = json.loads(home.content)["rows"]
    assert any(r["id"] == ALL_REDUCE for r in rows) and {"category", "title", "world_sizes"} <= set(rows[0])
    csv = web_client.get("/?format=csv")
    assert csv["Content-Type"].startswith("text/csv") and csv.content.decode().startswith("id,category,title")
    mine = json.loads(web_client.get("/submissions/?format=json").content)["rows"]
    assert [r["problem"] for r in mine] == [ALL_REDUCE] and mine[0]["state"] == "queued"
    assert web_client.get("/submissions/?format=csv").content.decode().startswith("id,problem,")
    proposals = web_client.get("/contribute/proposals/?format=json")
    assert proposals["Content-Type"] == "application/json" and json.loads(proposals.content)["rows"] == []
    assert web_client.get("/contribute/proposals/?format=csv").content.decode().startswith("id,problem,")


# --- 10: the submit form marks profiles no worker serves ---------------------------------------------------------


def test_submit_form_marks_profiles_without_a_live_worker(web_client, problems, redis_conn):
    _worker(redis_conn, "cpu-gloo-2", busy=False)
    page = web_client.get("/submit/").content.decode()
    import re

    options = dict(re.findall(r'<option value="([^"]+)"[^>]*>([^<]*)</option>', page))
    assert "no worker" not in options["cpu-gloo-2"]
    assert "no worker serves it now" in options["h200-nvlink-4"] and "no worker" in options["cpu-gloo-4"]


# --- 11: the smaller ones ----------------------------------------------------------------------------------------


def test_protocol_text_names_k_once(user, problems):
    from tests.leaderboard import run_fixtures as fx
    from django.test import Client

    run = fx.make_run(
        user,
        manifest=dict(fx.MANIFEST, k=2),
        outcomes={(pid, a): out for (pid, a), out in fx.OUTCOMES.items() if a <= 2},
    )
    page = Client().get(f"/runs/{run.pk}/").content.decode()
    assert "zero-shot · k=2" in page
    assert "at k=2 · " not in page and page.count("k=2 · 120k tokens") >= 1


def test_categories_in_the_same_order_on_run_and_compare_pages(user, problems):
    import re

    from django.test import Client

    from tests.leaderboard import run_fixtures as fx

    from leaderboard.rankings.services import run_comparison_refresh

    a, b = fx.make_run(user), fx.make_run(user, manifest=dict(fx.MANIFEST, model="other-coder"))
    run_comparison_refresh(a_id=a.pk, b_id=b.pk)  # the web worker's job, which the page asks for
    client = Client()

    def order(html: str, section: str) -> list[str]:
        part = html[html.index(section) :]
        return [c for c in re.findall(r"<t[dh][^>]*>\s*(collectives|tensor-parallel)\s*</t[dh]>", part)][:2]

    run_page = client.get(f"/runs/{a.pk}/").content.decode()
    compare = client.get(f"/runs/compare/?a={a.pk}&b={b.pk}").content.decode()
    from leaderboard.catalogue.selectors import category_order

    expected = sorted(["tensor-parallel", "collectives"], key=category_order)
    assert order(run_page, 'id="categories"') == expected
    assert order(compare, "category") == expected


def test_admin_says_trajectories(admin_client):
    page = admin_client.get("/admin/").content.decode()
    assert "Trajectories" in page and "Trajectorys" not in page


def test_every_page_links_a_favicon_that_exists(client):
    from django.contrib.staticfiles import finders

    page = client.get("/").content.decode()
    assert '<link rel="icon" href="/static/favicon.svg"' in page
    assert finders.find("favicon.svg")


def test_cancel_asks_for_confirmation(create, web_client):
    mine = create()
    page = web_client.get(f"/submissions/{mine.pk}/").content.decode()
    assert f'data-confirm="Cancel submission #{mine.pk}?' in page
    from django.contrib.staticfiles import finders

    assert "data-confirm" in open(finders.find("js/site.js")).read()


def test_api_lists_ones_own_submissions_with_a_token(create, api_client, django_user_model):
    other = django_user_model.objects.create_user(username="bob", password="a-long-test-password-3")
    mine, _theirs = create(), create(who=other)
    body = api_client.get("/api/submissions/").json()
    assert body["count"] == 1 and [s["id"] for s in body["results"]] == [mine.pk]
    assert body["results"][0]["url"].endswith(f"/submissions/{mine.pk}/") and "source" not in body["results"][0]
    from rest_framework.test import APIClient

    assert APIClient().get("/api/submissions/").status_code in (401, 403)


def test_arena_problems_into_head_ends_without_a_traceback():
    import subprocess
    import sys

    from tests.leaderboard.helpers import ROOT

    run = subprocess.run(
        f"{sys.executable} -m evaluator.cli problems | head -n 2",
        shell=True,
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert len(run.stdout.splitlines()) == 2
    assert "Traceback" not in run.stderr and "BrokenPipe" not in run.stderr, run.stderr


@pytest.mark.django_db(transaction=True)
def test_arena_submit_prints_the_submissions_url(live_server, problems, user, redis_conn):
    import subprocess
    import sys

    from rest_framework.authtoken.models import Token

    from tests.leaderboard.helpers import ROOT

    token = Token.objects.create(user=user)
    run = subprocess.run(
        [
            sys.executable,
            "-m",
            "evaluator.cli",
            "submit",
            "--portal",
            live_server.url,
            "--token",
            token.key,
            "--problem",
            ALL_REDUCE,
            "--solution",
            str(CORRECT),
            "--hardware",
            "cpu-gloo-2",
            "--no-follow",
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert run.returncode == 0, run.stderr
    pk = Submission.objects.get().pk
    assert f"submission {pk} queued on cpu-gloo-2: {live_server.url}/submissions/{pk}/" in run.stdout
