#!/usr/bin/env bash
# Installs everything the product and its tests need on a Debian machine: system packages (when missing),
# a virtual environment in .venv with the pinned Python dependencies, and the `arena` command.
set -euo pipefail
cd "$(dirname "$0")/.."

need=()
command -v redis-server >/dev/null || need+=(redis-server)
command -v chromium >/dev/null || need+=(chromium)
command -v chromedriver >/dev/null || need+=(chromium-driver)
command -v bwrap >/dev/null || need+=(bubblewrap)  # the evaluation sandbox
command -v cc >/dev/null || need+=(gcc)
command -v g++ >/dev/null || need+=(g++)  # builds the evaluator's compiled engine (with torch's headers)
command -v ninja >/dev/null || need+=(ninja-build)  # torch's extension builder needs it
python3 -c 'import venv, ensurepip' 2>/dev/null || need+=(python3-venv)
if [ ${#need[@]} -gt 0 ]; then
  echo "installing system packages: ${need[*]}"
  sudo_cmd=""; [ "$(id -u)" -ne 0 ] && sudo_cmd="sudo"
  $sudo_cmd apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo_cmd apt-get install -y -qq "${need[@]}"
fi

[ -x .venv/bin/python ] || python3 -m venv .venv
stamp=.venv/.requirements.sha
want=$(sha256sum requirements.txt pyproject.toml | sha256sum | cut -d' ' -f1)
if [ "$(cat "$stamp" 2>/dev/null)" != "$want" ]; then
  .venv/bin/pip install -q --upgrade pip
  .venv/bin/pip install -q -r requirements.txt
  .venv/bin/pip install -q --no-deps --no-build-isolation -e .
  echo "$want" > "$stamp"
fi
