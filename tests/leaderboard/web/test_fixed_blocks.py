"""``{% fixed %}`` writes the site's header and footer links from memory: what it writes is what the tags wrote, it
shows none of a page's variables (so never one reader's data to another), and a site served under another prefix gets
its own links."""

from __future__ import annotations

from django.template import Context, Template
from django.test import override_settings
from django.urls import reverse, set_script_prefix

FIXED = Template("{% load kept static %}{% fixed %}<a href=\"{% url 'model-run-list' %}\">{{ name }}</a>{% endfixed %}")


def test_a_fixed_block_shows_none_of_the_pages_variables():
    assert FIXED.render(Context({"name": "ada"})) == f'<a href="{reverse("model-run-list")}"></a>'
    assert FIXED.render(Context({"name": "grace"})) == f'<a href="{reverse("model-run-list")}"></a>'


def test_a_site_under_another_prefix_gets_its_own_links():
    try:
        set_script_prefix("/arena/")
        assert FIXED.render(Context()) == '<a href="/arena/runs/"></a>'
    finally:
        set_script_prefix("/")
    assert FIXED.render(Context()) == '<a href="/runs/"></a>'


def test_changed_settings_write_the_block_anew():
    static = Template("{% load kept static %}{% fixed %}{% static 'css/site.css' %}{% endfixed %}")
    with override_settings(
        STATIC_URL="/s1/",
        STORAGES={"staticfiles": {"BACKEND": "django.contrib.staticfiles.storage.StaticFilesStorage"}},
    ):
        assert static.render(Context()) == "/s1/css/site.css"
    with override_settings(
        STATIC_URL="/s2/",
        STORAGES={"staticfiles": {"BACKEND": "django.contrib.staticfiles.storage.StaticFilesStorage"}},
    ):
        assert static.render(Context()) == "/s2/css/site.css"


def test_the_header_and_footer_are_those_of_the_site(client, db):
    html = client.get("/runs/").content.decode()
    for name in ("home", "model-run-compare", "submission-create", "datasets", "api-docs", "api-schema-json"):
        assert f'href="{reverse(name)}"' in html
    assert f'href="{reverse("login")}?next=/runs/"' in html  # (outside the block: the page's own path)
    assert f'href="{reverse("login")}?next=/problems/"' not in html
