#!/usr/bin/env bash
# Set up perfkit on a fresh machine: system packages the tests use (when run as root on
# Debian/Ubuntu), a virtual environment in .venv, and perfkit with its dev extra.
set -euo pipefail
cd "$(dirname "$0")/.."

if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
  need=()
  command -v chromium >/dev/null 2>&1 || need+=(chromium)
  compgen -G "/usr/lib/postgresql/*/bin/initdb" >/dev/null || need+=(postgresql)
  if [ ${#need[@]} -gt 0 ]; then
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${need[@]}"
  fi
fi

python3 -m venv .venv
.venv/bin/python -m pip install -q --upgrade pip
.venv/bin/python -m pip install -q -e ".[dev]"
echo "perfkit set up in .venv (activate with: . .venv/bin/activate)"
