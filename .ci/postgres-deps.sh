#!/usr/bin/env bash
# The PostgreSQL leg's dependencies: Debian's postgresql (its server binaries, and
# pg_virtualenv, which starts the tests' throwaway cluster as root and as any other user;
# see tests/postgres.py). Installs only what is missing, so a second run does nothing.
set -euo pipefail

if ! command -v pg_virtualenv > /dev/null || ! ls /usr/lib/postgresql/*/bin/initdb > /dev/null 2>&1; then
    if [ "$(id -u)" -eq 0 ]; then sudo=""; else sudo="sudo"; fi
    $sudo apt-get update
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y postgresql
fi
