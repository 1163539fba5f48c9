#!/usr/bin/env bash
# Everything the tests need besides Python's own packages, installed from PyPI, npm and Debian:
# the project with its test extras, the official TypeScript MCP client, the Claude Code CLI (run
# offline against tests/claude_code/scripted_model.py), a legacy (1.x) Python MCP client in a venv
# of its own, and Debian's Chromium for the inspector's browser tests.
set -euo pipefail
cd "$(dirname "$0")/.."

python -m pip install --quiet -e ".[test]"

npm ci --prefix tests/interop --no-audit --no-fund --loglevel=error
npm ci --prefix tests/claude_code --no-audit --no-fund --loglevel=error

if [ ! -x tests/interop/.venv-mcp1/bin/python ]; then
    python -m venv tests/interop/.venv-mcp1
fi
tests/interop/.venv-mcp1/bin/pip install --quiet -r tests/interop/requirements-mcp1.txt

if ! command -v chromium >/dev/null; then
    sudo_if_needed=$([ "$(id -u)" -eq 0 ] || echo sudo)
    $sudo_if_needed apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $sudo_if_needed apt-get install -y -qq chromium >/dev/null
fi
