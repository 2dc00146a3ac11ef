"""The lock by which a run's process shows it is alive."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from evaldelta.store._liveness import acquire, is_held, lock_path


def test_lock_path_sits_beside_the_store(tmp_path: Path) -> None:
    assert lock_path(tmp_path / "runs.db", 7) == tmp_path / "runs.db.locks" / "run-7.lock"


def test_held_until_released(tmp_path: Path) -> None:
    path = lock_path(tmp_path / "runs.db", 1)
    assert not is_held(path)  # no file: nobody holds it
    lock = acquire(path)
    assert lock is not None
    assert lock.held
    assert is_held(path)
    assert acquire(path, grace=0) is None  # a second hold, even in this process
    lock.release()
    assert not lock.held
    assert not path.exists()
    assert not is_held(path)
    lock.release()  # twice is harmless


def test_another_process_sees_it_held_and_free_once_this_one_lets_go(tmp_path: Path) -> None:
    path = lock_path(tmp_path / "runs.db", 2)
    probe = (
        "import sys; from pathlib import Path; from evaldelta.store._liveness import is_held; "
        "print(is_held(Path(sys.argv[1])))"
    )

    def held_elsewhere() -> str:
        out = subprocess.run(
            [sys.executable, "-c", probe, str(path)], capture_output=True, text=True, check=True
        )
        return out.stdout.strip()

    lock = acquire(path)
    assert lock is not None
    assert held_elsewhere() == "True"
    lock.release()
    assert held_elsewhere() == "False"


def test_a_file_left_behind_by_a_dead_process_is_free(tmp_path: Path) -> None:
    path = lock_path(tmp_path / "runs.db", 3)
    path.parent.mkdir(parents=True)
    path.write_text("12345\n")
    assert not is_held(path)
    lock = acquire(path)
    assert lock is not None
    lock.release()
