"""A proposal whose roofline formula would take the server down (``9**9**9**9``) is refused at once with a 400 that
names the field, through the form and the API; nothing is stored or queued, and the request stays fast."""

from __future__ import annotations

import time

import pytest
from django.urls import reverse
from rq import Queue

from portal.contributions.models import ProblemProposal
from tests.portal.contributions.test_contributions import FILES, _form

pytestmark = pytest.mark.django_db(transaction=True)

BOMB = FILES["problem.toml"].replace(
    FILES["problem.toml"].split("flops_per_rank", 1)[1].split("\n", 1)[0], ' = "9**9**9**9"'
)


def test_the_bomb_is_in_the_proposal():
    assert 'flops_per_rank = "9**9**9**9"' in BOMB


def test_a_formula_bomb_is_a_clear_400_through_the_form_and_the_api(web_client, api_client, redis_conn):
    started = time.monotonic()
    response = web_client.post(reverse("proposal-create"), _form(**{"problem.toml": BOMB}))
    assert response.status_code == 400
    page = response.content.decode()
    assert "[roofline] flops_per_rank" in page and "exponents are limited to 64" in page

    response = api_client.post(
        "/api/proposals/",
        {
            "category": "collectives",
            "name": "sum_api",
            "problem_toml": BOMB,
            "reference_py": FILES["reference.py"],
            "readme_md": FILES["README.md"],
        },
        format="json",
    )
    assert response.status_code == 400
    message = response.json()["errors"]["problem_toml"][0]
    assert "[roofline] flops_per_rank" in message and "9**9**9**9" in message
    assert time.monotonic() - started < 10  # both requests, with the registry's checks; the bomb itself takes µs
    assert not ProblemProposal.objects.exists()
    assert Queue("checks", connection=redis_conn).count == 0
