"""Time evaldelta on a large combined results file, beside DuckDB doing the same reading.

Every figure is a whole process (start-up, reading, statistics, output), timed by the wall
clock, the median of several runs. Each is also given as a ratio to a reference timed in
the same run, since absolute times drift on shared machines while the ratio does not: the
reference query (DuckDB alone: ``read_json`` of the file with explicit columns, grouped by
test id and target, means, counts and each case's first input, written to /dev/null),
and for start-up, ``python -c "import numpy, msgspec"``. Peak memory is each command's
maximum resident set size, from GNU ``/usr/bin/time`` where there is one, else
``os.wait4``. The page cache and the bytecode cache are filled before timing begins. The
targets are those of issue 16.

    python bench/run.py                       # 1,000,000 records, 3 runs each
    python bench/run.py --ten-x               # also a file 10x larger (10,000,000 records)
    python bench/run.py --quick               # a tiny file, 1 run: proves the harness works
    python bench/run.py --markdown bench/RESULTS.md

Measurements of the run store (``runs import`` and a compare of two stored runs) are
skipped while ``evaldelta runs`` does not exist, and taken once it does.
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import platform
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

BENCH = Path(__file__).resolve().parent
REPO = BENCH.parent
SMALL_FILE = REPO / "examples" / "benchmark-tooling" / "fixtures" / "combined-results.jsonl"

#: The shape of the generated file: issue 7's 100,000 cases x 2 targets x 5 attempts.
TARGETS = 2
ATTEMPTS = 5
SEED = 0
BASELINE = "gpt-4.1"
CANDIDATE = "gpt-5-mini"
#: Name given to imported runs; a combined file becomes one run per target, ``NAME/target``.
RUN_NAME = "bench"

QUICK_RECORDS = 2_000
NO_STORE = "skipped: evaldelta has no run store yet"
LINE_LOOP = 'for line in open(__import__("sys").argv[1], encoding="utf-8"): pass'
BYTES_LOOP = 'for line in open(__import__("sys").argv[1], "rb"): pass'
#: The reference: DuckDB alone reading the file with explicit column types and grouping it
#: per test id and target (the means, counts and first input every comparison starts from).
REFERENCE_QUERY = """\
import sys, duckdb
path = sys.argv[1].replace("'", "''")
duckdb.connect().execute(f\"\"\"
COPY (
  SELECT test_id, target, avg(score) AS score, count(*) AS attempts, first(input) AS input
  FROM read_json('{path}', format='newline_delimited', columns={{
    test_id: 'VARCHAR', target: 'VARCHAR', score: 'DOUBLE', input: 'VARCHAR'}})
  GROUP BY test_id, target
) TO '/dev/null' (FORMAT csv)\"\"\")
"""
IMPORTS = "import numpy, msgspec"
#: The size from which the engine reads a file when the machine has the cores for it.
ENGINE_MB = 16


@dataclass(frozen=True)
class Target:
    """What issue 16 asks of one figure; ``None`` where it asks nothing."""

    ratio: float | None = None
    seconds: float | None = None
    peak_mb: float | None = None

    def describe(self) -> str:
        parts = []
        if self.ratio is not None:
            parts.append(f"<= {self.ratio:g}x")
        if self.seconds is not None:
            parts.append(
                f"< {self.seconds * 1000:g} ms" if self.seconds < 1 else f"< {self.seconds:g} s"
            )
        if self.peak_mb is not None:
            parts.append(f"< {self.peak_mb:g} MB")
        return ", ".join(parts)

    def met(self, seconds: float, ratio: float | None, peak_mb: float) -> bool:
        return (
            (self.ratio is None or (ratio is not None and ratio <= self.ratio))
            and (self.seconds is None or seconds < self.seconds)
            and (self.peak_mb is None or peak_mb < self.peak_mb)
        )


@dataclass(frozen=True)
class Task:
    """One command to time."""

    what: str
    argv: tuple[str, ...]
    #: The ``what`` of the figure this one is divided by, if any.
    reference: str | None = None
    target: Target | None = None
    #: Exit codes that mean it worked: compare and gate exit 1 on a regression.
    ok: frozenset[int] = frozenset({0})
    #: Run, untimed, before each timed run.
    before: Callable[[], None] | None = None
    #: Why the task is not run at all, if it is not.
    skip: str | None = None


@dataclass
class Figure:
    """The measurements of one task."""

    task: Task
    seconds: list[float] = field(default_factory=list)
    peak_mb: float = 0.0
    failure: str | None = None

    @property
    def median(self) -> float:
        return statistics.median(self.seconds)


@dataclass(frozen=True)
class Row:
    """One line of the table, as text."""

    what: str
    median: str
    ratio: str
    peak: str
    target: str
    met: str
    runs: str


def gnu_time() -> str | None:
    """``/usr/bin/time`` if it is GNU time (its ``%M`` is the peak of the command alone)."""
    path = "/usr/bin/time"
    if not os.access(path, os.X_OK):
        return None
    proc = subprocess.run([path, "--version"], capture_output=True, text=True, check=False)
    return path if "GNU" in proc.stdout + proc.stderr else None


GNU_TIME = gnu_time()
#: How peak memory is measured, as the output says it.
MEMORY_METHOD = (
    "maximum resident set size from `/usr/bin/time -f %M` (GNU time) around each command"
    if GNU_TIME
    else "ru_maxrss of each command from os.wait4 (the resource module's figure for that"
    " child alone; it can include this runner's own size at the fork)"
)


def run_once(
    argv: Sequence[str], *, cwd: Path, env: dict[str, str]
) -> tuple[float, float, int, str]:
    """Run ``argv`` once: wall-clock seconds, peak MB, exit code, and the end of its stderr.

    Peak memory comes from GNU time where there is one: a child's ru_maxrss also counts the
    memory of the process that forked it, which GNU time keeps tiny and this runner does not.
    """
    with tempfile.TemporaryFile() as err, tempfile.NamedTemporaryFile("r") as rss:
        full = [GNU_TIME, "-f", "%M", "-o", rss.name, *argv] if GNU_TIME else list(argv)
        start = time.perf_counter()
        proc = subprocess.Popen(
            full, cwd=cwd, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=err
        )
        _, status, usage = os.wait4(proc.pid, 0)
        seconds = time.perf_counter() - start
        proc.returncode = os.waitstatus_to_exitcode(status)
        err.seek(0)
        tail = err.read()[-2000:].decode("utf-8", "replace").strip()
        # GNU time writes "Command exited with non-zero status N" first when it is not 0.
        lines = rss.read().split()
    kilobytes = int(lines[-1]) if GNU_TIME and lines else usage.ru_maxrss
    return seconds, kilobytes * 1024 / 1e6, proc.returncode, tail


def measure(task: Task, *, repeat: int, cwd: Path, env: dict[str, str]) -> Figure:
    figure = Figure(task)
    if task.skip:
        return figure
    for _ in range(repeat):
        if task.before is not None:
            task.before()
        seconds, peak_mb, code, tail = run_once(task.argv, cwd=cwd, env=env)
        if code not in task.ok:
            last = tail.splitlines()[-1] if tail else "(no message)"
            figure.failure = f"failed: exit {code}: {last}"
            return figure
        figure.seconds.append(seconds)
        figure.peak_mb = max(figure.peak_mb, peak_mb)
    return figure


def count_lines(path: Path) -> int:
    count = 0
    with path.open("rb") as fh:
        while chunk := fh.read(1 << 20):  # small: children inherit this size
            count += chunk.count(b"\n")
    return count


def results_file(workdir: Path, records: int) -> Path:
    """The combined file of ``records`` records in ``workdir``: reused if there, else written."""
    path = workdir / f"combined-{records}-t{TARGETS}-a{ATTEMPTS}-s{SEED}.jsonl"
    if path.exists() and count_lines(path) == records:
        print(f"reusing {path} ({path.stat().st_size / 1e6:,.0f} MB)", flush=True)
        return path
    print(f"writing {records:,} records to {path} ...", flush=True)
    subprocess.run(
        [
            sys.executable,
            str(BENCH / "generate.py"),
            str(path),
            "--cases",
            str(records // (TARGETS * ATTEMPTS)),
            "--targets",
            str(TARGETS),
            "--attempts",
            str(ATTEMPTS),
            "--seed",
            str(SEED),
        ],
        check=True,
        stdout=subprocess.DEVNULL,
    )
    return path


def child_env(workdir: Path, store: Path) -> dict[str, str]:
    """The environment of every timed process.

    Bytecode is cached (in the work folder, not the source tree) even where
    ``PYTHONDONTWRITEBYTECODE`` is set, as it is for any installed package: otherwise an
    editable install recompiles evaldelta on every start and start-up looks ~0.05 s slower.
    """
    drop = {"GITHUB_STEP_SUMMARY", "PYTHONDONTWRITEBYTECODE", "NO_COLOR", "FORCE_COLOR"}
    env = {k: v for k, v in os.environ.items() if k not in drop}
    env["PYTHONPYCACHEPREFIX"] = str(workdir / "pycache")
    env["EVALDELTA_STORE"] = str(store)
    return env


def warm_ups(evaldelta: str, big: Path, huge: Path | None = None) -> list[tuple[str, ...]]:
    """Untimed runs: read the big files once, and import what each command imports."""
    pair = ("--baseline", BASELINE, "--candidate", CANDIDATE, "-o", os.devnull)
    small = str(SMALL_FILE)
    read = "import sys\nfor line in open(sys.argv[1], 'rb'): pass"
    return [
        (sys.executable, "-c", read, str(big)),
        *([(sys.executable, "-c", read, str(huge))] if huge is not None else []),
        (sys.executable, "-c", REFERENCE_QUERY, small),
        (evaldelta, "compare", small, *pair),
        (evaldelta, "compare", small, "-o", os.devnull),
        (evaldelta, "gate", small, *pair),
    ]


def find_evaldelta() -> str:
    """The ``evaldelta`` on PATH, else the one installed beside this interpreter."""
    found = shutil.which("evaldelta")
    if found:
        return found
    beside = Path(sys.executable).parent / "evaldelta"
    if beside.exists():
        return str(beside)
    sys.exit("bench/run.py: cannot find the evaldelta command (install it, or put it on PATH)")


def has_store(evaldelta: str, env: dict[str, str]) -> bool:
    """Whether this evaldelta has the run store's commands yet."""
    proc = subprocess.run(
        [evaldelta, "runs", "--help"],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        check=False,
    )
    return proc.returncode == 0


def tasks(
    evaldelta: str,
    big: Path,
    *,
    store: Path,
    store_exists: bool,
    huge: Path | None = None,
) -> list[Task]:
    """What to time, in the order it is timed (the stored compare reads the last import)."""
    python = sys.executable
    pair = ("--baseline", BASELINE, "--candidate", CANDIDATE)
    out = ("-o", os.devnull)
    verdict = frozenset({0, 1})
    no_store = None if store_exists else NO_STORE

    def loop(code: str, path: Path) -> tuple[str, ...]:
        return (python, "-c", code, str(path))

    def empty_store() -> None:
        shutil.rmtree(store.parent, ignore_errors=True)
        store.parent.mkdir(parents=True)

    reference = "reference query (DuckDB alone)"
    imports = "python -c 'import numpy, msgspec'"
    pairwise = "compare pairwise"
    plain = ("env", "EVALDELTA_DUCKDB_MB=off", evaldelta)
    engine = ("env", f"EVALDELTA_DUCKDB_MB={ENGINE_MB}", evaldelta)
    found = [
        Task(reference, loop(REFERENCE_QUERY, big)),
        Task("line loop", loop(LINE_LOOP, big), reference),
        Task("line loop, bytes (no decoding)", loop(BYTES_LOOP, big), reference),
    ]
    # Each compare of the file twice: by the plain reader and by the DuckDB engine (which
    # a machine of fewer than 4 cores does not use by default: see README, Large runs).
    for what, args, target in (
        (pairwise, ("compare", str(big), *pair, "--json", *out), Target(ratio=1.5, peak_mb=350)),
        ("compare N-way matrix", ("compare", str(big), "--json", *out), Target(ratio=1.7)),
        (
            "gate (10,000 resamples)",
            ("gate", str(big), *pair, *out),
            Target(ratio=1.5, peak_mb=350),
        ),
    ):
        found.append(Task(what, (*plain, *args), reference, target, verdict))
        found.append(Task(f"{what}, DuckDB engine", (*engine, *args), reference, target, verdict))
    found += [
        Task(
            "runs import",
            (evaldelta, "runs", "import", str(big), "--name", RUN_NAME),
            reference,
            Target(ratio=2),
            before=empty_store,
            skip=no_store,
        ),
        Task(
            "compare two stored runs",
            (
                evaldelta,
                "compare",
                f"{RUN_NAME}/{BASELINE}",
                f"{RUN_NAME}/{CANDIDATE}",
                "--json",
                *out,
            ),
            reference,
            Target(ratio=0.5),
            verdict,
            skip=no_store,
        ),
        Task(imports, (python, "-c", IMPORTS)),
        Task(
            "compare 9-record file (start-up)",
            (evaldelta, "compare", str(SMALL_FILE), *pair, "--json", *out),
            imports,
            Target(ratio=1.3),
            verdict,
        ),
    ]
    if huge is not None:
        for what, runner, reference_ in (
            ("compare pairwise, 10x the records", plain, pairwise),
            (
                "compare pairwise, 10x the records, DuckDB engine",
                engine,
                f"{pairwise}, DuckDB engine",
            ),
        ):
            found.append(
                Task(
                    what,
                    (*runner, "compare", str(huge), *pair, "--json", *out),
                    reference_,
                    Target(ratio=12, peak_mb=1000),
                    verdict,
                )
            )
    return found


def rows(figures: list[Figure]) -> list[Row]:
    medians = {f.task.what: f.median for f in figures if f.seconds}
    table = []
    for fig in figures:
        task = fig.task
        target = task.target.describe() if task.target else "-"
        if task.skip or fig.failure:
            table.append(
                Row(task.what, "-", "-", "-", target, "skipped" if task.skip else "FAILED", "-")
            )
            continue
        ref = medians.get(task.reference) if task.reference else None
        ratio = fig.median / ref if ref else None
        met = "-"
        if task.target:
            met = "met" if task.target.met(fig.median, ratio, fig.peak_mb) else "NOT MET"
        table.append(
            Row(
                task.what,
                f"{fig.median:.3f}",
                f"{ratio:.1f}x" if ratio is not None else "1.0x" if not task.reference else "-",
                f"{fig.peak_mb:,.0f}",
                target,
                met,
                " ".join(f"{s:.3f}" for s in fig.seconds),
            )
        )
    return table


HEADER = Row("what", "median s", "x ref", "peak MB", "target", "met", "runs (s)")


def render_text(table: list[Row]) -> str:
    cells = [list(vars(r).values()) for r in [HEADER, *table]]
    widths = [max(len(row[i]) for row in cells) for i in range(len(HEADER.__dict__))]
    right = {1, 2, 3}
    lines = []
    for row in cells:
        lines.append(
            "  ".join(
                c.rjust(w) if i in right else c.ljust(w)
                for i, (c, w) in enumerate(zip(row, widths, strict=True))
            ).rstrip()
        )
    return "\n".join(lines)


def render_markdown_table(table: list[Row]) -> str:
    lines = [
        "| " + " | ".join(vars(HEADER).values()) + " |",
        "| --- | ---: | ---: | ---: | --- | --- | --- |",
    ]
    lines += ["| " + " | ".join(vars(r).values()) + " |" for r in table]
    return "\n".join(lines)


def _read(path: str) -> str:
    try:
        return Path(path).read_text(encoding="utf-8")
    except OSError:
        return ""


def machine(evaldelta: str, load: tuple[float, float]) -> list[str]:
    """The machine and the software measured, one Markdown bullet each."""
    cpuinfo = _read("/proc/cpuinfo")
    model = next(
        (ln.split(":", 1)[1].strip() for ln in cpuinfo.splitlines() if ln.startswith("model name")),
        platform.processor() or "unknown",
    )
    meminfo = _read("/proc/meminfo")
    mem_kb = next(
        (int(ln.split()[1]) for ln in meminfo.splitlines() if ln.startswith("MemTotal")), 0
    )
    cores = os.cpu_count() or 0
    usable = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else cores
    versions = subprocess.run(
        [
            sys.executable,
            "-c",
            "import numpy, msgspec, duckdb;"
            " print(numpy.__version__, msgspec.__version__, duckdb.__version__)",
        ],
        capture_output=True,
        text=True,
        check=False,
    ).stdout.split() or ["?", "?", "?"]
    version = subprocess.run(
        [evaldelta, "--version"], capture_output=True, text=True, check=False
    ).stdout.strip()
    commit = subprocess.run(
        ["git", "-C", str(REPO), "rev-parse", "--short", "HEAD"],
        capture_output=True,
        text=True,
        check=False,
    ).stdout.strip()
    return [
        f"- CPU: {model}, {cores} cores ({usable} usable)",
        f"- memory: {mem_kb / 1024**2:.1f} GiB",
        f"- {platform.system()} {platform.release()}",
        f"- Python {platform.python_version()}, numpy {versions[0]}, msgspec {versions[1]},"
        f" duckdb {versions[-1]}",
        f"- {version or 'evaldelta'}"
        + (f", commit {commit} (working tree as it was)" if commit else ""),
        f"- load average (1 min) when timing began and ended: {load[0]:.2f}, {load[1]:.2f}"
        " (other work on the machine inflates the figures and spreads the runs)",
        f"- date: {dt.datetime.now(dt.timezone.utc):%Y-%m-%d %H:%M} UTC",
    ]


def shown(argv: Sequence[str], big: Path) -> str:
    """A command as a reader would type it: short names for the programs and the files."""
    names = {
        sys.executable: "python",
        str(big): "FILE",
        REFERENCE_QUERY: "REFERENCE",
        str(SMALL_FILE): str(SMALL_FILE.relative_to(REPO)),
        os.devnull: "/dev/null",
    }

    # The file 10x larger sits beside the big one (and may be gone by now).
    def name(arg: str) -> str:
        if arg in names:
            return names[arg]
        other = Path(arg)
        if other.parent == big.parent and other.name.startswith("combined-") and other != big:
            return "FILE10"
        return arg

    words = [name(a) for a in argv]
    if words and words[0].endswith("evaldelta"):
        words[0] = "evaldelta"
    return " ".join(shlex.quote(w) for w in words)


def render_markdown(
    figures: list[Figure],
    table: list[Row],
    *,
    records: int,
    size_mb: float,
    repeat: int,
    evaldelta: str,
    load: tuple[float, float],
    big: Path,
    argv: list[str],
) -> str:
    command = " ".join(["python", "bench/run.py", *argv])
    return "\n".join(
        [
            "# Benchmark results",
            "",
            f"`{command}`: {records:,} records ({records // (TARGETS * ATTEMPTS):,} cases x"
            f" {TARGETS} targets x {ATTEMPTS} attempts, {size_mb:,.0f} MB, `bench/generate.py"
            f" --seed {SEED}`). Each figure is the wall-clock time of the whole process, the"
            f" median of {repeat} run{'s' if repeat != 1 else ''}; `x ref` divides it by the"
            " time of its reference, taken in the same run: the reference query (DuckDB alone"
            " reading the file with explicit columns and grouping it per test id and target),"
            " `python -c 'import numpy, msgspec'` for start-up, and the 1,000,000-record"
            f" compare for the file 10x larger. Peak memory: {MEMORY_METHOD}.",
            "",
            render_markdown_table(table),
            "",
            *(
                f"- {f.task.what}: {f.task.skip or f.failure}"
                for f in figures
                if f.task.skip or f.failure
            ),
            "",
            "## Machine",
            "",
            *machine(evaldelta, load),
            "",
            "## Commands",
            "",
            "`FILE` is the generated file (`FILE10` the one 10x larger). The run store is"
            " `EVALDELTA_STORE`, in the work folder, emptied before each import. `REFERENCE`"
            " is the reference query's script (`REFERENCE_QUERY` in `bench/run.py`).",
            "",
            *(f"- {f.task.what}: `{shown(f.task.argv, big)}`" for f in figures),
            "",
        ]
    )


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python bench/run.py",
        description="Time evaldelta on a large combined results file, beside a plain line loop.",
    )
    parser.add_argument("--records", type=int, help="records in the file (default: 1000000)")
    parser.add_argument("--repeat", type=int, help="timed runs of each command (default: 3)")
    parser.add_argument(
        "--workdir", type=Path, help="where to write (or find) the file (default: a temporary one)"
    )
    parser.add_argument(
        "--quick",
        action="store_true",
        help=f"{QUICK_RECORDS:,} records, 1 run: proves the harness works (for CI)",
    )
    parser.add_argument("--markdown", type=Path, metavar="FILE", help="also write the results here")
    parser.add_argument(
        "--ten-x",
        action="store_true",
        help="also time a compare of a file 10x larger (written to the work folder: ~4.8 GB"
        " for the default size; deleted afterwards unless --keep)",
    )
    parser.add_argument(
        "--keep", action="store_true", help="keep the 10x file in the work folder afterwards"
    )
    args = parser.parse_args(argv)
    records = args.records or (QUICK_RECORDS if args.quick else 1_000_000)
    repeat = args.repeat or (1 if args.quick else 3)
    per_case = TARGETS * ATTEMPTS
    if records < per_case or records % per_case:
        parser.error(
            f"--records must be a multiple of {per_case} ({TARGETS} targets x {ATTEMPTS} attempts)"
        )
    if repeat < 1:
        parser.error("--repeat must be at least 1")

    evaldelta = find_evaldelta()
    with tempfile.TemporaryDirectory(prefix="evaldelta-bench-") as tmp:
        workdir = (args.workdir or Path(tmp)).resolve()
        workdir.mkdir(parents=True, exist_ok=True)
        store = workdir / "store" / "runs.db"
        env = child_env(workdir, store)
        big = results_file(workdir, records)
        huge = results_file(workdir, records * 10) if args.ten_x else None
        todo = tasks(evaldelta, big, store=store, store_exists=has_store(evaldelta, env), huge=huge)

        # Untimed: fill the page cache and the bytecode cache, so no figure pays for them.
        for argv_ in warm_ups(evaldelta, big, huge):
            run_once(argv_, cwd=workdir, env=env)

        print(f"timing {len(todo)} commands, {repeat} run(s) each; peak memory: {MEMORY_METHOD}")
        load_before = os.getloadavg()[0]
        figures = []
        for task in todo:
            print(f"  {task.what} ...", flush=True)
            figures.append(measure(task, repeat=repeat, cwd=workdir, env=env))
        load = (load_before, os.getloadavg()[0])
        size_mb = big.stat().st_size / 1e6
        if huge is not None and not args.keep:
            huge.unlink()

    table = rows(figures)
    print()
    print(render_text(table))
    for fig in figures:
        if fig.task.skip or fig.failure:
            print(f"{fig.task.what}: {fig.task.skip or fig.failure}")
    if args.quick:
        print(f"(--quick: {records:,} records; the targets are for 1,000,000 and mean little here)")
    if args.markdown:
        text = render_markdown(
            figures,
            table,
            records=records,
            size_mb=size_mb,
            repeat=repeat,
            evaldelta=evaldelta,
            load=load,
            big=big,
            argv=list(sys.argv[1:] if argv is None else argv),
        )
        args.markdown.write_text(text, encoding="utf-8")
        print(f"wrote {args.markdown}")
    return 1 if any(f.failure for f in figures) else 0


if __name__ == "__main__":
    sys.exit(main())
