"""``bench/store_import.py`` works: at a tiny size, against the tests' PostgreSQL server.

Not a timed test: the figures themselves are in ``bench/STORE_IMPORT.md``.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from tests.conftest import REPO


def test_quick_imports_into_both_stores_and_writes_the_report(
    tmp_path: Path, postgres_server: Any
) -> None:
    env = dict(os.environ)
    env["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), env.get("PATH", "")])
    out = tmp_path / "STORE_IMPORT.md"
    proc = subprocess.run(
        [
            sys.executable,
            str(REPO / "bench" / "store_import.py"),
            "--quick",
            "--url",
            postgres_server.url,
            "--workdir",
            str(tmp_path),
            "--out",
            str(out),
        ],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert any(line.startswith("sqlite     import 1: ") for line in lines)
    assert any(line.startswith("postgresql import 1: ") for line in lines)
    assert any(line.startswith("PostgreSQL / SQLite: ") for line in lines)
    report = out.read_text(encoding="utf-8")
    assert "| SQLite file (WAL, 64 KiB pages, `executemany`) |" in report
    assert "| PostgreSQL (`COPY ... FORMAT BINARY`) |" in report
    assert "2,000 records" in report
    assert postgres_server.env.get("PGPASSWORD", "no password") not in proc.stdout + report
