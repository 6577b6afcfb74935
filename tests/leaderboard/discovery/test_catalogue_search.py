"""Discovery: the catalogue's search and filters (page and API alike), each category's leader, best speedup and
number of solutions on the home page, a problem's best solutions, and the docs pages."""

from __future__ import annotations

import pytest

from leaderboard.models import Problem
from leaderboard.submissions.results import result_record
from leaderboard.submissions.services import submission_create
from tests.leaderboard.helpers import ALL_REDUCE, CORRECT, passed_document


GPU = "h200-nvlink-2"  # a profile that measures speed (CPU profiles give verdicts only)


@pytest.fixture
def submit(problems):
    made = []

    def make(user, speedup, problem=ALL_REDUCE, profile=GPU):
        version = Problem.objects.get(pk=problem).version
        made.append(1)  # each call submits different code, so each is a solution of its own
        source = CORRECT.read_text() + f"\n_VARIANT = {len(made)}\n"
        submission = submission_create(user=user, problem=problem, profile=profile, filename="s.py", source=source)
        result_record(
            submission_id=submission.pk, document=passed_document(speedup, version=version, problem_id=problem)
        )
        return submission

    return make


def test_problem_sync_keeps_hard_communication_and_tags(problems):
    from problems.registry import catalogue

    registry = catalogue()
    tagged = [p for p in registry.values() if p.tags]
    hard = [p for p in registry.values() if p.hard]
    assert hard, "the suite states why some problems are hard"
    for spec in hard[:3]:
        assert Problem.objects.get(pk=spec.id).hard == spec.hard
    for spec in tagged[:3]:
        assert Problem.objects.get(pk=spec.id).tag_list == list(spec.tags)


def test_search_by_text_category_world_size_and_tag_on_the_page_and_the_api(problems, client):
    total = Problem.objects.filter(is_active=True).count()
    page = client.get("/?q=all_reduce").content.decode()
    assert 'id="problem-search"' in page and "collectives/all_reduce" in page
    assert "expert-parallel/" not in page

    api = client.get("/api/problems/?q=all_reduce").json()
    assert ALL_REDUCE in [p["id"] for p in api] and len(api) < total

    by_category = client.get("/api/problems/?category=collectives").json()
    assert by_category and {p["category"] for p in by_category} == {"collectives"}
    assert 'id="expert-parallel"' not in client.get("/?category=collectives").content.decode()

    sizes = sorted({w for p in Problem.objects.filter(is_active=True) for w in p.world_sizes})
    size = sizes[-1]
    on_size = client.get(f"/api/problems/?world_size={size}").json()
    assert on_size and all(size in p["world_sizes"] for p in on_size)

    tagged = Problem.objects.exclude(tags="").first()
    if tagged is not None:
        tag = tagged.tag_list[0]
        with_tag = client.get(f"/api/problems/?tag={tag}").json()
        assert tagged.id in [p["id"] for p in with_tag] and all(tag in p["tags"] for p in with_tag)
        assert f'href="?tag={tag}"' in client.get("/").content.decode()

    refused = client.get("/api/problems/?category=nonsense")
    assert refused.status_code == 400 and "category" in refused.json()["errors"]
    nothing = client.get("/?q=zzzz-no-such-problem").content.decode()
    assert 'id="no-match"' in nothing


def test_search_forms_of_one_class_share_no_state_between_requests(problems, client, settings):
    """The search form's fields are shared by every form of its class (made once per set of values offered): what one
    request searched, selected or refused never shows in the next one's form or answer."""
    from leaderboard.catalogue.selectors import problem_filters

    settings.ARENA_PAGE_CACHE = False  # each request renders its form
    bad, good, unbound = (
        problem_filters({"category": "nonsense"}),
        problem_filters({"category": "collectives"}),
        problem_filters(),
    )
    assert type(bad.form) is type(good.form) is type(unbound.form)
    assert not bad.form.is_valid() and "category" in bad.form.errors
    assert good.form.is_valid() and good.form.cleaned_data["category"] == "collectives"
    assert not unbound.form.errors and unbound.form["category"].value() is None
    assert 'type="search"' in str(unbound.form["q"]) and 'placeholder="name, summary, tag…"' in str(unbound.form["q"])
    for _ in range(2):
        assert 'value="collectives" selected' in client.get("/?category=collectives").content.decode()
        assert 'value="all_reduce"' in client.get("/?q=all_reduce").content.decode()
        page = client.get("/").content.decode()
        assert 'value="collectives" selected' not in page and 'value="all_reduce"' not in page
        assert client.get("/api/problems/?category=nonsense").status_code == 400
        assert client.get("/api/problems/?category=collectives").status_code == 200


def test_home_shows_each_categorys_leader_best_speedup_and_solutions(submit, django_user_model, client):
    ada, bob = (django_user_model.objects.create_user(n) for n in ("ada", "bob"))
    submit(ada, 1.5)
    best = submit(bob, 2.5)
    page = client.get("/?category=collectives").content.decode()
    summary = page.split('data-category="collectives"', 1)[1].split("</p>", 1)[0]
    assert "bob" in summary and "2.500×" in summary and ">2</span> ranked solutions" in summary
    assert f"/submissions/{best.pk}/" in page  # the problem's row links its best solution


def test_home_page_cache_follows_a_new_result(submit, django_user_model, client):
    ada = django_user_model.objects.create_user("ada")
    assert (
        "ranked solution"
        not in client.get("/?category=collectives")
        .content.decode()
        .split('data-category="collectives"', 1)[1]
        .split("</p>", 1)[0]
    )
    submit(ada, 1.25)
    assert "1.250×" in client.get("/?category=collectives").content.decode()


def test_problem_page_shows_its_best_solutions_and_their_history(submit, django_user_model, client):
    ada, bob = (django_user_model.objects.create_user(n) for n in ("ada", "bob"))
    submit(ada, 1.5)
    submit(bob, 1.2)
    submit(bob, 3.0)
    page = client.get(f"/problems/{ALL_REDUCE}/?profile={GPU}").content.decode()
    best = page.split('id="best-solutions"', 1)[1].split("</section>", 1)[0]
    assert best.index("bob") < best.index("ada") and "3.000×" in best
    assert 'id="history-data"' in page  # best speedup over time: 1.5 then 3.0 (1.2 set no record)
    import json

    history = json.loads(page.split('id="history-data" type="application/json">', 1)[1].split("</script>", 1)[0])
    assert history["speedups"] == [1.5, 3.0] and history["who"] == ["ada", "bob"]


def test_docs_are_pages_sanitised_and_linked_from_the_forms(client, user, settings, tmp_path):
    for name, words in (("protocol", "verdict"), ("model-runs", "pass@k"), ("contributing-problems", "problem.toml")):
        page = client.get(f"/docs/{name}/")
        assert page.status_code == 200 and words in page.content.decode()
    assert client.get("/docs/nope/").status_code == 404
    assert client.get("/docs/").status_code == 200

    from portal.site_docs import render_markdown

    html = render_markdown(
        "# T\n\n<script>alert(1)</script> [x](javascript:alert(1)) <img src=x onerror=alert(1)>"
        "\n\n[p](protocol.md#timing)"
    )
    assert "<script" not in html and "javascript:" not in html and "onerror" not in html
    assert 'href="/docs/protocol/#timing"' in html

    client.force_login(user)
    assert "/docs/protocol/" in client.get("/submit/").content.decode()
    assert "/docs/model-runs/" in client.get("/runs/upload/").content.decode()
    assert "/docs/contributing-problems/" in client.get("/contribute/").content.decode()


def test_swagger_ui_is_served_from_this_site(client):
    page = client.get("/api/swagger/")
    assert page.status_code == 200
    text = page.content.decode()
    assert "/static/drf_spectacular_sidecar/swagger-ui-dist/" in text and "cdn" not in text.lower()


def test_problem_statements_pass_through_nh3_like_the_docs(monkeypatch):
    import markdown as markdown_lib

    from leaderboard.web.templatetags.arena import markdown

    html = markdown(
        "# T\n\n<script>alert(1)</script> [x](javascript:alert(1)) [ok](https://example.org/a)\n\n"
        "```python\nx = 1\n```\n\n| a |\n|:-:|\n| 1 |\n"
    )
    assert "<script" not in html and "javascript:" not in html
    assert 'href="https://example.org/a"' in html and 'class="highlight"' in html and "<table>" in html
    assert 'style="text-align:center"' in html  # the table's alignment survives the cleaner
    # Whatever the renderer lets through, nh3 removes after it.
    real = markdown_lib.Markdown.convert
    monkeypatch.setattr(
        markdown_lib.Markdown,
        "convert",
        lambda self, text: (
            real(self, text) + '<img src="x" onerror="alert(1)"><a href="javascript:alert(2)" onclick="x()">y</a>'
            '<iframe src="https://evil.example"></iframe><style>*{}</style>'
        ),
    )
    html = markdown("Statement")
    assert "<p>Statement</p>" in html
    for bad in ("onerror", "onclick", "javascript:", "<iframe", "<style"):
        assert bad not in html, bad
