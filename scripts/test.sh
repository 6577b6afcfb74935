#!/usr/bin/env bash
# Installs what the tests need, runs ruff (lint and format) and mypy, then the whole CPU suite against the database in
# DATABASE_URL (SQLite when unset), a real Redis and real RQ workers. GPU tests skip themselves when no GPU is present.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install.sh
scripts/services.sh
# Lint and types first (pyproject.toml says what they check): a finding fails the run before any test starts.
.venv/bin/ruff check .
.venv/bin/ruff format --check .
.venv/bin/mypy
exec .venv/bin/python -m pytest "$@"
