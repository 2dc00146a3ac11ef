"""Every command shown in the example README runs, from the repository root."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest

from tests.conftest import EXAMPLE, REPO, run_evaldelta

EXAMPLES = sorted((REPO / "examples").glob("*/README.md"))


def _commands(readme: Path) -> list[str]:
    text = readme.read_text(encoding="utf-8")
    blocks = re.findall(r"```bash\n(.*?)```", text, flags=re.S)
    return [
        line.strip()
        for block in blocks
        for line in block.splitlines()
        if line.strip().startswith(("evaldelta ", "python "))
    ]


ALL = [(readme.parent.name, cmd) for readme in EXAMPLES for cmd in _commands(readme)]


def test_every_readme_shows_commands() -> None:
    assert len(EXAMPLES) >= 2
    for readme in EXAMPLES:
        assert len(_commands(readme)) >= 3, readme


@pytest.mark.parametrize(("example", "command"), ALL)
def test_example_command_runs(example: str, command: str, tmp_path: Path) -> None:
    args = shlex.split(command)
    if args[0] == "python":
        # A script that regenerates an example's data: run it on a copy.
        import shutil
        import subprocess
        import sys

        copy = tmp_path / example
        shutil.copytree(REPO / "examples" / example, copy)
        script = copy / Path(args[1]).name
        subprocess.run([sys.executable, str(script)], check=True)
        for produced in copy.glob("*.jsonl"):
            original = REPO / "examples" / example / produced.name
            assert produced.read_bytes() == original.read_bytes(), f"{original} is stale"
        return
    r = run_evaldelta(*args[1:], cwd=REPO)
    assert r.code in (0, 1), r.err  # 1 is a regression (or a block) the example shows
    assert r.out.strip()
    if args[1] == "compare":
        assert r.err == ""


def test_fixture_is_the_one_the_seed_describes() -> None:
    import json

    text = (EXAMPLE / "fixtures" / "combined-results.jsonl").read_text(encoding="utf-8")
    rows = [json.loads(line) for line in text.splitlines()]
    assert len(rows) == 9
    assert all({"test_id", "target", "score", "input", "answer"} <= set(r) for r in rows)
    assert len({(r["test_id"], r["target"]) for r in rows}) == 9
