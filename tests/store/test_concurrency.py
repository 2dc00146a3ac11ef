"""Processes sharing a store: imports at once all succeed, and an import killed halfway
leaves the store as it was, and usable; on both backends."""

from __future__ import annotations

import signal
import sqlite3
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from evaldelta.store import SCHEMA_VERSION, is_url, open_store
from tests.conftest import REPO
from tests.store.conftest import query, snapshot, synthetic_run

#: An import that pauses while it holds the write lock, after writing some chunks.
IMPORTER = textwrap.dedent(
    """
    import os, sys, time
    from evaldelta.store import _codec as codec
    from evaldelta.store import open_store
    from tests.store.conftest import synthetic_run

    store_path, go, seed, pause = sys.argv[1], sys.argv[2], int(sys.argv[3]), float(sys.argv[4])
    original = codec.encode_run

    def encode(run):
        for i, chunk in enumerate(original(run)):
            if i == 6:
                print("halfway", flush=True)
                time.sleep(pause)
            yield chunk

    codec.encode_run = encode
    run = synthetic_run(50_000, attempts=2, seed=seed)
    while not os.path.exists(go):
        time.sleep(0.005)
    with open_store(store_path) as store:
        print("stored", store.add_run(run, name=f"seed-{seed}"), flush=True)
    """
)


def _importer(store: str, go: Path, seed: int, pause: float) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-c", IMPORTER, store, str(go), str(seed), str(pause)],
        cwd=REPO,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


@pytest.mark.parametrize("count", [2, 4])
def test_processes_importing_at_once_all_succeed(location: str, tmp_path: Path, count: int) -> None:
    """All start on a store that does not exist yet (they build it once between them);
    each pauses half a second mid-import. On SQLite the first holds the write lock and
    the others wait for it instead of failing; on PostgreSQL they write side by side."""
    go = tmp_path / "go"
    seeds = range(1, count + 1)
    procs = [_importer(location, go, seed, pause=0.5) for seed in seeds]
    go.touch()
    outputs = [p.communicate(timeout=120) for p in procs]
    for p, (out, err) in zip(procs, outputs, strict=True):
        assert p.returncode == 0, err
        assert out.startswith("halfway\nstored ")
    ids = sorted(int(out.split()[-1]) for out, _ in outputs)
    assert ids == list(seeds)
    with open_store(location) as store:
        assert store.schema_version == SCHEMA_VERSION
        assert query(location, "SELECT version FROM schema_version") == [(SCHEMA_VERSION,)]
        for seed in seeds:
            back = store.get_run(f"seed-{seed}")
            expected = synthetic_run(50_000, attempts=2, seed=seed)
            assert back.score.tolist() == expected.score.tolist()
            assert back.test_ids == expected.test_ids
            assert back.scorer_scores["judge"].tolist() == expected.scorer_scores["judge"].tolist()


@pytest.mark.parametrize("how", [signal.SIGKILL, signal.SIGINT], ids=["kill", "ctrl-c"])
def test_an_import_killed_halfway_leaves_the_store_unchanged(
    location: str, tmp_path: Path, how: signal.Signals
) -> None:
    go = tmp_path / "go"
    with open_store(location) as store:
        kept = store.add_run(synthetic_run(100), name="kept")
    before = snapshot(location)
    go.touch()
    proc = _importer(location, go, seed=3, pause=60)
    assert proc.stdout is not None
    assert proc.stdout.readline() == "halfway\n"
    time.sleep(0.05)
    proc.send_signal(how)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode != 0
    if how == signal.SIGINT:
        assert "KeyboardInterrupt" in err

    if not is_url(location):
        conn = sqlite3.connect(location)
        assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        conn.close()
    assert query(location, "SELECT DISTINCT run FROM record_columns") == [(kept,)]
    assert snapshot(location) == before
    with open_store(location) as store:
        assert [(r.id, r.name) for r in store.list_runs()] == [(kept, "kept")]
        assert store.get_run("kept").records() == synthetic_run(100).records()
        again = store.add_run(synthetic_run(10), name="after the crash")
        assert store.get_run(again).records() == synthetic_run(10).records()
