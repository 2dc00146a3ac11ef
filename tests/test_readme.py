"""README.md's console examples run, and print what the README shows.

What is checked:

- Only ```console fenced blocks; ```bash, ```text, ```yaml, ```python... are illustrative.
  In a console block a line starting with ``$ `` is a command, and the lines after it, up
  to the next ``$ `` line or the block's end, are its expected output: stdout and stderr
  together, as a terminal shows them (stderr is merged into stdout, Python unbuffered, so
  the order is the order of writing). A command without expected lines must print nothing.
- Matching is line by line, exact after stripping trailing spaces (and trailing blank
  lines of the whole output). A line that is exactly ``...`` matches any number of lines,
  zero or more (non-greedy); a trailing ``...`` allows more lines.
- Before matching, both sides get a small set of volatile figures normalised (``VOLATILE``):
  elapsed times (``in 0.1 s``), store timestamps (``2026-12-01 03:27``, with or without
  seconds), the slowdown clause of the offline example's verdict (``+27% slower and``, which
  is dropped: its real sleeps of 2 and 3 ms drown in a busy machine's noise), and the
  working folder's absolute path, written ``/path/to/evals``. Anything else that varies
  must be skipped with ``...`` lines.
- Every block runs, in README order, in one fresh temporary working folder holding copies
  of ``examples/``, ``tests/fixtures/`` and ``docs/``, plus the files the README names
  bare: ``baseline.jsonl`` and ``candidate.jsonl`` (from ``examples/benchmark-tooling/
  fixtures/``), ``before.jsonl`` and ``after.jsonl`` (from ``examples/agent-versions/``).
  The default store ``.evaldelta/runs.db`` starts empty there, so run ids are 1, 2, ...
  in README order. A block runs as one bash script (so ``$?`` and ``cd`` work as typed;
  each block starts in the working folder), with the venv's bin first on PATH,
  EVALDELTA_STORE, NO_COLOR, FORCE_COLOR and GITHUB_STEP_SUMMARY removed, COLUMNS=100,
  TZ=UTC, stdin empty, 120 s at most.
- A block is left out only by ``<!-- readme-test: skip (reason) -->`` on the line right
  before its fence, with a reason; fewer than ``MAX_SKIPS`` blocks may be.
- A block after ``<!-- readme-test: postgresql -->`` runs against the tests' throwaway
  PostgreSQL server (tests/postgres.py): its ``PG*`` variables are set, and ``PGOPTIONS``
  puts every such block in one fresh schema, so ``postgresql://`` is an empty team store
  at the first of them. Where there is no server it is skipped, saying why, as the
  store's PostgreSQL leg is (and fails where ``CI`` is set).
"""

from __future__ import annotations

import difflib
import os
import re
import shutil
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass, field

import pytest

from tests.conftest import EVALDELTA, REPO

README = REPO / "README.md"
MAX_SKIPS = 4
TIMEOUT_S = 120
MARK = "__EVALDELTA_README_MARK__"
WORK_PLACEHOLDER = "/path/to/evals"

#: Copied into the working folder: (source in the repository, name there).
COPIES = [
    ("examples", "examples"),
    ("tests/fixtures", "tests/fixtures"),
    ("docs", "docs"),
    ("examples/benchmark-tooling/fixtures/baseline.jsonl", "baseline.jsonl"),
    ("examples/benchmark-tooling/fixtures/candidate.jsonl", "candidate.jsonl"),
    ("examples/agent-versions/before.jsonl", "before.jsonl"),
    ("examples/agent-versions/after.jsonl", "after.jsonl"),
]

#: Figures that differ from run to run, and what both sides are rewritten to.
VOLATILE = [
    (re.compile(r"\bin \d+(?:\.\d+)? s\b"), "in N s"),  # elapsed time of a run
    (re.compile(r"\b\d{4}-\d\d-\d\d \d\d:\d\d(?::\d\d)?\b"), "YYYY-MM-DD HH:MM"),  # stored at
    # the offline agent's real sleeps (2 ms, 3 ms) drown in a busy machine's noise: whether
    # the verdict finds it slower, and by how much, varies; its cost (+38%) does not
    (re.compile(r"[+-]\d+% slower and "), ""),
]

SKIP = re.compile(r"^<!--\s*readme-test:\s*skip\s*\((?P<reason>.*)\)\s*-->\s*$")
POSTGRESQL = re.compile(r"^<!--\s*readme-test:\s*postgresql\s*-->\s*$")
ELLIPSIS = "..."


@dataclass
class Command:
    line: str
    expected: list[str] = field(default_factory=list)


@dataclass
class Block:
    id: str
    lineno: int
    commands: list[Command]
    skip: str | None = None
    postgresql: bool = False


def parse(text: str) -> list[Block]:
    """The console blocks of a Markdown text, each named by its heading and index."""
    blocks: list[Block] = []
    heading = "top"
    per_heading: dict[str, int] = {}
    lines = text.splitlines()
    i = 0
    while i < len(lines):
        line = lines[i]
        if line.startswith("#") and " " in line:
            heading = line.lstrip("#").strip()
        elif line.startswith("```"):
            lang = line[3:].strip()
            end = i + 1
            while end < len(lines) and not lines[end].startswith("```"):
                end += 1
            if lang == "console":
                body = lines[i + 1 : end]
                if not body or not body[0].startswith("$ "):
                    raise ValueError(
                        f"README.md:{i + 2}: a console block starts with a `$ ` command"
                    )
                commands: list[Command] = []
                for row in body:
                    if row.startswith("$ "):
                        commands.append(Command(row[2:]))
                    else:
                        commands[-1].expected.append(row)
                slug = re.sub(r"[^a-z0-9]+", "-", heading.lower()).strip("-")
                n = per_heading[slug] = per_heading.get(slug, 0) + 1
                skip = None
                postgresql = i > 0 and bool(POSTGRESQL.match(lines[i - 1]))
                if i > 0 and "readme-test" in lines[i - 1] and not postgresql:
                    m = SKIP.match(lines[i - 1])
                    if not (m and m["reason"].strip()):
                        raise ValueError(
                            f"README.md:{i}: write `<!-- readme-test: skip (reason) -->` "
                            "or `<!-- readme-test: postgresql -->`"
                        )
                    skip = m["reason"].strip()
                blocks.append(Block(f"{slug}-{n}", i + 1, commands, skip, postgresql))
            i = end
        i += 1
    return blocks


def normalise(lines: list[str], work: str | None = None) -> list[str]:
    out = []
    for line in lines:
        if work:
            line = line.replace(work, WORK_PLACEHOLDER)
        for pattern, repl in VOLATILE:
            line = pattern.sub(repl, line)
        out.append(line.rstrip())
    while out and out[-1] == "":
        out.pop()
    return out


def matches(expected: list[str], actual: list[str]) -> bool:
    """Whether ``actual`` fits ``expected``, where a line ``...`` stands for any lines.

    Dynamic programming from the ends, without recursion (an output may run to thousands
    of lines): ``fit[e][a]`` says whether ``expected[e:]`` fits ``actual[a:]``.
    """
    n = len(actual)
    after = [a == n for a in range(n + 1)]  # expected[len(expected):] fits actual[a:]
    for e in range(len(expected) - 1, -1, -1):
        here = [False] * (n + 1)
        if expected[e] == ELLIPSIS:
            # any number of lines: fits at a if the rest fits at a, or this fits at a + 1
            here[n] = after[n]
            for a in range(n - 1, -1, -1):
                here[a] = after[a] or here[a + 1]
        else:
            for a in range(n):
                here[a] = expected[e] == actual[a] and after[a + 1]
        after = here
    return after[0]


def _script(block: Block) -> str:
    parts = ["exec 2>&1"]
    for command in block.commands:
        parts += [command.line, "__rc=$?", f"printf '\\n{MARK}\\n'", "(exit $__rc)"]
    return "\n".join(parts) + "\n"


def _env() -> dict[str, str]:
    drop = {"EVALDELTA_STORE", "NO_COLOR", "FORCE_COLOR", "GITHUB_STEP_SUMMARY"}
    env = {k: v for k, v in os.environ.items() if k not in drop}
    env.update(
        PATH=f"{EVALDELTA.parent}{os.pathsep}{env.get('PATH', '')}",
        COLUMNS="100",
        TZ="UTC",
        PYTHONUNBUFFERED="1",
    )
    return env


BLOCKS = parse(README.read_text(encoding="utf-8"))


@dataclass
class Outcome:
    outputs: list[list[str]]
    work: str


def _postgresql_env(request: pytest.FixtureRequest) -> dict[str, str] | str:
    """The variables that make ``postgresql://`` a fresh store on the tests' server (one
    schema for all the README's PostgreSQL blocks), or why there is no server."""
    try:
        server = request.getfixturevalue("postgres_server")
    except pytest.skip.Exception as exc:
        return str(exc.msg)
    return {**server.env, "PGOPTIONS": f"-csearch_path={server.new_schema()}"}


@pytest.fixture(scope="module")
def outcomes(
    tmp_path_factory: pytest.TempPathFactory, request: pytest.FixtureRequest
) -> dict[str, Outcome | str]:
    """Run every block, in README order, in one fresh working folder: its outputs, or
    why it could not run."""
    assert EVALDELTA.exists(), f"{EVALDELTA} is not installed: run `make test`"
    work = tmp_path_factory.mktemp("readme")
    for source, name in COPIES:
        (work / name).parent.mkdir(parents=True, exist_ok=True)
        copy = shutil.copytree if (REPO / source).is_dir() else shutil.copyfile
        copy(REPO / source, work / name)
    env = _env()
    postgresql = _postgresql_env(request) if any(b.postgresql for b in BLOCKS) else {}
    results: dict[str, Outcome | str] = {}
    for block in BLOCKS:
        if block.skip:
            continue
        if block.postgresql and isinstance(postgresql, str):
            results[block.id] = postgresql
            continue
        proc = subprocess.run(
            ["bash", "-c", _script(block)],
            cwd=work,
            env={**env, **postgresql} if block.postgresql else env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            text=True,
            encoding="utf-8",
            timeout=TIMEOUT_S,
            check=False,
        )
        pieces = proc.stdout.split(f"\n{MARK}\n")
        assert len(pieces) == len(block.commands) + 1, f"{block.id}: a command ended the script"
        results[block.id] = Outcome([p.splitlines() for p in pieces[:-1]], str(work))
    return results


def _params() -> Iterator[object]:
    for block in BLOCKS:
        marks = [pytest.mark.skip(reason=block.skip)] if block.skip else []
        yield pytest.param(block, id=block.id, marks=marks)


@pytest.mark.parametrize("block", list(_params()))
def test_console_block(block: Block, outcomes: dict[str, Outcome | str]) -> None:
    outcome = outcomes[block.id]
    if isinstance(outcome, str):
        from tests.postgres import unavailable

        unavailable(outcome)
        return
    failures = []
    for command, output in zip(block.commands, outcome.outputs, strict=True):
        expected = normalise(command.expected)
        actual = normalise(output, outcome.work)
        if not matches(expected, actual):
            diff = difflib.unified_diff(expected, actual, "README", "actual", lineterm="")
            failures.append(f"$ {command.line}\n" + "\n".join(diff))
    if failures:
        pytest.fail(f"README.md:{block.lineno}:\n" + "\n\n".join(failures), pytrace=False)


def test_readme_has_console_blocks_and_few_skips() -> None:
    assert len(BLOCKS) >= 10
    ids = [b.id for b in BLOCKS]
    assert len(ids) == len(set(ids))
    assert sum(1 for b in BLOCKS if b.skip) < MAX_SKIPS


# -- the matcher and the parser themselves ------------------------------------------------


def test_matcher_is_exact_without_ellipsis() -> None:
    assert matches(["a", "b"], ["a", "b"])
    assert not matches(["a", "b"], ["a", "c"])
    assert not matches(["a"], ["a", "b"])
    assert not matches(["a", "b"], ["a"])
    assert not matches([], ["anything"])  # a command shown without output prints nothing
    assert matches([], [])


def test_matcher_ellipsis() -> None:
    assert matches(["a", "...", "z"], ["a", "z"])  # zero lines
    assert matches(["a", "...", "z"], ["a", "b", "c", "z"])
    assert matches(["a", "..."], ["a", "b", "c"])  # a trailing ... allows more
    assert matches(["...", "z"], ["z", "z"])
    assert matches(["...", "b", "...", "d"], ["a", "b", "c", "b", "d"])
    assert not matches(["a", "...", "z"], ["a", "b", "c"])
    assert not matches(["...", "z", "..."], ["a", "b"])


def test_normalise() -> None:
    got = normalise(
        [
            "Ran offline-agent: 45 tests in 0.1 s  ",
            "   2  after   2026-12-01 03:27  complete",
            "  Created:  2026-12-01 03:27:59 UTC",
            "but it is +41% slower and +38% costlier",
            "but it is +38% costlier",
            "  Source:   /tmp/x/after.jsonl (jsonl)",
            "",
        ],
        work="/tmp/x",
    )
    assert got == [
        "Ran offline-agent: 45 tests in N s",
        "   2  after   YYYY-MM-DD HH:MM  complete",
        "  Created:  YYYY-MM-DD HH:MM UTC",
        "but it is +38% costlier",
        "but it is +38% costlier",
        f"  Source:   {WORK_PLACEHOLDER}/after.jsonl (jsonl)",
    ]
    assert not matches(normalise(["Pass rate 76.3%"]), normalise(["Pass rate 76.4%"]))


def test_parse() -> None:
    text = "\n".join(
        [
            "## One",
            "```console",
            "$ echo hi",
            "hi",
            "$ true",
            "```",
            "```bash",
            "$ not a console block",
            "```",
            "<!-- readme-test: skip (never returns) -->",
            "```console",
            "$ evaldelta serve",
            "```",
        ]
    )
    one, two = parse(text)
    assert (one.id, one.skip, [(c.line, c.expected) for c in one.commands]) == (
        "one-1",
        None,
        [("echo hi", ["hi"]), ("true", [])],
    )
    assert (two.id, two.skip, two.postgresql) == ("one-2", "never returns", False)
    (team,) = parse("<!-- readme-test: postgresql -->\n```console\n$ evaldelta runs list\n```\n")
    assert (team.skip, team.postgresql) == (None, True)
    with pytest.raises(ValueError, match="skip"):
        parse("<!-- readme-test: skip () -->\n```console\n$ true\n```\n")
    with pytest.raises(ValueError, match="starts with"):
        parse("```console\noutput first\n```\n")
