"""Stores of a few runs for the dashboard's tests (here and in tests/browser/), and a
server on a free loopback port.

The runs answer the same 40 questions (one dataset), 3 attempts each, so that they
compare fairly; their pass probabilities make the verdicts clear: support-v2 is better
than support-v1, support-v3 worse. One run is interrupted, and (unless left out) one
carries hostile text in its name, config, test ids and outputs.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest

from evaldelta.model import Run
from evaldelta.serve import Dashboard, make_server
from evaldelta.store import open_store
from tests.conftest import EVALDELTA, Result

CASES = 40
ATTEMPTS = 3
CATEGORIES = ("retrieval", "math", "no_tool", "long_chain")

#: Text that would run, or fetch, if a page let it through as HTML.
HOSTILE_NAME = '<script>window.__xss = "name"</script>"><img src=x onerror="window.__xss=1">'
HOSTILE_ID = '"><img src=x onerror="window.__xss=2">'
HOSTILE_OUTPUT = "</script><script>window.__xss = 3</script><b>bold</b>"
HOSTILE_MODEL = "<i onmouseover=alert(4)>gpt</i>"


def make_run(
    pass_rate: float,
    *,
    seed: int,
    target: str = "support-agent",
    status: str = "complete",
    started: str = "2026-11-30T09:00:00Z",
    hostile: bool = False,
) -> Run:
    """40 cases x 3 attempts; each attempt passes with probability ``pass_rate``."""
    import numpy as np

    rng = np.random.default_rng(seed)
    n = CASES * ATTEMPTS
    case = np.repeat(np.arange(CASES), ATTEMPTS)
    ok = rng.random(n) < pass_rate
    ids = [f"q-{i:03d}" for i in range(CASES)]
    if hostile:
        ids[0] = HOSTILE_ID
    return Run.from_columns(
        source="synthetic.jsonl",
        format="jsonl",
        test_id=[ids[i] for i in case.tolist()],
        target=[target] * n,
        score=ok.astype(float).tolist(),
        attempt=np.tile(np.arange(1, ATTEMPTS + 1), CASES).tolist(),
        latency_ms=rng.integers(800, 2000, n).astype(float).tolist(),
        cost_usd=(0.002 + rng.random(n) / 1000).tolist(),
        category=[CATEGORIES[i % 4] for i in case.tolist()],
        input_hash=(case + 1).tolist(),
        texts={
            "input": [f"Customer question #{i}" for i in case.tolist()],
            "expected": [f"Answer {i}" for i in case.tolist()],
            "output": [
                HOSTILE_OUTPUT if hostile else (f"Answer {i}" if good else f"Sorry ({i})")
                for i, good in zip(case.tolist(), ok.tolist(), strict=True)
            ],
            "metadata": [None] * n,
        },
        status=status,
        started_at=started,
        finished_at=started.replace(":00:00Z", ":40:00Z"),
    )


@dataclass(frozen=True)
class FewRuns:
    """The ids of the runs :func:`few_runs` stored."""

    path: Path
    v1: int
    v2: int
    v3: int
    interrupted: int
    hostile: int | None


def few_runs(path: Path, *, hostile: bool = True) -> FewRuns:
    """A store at ``path`` of support-v1 (the baseline), -v2 (better), -v3 (worse, on
    another model), an interrupted run, and a hostile one."""
    with open_store(path) as store:

        def add(name: str, run: Run, **config: object) -> int:
            return store.add_run(run, name=name, config=config)

        v1 = add(
            "support-v1",
            make_run(0.55, seed=1, started="2026-11-28T09:00:00Z"),
            model="gpt-4.1",
            prompt="v1",
        )
        v2 = add(
            "support-v2",
            make_run(0.95, seed=2, started="2026-11-29T09:00:00Z"),
            model="gpt-4.1",
            prompt="v2",
        )
        v3 = add(
            "support-v3",
            make_run(0.15, seed=3, started="2026-11-30T09:00:00Z"),
            model="claude-sonnet-4",
            prompt="v3",
        )
        cut = add(
            "support-v2-retry",
            make_run(0.9, seed=4, status="interrupted", started="2026-11-30T14:00:00Z"),
            model="gpt-4.1",
            prompt="v2",
        )
        bad = (
            add(
                HOSTILE_NAME,
                make_run(0.5, seed=5, hostile=True, started="2026-12-01T08:00:00Z"),
                model=HOSTILE_MODEL,
                note=HOSTILE_OUTPUT,
            )
            if hostile
            else None
        )
    return FewRuns(path, v1, v2, v3, cut, bad)


def tiny_runs(path: Path, count: int) -> None:
    """``count`` runs of 3 records each, stored in one go (fast: a store of 1,000 runs
    takes well under a second)."""
    with open_store(path) as store:
        for i in range(count):
            run = Run.from_columns(
                source=f"run-{i}.jsonl",
                format="jsonl",
                test_id=["a", "b", "c"],
                score=[1.0, 0.0, (i % 10) / 10],
                target=[f"model-{i % 7}"] * 3,
                cost_usd=[0.001 * (i % 13)] * 3,
                status="interrupted" if i % 50 == 7 else "complete",
            )
            store.add_run(run, name=f"nightly-{i:04d}")


@contextmanager
def serving(path: Path) -> Iterator[str]:
    """The dashboard over the store at ``path``, on a free loopback port; yields its URL
    (ending in ``/``). Stopped, and its thread joined, on exit."""
    dashboard = Dashboard(str(path))
    server = make_server(dashboard, "127.0.0.1", 0)
    thread = threading.Thread(
        target=server.serve_forever, kwargs={"poll_interval": 0.05}, name="dashboard", daemon=True
    )
    thread.start()
    try:
        yield server.url
    finally:
        server.shutdown()
        server.server_close()
        dashboard.close()
        thread.join(timeout=10)


# -- `evaldelta serve`, the installed command, in a process of its own ---------------------


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass
class Served:
    """A running ``evaldelta serve``, its URL, and how long it took to answer."""

    proc: subprocess.Popen[str]
    url: str
    started_in: float

    def get(self, path: str) -> tuple[int, str]:
        try:
            with urllib.request.urlopen(self.url + path.lstrip("/"), timeout=30) as r:
                return r.status, r.read().decode()
        except urllib.error.HTTPError as e:
            return e.code, e.read().decode()

    def stop(self, sig: int = signal.SIGINT) -> Result:
        self.proc.send_signal(sig)
        out, err = self.proc.communicate(timeout=15)
        return Result(self.proc.returncode, out, err)


def _env(extra: dict[str, str] | None = None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "EVALDELTA_STORE"}
    env.update(extra or {})
    return env


@contextmanager
def serve(
    *args: str, env: dict[str, str] | None = None, cwd: Path | None = None
) -> Iterator[Served]:
    """``evaldelta serve ARGS --port P`` on a free port, once it answers (a cheap 404:
    the runs list is left for the test to time)."""
    assert EVALDELTA.exists(), f"{EVALDELTA} is not installed: run `make test`"
    port = free_port()
    start = time.perf_counter()
    proc = subprocess.Popen(
        [str(EVALDELTA), "serve", *args, "--port", str(port)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        encoding="utf-8",
        env=_env(env),
        cwd=cwd,
    )
    try:
        url = f"http://127.0.0.1:{port}/"
        deadline = start + 20
        while True:
            try:
                urllib.request.urlopen(url + "runs/0", timeout=5).close()
                pytest.fail("evaldelta serve has a run 0")
            except urllib.error.HTTPError as e:
                e.close()
                if e.code != 404:
                    pytest.fail(f"evaldelta serve answered /runs/0 with {e.code}")
                break
            except (urllib.error.URLError, ConnectionError):
                if proc.poll() is not None:
                    out, err = proc.communicate()
                    pytest.fail(f"evaldelta serve exited with {proc.returncode}: {out}{err}")
                if time.perf_counter() > deadline:
                    pytest.fail("evaldelta serve did not answer within 20 s")
                time.sleep(0.01)
        yield Served(proc, url, time.perf_counter() - start)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
