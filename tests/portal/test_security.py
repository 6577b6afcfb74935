"""Web security: no URL takes a POST without the CSRF token, user text and code are escaped on every page, private
things (sources, logs, tracebacks, trajectories, another user's work) stay private, every response carries the
security headers, and the production configuration passes `manage.py check --deploy`."""

from __future__ import annotations

import os
import re
import secrets
import subprocess
import sys
from pathlib import Path

import pytest
from django.test import Client, override_settings
from django.urls import URLPattern, URLResolver, get_resolver, reverse
from rest_framework.test import APIClient

from leaderboard.model_runs.services import model_run_create
from leaderboard.submissions.results import result_record
from leaderboard.submissions.services import submission_create
from leaderboard.model_runs.writer import build_archive
from leaderboard.models import Problem, Submission
from tests.leaderboard.helpers import ALL_REDUCE, CORRECT, passed_document

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = '<script>alert("pwned")</script>'
IMG = "<img src=x onerror=alert(1)>"
# Usernames cannot hold "/" (so a closing </script> tag cannot appear in one); this one tries everything else.
EVIL_USERNAME = '"><script>alert(1)<script><img src=x onerror=alert(2)>'


# --- CSRF ------------------------------------------------------------------------------------------------


def _routes(resolver: URLResolver = None, prefix: str = "") -> list[str]:
    """Every URL the site answers, with path parameters filled in (admin pages beyond its login excluded)."""
    samples = {"int": "1", "problem": ALL_REDUCE, "str": "ada", "path": "x", "slug": "x"}
    out = []
    for entry in (resolver or get_resolver()).url_patterns:
        pattern = str(entry.pattern)
        if pattern.startswith("admin/"):
            out.append("/admin/login/")
            continue
        if pattern.startswith("^"):
            continue  # regex routes: only the static files route, when SERVE_STATIC is on
        filled = re.sub(r"<(?:(\w+):)?\w+>", lambda m: samples.get(m.group(1) or "str", "x"), pattern)
        if isinstance(entry, URLResolver):
            out.extend(_routes(entry, prefix + filled))
        elif isinstance(entry, URLPattern):
            out.append("/" + prefix + filled)
    return sorted(set(out))


@pytest.mark.parametrize("url", _routes())
def test_no_url_accepts_a_post_without_the_csrf_token(url, user):
    browser = Client(enforce_csrf_checks=True)
    browser.force_login(user)  # a signed-in victim whose browser a hostile page makes post
    response = browser.post(url, {"problem": ALL_REDUCE, "profile": "cpu-gloo-2", "source": "x"})
    assert response.status_code == 403, (url, response.status_code)
    anonymous = Client(enforce_csrf_checks=True).post(url, {"username": "ada", "password": "x"})
    assert anonymous.status_code >= 400, (url, anonymous.status_code)  # logging in included: 403


def test_every_post_form_in_the_templates_carries_the_csrf_token():
    for template in (ROOT / "templates").rglob("*.html"):
        text = template.read_text()
        for form in re.finditer(r"<form\b[^>]*>", text, re.IGNORECASE):
            if re.search(r"method=[\"']?post", form.group(0), re.IGNORECASE):
                body = text[form.end() : text.find("</form>", form.end())]
                assert "{% csrf_token %}" in body, f"{template.relative_to(ROOT)}: {form.group(0)}"


def test_a_form_post_with_the_token_works_and_the_api_needs_none_with_a_token(
    problems, user, api_client, django_capture_on_commit_callbacks
):
    browser = Client(enforce_csrf_checks=True)
    browser.force_login(user)
    page = browser.get(reverse("submission-create"))
    token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page.content.decode()).group(1)
    with django_capture_on_commit_callbacks(execute=True):
        response = browser.post(
            reverse("submission-create"),
            {
                "csrfmiddlewaretoken": token,
                "problem": ALL_REDUCE,
                "profile": "cpu-gloo-2",
                "source": CORRECT.read_text(),
            },
        )
    assert response.status_code == 302
    # Token authentication is not ambient (a browser never sends it by itself), so it needs no CSRF token.
    with django_capture_on_commit_callbacks(execute=True):
        response = api_client.post(
            "/api/submissions/",
            {"problem": ALL_REDUCE, "profile": "cpu-gloo-2", "source": CORRECT.read_text()},
            format="json",
        )
    assert response.status_code == 201


def test_the_session_cookie_is_not_readable_by_scripts_and_is_same_site(problems, user, client):
    response = client.post(reverse("login"), {"username": "ada", "password": "a-long-test-password-1"})
    assert response.status_code == 302
    cookie = response.cookies["sessionid"]
    assert cookie["httponly"] and cookie["samesite"] == "Lax"


# --- escaping --------------------------------------------------------------------------------------------


def _assert_escaped(html: str, *, where: str) -> None:
    for raw in ('<script>alert("pwned")', "<script>alert(1)", "<img src=x onerror", 'href="javascript:'):
        assert raw not in html, f"{where}: {raw!r} reached the page unescaped"


@pytest.fixture
def hostile(problems, django_user_model, django_capture_on_commit_callbacks):
    """A user, a submission, its result and a model run full of markup, and a problem statement with some."""
    evil = django_user_model.objects.create_user(username=EVIL_USERNAME, password="a-long-test-password-1")
    source = CORRECT.read_text() + f"\n# {SCRIPT} </code></pre></td></tr></table>{IMG}\n"
    with django_capture_on_commit_callbacks(execute=True):
        # on a profile that measures speed, so the problem page draws its chart (CPU profiles show verdicts only)
        submission = submission_create(
            user=evil, problem=ALL_REDUCE, profile="h200-nvlink-2", filename=f"{IMG}.py", source=source
        )
    document = passed_document(2.0)
    document.update(
        message=f"correct {SCRIPT}",
        logs={"rank0": f"{SCRIPT}{IMG}"},
        traceback=SCRIPT,
        environment={"gpu": IMG, "driver": [SCRIPT]},
        flags={IMG: True},
        trials=[{"trial": 0, "ranks": [{"rank": 0, "ok": False, "error": SCRIPT}]}],
    )
    result_record(submission_id=submission.pk, document=document)
    Problem.objects.filter(pk=ALL_REDUCE).update(
        statement=f"# Title {SCRIPT}\n\n{IMG} [click](javascript:alert(1)) [ok](https://example.org)\n\n"
        f"```\n{SCRIPT}\n```\n",
        title=f"All-reduce {SCRIPT}",
    )
    manifest = {
        "model": f"m {SCRIPT}",
        "provider": IMG,
        "protocol": "zero-shot",
        "k": 1,
        "turn_budget": 0,
        "tokens": 1,
        "wall_time_s": 1,
        "hardware": "cpu-gloo-2",
        "date": "2026-11-29",
        "open_weights": True,
        "notes": f"{SCRIPT}{IMG}",
    }
    with django_capture_on_commit_callbacks(execute=True):
        run = model_run_create(
            user=evil,
            filename=f"{IMG}.zip",
            data=build_archive(
                manifest, {(ALL_REDUCE, 1): source}, {(ALL_REDUCE, 1): f'{{"role": "assistant", "text": "{IMG}"}}'}
            ),
        )
    return evil, submission, run


def test_user_text_and_code_are_escaped_on_every_page(hostile, client):
    evil, submission, run = hostile
    client.force_login(evil)  # the author sees everything: source, logs, traceback, trajectories
    attempt = Submission.objects.get(model_run=run)
    pages = [
        reverse("home"),
        reverse("problem-detail", args=[ALL_REDUCE]),
        reverse("problem-detail", args=[ALL_REDUCE]) + "?profile=cpu-gloo-2",
        reverse("problem-detail", args=[ALL_REDUCE]) + "?profile=h200-nvlink-2",
        reverse("submission-detail", args=[submission.pk]),
        reverse("submission-detail", args=[attempt.pk]),
        reverse("submission-list"),
        reverse("model-run-list"),
        reverse("model-run-detail", args=[run.pk]),
        reverse("user-detail", args=[evil.username]),
        reverse("submission-create"),
        reverse("account-token"),
    ]
    for url in pages:
        response = client.get(url)
        assert response.status_code == 200, url
        html = response.content.decode()
        _assert_escaped(html, where=url)
    detail = client.get(reverse("submission-detail", args=[submission.pk])).content.decode()
    assert "&lt;script&gt;alert(&quot;pwned&quot;)&lt;/script&gt;" in detail  # shown, as text
    problem = client.get(reverse("problem-detail", args=[ALL_REDUCE]) + "?profile=h200-nvlink-2").content.decode()
    # nh3 after Markdown (as on the docs pages) marks outside links noopener noreferrer
    assert '<a href="https://example.org" rel="noopener noreferrer">ok</a>' in problem
    assert '<a rel="noopener noreferrer">click</a>' in problem
    # The chart data is JSON inside <script type="application/json">: json_script escapes < > & there.
    assert "\\u003Cscript\\u003E" in problem and "\\u003Cimg src=x onerror=alert(2)\\u003E" in problem


def test_signup_refuses_markup_in_a_username(db, client):
    response = client.post(
        reverse("signup"),
        {
            "username": "<script>alert(1)</script>",
            "password1": "a-long-test-password-1",
            "password2": "a-long-test-password-1",
        },
    )
    assert response.status_code == 200 and "Enter a valid username" in response.content.decode()


# --- authorization ---------------------------------------------------------------------------------------


def test_another_user_sees_no_source_logs_traceback_or_trajectory(hostile, user, client):
    evil, submission, run = hostile
    attempt = Submission.objects.get(model_run=run)
    for viewer in (user, None):
        browser = Client()
        if viewer:
            browser.force_login(viewer)
        for target in (submission, attempt):
            html = browser.get(reverse("submission-detail", args=[target.pk])).content.decode()
            assert "<h2>Source</h2>" not in html and "def solution" not in html
            assert 'id="trajectories"' not in html
            api = APIClient()
            if viewer:
                api.force_authenticate(viewer)
            body = api.get(f"/api/submissions/{target.pk}/").json()
            assert body["source"] is None
        html = browser.get(reverse("submission-detail", args=[submission.pk])).content.decode()
        assert "<h2>Logs</h2>" not in html and "Traceback" not in html
        result = APIClient().get(f"/api/submissions/{submission.pk}/").json()["result"]
        assert "logs" not in result and "traceback" not in result and result["verdict"] == "passed"
    api = APIClient()
    api.force_authenticate(evil)
    mine = api.get(f"/api/submissions/{submission.pk}/").json()
    assert mine["source"].startswith("import torch") and mine["result"]["logs"]["rank0"]


def test_my_submissions_lists_only_mine(hostile, user, client):
    client.force_login(user)
    html = client.get(reverse("submission-list")).content.decode()
    assert "You have not submitted anything yet" in html


# --- headers and production settings ---------------------------------------------------------------------


@pytest.mark.parametrize(
    "url", ["/", f"/problems/{ALL_REDUCE}/", "/api/problems/", "/accounts/login/", "/no-such-page/"]
)
def test_every_response_carries_the_security_headers(url, problems, client):
    response = client.get(url)
    assert response["X-Frame-Options"] == "DENY"
    assert response["X-Content-Type-Options"] == "nosniff"
    assert response["Referrer-Policy"] == "same-origin"
    assert response["Cross-Origin-Opener-Policy"] == "same-origin"
    policy = dict(part.strip().split(" ", 1) for part in response["Content-Security-Policy"].split(";"))
    assert policy["script-src"] == "'self'" and policy["default-src"] == "'self'"
    assert policy["frame-ancestors"] == "'none'" and policy["object-src"] == "'none'"
    assert "unsafe-eval" not in response["Content-Security-Policy"]


def _production(*args: str, **env: str) -> subprocess.CompletedProcess:
    """``manage.py`` as production runs it: DEBUG off, a Redis with a password, worker keys with their roles (the
    suite's own Redis has no password; nothing here connects to it)."""
    clean = {
        k: v
        for k, v in os.environ.items()
        if k
        not in (
            "SECRET_KEY",
            "DEBUG",
            "HTTPS",
            "DJANGO_SETTINGS_MODULE",
            "ALLOWED_HOSTS",
            "ARENA_REDIS_WITHOUT_PASSWORD",
            "ARENA_WORKER_KEY",
            "ARENA_WORKER_KEY_ID",
        )
    }
    clean.update(
        ENV_FILE="",
        SECRET_KEY=secrets.token_urlsafe(50),
        ALLOWED_HOSTS="arena.example.org",
        REDIS_URL=f"redis://portal:{secrets.token_urlsafe(16)}@127.0.0.1:6379/0",
        ARENA_WORKER_KEYS=f"gpu:evaluations={secrets.token_urlsafe(16)},checks:checks={secrets.token_urlsafe(16)}",
    )
    clean.update(env)
    return subprocess.run(
        [sys.executable, "manage.py", *args], cwd=ROOT, env=clean, capture_output=True, text=True, timeout=120
    )


def test_check_deploy_is_clean_with_production_environment_values():
    run = _production("check", "--deploy", "--fail-level", "WARNING")
    assert run.returncode == 0, run.stdout + run.stderr
    assert "no issues" in run.stdout


def test_production_refuses_redis_without_a_password_and_worker_keys_without_a_role():
    show = "from django.conf import settings as s; print(sorted(s.ARENA_WORKER_KEYS))"
    assert _production("shell", "--no-imports", "-c", show).stdout.split() == ["['checks',", "'gpu']"]
    run = _production("shell", "--no-imports", "-c", show, REDIS_URL="redis://127.0.0.1:6379/0")
    assert run.returncode != 0 and "REDIS_URL has no password" in run.stderr
    run = _production("shell", "--no-imports", "-c", show, ARENA_WORKER_KEYS="")
    assert run.returncode != 0 and "ARENA_WORKER_KEYS is empty" in run.stderr
    run = _production("shell", "--no-imports", "-c", show, ARENA_WORKER_KEYS="gpu:evaluations=a,old=b")
    assert run.returncode != 0 and "without a role (old)" in run.stderr
    run = _production("shell", "--no-imports", "-c", show, ARENA_WORKER_KEYS="gpu:admin=a")
    assert run.returncode != 0 and "role 'admin'" in run.stderr


def test_production_is_https_only_unless_told_otherwise():
    show = (
        "from django.conf import settings as s; print(s.SECURE_SSL_REDIRECT, s.SESSION_COOKIE_SECURE, "
        "s.CSRF_COOKIE_SECURE, s.SECURE_HSTS_SECONDS, s.SECURE_PROXY_SSL_HEADER)"
    )
    run = _production("shell", "--no-imports", "-c", show)
    assert run.returncode == 0, run.stderr
    assert run.stdout.split(None, 4) == ["True", "True", "True", "31536000", "('HTTP_X_FORWARDED_PROTO', 'https')\n"]
    run = _production(
        "shell",
        "--no-imports",
        "-c",
        "from django.conf import settings as s; print(s.SECURE_SSL_REDIRECT, s.SESSION_COOKIE_SECURE)",
        HTTPS="0",
    )
    assert run.stdout.split() == ["False", "False"]


@override_settings(
    SECURE_SSL_REDIRECT=True, SECURE_PROXY_SSL_HEADER=("HTTP_X_FORWARDED_PROTO", "https"), SECURE_HSTS_SECONDS=31536000
)
def test_behind_the_tls_proxy_http_is_redirected_and_https_gets_hsts(db):
    plain = Client().get("/", HTTP_HOST="localhost")
    assert plain.status_code == 301 and plain["Location"] == "https://localhost/"
    secure = Client().get("/", HTTP_HOST="localhost", HTTP_X_FORWARDED_PROTO="https")
    assert secure.status_code == 200 and secure["Strict-Transport-Security"].startswith("max-age=31536000")
