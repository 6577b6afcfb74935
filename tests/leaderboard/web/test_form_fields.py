"""``{% form_fields form %}`` writes a filter form's fields from memory once it rendered that state of the form: for
every state (unbound, each value, a value not offered, the choices some run has changing) what it writes is what the
loop wrote, on the ranking of runs and on the home page's search."""

from __future__ import annotations

import pytest
from django.template import Context, Template

from leaderboard.catalogue import selectors as catalogue
from leaderboard.management.commands.seed_demo import seed_demo
from leaderboard.models import ModelRun
from leaderboard.rankings import run_selectors

pytestmark = pytest.mark.django_db

RUN_LOOP = """{% for field in form %}
    <label>{{ field.label }} {{ field }}</label>
  {% endfor %}"""
SEARCH_LOOP = """{% for field in form %}
    <label for="{{ field.id_for_label }}">{{ field.label }}</label> {{ field }}
  {% endfor %}"""
STATES = [
    None,
    {"mode": "agentic"},
    {"mode": "agentic", "k": "2"},
    {"profile": "no-such-profile"},
    {"precision": "<b>"},
    None,
    {"mode": "agentic"},
]


def test_a_forms_fields_are_written_as_the_loop_wrote_them(client):
    seed_demo(runs=8, problems=4, attempts=2, users=2, seed=2, log=lambda _: None)
    memo_runs = Template("{% load arena %}{% form_fields form %}" + RUN_LOOP + "{% endform_fields %}")
    memo_search = Template("{% load arena %}{% form_fields form %}" + SEARCH_LOOP + "{% endform_fields %}")
    for round_ in range(2):
        if round_:  # a value some run has now: the offered choices change, so does the form
            run = ModelRun.objects.order_by("pk").first()
            run.k, run.precision = 7, "fp8"
            run.save(update_fields=["k", "precision"])  # (a save, as every write of a run: the choices follow it)
        for data in STATES:
            form = run_selectors.model_run_filters(data).form
            assert memo_runs.render(Context({"form": form})) == Template(RUN_LOOP).render(Context({"form": form}))
            search = catalogue.problem_filters({"q": "all", **(data or {})} if data else None).form
            assert memo_search.render(Context({"form": search})) == Template(SEARCH_LOOP).render(
                Context({"form": search})
            )
    page = client.get("/runs/?k=7").content.decode()
    assert '<option value="7" selected>7</option>' in page
    assert '<option value="7" selected>' not in client.get("/runs/").content.decode()
