"""Every command shown in the example README runs, from the repository root."""

from __future__ import annotations

import re
import shlex

import pytest

from tests.conftest import EXAMPLE, REPO, run_evaldelta


def _commands() -> list[str]:
    text = (EXAMPLE / "README.md").read_text(encoding="utf-8")
    blocks = re.findall(r"```bash\n(.*?)```", text, flags=re.S)
    return [
        line.strip()
        for block in blocks
        for line in block.splitlines()
        if line.strip().startswith("evaldelta ")
    ]


def test_the_readme_shows_commands() -> None:
    assert len(_commands()) >= 7


@pytest.mark.parametrize("command", _commands())
def test_example_command_runs(command: str) -> None:
    args = shlex.split(command)[1:]
    r = run_evaldelta(*args, cwd=REPO)
    assert r.code in (0, 1), r.err  # 1 is a regression the example means to show
    assert r.err == ""
    assert r.out.strip()


def test_fixture_is_the_one_the_seed_describes() -> None:
    import json

    text = (EXAMPLE / "fixtures" / "combined-results.jsonl").read_text(encoding="utf-8")
    rows = [json.loads(line) for line in text.splitlines()]
    assert len(rows) == 9
    assert all({"test_id", "target", "score", "input", "answer"} <= set(r) for r in rows)
    assert len({(r["test_id"], r["target"]) for r in rows}) == 9
