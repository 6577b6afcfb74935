"""E-mail at sign-up and password reset by e-mail (Django's own views; console back-end in development)."""

from __future__ import annotations

import re


def test_signup_asks_for_an_email_and_refuses_a_taken_one(client, db, django_user_model):
    form = {
        "username": "eve",
        "email": "eve@example.org",
        "password1": "a-long-test-password-9",
        "password2": "a-long-test-password-9",
    }
    assert client.get("/accounts/signup/").content.decode().count('name="email"') == 1
    assert client.post("/accounts/signup/", form).status_code == 302
    assert django_user_model.objects.get(username="eve").email == "eve@example.org"
    client.logout()
    again = client.post("/accounts/signup/", dict(form, username="eve2", email="EVE@example.org"))
    assert again.status_code == 200 and "reset its password" in again.content.decode()


def test_password_reset_mails_a_link_that_sets_a_new_password(client, db, django_user_model, mailoutbox):
    django_user_model.objects.create_user("ada", email="ada@example.org", password="old-password-long-1")
    assert 'id="forgot-password"' in client.get("/accounts/login/").content.decode()
    assert client.post("/accounts/password-reset/", {"email": "ada@example.org"}).status_code == 302
    assert len(mailoutbox) == 1 and mailoutbox[0].to == ["ada@example.org"]
    link = re.search(r"http://[^\s]+/accounts/reset/[^\s]+/", mailoutbox[0].body).group(0)
    form_page = client.get(link, follow=True)
    assert form_page.status_code == 200
    done = client.post(
        form_page.redirect_chain[-1][0],
        {"new_password1": "new-password-long-2", "new_password2": "new-password-long-2"},
    )
    assert done.status_code == 302
    assert django_user_model.objects.get(username="ada").check_password("new-password-long-2")
