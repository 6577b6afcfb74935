#!/usr/bin/env bash
# Writes a .env for local use when there is none (argument: its path, default .env beside manage.py): DEBUG=1 and a
# random SECRET_KEY, so that every `manage.py` command the README shows reads the same settings as `make run`.
# An existing file is never changed. Production sets its own values (.env.example lists them).
set -euo pipefail
cd "$(dirname "$0")/.."
target=${1:-.env}
if [ -e "$target" ]; then
  exit 0
fi
key=$(python3 -c 'import secrets; print(secrets.token_urlsafe(50))')
umask 077
cat >"$target" <<DOTENV
# Written by scripts/dotenv.sh for local development (make run); never commit it. See .env.example for every variable.
DEBUG=1
SECRET_KEY=$key
DOTENV
echo "wrote $target (DEBUG=1, a random SECRET_KEY) for local use"
