#!/usr/bin/env bash
# Installs and starts the whole product on one machine: a local .env (DEBUG=1, a random SECRET_KEY) when there is
# none, local worker keys (var/worker-keys), Redis (if none answers), the database migrated and the problem catalogue
# loaded, the web worker (Django, the database), the evaluation and check workers (apart: `env -i`, only Redis and
# their signing key), the reaper, and the web server on http://127.0.0.1:8000 (PORT: another port).
set -euo pipefail
cd "$(dirname "$0")/.."
# The web server's port: 8000 unless PORT says otherwise (`PORT=8001 make run` when 8000 is taken). Checked first, so
# a taken port is said before anything is installed or started.
port=${PORT:-8000}
if ! python3 -c 'import socket, sys; s = socket.socket(); s.bind(("127.0.0.1", int(sys.argv[1])))' "$port" 2>/dev/null
then
  echo "make run: port $port on 127.0.0.1 is in use (another portal, or another program): stop it, or pick another" \
    "port with PORT, e.g. PORT=$((port + 1)) make run" >&2
  exit 1
fi
# Links the site mails (sign-up confirmation, password reset, verdicts) name this port too, unless the environment or
# .env sets ARENA_SITE_URL.
if [ -z "${ARENA_SITE_URL:-}" ] && ! grep -qs '^ARENA_SITE_URL=' .env; then
  export ARENA_SITE_URL="http://127.0.0.1:$port"
fi
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
# The workers' signing keys (evaluator/contract/signing.py), made once: one for evaluations, one for proposal checks.
# The evaluation and check workers each hold their own; the web worker and the reaper hold both, by role, and record
# only what the key of the right role signed (docs/threat-model.md).
if [ ! -s var/worker-keys ]; then
  (umask 077 && python3 -c 'import secrets; print(secrets.token_urlsafe(32)); print(secrets.token_urlsafe(32))' \
    >var/worker-keys)
fi
{ read -r evaluations_key; read -r checks_key; } <var/worker-keys
web_keys="local:evaluations=$evaluations_key,local-checks:checks=$checks_key"
# One worker per role, so a solution that hangs until its limit holds up only its own profile's queue, never the
# results (web) or the proposal checks. Every worker speaks JSON and runs only its queues' allow-listed jobs
# (evaluator/host/worker.py). --with-scheduler: replies RQ retries (the database was down) go back on the queue when their
# pause is over. The web worker takes its worker class and serializer from settings.
ARENA_WORKER_KEYS=$web_keys $py manage.py rqworker web --with-scheduler >var/worker-web.log 2>&1 &
workers=($!)
# Evaluations and checks run as on a GPU host: `rq worker`, no Django, and an environment of nothing but PATH, HOME,
# Redis and the worker's own key (no DATABASE_URL, SECRET_KEY or settings; .env is never read).
arena_worker() {  # arena_worker KEY_ID KEY LOG QUEUE...
  local key_id=$1 key=$2 log=$3
  shift 3
  env -i PATH="$PATH" HOME="$HOME" REDIS_URL="$redis_url" ARENA_WORKER_KEY="$key" ARENA_WORKER_KEY_ID="$key_id" \
    .venv/bin/rq worker --worker-class evaluator.host.worker.ArenaWorker --serializer rq.serializers.JSONSerializer \
    --url "$redis_url" --path . "$@" >"$log" 2>&1 &
  workers+=($!)
}
arena_worker local-checks "$checks_key" var/worker-checks.log checks
# Each CPU profile's worker serves its fast lane first: RQ takes jobs from the queues in the order given, so an
# unranked test (`<profile>-test`, POST /api/tests/) never waits behind ranked evaluations or a model run's attempts.
for queue in cpu-gloo-2 cpu-gloo-4; do
  arena_worker local "$evaluations_key" "var/worker-$queue.log" "$queue-test" "$queue"
done
# The reaper: re-enqueues what Redis lost and what dead workers dropped (docs/operations.md).
ARENA_WORKER_KEYS=$web_keys $py manage.py reap --every 60 >var/reaper.log 2>&1 &
reaper=$!
trap 'kill "${workers[@]}" $reaper 2>/dev/null || true' EXIT INT TERM
echo "workers (web, checks, cpu-gloo-2, cpu-gloo-4) and reaper started (logs: var/worker-*.log, var/reaper.log); portal on http://127.0.0.1:$port"
$py manage.py runserver "127.0.0.1:$port"
