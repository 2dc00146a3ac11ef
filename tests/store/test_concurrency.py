"""Processes sharing a store: two imports at once both succeed, and an import killed
halfway leaves the store as it was, and usable."""

from __future__ import annotations

import signal
import sqlite3
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from evaldelta.store import open_store
from tests.conftest import REPO
from tests.store.conftest import synthetic_run

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


def _importer(store: Path, go: Path, seed: int, pause: float) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-c", IMPORTER, str(store), str(go), str(seed), str(pause)],
        cwd=REPO,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def test_two_processes_importing_at_once_both_succeed(tmp_path: Path) -> None:
    """Both start on a store that does not exist yet; the first holds the write lock for
    half a second mid-import, and the second waits for it instead of failing."""
    store_path, go = tmp_path / "runs.db", tmp_path / "go"
    procs = [_importer(store_path, go, seed, pause=0.5) for seed in (1, 2)]
    go.touch()
    outputs = [p.communicate(timeout=120) for p in procs]
    for p, (out, err) in zip(procs, outputs, strict=True):
        assert p.returncode == 0, err
        assert out.startswith("halfway\nstored ")
    ids = sorted(int(out.split()[-1]) for out, _ in outputs)
    assert ids == [1, 2]
    with open_store(store_path) as store:
        for seed in (1, 2):
            back = store.get_run(f"seed-{seed}")
            expected = synthetic_run(50_000, attempts=2, seed=seed)
            assert back.score.tolist() == expected.score.tolist()
            assert back.test_ids == expected.test_ids
            assert back.scorer_scores["judge"].tolist() == expected.scorer_scores["judge"].tolist()


@pytest.mark.parametrize("how", [signal.SIGKILL, signal.SIGINT], ids=["kill", "ctrl-c"])
def test_an_import_killed_halfway_leaves_the_store_unchanged(
    tmp_path: Path, how: signal.Signals
) -> None:
    store_path, go = tmp_path / "runs.db", tmp_path / "go"
    with open_store(store_path) as store:
        kept = store.add_run(synthetic_run(100), name="kept")
    go.touch()
    proc = _importer(store_path, go, seed=3, pause=60)
    assert proc.stdout is not None
    assert proc.stdout.readline() == "halfway\n"
    time.sleep(0.05)
    proc.send_signal(how)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode != 0
    if how == signal.SIGINT:
        assert "KeyboardInterrupt" in err

    conn = sqlite3.connect(store_path)
    assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    assert conn.execute("SELECT DISTINCT run FROM record_columns").fetchall() == [(kept,)]
    conn.close()
    with open_store(store_path) as store:
        assert [(r.id, r.name) for r in store.list_runs()] == [(kept, "kept")]
        assert store.get_run("kept").records() == synthetic_run(100).records()
        again = store.add_run(synthetic_run(10), name="after the crash")
        assert store.get_run(again).records() == synthetic_run(10).records()
