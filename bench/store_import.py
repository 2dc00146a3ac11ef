"""Time `evaldelta runs import FILE` into a fresh SQLite store and into a fresh PostgreSQL
store, alternately, in one run: issue 17's target is PostgreSQL at most 1.5x SQLite.

    python bench/store_import.py                 # 1,000,000 records, 3 imports into each
    python bench/store_import.py --quick         # 2,000 records, 1 each: the harness works
    python bench/store_import.py --url postgresql://...   # a server of your own

The file is `bench/generate.py`'s (100,000 cases x 2 targets x 5 attempts at 1,000,000
records, as `bench/run.py` times). Without `--url` the server is a throwaway cluster that
`pg_virtualenv` (Debian's postgresql-common) starts on this machine for the run, with
PostgreSQL's default settings (fsync and synchronous commit on). Each import goes into an
empty store: a new SQLite file, or a new schema of the server's database. Wall-clock time
is the whole command, start-up and commit included; peak memory is the command's own (GNU
time's maximum resident set size), not the server's. Writes `bench/STORE_IMPORT.md`
unless `--quick` (or `--out`) says otherwise.
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

BENCH = Path(__file__).resolve().parent
REPO = BENCH.parent
TARGETS, ATTEMPTS, SEED = 2, 5, 0
#: The issue's bound on PostgreSQL's import time over SQLite's.
RATIO_TARGET = 1.5


def generate(path: Path, records: int) -> None:
    if path.exists():
        return
    print(f"writing {records:,} records to {path} ...", flush=True)
    cases = records // (TARGETS * ATTEMPTS)
    args = ["--cases", str(cases), "--targets", str(TARGETS), "--attempts", str(ATTEMPTS)]
    subprocess.run(
        [sys.executable, str(BENCH / "generate.py"), str(path), *args, "--seed", str(SEED)],
        check=True,
        stdout=subprocess.DEVNULL,
    )


def timed(argv: list[str], env: dict[str, str]) -> tuple[float, float]:
    """Run ``argv``: wall-clock seconds, and peak resident MB (GNU time's, else the
    child's ru_maxrss)."""
    gnu = "/usr/bin/time" if os.access("/usr/bin/time", os.X_OK) else None
    with tempfile.NamedTemporaryFile("r") as rss:
        full = [gnu, "-f", "%M", "-o", rss.name, *argv] if gnu else argv
        start = time.perf_counter()
        proc = subprocess.Popen(full, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        _, err = proc.communicate()
        seconds = time.perf_counter() - start
        if proc.returncode != 0:
            raise SystemExit(f"{' '.join(argv)} failed: {err.decode(errors='replace')[-500:]}")
        lines = rss.read().split()
    kb = int(lines[-1]) if gnu and lines else 0
    return seconds, kb / 1024


def server(url: str | None) -> tuple[str, object | None]:
    """The base URL of the server to import into, and what to stop afterwards."""
    if url:
        return url, None
    sys.path.insert(0, str(REPO))
    from tests.postgres import start

    found = start()
    if isinstance(found, str):
        raise SystemExit(f"no PostgreSQL server to measure: {found}; or give --url")
    return found.url, found


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=1_000_000)
    parser.add_argument("--repeat", type=int, default=3, help="imports into each (default: 3)")
    parser.add_argument("--quick", action="store_true", help="2,000 records, 1 import each")
    parser.add_argument("--url", help="a PostgreSQL URL to import into (default: a throwaway)")
    parser.add_argument(
        "--workdir",
        type=Path,
        help="where the file and SQLite stores go (default: a temporary folder, removed after)",
    )
    parser.add_argument("--out", type=Path, help="the Markdown report (default: STORE_IMPORT.md)")
    args = parser.parse_args(argv)
    records, repeat = (2_000, 1) if args.quick else (args.records, args.repeat)
    out = args.out or (None if args.quick else BENCH / "STORE_IMPORT.md")
    evaldelta = shutil.which("evaldelta") or str(Path(sys.executable).parent / "evaldelta")
    if args.workdir is None:
        with tempfile.TemporaryDirectory(prefix="evaldelta-store-import-") as folder:
            return _run(args, records, repeat, out, evaldelta, Path(folder))
    args.workdir.mkdir(parents=True, exist_ok=True)
    return _run(args, records, repeat, out, evaldelta, args.workdir)


def _run(
    args: argparse.Namespace,
    records: int,
    repeat: int,
    out: Path | None,
    evaldelta: str,
    workdir: Path,
) -> int:
    big = workdir / f"combined-{records}-t{TARGETS}-a{ATTEMPTS}-s{SEED}.jsonl"
    generate(big, records)
    base, held = server(args.url)

    import psycopg

    env = {k: v for k, v in os.environ.items() if k != "EVALDELTA_STORE"}
    figures: dict[str, list[float]] = {"sqlite": [], "postgresql": []}
    peaks: dict[str, float] = {"sqlite": 0.0, "postgresql": 0.0}
    load = [os.getloadavg()[0]]
    try:
        for i in range(repeat):
            for backend in ("sqlite", "postgresql"):
                if backend == "sqlite":
                    store = workdir / f"store-{i}.db"
                    for suffix in ("", "-wal", "-shm"):
                        Path(f"{store}{suffix}").unlink(missing_ok=True)
                    where = str(store)
                else:
                    schema = f"bench_{os.getpid()}_{i}"
                    with psycopg.connect(base, autocommit=True) as conn:
                        conn.execute(f"DROP SCHEMA IF EXISTS {schema} CASCADE")
                        conn.execute(f"CREATE SCHEMA {schema}")
                    joint = "&" if "?" in base else "?"
                    where = f"{base}{joint}options=-csearch_path%3D{schema}"
                seconds, peak = timed(
                    [evaldelta, "runs", "import", str(big), "--name", "bench", "--store", where],
                    env,
                )
                if backend == "postgresql":  # a server of the user's keeps no copies
                    with psycopg.connect(base, autocommit=True) as conn:
                        conn.execute(f"DROP SCHEMA {schema} CASCADE")
                figures[backend].append(seconds)
                peaks[backend] = max(peaks[backend], peak)
                print(f"{backend:<10} import {i + 1}: {seconds:6.2f} s, peak {peak:,.0f} MB")
    finally:
        load.append(os.getloadavg()[0])
        if held is not None:
            held.stop()  # type: ignore[attr-defined]
    medians = {k: statistics.median(v) for k, v in figures.items()}
    ratio = medians["postgresql"] / medians["sqlite"]
    verdict = "met" if ratio <= RATIO_TARGET else "NOT met"
    print(f"PostgreSQL / SQLite: {ratio:.2f}x (target <= {RATIO_TARGET}x: {verdict})")
    import sqlite3

    conn = sqlite3.connect(workdir / f"store-{repeat - 1}.db")
    chunks = conn.execute("SELECT count(*), sum(length(data)) FROM record_columns").fetchone()
    conn.close()
    if out is not None:
        text = report(records, big, figures, peaks, ratio, load, chunks)
        out.write_text(text, encoding="utf-8")
        print(f"wrote {out}")
    return 0


def report(
    records: int,
    big: Path,
    figures: dict[str, list[float]],
    peaks: dict[str, float],
    ratio: float,
    load: list[float],
    chunks: tuple[int, int],
) -> str:
    def row(backend: str, label: str) -> str:
        runs = ", ".join(f"{s:.2f}" for s in figures[backend])
        median = statistics.median(figures[backend])
        return f"| {label} | {median:.2f} | {runs} | {peaks[backend]:,.0f} |"

    pg_version = subprocess.run(
        ["pg_config", "--version"], capture_output=True, text=True, check=False
    ).stdout.strip()
    cores = os.cpu_count() or 0
    verdict = "met" if ratio <= RATIO_TARGET else "**not met**"
    return "\n".join(
        [
            "# Importing into the run store: SQLite and PostgreSQL",
            "",
            f"`python bench/store_import.py`: `evaldelta runs import FILE --store STORE` of "
            f"{records:,} records ({records // (TARGETS * ATTEMPTS):,} cases x {TARGETS} "
            f"targets x {ATTEMPTS} attempts, {big.stat().st_size / 1e6:,.0f} MB, "
            "`bench/generate.py`), into an empty store each time, SQLite and PostgreSQL "
            "alternately, in one run. The file becomes two stored runs (one per target), "
            "in one transaction.",
            "",
            "| Store | Median (s) | Each import (s) | Peak memory of the command (MB) |",
            "| --- | ---: | --- | ---: |",
            row("sqlite", "SQLite file (WAL, 64 KiB pages, `executemany`)"),
            row("postgresql", "PostgreSQL (`COPY ... FORMAT BINARY`)"),
            "",
            f"**PostgreSQL / SQLite: {ratio:.2f}x** (issue 17's target: at most "
            f"{RATIO_TARGET}x: {verdict}).",
            "",
            "Most of an import is the same on both: reading and parsing the file, and encoding "
            "its columns; the stores differ only in writing the encoded chunks "
            f"({chunks[0]:,} chunks, {chunks[1] / 1e6:,.0f} MB here) and committing them.",
            "",
            "The machine:",
            "",
            f"- {platform.system()} {platform.release()}, {cores} cores, Python "
            f"{platform.python_version()}",
            f"- {pg_version or 'PostgreSQL'}: a throwaway cluster from `pg_virtualenv` on the "
            "same disk as the SQLite file, default settings (fsync, synchronous commit), "
            "reached over TCP on the loopback",
            f"- load average (1 min) when timing began and ended: {load[0]:.2f}, {load[-1]:.2f}",
            f"- date: {dt.datetime.now(dt.timezone.utc):%Y-%m-%d %H:%M} UTC",
            "",
        ]
    )


if __name__ == "__main__":
    sys.exit(main())
