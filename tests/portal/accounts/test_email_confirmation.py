"""E-mail confirmation at sign-up (an unconfirmed account logs in, sees a banner, cannot upload) and the optional
e-mail when a verdict lands (sent from the result-recording path through ``submissions.signals``)."""

from __future__ import annotations

import re

import pytest
from django.core import signing
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from leaderboard.submissions.results import result_record
from leaderboard.submissions.services import submission_create
from portal.accounts import services
from tests.leaderboard.helpers import ALL_REDUCE, CORRECT, failed_document, passed_document

FORM = {
    "username": "eve",
    "email": "eve@example.org",
    "password1": "a-long-test-password-9",
    "password2": "a-long-test-password-9",
}


def _link(mail) -> str:
    return re.search(r"http://[^\s]+/accounts/confirm/[^\s]+/", mail.body).group(0)


def test_signup_mails_a_link_and_uploads_wait_for_it(client, db, django_user_model, mailoutbox, problems):
    assert client.post("/accounts/signup/", FORM).status_code == 302
    assert len(mailoutbox) == 1 and mailoutbox[0].to == ["eve@example.org"]
    link = _link(mailoutbox[0])
    home = client.get("/").content.decode()
    assert 'id="confirm-banner"' in home and "eve@example.org" in home
    # Uploads are closed: the pages (403 with the reason) and the API (403 for writes, reads pass).
    for page in ("/submit/", "/runs/upload/", "/contribute/"):
        refused = client.get(page)
        assert refused.status_code == 403 and "Confirm your e-mail address" in refused.content.decode(), page
    user = django_user_model.objects.get(username="eve")
    api = APIClient()
    api.credentials(HTTP_AUTHORIZATION=f"Token {Token.objects.create(user=user).key}")
    refused = api.post(
        "/api/submissions/",
        {"problem": ALL_REDUCE, "profile": "cpu-gloo-2", "source": CORRECT.read_text()},
        format="json",
    )
    assert refused.status_code == 403 and "Confirm your e-mail" in refused.json()["detail"]
    assert api.get("/api/submissions/").status_code == 200
    for path in ("/api/model-runs/", "/api/tests/", "/api/proposals/"):
        assert api.post(path, {}).status_code == 403, path
    # A new link can be sent; the link confirms; then uploads open and the banner goes.
    assert client.post("/accounts/confirm/").status_code == 302 and len(mailoutbox) == 2
    confirmed = client.get(link, follow=True)
    assert confirmed.status_code == 200 and "is confirmed" in confirmed.content.decode()
    assert 'id="confirm-banner"' not in client.get("/").content.decode()
    assert client.get("/submit/").status_code == 200
    accepted = api.post(
        "/api/submissions/",
        {"problem": ALL_REDUCE, "profile": "cpu-gloo-2", "source": CORRECT.read_text()},
        format="json",
    )
    assert accepted.status_code == 201


def test_a_bad_expired_or_stale_link_confirms_nothing(client, db, django_user_model, settings):
    user = services.user_create(
        username="eve", password="a-long-test-password-9", email="eve@example.org", confirmed=False
    )
    assert client.get("/accounts/confirm/not-a-token/").status_code == 400
    stale = services.confirmation_token(user)
    user.email = "other@example.org"
    user.save()
    assert client.get(f"/accounts/confirm/{stale}/").status_code == 400
    settings.PASSWORD_RESET_TIMEOUT = -1
    expired = client.get(f"/accounts/confirm/{services.confirmation_token(user)}/")
    assert expired.status_code == 400 and "expired" in expired.content.decode()
    assert not services.email_confirmed(user)
    with pytest.raises(signing.BadSignature):
        signing.loads(stale, salt="another purpose")


def test_users_made_by_an_administrator_count_as_confirmed(user, web_client):
    assert services.email_confirmed(user) and user.has_perm("leaderboard.upload")
    assert 'id="confirm-banner"' not in web_client.get("/").content.decode()
    assert web_client.get("/submit/").status_code == 200


def test_verdict_email_when_asked_for(web_client, user, problems, mailoutbox, django_capture_on_commit_callbacks):
    user.email = "ada@example.org"
    user.save()
    page = web_client.get("/accounts/settings/").content.decode()
    assert 'name="notify_verdicts"' in page and "confirmed." in page

    def verdict(document) -> None:
        submission = submission_create(
            user=user, problem=ALL_REDUCE, profile="cpu-gloo-2", filename="s.py", source=CORRECT.read_text()
        )
        with django_capture_on_commit_callbacks(execute=True):
            result_record(submission_id=submission.pk, document=document)
        return submission

    verdict(passed_document(1.5))
    assert mailoutbox == []  # off by default
    assert web_client.post("/accounts/settings/", {"notify_verdicts": "on"}).status_code == 302
    first = verdict(passed_document(1.5))
    assert len(mailoutbox) == 1 and mailoutbox[0].to == ["ada@example.org"]
    assert "passed" in mailoutbox[0].subject and f"/submissions/{first.pk}/" in mailoutbox[0].body
    assert "1.50x" in mailoutbox[0].body
    verdict(failed_document())
    assert len(mailoutbox) == 2 and "wrong_output" in mailoutbox[1].subject
    assert "rank 1: wrong" in mailoutbox[1].body
    assert web_client.post("/accounts/settings/", {}).status_code == 302  # unticked: off again
    verdict(passed_document(2.0))
    assert len(mailoutbox) == 2


def test_a_failing_mail_server_does_not_touch_the_verdict(
    user, problems, settings, django_capture_on_commit_callbacks, monkeypatch
):
    user.email = "ada@example.org"
    user.save()
    services.notification_set(user=user, notify_verdicts=True)

    def broken(*args, **kwargs):
        raise OSError("mail server down")

    monkeypatch.setattr(services, "send_mail", broken)
    submission = submission_create(
        user=user, problem=ALL_REDUCE, profile="cpu-gloo-2", filename="s.py", source=CORRECT.read_text()
    )
    with django_capture_on_commit_callbacks(execute=True):
        result = result_record(submission_id=submission.pk, document=passed_document(1.5))
    submission.refresh_from_db()
    assert result is not None and submission.verdict == "passed"
