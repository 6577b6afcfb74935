"""Log-in, admin log-in and sign-up are limited: wrong passwords lock the username out from that address
(django-axes), sign-ups and log-ins are throttled per address, each a 429 page with Retry-After; usernames cannot hold
invisible characters or read like someone else's; private pages are never stored by a cache."""

from __future__ import annotations

import pytest
from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.exceptions import ValidationError
from django.test import Client, override_settings
from django.urls import reverse

from portal.accounts.models import UsernameKey

pytestmark = pytest.mark.django_db


def _rates(**rates):
    return override_settings(
        REST_FRAMEWORK={
            **settings.REST_FRAMEWORK,
            "DEFAULT_THROTTLE_RATES": {**settings.REST_FRAMEWORK["DEFAULT_THROTTLE_RATES"], **rates},
        }
    )


def _assert_429_page(response, says: str):
    assert response.status_code == 429
    assert int(response["Retry-After"]) >= 1
    assert response["Content-Type"].startswith("text/html")
    assert says in response.content.decode()


@pytest.mark.parametrize("login_url", ["/accounts/login/", "/admin/login/"])
def test_wrong_passwords_lock_the_username_out_then_even_the_right_one_is_refused(login_url, django_user_model):
    django_user_model.objects.create_user(username="ada", password="a-long-test-password-1", is_staff=True)
    attacker = Client(REMOTE_ADDR="203.0.113.9")
    for n in range(settings.AXES_FAILURE_LIMIT - 1):
        response = attacker.post(login_url, {"username": "ada", "password": f"guess-{n}"})
        assert response.status_code == 200  # the form again, with its error
    response = attacker.post(login_url, {"username": "ada", "password": "guess-last"})
    _assert_429_page(response, "Too many wrong passwords")
    response = attacker.post(login_url, {"username": "ada", "password": "a-long-test-password-1"})
    _assert_429_page(response, "Try again in")
    assert "_auth_user_id" not in attacker.session
    # the owner, from their own address, still gets in
    owner = Client(REMOTE_ADDR="198.51.100.7")
    assert owner.post(login_url, {"username": "ada", "password": "a-long-test-password-1"}).status_code == 302


def test_log_in_posts_are_throttled_per_address(user):
    with _rates(login="3/min"):
        client = Client(REMOTE_ADDR="203.0.113.10")
        for n in range(3):
            client.post(reverse("login"), {"username": f"nobody{n}", "password": "x"})
        _assert_429_page(
            client.post(reverse("login"), {"username": "ada", "password": "a-long-test-password-1"}),
            "Too many log-in attempts",
        )
        assert Client(REMOTE_ADDR="203.0.113.11").get(reverse("login")).status_code == 200  # reading is free


def test_sign_ups_are_throttled_per_address():
    with _rates(signup="3/hour"):
        client = Client(REMOTE_ADDR="203.0.113.12")
        for n in range(3):
            response = client.post(
                reverse("signup"),
                {
                    "username": f"bot{n}",
                    "password1": "correct-horse-battery-9",
                    "password2": "correct-horse-battery-9",
                    "email": f"bot{n}@example.org",
                },
            )
            assert response.status_code == 302
            client.post(reverse("logout"))
        response = client.post(
            reverse("signup"),
            {
                "username": "bot9",
                "password1": "correct-horse-battery-9",
                "password2": "correct-horse-battery-9",
                "email": "bot9@example.org",
            },
        )
        _assert_429_page(response, "Too many sign-ups")
        assert get_user_model().objects.filter(username__startswith="bot").count() == 3


@pytest.mark.parametrize("name", ["ada\u202e", "a\u200bda", "ad\x00a", "\ufeffada", "ad\u2066a"])
def test_usernames_with_invisible_characters_are_refused(client, name):
    response = client.post(
        reverse("signup"),
        {"username": name, "password1": "correct-horse-battery-9", "password2": "correct-horse-battery-9"},
    )
    assert response.status_code == 200
    page = response.content.decode()
    assert "A username cannot contain U+" in page or "Null characters are not allowed" in page
    assert not get_user_model().objects.exists()


@pytest.mark.parametrize("lookalike", ["ADA", "\u0430da", "\u0391da", "ａｄａ", "Ada"])
def test_usernames_that_read_like_anothers_are_refused(user, client, lookalike):
    response = client.post(
        reverse("signup"),
        {"username": lookalike, "password1": "correct-horse-battery-9", "password2": "correct-horse-battery-9"},
    )
    assert response.status_code == 200
    assert "reads like one that is" in response.content.decode() or "already exists" in response.content.decode()
    assert get_user_model().objects.count() == 1


def test_the_normalised_name_is_unique_in_the_database_whatever_path_creates_the_user(user):
    assert UsernameKey.objects.get(user=user).key == "ada"
    with pytest.raises(ValidationError):
        from django.db import transaction

        with transaction.atomic():
            get_user_model().objects.create_user(username="\u0430d\u0430", password="x-long-password-12")
    assert get_user_model().objects.count() == 1


def test_private_pages_are_no_store_and_public_ones_are_not(web_client, client, db):
    for url in (reverse("account-token"), "/submissions/", reverse("proposal-list")):
        response = web_client.get(url)
        assert response.status_code == 200, url
        assert "no-store" in response["Cache-Control"], url
    assert "no-store" in Client().get(reverse("login"))["Cache-Control"]
    assert "no-store" not in (Client().get("/").get("Cache-Control") or "")
