#!/usr/bin/env bash
# Installs and starts the whole product on one machine: Redis (if none answers), the database migrated and the
# problem catalogue loaded, one RQ worker for the web queue, the problem-proposal checks and the CPU profiles, and
# the web server on http://127.0.0.1:8000.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install.sh
scripts/services.sh
# Local use: DEBUG on (static files served by runserver, the development secret allowed).
export DEBUG=${DEBUG:-1}
py=.venv/bin/python
$py manage.py migrate --noinput
$py manage.py load_problems
$py manage.py vendor_static
mkdir -p var
# --with-scheduler: replies RQ retries (the database was down) go back on the queue when their pause is over.
$py manage.py rqworker web checks cpu-gloo-2 cpu-gloo-4 --with-scheduler >var/worker.log 2>&1 &
worker=$!
# The reaper: re-enqueues what Redis lost and what dead workers dropped (docs/operations.md).
$py manage.py reap --every 60 >var/reaper.log 2>&1 &
reaper=$!
trap 'kill $worker $reaper 2>/dev/null || true' EXIT INT TERM
echo "worker and reaper started (logs: var/worker.log, var/reaper.log); portal on http://127.0.0.1:8000"
$py manage.py runserver 127.0.0.1:8000
