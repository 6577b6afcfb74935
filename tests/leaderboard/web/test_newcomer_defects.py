"""The defects a newcomer met on the site (issue 16, part A), each checked gone on the server side; the browser
checks are in test_newcomer_browser.py."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone
from rq import Queue, Worker

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
            return submission_create(user=who or user, problem=ALL_REDUCE, profile=profile, filename="s.py",
                                     source=CORRECT.read_text())
    return make


def _worker(redis_conn, queue: str, *, busy: bool) -> Worker:
    worker = Worker([Queue(queue, connection=redis_conn)], connection=redis_conn)
    worker.register_birth()
    worker.heartbeat()
    worker.set_state("busy" if busy else "idle")
    return worker


# --- 2: the queued page says whether the worker is busy, gives an estimate and the limit; timeouts say why -------


def test_queued_page_shows_busy_worker_and_an_estimate(create, web_client, redis_conn):
    done = create()
    start = timezone.now() - timedelta(minutes=5)
    Submission.objects.filter(pk=done.pk).update(state=Submission.State.FINISHED, started_at=start,
                                                 finished_at=start + timedelta(seconds=120))
    _worker(redis_conn, "cpu-gloo-2", busy=True)
    ahead, mine = create(), create()
    status = selectors.submission_queue_status(submission=mine)
    assert (status.position, status.length, status.workers, status.busy) == (3, 3, 1, 1)
    assert status.typical_s == 120 and status.estimate_s == 3 * 120  # two ahead + one running, one worker
    page = web_client.get(f"/submissions/{mine.pk}/").content.decode()
    assert "1 worker serves this queue" in page and "1 is busy" in page
    assert "Estimated start: in about 6 min" in page and "recent evaluations here took about 2 min" in page
    assert "one may take up to" in page
    assert ahead.pk != mine.pk


def test_queued_page_without_worker_says_so(create, web_client, redis_conn):
    mine = create()
    page = web_client.get(f"/submissions/{mine.pk}/").content.decode()
    assert "No worker serves this profile right now" in page and "Estimated start" not in page


def test_timeout_message_with_its_limit_and_stuck_ranks_is_on_the_page(create, web_client):
    mine = create()
    message = ("the setup phase passed its limit of 30 s: rank(s) 1 did not finish it (stuck in a collective, a "
               "send/recv whose peer never came, or a loop)")
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

    first = web_client.post("/contribute/", {
        "category": "collectives", "name": "Not A Valid Name",
        "problem_toml_file": up("problem.toml", files["problem.toml"]), "reference_py": files["reference.py"],
        "readme_md_file": up("README.md", files["README.md"]),
        "correct": [up(correct.name, correct.read_text())], "wrong": [up(wrong.name, wrong.read_text())],
        "wrong_source": "def solution(x):\n    return x  # pasted\n",
    })
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
    second = web_client.post("/contribute/", {
        "category": "collectives", "name": "sum_over_ranks", "kept_answers": kept,
        **{f: textarea(f) for f in ("problem_toml", "reference_py", "readme_md", "wrong_source")},
    })
    assert second.status_code == 302, second.content.decode()[:2000]
    proposal = ProblemProposal.objects.get()
    assert sorted((a["kind"], a["filename"]) for a in proposal.solutions) == sorted([
        ("correct", correct.name), ("wrong", "pasted.py"), ("wrong", wrong.name)])
