#!/usr/bin/env bash
# Installs what the tests need and runs the whole CPU suite against the database in DATABASE_URL (SQLite when
# unset), a real Redis and real RQ workers. GPU tests skip themselves when no GPU is present.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install.sh
scripts/services.sh
exec .venv/bin/python -m pytest "$@"
