"""Shared helpers: write result files, and run the installed ``evaldelta`` command."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

FIXTURES = Path(__file__).parent / "fixtures"
REPO = Path(__file__).parent.parent
EXAMPLE = REPO / "examples" / "benchmark-tooling"
#: The console script installed beside the interpreter running the tests.
EVALDELTA = Path(sys.executable).parent / "evaldelta"


@dataclass
class Result:
    code: int
    out: str
    err: str


def run_evaldelta(
    *args: str | os.PathLike[str], env: dict[str, str] | None = None, cwd: Path | None = None
) -> Result:
    """Run the installed command as a user would, with colour settings cleared."""
    full_env = {k: v for k, v in os.environ.items() if k not in ("NO_COLOR", "FORCE_COLOR")}
    full_env.update(env or {})
    proc = subprocess.run(
        [str(EVALDELTA), *map(str, args)],
        capture_output=True,
        text=True,
        encoding="utf-8",
        env=full_env,
        cwd=cwd,
        timeout=60,
        check=False,
    )
    return Result(proc.returncode, proc.stdout, proc.stderr)


@pytest.fixture
def evaldelta() -> Callable[..., Result]:
    assert EVALDELTA.exists(), f"{EVALDELTA} is not installed: run `make test`"
    return run_evaldelta


def write_jsonl(path: Path, records: Iterable[dict[str, Any] | str]) -> Path:
    """Write records (dicts, or raw lines as str) one per line."""
    lines = [r if isinstance(r, str) else json.dumps(r) for r in records]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


@pytest.fixture
def jsonl(tmp_path: Path) -> Callable[..., Path]:
    def make(name: str, records: Iterable[dict[str, Any] | str]) -> Path:
        return write_jsonl(tmp_path / name, records)

    return make


@pytest.fixture(scope="session")
def postgres_server() -> Iterator[Any]:
    """The throwaway PostgreSQL server of the session (see tests/postgres.py); its
    tests are skipped, saying why, where there is none (and fail where CI is set)."""
    from tests.postgres import start, unavailable

    server = start()
    if isinstance(server, str):
        unavailable(server)
        return
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def postgres_url(postgres_server: Any) -> str:
    """The URL of a new, empty PostgreSQL store (a schema of its own)."""
    url: str = postgres_server.store_url()
    return url
