"""problem_ranking: each user's best passed submission, fastest first; nothing else is ranked."""

from __future__ import annotations

import pytest

from leaderboard.submissions.results import result_record
from leaderboard.submissions.services import submission_create
from leaderboard.rankings.selectors import problem_ranking
from leaderboard.models import Problem
from tests.leaderboard.helpers import ALL_REDUCE, CORRECT, failed_document, passed_document


@pytest.fixture
def submit(problems):
    def make(user, document, profile="cpu-gloo-2"):
        submission = submission_create(user=user, problem=ALL_REDUCE, profile=profile, filename="s.py",
                                       source=CORRECT.read_text())
        result_record(submission_id=submission.pk, document=document)
        return submission

    return make


def test_ranking_orders_by_speedup_and_only_includes_passed(submit, django_user_model):
    ada, bob, cy, dee = (django_user_model.objects.create_user(n) for n in ("ada", "bob", "cy", "dee"))
    version = Problem.objects.get(pk=ALL_REDUCE).version
    submit(ada, passed_document(1.5, version=version))
    ada_best = submit(ada, passed_document(2.0, version=version))
    bob_best = submit(bob, passed_document(3.0, version=version))
    submit(bob, failed_document())  # a failure never ranks...
    fast_but_wrong = passed_document(50.0, version=version)
    fast_but_wrong["verdict"] = "rejected"  # ...nor does a rejected "speedup"
    submit(cy, fast_but_wrong)
    submit(cy, passed_document(9.0, version=version), profile="cpu-gloo-4")  # another profile's ranking
    submit(dee, passed_document(8.0, version=version + 1))  # another version of the problem
    submit(dee, failed_document("timeout", "too slow"))

    problem = Problem.objects.get(pk=ALL_REDUCE)
    ranking = problem_ranking(problem=problem, profile="cpu-gloo-2")

    assert [(e.rank, e.username, e.speedup) for e in ranking] == [(1, "bob", 3.0), (2, "ada", 2.0)]
    assert [e.submission_id for e in ranking] == [bob_best.pk, ada_best.pk]
    assert [e.username for e in problem_ranking(problem=problem, profile="cpu-gloo-4")] == ["cy"]


def test_ranking_is_shown_on_the_problem_page_and_the_api(submit, django_user_model, client):
    ada = django_user_model.objects.create_user("ada")
    submission = submit(ada, passed_document(1.8))
    page = client.get(f"/problems/{ALL_REDUCE}/?profile=cpu-gloo-2").content.decode()
    assert "1.800×" in page and f"/submissions/{submission.pk}/" in page and "ranking-data" in page
    api = client.get(f"/api/problems/{ALL_REDUCE}/ranking/?profile=cpu-gloo-2").json()
    assert api["profile"] == "cpu-gloo-2" and api["entries"][0]["username"] == "ada"
    assert api["entries"][0]["speedup"] == 1.8


def test_ties_go_to_the_earlier_submission(submit, django_user_model):
    ada, bob = (django_user_model.objects.create_user(n) for n in ("ada", "bob"))
    submit(bob, passed_document(2.0))
    submit(ada, passed_document(2.0))
    ranking = problem_ranking(problem=Problem.objects.get(pk=ALL_REDUCE), profile="cpu-gloo-2")
    assert [e.username for e in ranking] == ["bob", "ada"]
