"""Bad and odd input, end to end through the installed command (issue 15): each is
refused by file and line in one message with exit code 2, or read by a stated rule;
never an internal error."""

from __future__ import annotations

import gzip
import json
import os
import random
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests.conftest import Result

Cli = Callable[..., Result]


def _write(path: Path, data: bytes) -> Path:
    path.write_bytes(data)
    return path


def _one_error_line(r: Result) -> str:
    assert r.code == 2, (r.out, r.err)
    assert "internal error" not in r.err
    lines = r.err.strip().splitlines()
    assert len(lines) == 1, r.err
    return lines[0]


# 1. A negative cost is a credit or a refund: read, shown with its sign, never a crash.
@pytest.mark.parametrize("fmt", ["table", "markdown", "html", "json"])
def test_a_negative_cost_is_a_credit(evaldelta: Cli, tmp_path: Path, fmt: str) -> None:
    credit = _write(
        tmp_path / "credit.jsonl",
        b'{"test_id":"t1","score":0.5,"cost_usd":-1}\n'
        b'{"test_id":"t2","score":0.8,"cost_usd":0.01}\n',
    )
    paid = _write(
        tmp_path / "paid.jsonl",
        b'{"test_id":"t1","score":0.5,"cost_usd":0.02}\n'
        b'{"test_id":"t2","score":0.8,"cost_usd":0.01}\n',
    )
    for args in ((credit, credit), (credit, paid), (paid, credit)):
        r = evaldelta("compare", *args, "--format", fmt)
        assert r.code == 0, r.err
    table = evaldelta("compare", credit, paid).out
    assert "Cost:         -$0.49 -> $0.015 per case   +$0.51   95% CI" in table
    assert evaldelta("gate", paid, credit).code == 0
    assert evaldelta("runs", "import", credit, "--store", tmp_path / "s.db").code == 0


# 5. Nesting deeper than the decoder follows: named by file and line.
def test_deep_nesting_is_refused_by_line(evaldelta: Cli, tmp_path: Path) -> None:
    deep = "[" * 100_000 + "]" * 100_000
    jl = _write(
        tmp_path / "deep.jsonl",
        f'{{"test_id":"t0","score":1}}\n{{"test_id":"t1","score":0.5,"output":{deep}}}\n'.encode(),
    )
    message = (
        "JSON nested too deeply (arrays or objects inside one another beyond the decoder's "
        "limit); no results file needs that: check how the file was written"
    )
    assert _one_error_line(evaldelta("compare", jl, jl)) == f"evaldelta: error: {jl}:2: {message}"
    assert _one_error_line(evaldelta("runs", "import", jl, "--store", tmp_path / "s.db")).endswith(
        f"{jl}:2: {message}"
    )
    doc = _write(tmp_path / "deep.json", f'{{"results": [{deep}]}}'.encode())
    assert (
        _one_error_line(evaldelta("compare", doc, doc)) == f"evaldelta: error: {doc}:1: {message}"
    )


# 6. Bytes that are not UTF-8: one behaviour for every command, a refusal by line.
def test_invalid_utf8_is_refused_by_every_command(evaldelta: Cli, tmp_path: Path) -> None:
    bad = _write(
        tmp_path / "bad.jsonl",
        b'{"test_id":"t1","score":0.5}\n{"test_id":"t2","score":0.5,"output":"ok \xff\xfe"}\n',
    )
    expected = (
        f"evaldelta: error: {bad}:2: not valid UTF-8 (byte 0xff at column 42); save the file "
        "as UTF-8"
    )
    for args in (
        ("compare", bad, bad),
        ("gate", bad, bad),
        ("compare", bad, bad, "--format", "html"),
        ("runs", "import", bad, "--store", tmp_path / "s.db"),
    ):
        assert _one_error_line(evaldelta(*args)) == expected
    gz = tmp_path / "bad.jsonl.gz"
    gz.write_bytes(gzip.compress(bad.read_bytes()))
    assert _one_error_line(evaldelta("compare", gz, gz)).endswith(
        ":2: not valid UTF-8 (byte 0xff at column 42); save the file as UTF-8"
    )
    # Real UTF-8 is of course read.
    good = _write(
        tmp_path / "good.jsonl", '{"test_id":"t1","score":0.5,"output":"café ✓"}\n'.encode()
    )
    assert evaldelta("compare", good, good).code == 0


# 7. Silent choices made loud: a blank test id, digits of other scripts in a CSV.
def test_a_white_space_test_id_is_refused_like_an_empty_one(evaldelta: Cli, tmp_path: Path) -> None:
    blank = _write(
        tmp_path / "blank.jsonl", b'{"test_id":"t1","score":0.5}\n{"test_id":"  ","score":0.5}\n'
    )
    assert _one_error_line(evaldelta("compare", blank, blank)) == (
        f"evaldelta: error: {blank}:2: \"test_id\" is only white space ('  '); every record "
        "needs a test id"
    )
    csv = _write(tmp_path / "blank.csv", b"test_id,score\nt1,0.5\n \t,0.5\n")
    # A CSV's cells are stripped: a blank one is an empty one there.
    assert _one_error_line(evaldelta("compare", csv, csv)).endswith(
        ':3: row has no test id (column "test_id" is empty); every row needs one'
    )


@pytest.mark.parametrize("digits", ["０.5", "٠.٥"])
def test_csv_numbers_are_ascii_digits(evaldelta: Cli, tmp_path: Path, digits: str) -> None:
    csv = _write(tmp_path / "s.csv", f"test_id,score\nt1,{digits}\nt2,0.5\n".encode())
    assert _one_error_line(evaldelta("compare", csv, csv)) == (
        f'evaldelta: error: {csv}:2: column "score" must be a number (in ASCII digits), '
        f'got "{digits}"'
    )


# 11. A symbolic link that loops, or leads nowhere, is said to be one.
def test_a_symlink_loop_is_named(evaldelta: Cli, tmp_path: Path) -> None:
    a, b = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    os.symlink(b, a)
    os.symlink(a, b)
    assert _one_error_line(evaldelta("compare", a, a)) == (
        f"evaldelta: error: {a}: a symbolic link that leads back to itself; point it at the "
        "results file"
    )
    dangling = tmp_path / "dangling.jsonl"
    os.symlink(tmp_path / "gone.jsonl", dangling)
    assert _one_error_line(evaldelta("compare", dangling, dangling)) == (
        f"evaldelta: error: {dangling}: a symbolic link to {tmp_path / 'gone.jsonl'}, which "
        "does not exist; point it at the results file"
    )


# 3. One rule for scores in every reader: a number, a boolean or a documented letter;
# anything else named with its sample (and epoch) and scorer; a null absent for that
# scorer only.
FIXTURES = Path(__file__).parent.parent / "fixtures"


def _inspect_log(tmp_path: Path, value: object) -> Path:
    log = json.loads((FIXTURES / "inspect_ai" / "SYNTHETIC_epochs.json").read_text("utf-8"))
    log["samples"][0]["scores"] = {"match": {"value": "C"}, "judge": {"value": value}}
    path = tmp_path / "log.json"
    path.write_text(json.dumps(log), encoding="utf-8")
    return path


@pytest.mark.parametrize(("value", "shown"), [("X", '"X"'), ("0.5", '"0.5"'), ([1, 0], "[1,0]")])
def test_an_inspect_value_that_is_no_score_is_refused(
    evaldelta: Cli, tmp_path: Path, value: object, shown: str
) -> None:
    log = _inspect_log(tmp_path, value)
    assert _one_error_line(evaldelta("compare", log, log)) == (
        f"evaldelta: error: {log}: sample 'q1', epoch 1: scorer judge = {shown} is not a "
        "score; Inspect scores are C/I/P/N, yes/no/true/false, numbers, booleans, or dicts "
        "of them (a null is left out)"
    )


def test_an_inspect_null_is_absent_for_that_scorer_only(evaldelta: Cli, tmp_path: Path) -> None:
    log = _inspect_log(tmp_path, None)
    data = json.loads(evaldelta("compare", log, log, "--json").out)
    assert data["summary"]["matched"] == 2
    q1 = next(m for m in data["matched"] if m["test_id"] == "q1")
    # Epoch 1 scores 1.0 on match alone (judge unscored), epoch 2 the mean of its three
    # scorers (0.75): the case is their mean, nothing dropped but the null.
    assert q1["score1"] == 0.875


def test_a_deepeval_metric_without_a_score_is_absent_not_an_error(
    evaldelta: Cli, tmp_path: Path
) -> None:
    run = json.loads((FIXTURES / "deepeval" / "test_run_sample.json").read_text("utf-8"))
    run["testCases"][0]["metricsData"][1]["score"] = None
    path = tmp_path / "run.json"
    path.write_text(json.dumps(run), encoding="utf-8")
    r = evaldelta("compare", path, path, "--json")
    assert r.code == 0, r.err
    data = json.loads(r.out)
    assert data["summary"]["matched"] == 1  # once "no test ids in common"
    assert data["statistics"]["scorers"][0]["name"] == "Answer Relevancy"


# 4. A store this user may not write (another's, on a read-only disk) can still be read.
def _run(prefix: list[str], *args: object) -> Result:
    import subprocess

    from tests.conftest import EVALDELTA

    env = {k: v for k, v in os.environ.items() if k not in ("NO_COLOR", "FORCE_COLOR")}
    proc = subprocess.run(
        [*prefix, str(EVALDELTA), *map(str, args)],
        capture_output=True, text=True, encoding="utf-8", env=env, timeout=60, check=False,
    )  # fmt: skip
    return Result(proc.returncode, proc.stdout, proc.stderr)


@pytest.fixture
def read_only_store(evaldelta: Cli, tmp_path: Path) -> Iterator[tuple[Path, Cli]]:
    """A store of two runs this process may not write, and how to run the installed
    command against it. As root (who may write any file) the store's folder is bind-
    mounted read-only, as a read-only disk is; where that is not allowed, the command
    runs as ``nobody`` on a 0444 file in a 0555 folder. As another user the files are
    made read-only."""
    import shutil
    import stat
    import subprocess
    import tempfile

    folder = Path(tempfile.mkdtemp(prefix="evaldelta-ro-"))
    os.chmod(folder, 0o755)
    store = folder / "runs.db"
    for name in ("baseline", "candidate"):
        r = evaldelta(
            "runs", "import", FIXTURES / f"{name}.jsonl", "--name", name, "--store", store
        )
        assert r.code == 0, r.err
    os.chmod(store, 0o444)
    os.chmod(folder, 0o555)
    mounted = None
    prefix: list[str] = []
    if os.geteuid() == 0:
        target = tmp_path / "read-only"
        target.mkdir()
        bind = subprocess.run(["mount", "--bind", str(folder), str(target)], check=False)
        ro = bind.returncode == 0 and (
            subprocess.run(["mount", "-o", "remount,bind,ro", str(target)], check=False).returncode
            == 0
        )
        if ro:
            mounted, store = target, target / "runs.db"
        else:
            if bind.returncode == 0:
                subprocess.run(["umount", str(target)], check=False)
            prefix = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"]
            probe = _run(prefix, "--version")
            if probe.code != 0:
                pytest.fail(
                    "cannot make a read-only store here: no read-only bind mount, and user "
                    f"nobody cannot run the installed command ({probe.err.strip()})"
                )
    try:
        yield store, lambda *args: _run(prefix, *args)
    finally:
        if mounted is not None:
            subprocess.run(["umount", str(mounted)], check=False)
        os.chmod(folder, stat.S_IRWXU)
        shutil.rmtree(folder)


def test_a_read_only_store_is_read(read_only_store: tuple[Path, Cli]) -> None:
    store, _as_another_user = read_only_store
    listed = _as_another_user("runs", "list", "--store", store)
    assert listed.code == 0, listed.err
    assert "baseline" in listed.out
    assert "candidate" in listed.out
    shown = _as_another_user("runs", "show", "baseline", "--store", store)
    assert shown.code == 0, shown.err
    compared = _as_another_user("compare", "baseline", "candidate", "--store", store)
    assert compared.code == 0, compared.err
    assert "Verdict: Inconclusive." in compared.out
    exported = _as_another_user("runs", "export", "baseline", "--store", store)
    assert exported.code == 0, exported.err
    assert exported.out.count("\n") == 3
    # Writing still needs write access, and says so.
    removed = _as_another_user("runs", "rm", "baseline", "--store", store)
    assert removed.code == 2
    assert "cannot write to the store" in removed.err


# 9. A damaged store is said to be damaged, with what to do; the runs that still read, read.
def _store_of_four(evaldelta: Cli, tmp_path: Path) -> Path:
    store = tmp_path / "runs.db"
    for name in ("a", "b", "c", "d"):
        before = FIXTURES.parent.parent / "examples" / "agent-versions" / "before.jsonl"
        assert evaldelta("runs", "import", before, "--name", name, "--store", store).code == 0
    return store


DAMAGED = "the store is damaged: "
MEND = (
    "; export the runs that still read (evaldelta runs export ID --store PATH), then "
    "restore the store from a copy"
)


def test_records_written_over_fail_their_checksum(evaldelta: Cli, tmp_path: Path) -> None:
    import sqlite3

    store = _store_of_four(evaldelta, tmp_path)
    with sqlite3.connect(store) as conn:
        conn.execute(
            "UPDATE record_columns SET data = randomblob(length(data)) "
            "WHERE run = 1 AND name = 'score'"
        )
    expected = (
        f"evaldelta: error: {store}: {DAMAGED}run 1's column 'score' fails its checksum{MEND}"
    )
    assert _one_error_line(evaldelta("compare", "a", "b", "--store", store)) == expected
    assert _one_error_line(evaldelta("runs", "export", "a", "--store", store)) == expected
    # The other runs are untouched, and read.
    assert evaldelta("compare", "c", "d", "--store", store).code == 0
    assert evaldelta("runs", "export", "b", "--store", store).out.count("\n") == 180


def _pages(store: Path) -> tuple[int, list[tuple[str, int]]]:
    """The store's page size, and each page's (table or index, page number)."""
    import sqlite3

    with sqlite3.connect(store) as conn:
        size = int(conn.execute("PRAGMA page_size").fetchone()[0])
        pages = conn.execute("SELECT name, pageno FROM dbstat ORDER BY pageno").fetchall()
    return size, [(str(name), int(number)) for name, number in pages]


def _noise_over(store: Path, offset: int, seed: int) -> None:
    with open(store, "r+b") as f:
        f.seek(offset)
        f.write(random.Random(seed).randbytes(8192))


def test_bytes_written_over_the_records_are_found(evaldelta: Cli, tmp_path: Path) -> None:
    store = _store_of_four(evaldelta, tmp_path)
    size, pages = _pages(store)
    records = [number for name, number in pages if name == "record_columns"]
    _noise_over(store, (records[len(records) // 2] - 1) * size, 15)
    outcomes = [
        evaldelta("compare", x, y, "--store", store)
        for x, y in (("a", "b"), ("b", "c"), ("c", "d"))
    ]
    damaged = [r for r in outcomes if r.code == 2]
    assert damaged, "8 KiB of noise over a page of records went unnoticed"
    for r in damaged:
        line = _one_error_line(r)
        assert DAMAGED in line
        assert line.endswith(MEND)
    assert all(r.code in (0, 2) and "internal error" not in r.err for r in outcomes)


def test_noise_over_any_page_is_an_error_or_a_true_answer(evaldelta: Cli, tmp_path: Path) -> None:
    """Noise over each page in turn (tables, indexes, the schema): each compare either
    answers as the whole store did, or says the store is damaged; never a traceback."""
    whole = _store_of_four(evaldelta, tmp_path)
    size, pages = _pages(whole)
    truth = evaldelta("compare", "a", "b", "--store", whole, "--json")
    assert truth.code == 0
    for name, number in pages:
        store = tmp_path / f"page-{number}.db"
        store.write_bytes(whole.read_bytes())
        _noise_over(store, (number - 1) * size, number)
        r = evaldelta("compare", "a", "b", "--store", store, "--json")
        where = f"noise over page {number} ({name})"
        assert r.code in (0, 2), where
        if r.code == 0:
            assert r.out == truth.out, where
        else:
            assert "internal error" not in r.err, where
            assert "the store" in _one_error_line(r) or "run store" in r.err, where


# 8. A disk that cannot take the run: said so, and nothing is stored.
def test_a_full_disk_stores_nothing_and_says_so(tmp_path: Path) -> None:
    import resource
    import signal
    import subprocess

    from tests.conftest import EVALDELTA

    big = tmp_path / "big.jsonl"
    rng = random.Random(8)
    with big.open("w", encoding="utf-8") as f:
        for i in range(20_000):
            f.write(json.dumps({"test_id": f"q{i}", "score": rng.random(), "output": "y" * 90}))
            f.write("\n")
    store = tmp_path / "runs.db"

    def small_disk() -> None:  # the file size limit: a disk that fills at 2 MB (an empty
        # store takes 1 MB: 16 pages of 64 KiB; this run's records 3.4 MB)
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (2_000_000, 2_000_000))

    proc = subprocess.run(
        [str(EVALDELTA), "runs", "import", str(big), "--store", str(store)],
        preexec_fn=small_disk,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    line = _one_error_line(Result(proc.returncode, proc.stdout, proc.stderr))
    assert line.startswith(f"evaldelta: error: {store}: the disk ")
    assert line.endswith(
        "while trying to store the run; nothing was stored: free some space (or check the "
        "disk) and try again"
    )
    listed = subprocess.run(
        [str(EVALDELTA), "runs", "list", "--store", str(store)],
        capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    assert listed.stdout.startswith("No runs in ")


def test_a_disk_full_before_the_store_is_made_says_so(tmp_path: Path) -> None:
    import resource
    import signal
    import subprocess

    from tests.conftest import EVALDELTA

    store = tmp_path / "runs.db"

    def tiny_disk() -> None:  # room for a few of the new store's pages, not all of them
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (300_000, 300_000))

    before = FIXTURES.parent.parent / "examples" / "agent-versions" / "before.jsonl"
    proc = subprocess.run(
        [str(EVALDELTA), "runs", "import", str(before), "--store", str(store)],
        preexec_fn=tiny_disk, capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    assert proc.returncode == 2
    assert _one_error_line(Result(proc.returncode, proc.stdout, proc.stderr)) == (
        f"evaldelta: error: {store}: the disk could not be written (full, past the file size "
        "limit, or failing) while trying to open the store; nothing was stored: free some "
        "space (or check the disk) and try again"
    )


# 2. Small compressed files that unpack to gigabytes are refused by name, early.
def test_a_gzip_bomb_line_is_refused_early(evaldelta: Cli, tmp_path: Path) -> None:
    bomb = tmp_path / "bomb.jsonl.gz"
    with gzip.open(bomb, "wb", compresslevel=9) as f:
        f.write(b'{"test_id":"t1","score":0.5,"output":"')
        block = b"a" * (1 << 24)
        for _ in range(20):  # 320 MiB of one line, in about 300 kB
            f.write(block)
        f.write(b'"}\n')
    assert bomb.stat().st_size < 1_000_000
    for args in (("compare", bomb, bomb), ("runs", "import", bomb, "--store", tmp_path / "s.db")):
        assert _one_error_line(evaldelta(*args)).endswith(
            f"{bomb}:1: a line longer than 256 MiB: no results record is that long; if this "
            "one is, raise the limit (EVALDELTA_MAX_LINE_MB)"
        )


def test_the_limits_can_be_raised_and_lowered(evaldelta: Cli, tmp_path: Path) -> None:
    long_line = _write(
        tmp_path / "long.jsonl",
        b'{"test_id":"t1","score":0.5,"output":"' + b"a" * 3_000_000 + b'"}\n'
        b'{"test_id":"t2","score":0.7}\n',
    )
    low = evaldelta("compare", long_line, long_line, env={"EVALDELTA_MAX_LINE_MB": "1"})
    assert "a line longer than 1 MiB" in _one_error_line(low)
    assert evaldelta("compare", long_line, long_line, env={"EVALDELTA_MAX_LINE_MB": "8"}).code == 0
    packed = tmp_path / "many.jsonl.gz"
    with gzip.open(packed, "wb") as f:
        for i in range(60_000):
            f.write(b'{"test_id":"q%d","score":0.5}\n' % i)
    small = evaldelta("compare", packed, packed, env={"EVALDELTA_MAX_UNPACKED_MB": "1"})
    assert _one_error_line(small) == (
        f"evaldelta: error: {packed}: unpacks to more than 1 MiB: refused before it fills the "
        "memory; if the file truly is that large, raise the limit (EVALDELTA_MAX_UNPACKED_MB)"
    )
    # An Inspect log's member is held to the same bound as a line.
    log = FIXTURES / "inspect_ai" / "SYNTHETIC_epochs.eval"
    member = evaldelta("compare", log, log, env={"EVALDELTA_MAX_LINE_MB": "0.001"})
    assert " is longer than 0 MiB" in _one_error_line(member)
    bad = evaldelta("compare", log, log, env={"EVALDELTA_MAX_LINE_MB": "lots"})
    assert _one_error_line(bad) == (
        "evaldelta: error: EVALDELTA_MAX_LINE_MB must be a number of MiB > 0, got 'lots'"
    )


def test_a_test_id_as_a_number_and_as_a_string_is_refused(evaldelta: Cli, tmp_path: Path) -> None:
    mixed = _write(
        tmp_path / "mixed.jsonl",
        b'{"test_id":"2","score":0.8}\n{"test_id":1,"score":0.5}\n{"test_id":"1","score":0.8}\n',
    )
    assert _one_error_line(evaldelta("compare", mixed, mixed)) == (
        f'evaldelta: error: {mixed}:2: "test_id" is the number 1 here and the string "1" '
        "elsewhere: they would be read as one case; write every test id the same way (as a "
        "string)"
    )
    # Numbers alone are test ids as good as strings.
    numbers = _write(
        tmp_path / "numbers.jsonl", b'{"test_id":1,"score":0.5}\n{"test_id":2,"score":0.8}\n'
    )
    assert evaldelta("compare", numbers, numbers).code == 0


def test_a_key_given_twice_is_refused(evaldelta: Cli, tmp_path: Path) -> None:
    twice = _write(
        tmp_path / "twice.jsonl",
        b'{"test_id":"t1","score":0.5}\n{"test_id":"t2","score":0.1,"score":0.9}\n',
    )
    assert _one_error_line(evaldelta("compare", twice, twice)) == (
        f'evaldelta: error: {twice}:2: the key "score" is given twice in one object: which '
        "value is meant cannot be told; write each key once"
    )
    # The same name in different objects is no repetition.
    nested = _write(
        tmp_path / "nested.jsonl",
        b'{"test_id":"t1","score":0.5,"scores":[{"name":"a","score":0.4},{"name":"b","score":0.6}]}\n',
    )
    assert evaldelta("compare", nested, nested).code == 0


@pytest.mark.parametrize("engine", ["plain", "duckdb"])
@pytest.mark.parametrize("attempt", ["9223372036854775808", "-9223372036854775809"])
def test_an_attempt_beyond_64_bits_is_refused_by_line(
    evaldelta: Cli, tmp_path: Path, attempt: str, engine: str
) -> None:
    huge = _write(
        tmp_path / "huge.jsonl",
        b'{"test_id":"a","score":1}\n{"test_id":"b","score":1,"attempt":%s}\n' % attempt.encode(),
    )
    env = {"EVALDELTA_DUCKDB_MB": "0"} if engine == "duckdb" else {}
    assert _one_error_line(evaldelta("compare", huge, huge, env=env)) == (
        f'evaldelta: error: {huge}:2: "attempt" must be an integer from -9223372036854775808 '
        f"to 9223372036854775807, got {attempt}; number a case's attempts 1, 2, 3, ... or "
        "leave the field out"
    )


@pytest.mark.parametrize("attempt", ["1e30", "9223372036854775808"])
def test_an_attempt_beyond_64_bits_in_a_csv_file_or_a_mapped_file_is_refused_by_line(
    evaldelta: Cli, tmp_path: Path, attempt: str
) -> None:
    table = _write(
        tmp_path / "huge.csv", b"test_id,score,attempt\na,1,1\nb,1,%s\n" % attempt.encode()
    )
    assert _one_error_line(evaldelta("compare", table, table)) == (
        f'evaldelta: error: {table}:3: column "attempt" must be a whole number from 1 to '
        f'9223372036854775807, got "{attempt}"'
    )
    mapped = _write(
        tmp_path / "huge.jsonl",
        b'{"id":"a","s":1,"n":1}\n{"id":"b","s":1,"n":%s}\n' % attempt.encode(),
    )
    r = evaldelta("compare", mapped, mapped, "--map", "test_id=id,score=s,attempt=n")
    assert _one_error_line(r) == (  # the value as the file writes it
        f'evaldelta: error: {mapped}:2: "n" must be a whole number from 1 to '
        f"9223372036854775807, got {attempt}"
    )


def test_a_lowercase_nan_is_named(evaldelta: Cli, tmp_path: Path) -> None:
    nan = _write(
        tmp_path / "nan.jsonl", b'{"test_id":"a","score":1}\n{"test_id":"b","score":nan}\n'
    )
    assert _one_error_line(evaldelta("compare", nan, nan)) == (
        f'evaldelta: error: {nan}:2: "score" must be a finite number, got nan (not valid JSON; '
        'write a number, or null with an "error")'
    )
