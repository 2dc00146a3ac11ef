"""The shape of the house, checked: imports point one way, the core is pure,
and importing the package (or asking for --help) loads nothing heavy."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

SRC = Path(__file__).parent.parent / "src" / "evaldelta"

#: Layers in the order data flows; a module may import only from its own layer or earlier ones.
LAYERS = ["errors", "model", "io", "pairing", "stats", "analysis", "api", "report", "cli"]


def _layer(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else ""


def _modules() -> list[tuple[str, ast.Module]]:
    found = []
    for path in sorted(SRC.rglob("*.py")):
        rel = path.relative_to(SRC.parent).with_suffix("")
        name = ".".join(rel.parts).removesuffix(".__init__")
        found.append((name, ast.parse(path.read_text(encoding="utf-8"))))
    return found


def _ids(value: object) -> str:
    return value if isinstance(value, str) else ""


def _imports(tree: ast.Module) -> list[str]:
    names = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.extend(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            names.append(node.module)
    return names


@pytest.mark.parametrize(("name", "tree"), _modules(), ids=_ids)
def test_imports_point_down(name: str, tree: ast.Module) -> None:
    own = _layer(name)
    if own not in LAYERS:  # the package root and __main__ may import anything
        return
    for imported in _imports(tree):
        if not imported.startswith("evaldelta.") or _layer(imported) not in LAYERS:
            continue
        assert LAYERS.index(_layer(imported)) <= LAYERS.index(own), (
            f"{name} imports {imported}: imports must point down {LAYERS}"
        )


@pytest.mark.parametrize(("name", "tree"), _modules(), ids=_ids)
def test_core_is_pure(name: str, tree: ast.Module) -> None:
    """No printing, exiting, environment or global randomness outside cli/."""
    if _layer(name) == "cli" or name == "evaldelta.__main__":
        return
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
            assert node.func.id not in ("print", "exit", "input"), f"{name} calls {node.func.id}()"
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
            pair = f"{node.value.id}.{node.attr}"
            assert pair not in (
                "sys.exit",
                "os.environ",
                "os.getenv",
                "sys.stdout",
                "sys.stderr",
            ), f"{name} uses {pair}"
            assert node.value.id != "random", f"{name} uses {pair}"
            assert pair != "np.random", f"{name} uses {pair}"


def _loaded_after(code: str) -> set[str]:
    out = subprocess.run(
        [sys.executable, "-c", f"{code}\nimport sys\nprint(' '.join(sys.modules))"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    return set(out.split())


def test_import_is_light() -> None:
    loaded = _loaded_after("import evaldelta")
    assert not {"numpy", "msgspec", "rich"} & loaded


def test_help_loads_nothing_heavy() -> None:
    loaded = _loaded_after("from evaldelta.cli import build_parser\nbuild_parser().format_help()")
    assert not {"numpy", "msgspec", "rich"} & loaded


def test_compare_loads_only_what_it_needs() -> None:
    """Start-up is a feature: a small compare loads numpy and msgspec, nothing heavier."""
    example = Path(__file__).parent / "fixtures" / "combined-results.jsonl"
    loaded = _loaded_after(
        "import contextlib, io\n"
        "from evaldelta.cli import main\n"
        "with contextlib.redirect_stdout(io.StringIO()):\n"
        f"    main(['compare', {str(example)!r}])"
    )
    assert {"numpy", "msgspec"} <= loaded
    heavy = {"scipy", "pandas", "rich", "sqlite3", "duckdb", "statsmodels", "asyncio", "email"}
    assert not heavy & loaded
