"""Sign up, log in and out, and the API token page."""

from __future__ import annotations

from django.urls import reverse
from rest_framework.authtoken.models import Token


def test_sign_up_signs_the_new_user_in(db, client, django_user_model):
    response = client.post(
        reverse("signup"),
        {
            "username": "grace",
            "password1": "correct-horse-battery-9",
            "password2": "correct-horse-battery-9",
            "email": "grace@example.org",
        },
    )
    assert response.status_code == 302
    assert django_user_model.objects.filter(username="grace").exists()
    assert "Log out grace" in client.get("/").content.decode()


def test_sign_up_explains_a_bad_password(db, client, django_user_model):
    response = client.post(reverse("signup"), {"username": "grace", "password1": "abc", "password2": "abd"})
    assert response.status_code == 200 and "didn’t match" in response.content.decode()
    assert not django_user_model.objects.exists()


def test_log_in_and_out(user, client):
    response = client.post(reverse("login"), {"username": "ada", "password": "a-long-test-password-1"})
    assert response.status_code == 302
    assert "Log out ada" in client.get("/").content.decode()
    client.post(reverse("logout"))
    assert "Log in" in client.get("/").content.decode()


def test_token_page_creates_and_replaces_the_token(web_client, user):
    assert "no API token yet" in web_client.get(reverse("account-token")).content.decode()
    web_client.post(reverse("account-token-regenerate"))
    first = Token.objects.get(user=user).key
    assert first in web_client.get(reverse("account-token")).content.decode()
    web_client.post(reverse("account-token-regenerate"))
    assert Token.objects.get(user=user).key != first


def test_token_page_needs_a_signed_in_user(db, client):
    assert client.get(reverse("account-token")).status_code == 302


def test_my_submissions_page(web_client):
    assert "not submitted anything" in web_client.get(reverse("submission-list")).content.decode()
