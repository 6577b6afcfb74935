"""From the home page to a passing test of a downloaded starter file, the steps a new user takes, in a real browser
(Debian's headless Chromium driven by Playwright) against a live portal and a real worker, timed: open a problem
from the home page, download its plain torch.distributed starter from "Write a solution", sign in and copy the API
token, then run the page's own `arena login` and `arena test` lines. The whole path must pass in under five minutes.
Skipped only when /usr/bin/chromium is absent."""

from __future__ import annotations

import html
import os
import re
import subprocess
import sys
import time

import pytest

from evaluator.contract import jobs
from leaderboard.models import TestRun
from tests.browser import needs_chromium
from tests.leaderboard.helpers import ALL_REDUCE, ROOT

pytestmark = [needs_chromium, pytest.mark.django_db(transaction=True)]
PASSWORD = "a-long-test-password-1"  # the `user` fixture's
FIVE_MINUTES = 300


def test_a_newcomer_gets_a_passing_test_of_a_downloaded_starter_in_five_minutes(
    problems, user, live_server, redis_conn, run_worker, chromium_page, tmp_path
):
    page, base = chromium_page, live_server.url
    started = time.monotonic()
    page.goto(f"{base}/")
    page.click(f'a[href="/problems/{ALL_REDUCE}/"]')
    page.wait_for_url(f"{base}/problems/{ALL_REDUCE}/")
    page.click('a[href="#write-a-solution"]')
    starter = page.locator('#starters li[data-backend="torch-distributed"]')
    with page.expect_download() as download:
        starter.locator("a.button").click()
    path = tmp_path / download.value.suggested_filename
    download.value.save_as(path)
    commands = html.unescape(starter.locator("pre.commands").inner_text())
    test_line = next(line for line in commands.splitlines() if line.startswith("arena test "))

    page.goto(f"{base}/accounts/login/?next=/accounts/token/")
    page.fill("#id_username", user.username)
    page.fill("#id_password", PASSWORD)
    page.click("form.form button[type=submit]")
    page.wait_for_url(f"{base}/accounts/token/")
    page.click("text=Create my API token")
    token = page.locator("#token").inner_text().strip()

    env = {**os.environ, "XDG_CONFIG_HOME": str(tmp_path / "config")}
    env.pop("ARENA_TOKEN", None)
    env.pop("ARENA_PORTAL", None)
    arena = [sys.executable, "-m", "evaluator.cli"]
    login = subprocess.run(
        arena + ["login", "--portal", base, "--token", token],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert login.returncode == 0, login.stderr
    args = test_line.split()[1:]
    args[args.index("--solution") + 1] = str(path)  # where the browser saved it
    # --wait: this test's worker runs in bursts below, so between jobs no live worker serves the profile
    test = subprocess.Popen(
        arena + args + ["--wait"], cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    while test.poll() is None and time.monotonic() - started < FIVE_MINUTES:
        if not run_worker(jobs.test_queue("cpu-gloo-2"), "web"):
            time.sleep(0.3)
    if test.poll() is None:
        test.kill()
    out, err = test.communicate()
    elapsed = time.monotonic() - started
    assert test.returncode == 0, err
    assert re.search(r"^verdict: passed$", out, re.M), out + err
    assert TestRun.objects.get().verdict == "passed"
    assert elapsed < FIVE_MINUTES, f"{elapsed:.0f} s from the home page to a passing test"
    print(f"home page to a passing test of the downloaded starter: {elapsed:.1f} s")
