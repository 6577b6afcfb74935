"""problem_ranking: one row per distinct solution, each entrant's best, repeats pooled, fastest first; nothing else is
ranked; CPU profiles give verdicts only; results of other protocol revisions are never ranked with the current ones;
leaders are re-measured and a disagreeing re-measurement is flagged."""

from __future__ import annotations

import pytest

from evaluator.contract.result import TIMING_PROTOCOL_REVISION
from leaderboard.models import Problem, Submission
from leaderboard.rankings.selectors import problem_ranking
from leaderboard.submissions.results import result_record
from leaderboard.submissions.services import submission_create
from tests.leaderboard.helpers import ALL_REDUCE, CORRECT, failed_document, passed_document

GPU = "h200-nvlink-2"


def source(variant: int | None = None) -> str:
    """The correct solution, made a distinct solution by one extra statement (a comment would not do)."""
    text = CORRECT.read_text()
    return text if variant is None else text + f"\n_VARIANT = {variant}\n"


def doc(
    speedup: float,
    low: float | None = None,
    high: float | None = None,
    *,
    revision: int = TIMING_PROTOCOL_REVISION,
    **kwargs,
) -> dict:
    d = passed_document(speedup, **kwargs)
    if low is not None:
        d["timing"]["speedup_ci"] = [low, high]
    d["timing"]["protocol_revision"] = revision
    d["timing"]["speedup_estimator"] = "median of per-iteration ratios; iteration i of the baseline ..."
    return d


@pytest.fixture
def submit(problems):
    def make(user, document, profile=GPU, text=None):
        submission = submission_create(
            user=user,
            problem=ALL_REDUCE,
            profile=profile,
            filename="s.py",
            source=text if text is not None else source(),
        )
        result_record(submission_id=submission.pk, document=document)
        return submission

    return make


@pytest.fixture
def people(django_user_model):
    return [django_user_model.objects.create_user(n) for n in ("ada", "bob", "cy", "dee")]


def test_ranking_orders_by_speedup_and_only_includes_passed(submit, people, settings):
    settings.ARENA_VERIFY = False
    ada, bob, cy, dee = people
    version = Problem.objects.get(pk=ALL_REDUCE).version
    submit(ada, doc(1.5, version=version), text=source(1))
    ada_best = submit(ada, doc(2.0, version=version), text=source(2))
    bob_best = submit(bob, doc(3.0, version=version), text=source(3))
    submit(bob, failed_document(), text=source(4))  # a failure never ranks...
    fast_but_wrong = doc(50.0, version=version)
    fast_but_wrong["verdict"] = "rejected"  # ...nor does a rejected "speedup"
    submit(cy, fast_but_wrong, text=source(5))
    submit(cy, doc(9.0, version=version), profile="h200-nvlink-4", text=source(6))  # another profile's ranking
    submit(dee, doc(8.0, version=version + 1), text=source(7))  # another version of the problem

    problem = Problem.objects.get(pk=ALL_REDUCE)
    ranking = problem_ranking(problem=problem, profile=GPU)
    assert [(e.rank, e.username, e.speedup) for e in ranking] == [(1, "bob", 3.0), (2, "ada", 2.0)]
    assert [e.submission_id for e in ranking] == [bob_best.pk, ada_best.pk]
    assert [e.evaluations for e in ranking] == [1, 1]
    assert [e.username for e in problem_ranking(problem=problem, profile="h200-nvlink-4")] == ["cy"]
    assert [e.username for e in problem_ranking(problem=problem, profile=GPU, version=version + 1)] == ["dee"]


def test_every_speedup_says_how_it_was_formed_its_interval_revision_and_version(submit, people, client, settings):
    settings.ARENA_VERIFY = False
    submission = submit(people[0], doc(1.8, 1.71, 1.89))
    page = client.get(f"/problems/{ALL_REDUCE}/?profile={GPU}").content.decode()
    assert "1.800×" in page and f"/submissions/{submission.pk}/" in page and "ranking-data" in page
    assert f"median of paired per-iteration ratios · rev {TIMING_PROTOCOL_REVISION} · v1" in page
    assert "1.710" in page and "1.890" in page
    api = client.get(f"/api/problems/{ALL_REDUCE}/ranking/?profile={GPU}").json()
    entry = api["entries"][0]
    assert api["profile"] == GPU and entry["username"] == "ada" and entry["speedup"] == 1.8
    assert (entry["speedup_ci_low"], entry["speedup_ci_high"]) == (1.71, 1.89)
    assert entry["estimator"] == "median of paired per-iteration ratios"
    assert (entry["protocol_revision"], entry["problem_version"], entry["evaluations"]) == (
        TIMING_PROTOCOL_REVISION,
        1,
        1,
    )


def test_identical_code_resubmitted_five_times_does_not_climb(submit, people, client, settings):
    settings.ARENA_VERIFY = False
    ada, bob = people[:2]
    submit(ada, doc(1.20, 1.18, 1.22), text=source(1))
    # bob's one solution, five times (once with a comment and other spacing: the same code), noise around 1.05
    noisy = [(1.00, 0.99, 1.01), (1.05, 1.04, 1.06), (0.95, 0.94, 0.96), (1.30, 1.29, 1.31), (1.00, 0.99, 1.01)]
    for i, (value, low, high) in enumerate(noisy):
        text = source(2) if i != 2 else "# the same code, reformatted\n" + source(2).replace("\n", "\n\n")
        submit(bob, doc(value, low, high), text=text)
    ranking = problem_ranking(problem=Problem.objects.get(pk=ALL_REDUCE), profile=GPU)
    assert [(e.username, e.evaluations) for e in ranking] == [("ada", 1), ("bob", 5)]  # not bob's lucky 1.30
    bob_row = ranking[1]
    assert 0.95 < bob_row.speedup < 1.15 and bob_row.speedup_ci_low < 1.0 < bob_row.speedup_ci_high
    api = client.get(f"/api/problems/{ALL_REDUCE}/ranking/?profile={GPU}").json()["entries"]
    assert [(e["username"], e["evaluations"]) for e in api] == [("ada", 1), ("bob", 5)]
    page = client.get(f"/problems/{ALL_REDUCE}/?profile={GPU}").content.decode()
    assert page.count("data-entry=") == 2 and 'data-evaluations="5"' in page


def test_the_same_code_from_someone_else_is_credited_to_its_first_submitter(submit, people, settings):
    settings.ARENA_VERIFY = False
    ada, bob = people[:2]
    submit(ada, doc(1.5, 1.45, 1.55))
    submit(bob, doc(1.6, 1.55, 1.65))  # copied: no row of its own, but its evaluation is pooled
    ranking = problem_ranking(problem=Problem.objects.get(pk=ALL_REDUCE), profile=GPU)
    assert [(e.username, e.evaluations) for e in ranking] == [("ada", 2)]


def test_rank_is_a_range_where_intervals_overlap(submit, people, settings):
    settings.ARENA_VERIFY = False
    ada, bob, cy = people[:3]
    submit(ada, doc(2.0, 1.9, 2.1), text=source(1))
    submit(bob, doc(1.95, 1.85, 2.05), text=source(2))
    submit(cy, doc(1.2, 1.15, 1.25), text=source(3))
    ranking = problem_ranking(problem=Problem.objects.get(pk=ALL_REDUCE), profile=GPU)
    assert [(e.username, e.rank_label) for e in ranking] == [("ada", "1–2"), ("bob", "1–2"), ("cy", "3")]


def test_cpu_profiles_show_verdicts_only(submit, people, client):
    submit(people[0], doc(1.8, 1.7, 1.9), profile="cpu-gloo-2", text=source(1))
    submit(people[1], doc(3.0, 2.9, 3.1), profile="cpu-gloo-2", text=source(2))
    assert not Submission.objects.filter(remeasure_of__isnull=False).exists()  # CPU figures are never re-measured
    api = client.get(f"/api/problems/{ALL_REDUCE}/ranking/?profile=cpu-gloo-2").json()["entries"]
    assert [(e["username"], e["speedup"], e["timed"]) for e in api] == [("ada", None, False), ("bob", None, False)]
    page = client.get(f"/problems/{ALL_REDUCE}/?profile=cpu-gloo-2").content.decode()
    assert "pipeline check" in page and "3.000×" not in page and 'id="ranking-data"' not in page
    results = client.get(f"/api/problems/{ALL_REDUCE}/results/?profile=cpu-gloo-2").json()
    assert results["speedups"] == []  # no chart either


def test_results_of_another_protocol_revision_are_never_ranked_together(submit, people, client, settings):
    settings.ARENA_VERIFY = False
    ada, bob = people[:2]
    submit(ada, doc(1.4, 1.35, 1.45, revision=4), text=source(1))
    submit(bob, doc(2.5, 2.4, 2.6, revision=3), text=source(2))  # measured under the old loop
    problem = Problem.objects.get(pk=ALL_REDUCE)
    assert [e.username for e in problem_ranking(problem=problem, profile=GPU)] == ["ada"]
    assert [e.username for e in problem_ranking(problem=problem, profile=GPU, revision=3)] == ["bob"]
    page = client.get(f"/problems/{ALL_REDUCE}/?profile={GPU}").content.decode()
    assert "2.500×" not in page and "revision=3" in page  # offered apart, not mixed in
    old = client.get(f"/problems/{ALL_REDUCE}/?profile={GPU}&revision=3").content.decode()
    assert "2.500×" in old and "1.400×" not in old


def test_leaders_are_remeasured_and_a_disagreeing_remeasurement_is_flagged(submit, people, client):
    ada, bob = people[:2]
    lucky = submit(ada, doc(1.50, 1.45, 1.55), text=source(1))
    honest = submit(bob, doc(1.20, 1.17, 1.23), text=source(2))
    checks = {s.remeasure_of_id: s for s in Submission.objects.filter(remeasure_of__isnull=False)}
    assert set(checks) == {lucky.pk, honest.pk}  # the top entries, queued through the usual path
    assert all(s.state == "queued" and s.job_id and s.model_run_id is None for s in checks.values())
    page = client.get(f"/problems/{ALL_REDUCE}/?profile={GPU}").content.decode()
    assert page.count('data-verification="pending"') == 2

    result_record(
        submission_id=checks[lucky.pk].pk,
        document=doc(
            1.02,
            1.00,
            1.04,
        ),
    )  # disagrees
    result_record(submission_id=checks[honest.pk].pk, document=doc(1.21, 1.18, 1.24))  # agrees
    assert Submission.objects.filter(remeasure_of__isnull=False).count() == 2  # a re-measurement is not re-measured
    ranking = problem_ranking(problem=Problem.objects.get(pk=ALL_REDUCE), profile=GPU)
    assert [(e.username, e.evaluations, e.verification.state) for e in ranking] == [
        ("ada", 1, "flagged"),
        ("bob", 1, "verified"),
    ]  # re-measurements verify; they are never pooled or ranked
    assert ranking[0].verification.speedup == 1.02 and ranking[0].speedup == 1.50
    page = client.get(f"/problems/{ALL_REDUCE}/?profile={GPU}").content.decode()
    assert 'data-verification="flagged"' in page and "⚠ re-measured 1.020× (1.000–1.040) vs 1.500×" in page
    assert 'data-verification="verified"' in page and "✓" in page
    api = client.get(f"/api/problems/{ALL_REDUCE}/ranking/?profile={GPU}").json()["entries"]
    assert api[0]["verification"]["state"] == "flagged" and api[0]["verification"]["speedup"] == 1.02
    assert api[1]["verification"]["state"] == "verified"
