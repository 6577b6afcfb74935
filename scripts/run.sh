#!/usr/bin/env bash
# Installs and starts the whole product on one machine: a local .env (DEBUG=1, a random SECRET_KEY) when there is
# none, Redis (if none answers), the database migrated and the problem catalogue loaded, one RQ worker per role (the
# web queue, the problem-proposal checks, each CPU profile), the reaper, and the web server on http://127.0.0.1:8000.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install.sh
scripts/services.sh
# Local use: .env says DEBUG=1 and holds a random SECRET_KEY; the settings read it, so `.venv/bin/python manage.py
# createsuperuser` (and every other manage.py command) sees the same settings as this script.
scripts/dotenv.sh .env
py=.venv/bin/python
$py manage.py migrate --noinput
$py manage.py load_problems
$py manage.py vendor_static
mkdir -p var
redis_url=$($py -c 'import os, django; os.environ.setdefault("DJANGO_SETTINGS_MODULE", "portal.settings"); django.setup(); from django.conf import settings; print(settings.REDIS_URL)')
# One worker per role, so a solution that hangs until its limit holds up only its own profile's queue, never the
# results (web) or the proposal checks. --with-scheduler: replies RQ retries (the database was down) go back on the
# queue when their pause is over. Evaluations and checks run like on a GPU host: plain `rq worker`, no Django.
$py manage.py rqworker web --with-scheduler >var/worker-web.log 2>&1 &
workers=($!)
.venv/bin/rq worker checks --url "$redis_url" --path . >var/worker-checks.log 2>&1 &
workers+=($!)
# Each CPU profile's worker serves its fast lane first: RQ takes jobs from the queues in the order given, so an
# unranked test (`<profile>-test`, POST /api/tests/) never waits behind ranked evaluations or a model run's attempts.
for queue in cpu-gloo-2 cpu-gloo-4; do
  .venv/bin/rq worker "$queue-test" "$queue" --url "$redis_url" --path . >"var/worker-$queue.log" 2>&1 &
  workers+=($!)
done
# The reaper: re-enqueues what Redis lost and what dead workers dropped (docs/operations.md).
$py manage.py reap --every 60 >var/reaper.log 2>&1 &
reaper=$!
trap 'kill "${workers[@]}" $reaper 2>/dev/null || true' EXIT INT TERM
echo "workers (web, checks, cpu-gloo-2, cpu-gloo-4) and reaper started (logs: var/worker-*.log, var/reaper.log); portal on http://127.0.0.1:8000"
$py manage.py runserver 127.0.0.1:8000
