#!/usr/bin/env bash
# The browser tests' dependencies: Debian's chromium and Python's playwright (driving
# that chromium: playwright's own browser download is not used). Installs only what is
# missing, so a second run does nothing.
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON="${PYTHON:-.venv/bin/python}"

if [ ! -x /usr/bin/chromium ]; then
    if [ "$(id -u)" -eq 0 ]; then sudo=""; else sudo="sudo"; fi
    $sudo apt-get update
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y chromium
fi

if ! "$PYTHON" -c "import playwright" 2>/dev/null; then
    "$PYTHON" -m pip install --quiet playwright
fi
