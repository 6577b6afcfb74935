"""A missing page is the site's page, in words: on a local portal (DEBUG on, `make run`) too, where Django showed its
technical 404 (the URL patterns it tried), and never an exception's class name ("Resolver404") or a model's
("No ModelRun matches the given query.")."""

from __future__ import annotations

import pytest
from django.test import override_settings

SITE_LAYOUT = 'class="site-header"'


def _not_found(client, url: str) -> str:
    response = client.get(url)
    assert response.status_code == 404
    return response.content.decode()


@pytest.mark.parametrize("debug", [False, True])
def test_a_missing_address_is_the_sites_page_without_a_class_name(client, debug):
    with override_settings(DEBUG=debug):
        page = _not_found(client, "/no/such/page/")
    assert SITE_LAYOUT in page and 'id="not-found"' in page, page[:300]
    assert "Nothing lives at <code>/no/such/page/</code>." in page
    assert "Resolver404" not in page and "URLconf" not in page


@pytest.mark.django_db
def test_a_missing_object_says_there_is_no_such_thing_in_words(client):
    page = _not_found(client, "/runs/999999/")
    assert "Nothing lives at <code>/runs/999999/</code>: there is no such model run." in page, page
    assert "ModelRun" not in page


@pytest.mark.django_db
def test_the_apis_404_stays_json_on_a_local_portal(client):
    with override_settings(DEBUG=True):
        response = client.get("/api/model-runs/999999/")
    assert response.status_code == 404 and response["Content-Type"].startswith("application/json")
