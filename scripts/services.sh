#!/usr/bin/env bash
# Starts a local Redis when none answers on REDIS_URL's port (default 6379). Used by run.sh and test.sh.
set -euo pipefail
port=${REDIS_PORT:-6379}
if ! redis-cli -p "$port" ping >/dev/null 2>&1; then
  mkdir -p var
  redis-server --daemonize yes --bind 127.0.0.1 --port "$port" --save "" --appendonly no --dir "$PWD/var" \
    --logfile "$PWD/var/redis.log"
  for _ in $(seq 50); do redis-cli -p "$port" ping >/dev/null 2>&1 && break; sleep 0.1; done
fi
