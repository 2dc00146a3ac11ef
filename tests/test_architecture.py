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
#: The store reads and writes runs (model) and keeps their figures (analysis.summary).
#: The dashboard (serve) reads the store and renders with report; only cli starts it.
#: The runner makes records and hands them to the store; api's evaluate() starts it.
LAYERS = [
    "_plain",
    "errors",
    "model",
    "io",
    "pairing",
    "stats",
    "analysis",
    "store",
    "runner",
    "api",
    "report",
    "serve",
    "cli",
]

#: The only imports that point up: convenience methods of the model's and the results'
#: classes that hand over to a later layer, so that ``after.compare(before)``,
#: ``to_pandas()`` and Jupyter's ``_repr_html_`` work on the objects themselves. Each
#: imports inside the method (or for type hints only), never when its module loads:
#: (module, method, imported module).
FACADES = {
    ("evaldelta.model", "compare", "evaldelta.api"),
    ("evaldelta.model", "to_pandas", "evaldelta.report._frames"),
    ("evaldelta.model", "", "evaldelta.analysis._comparison"),  # Run.compare's return type
    ("evaldelta.model", "", "evaldelta.analysis._settings"),  # Run.compare's settings
    ("evaldelta.pairing._pairwise", "to_pandas", "evaldelta.report._frames"),
    ("evaldelta.pairing._pairwise", "_repr_html_", "evaldelta.report._html"),
    ("evaldelta.pairing._matrix", "to_pandas", "evaldelta.report._frames"),
    ("evaldelta.pairing._matrix", "_repr_html_", "evaldelta.report._html"),
    ("evaldelta.analysis._comparison", "to_pandas", "evaldelta.report._frames"),
    ("evaldelta.analysis._comparison", "_repr_html_", "evaldelta.report._html"),
}


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
    return [name for name, _ in _imports_with_place(tree)]


def _is_type_checking(node: ast.AST) -> bool:
    return (
        isinstance(node, ast.If)
        and isinstance(node.test, ast.Name)
        and (node.test.id == "TYPE_CHECKING")
    )


def _imports_with_place(tree: ast.AST, place: str | None = None) -> list[tuple[str, str | None]]:
    """Each import with where it is made: the name of the function it is made in, ""
    for an ``if TYPE_CHECKING:`` block, ``None`` when the module makes it as it loads."""
    found: list[tuple[str, str | None]] = []
    for node in ast.iter_child_nodes(tree):
        if isinstance(node, ast.Import):
            found.extend((a.name, place) for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            found.append((node.module, place))
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            found.extend(_imports_with_place(node, node.name if place is None else place))
        elif _is_type_checking(node) and place is None:
            found.extend(_imports_with_place(node, ""))
        else:
            found.extend(_imports_with_place(node, place))
    return found


@pytest.mark.parametrize(("name", "tree"), _modules(), ids=_ids)
def test_imports_point_down(name: str, tree: ast.Module) -> None:
    own = _layer(name)
    if own not in LAYERS:  # the package root and __main__ may import anything
        return
    for imported, place in _imports_with_place(tree):
        if not imported.startswith("evaldelta.") or _layer(imported) not in LAYERS:
            continue
        if LAYERS.index(_layer(imported)) <= LAYERS.index(own):
            continue
        where = {None: "as it loads", "": "for type hints"}.get(place, f"in {place}()")
        assert (name, place, imported) in FACADES, (
            f"{name} imports {imported} {where}: imports must point down {LAYERS} "
            "(or be one of the FACADES)"
        )


def test_pairing_loads_no_file() -> None:
    """Pairing takes runs: files are read by ``io`` at the entry points (``api``)."""
    for name, tree in _modules():
        if _layer(name) == "pairing":
            readers = [
                i for i in _imports(tree) if i == "evaldelta.io" or i.startswith("evaldelta.io.")
            ]
            assert not readers, f"{name} imports {readers}: load files in evaldelta.api"


def test_every_facade_is_there() -> None:
    """The list of upward imports holds no stale entry."""
    found = {
        (name, place, imported)
        for name, tree in _modules()
        for imported, place in _imports_with_place(tree)
        if place is not None
    }
    assert not FACADES - found, FACADES - found


def test_a_facade_import_at_load_is_caught() -> None:
    tree = ast.parse("from evaldelta.api import compare\n")
    ((imported, place),) = _imports_with_place(tree)
    assert (imported, place) == ("evaldelta.api", None)
    nested = ast.parse(
        "if TYPE_CHECKING:\n    from evaldelta.x import A\n"
        "class Run:\n    def compare(self):\n        from evaldelta.api import compare\n"
    )
    assert _imports_with_place(nested) == [("evaldelta.x", ""), ("evaldelta.api", "compare")]


#: The one place outside cli/ that reads the environment: ``evaluate()``, the library's
#: entry point for running a suite, which needs it for ``${VAR}`` and ``api_key_env``
#: just as the command does (and takes ``env=`` to be given another).
ENVIRONMENT_READERS = {("evaldelta.api", "evaluate")}


def _env_reads(tree: ast.Module) -> set[tuple[str, int]]:
    """(function, line) of each ``os.environ`` read, with the function it is in."""
    found: set[tuple[str, int]] = set()
    for fn in ast.walk(tree):
        if isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
            for node in ast.walk(fn):
                if (
                    isinstance(node, ast.Attribute)
                    and isinstance(node.value, ast.Name)
                    and f"{node.value.id}.{node.attr}" == "os.environ"
                ):
                    found.add((fn.name, node.lineno))
    return found


@pytest.mark.parametrize(("name", "tree"), _modules(), ids=_ids)
def test_core_is_pure(name: str, tree: ast.Module) -> None:
    """No printing, exiting, environment or global randomness outside cli/."""
    if _layer(name) == "cli" or name == "evaldelta.__main__":
        return
    allowed_env_lines = {line for fn, line in _env_reads(tree) if (name, fn) in ENVIRONMENT_READERS}
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Attribute)
            and getattr(node, "lineno", None) in allowed_env_lines
            and isinstance(node.value, ast.Name)
            and f"{node.value.id}.{node.attr}" == "os.environ"
        ):
            continue
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


def test_the_dashboard_starts_light() -> None:
    """`evaldelta serve` listens before numpy is loaded: the first page that needs a
    figure loads it."""
    loaded = _loaded_after(
        "from evaldelta.cli import build_parser\n"
        "build_parser()\n"
        "from evaldelta.serve import Dashboard, make_server\n"
        "make_server(Dashboard('runs.db'), '127.0.0.1', 0).server_close()"
    )
    assert "http.server" in loaded
    assert not {"numpy", "msgspec", "rich", "sqlite3"} & loaded


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
    # Nor the parts of evaldelta other commands use.
    unused = {
        "evaldelta.analysis._scorers",
        "evaldelta.store",
        "evaldelta.serve",
        "evaldelta.report._html",
        "evaldelta.report._frames",
    }
    assert not unused & loaded


def _package_graph() -> dict[str, set[str]]:
    """Each module's imports of other modules of its own package (at any place)."""
    modules = dict(_modules())
    graph: dict[str, set[str]] = {name: set() for name in modules}
    for name, tree in modules.items():
        package = name.rsplit(".", 1)[0] if name.count(".") >= 2 else None
        if package is None:
            continue
        imported: set[str] = set()
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                imported.update(a.name for a in node.names)
            elif isinstance(node, ast.ImportFrom) and node.module:
                imported.add(node.module)
                # ``from evaldelta.io import mapped`` imports the module io.mapped
                imported.update(f"{node.module}.{a.name}" for a in node.names)
        for target in imported:
            if target in modules and target != name and target.rsplit(".", 1)[0] == package:
                graph[name].add(target)
    return graph


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    found: list[list[str]] = []
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(node: str) -> None:
        state[node] = 1
        stack.append(node)
        for nxt in sorted(graph[node]):
            if state.get(nxt) == 1:
                found.append([*stack[stack.index(nxt) :], nxt])
            elif nxt not in state:
                visit(nxt)
        stack.pop()
        state[node] = 2

    for node in sorted(graph):
        if node not in state:
            visit(node)
    return found


def test_no_package_imports_itself_in_a_circle() -> None:
    """Inside a package, imports point one way too (an ``__init__`` re-exporting its
    modules is the package's face, not one of its rooms, and is left out)."""
    graph = {
        name: {t for t in targets if not t.endswith("__init__")}
        for name, targets in _package_graph().items()
    }
    packages = {name.rsplit(".", 1)[0] for name in graph}
    graph = {
        n: {t for t in ts if t not in packages} for n, ts in graph.items() if n not in packages
    }
    assert _cycles(graph) == []


def test_the_cycle_check_finds_a_cycle() -> None:
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == [["a", "b", "c", "a"]]
    assert _cycles({"a": {"b"}, "b": set()}) == []


def test_psycopg_is_loaded_only_for_a_postgresql_store(tmp_path: Path) -> None:
    """PostgreSQL's driver costs start-up time: no command loads it, not even one on an
    SQLite store, until a ``postgresql://`` store is opened."""
    store = tmp_path / "runs.db"
    loaded = _loaded_after(
        "import contextlib, io\n"
        "from evaldelta.cli import main\n"
        "with contextlib.redirect_stdout(io.StringIO()):\n"
        f"    main(['runs', 'list', '--store', {str(store)!r}])\n"
        "from evaldelta.store import open_store\n"
        f"open_store({str(store)!r}).close()"
    )
    assert "evaldelta.store" in loaded
    assert not {m for m in loaded if m.split(".")[0] in ("psycopg", "psycopg_binary")}
    opened = _loaded_after(
        "from evaldelta.store import RunStore\n"
        "try:\n"
        "    RunStore('postgresql://nobody@127.0.0.1:1/none')\n"
        "except Exception:\n"
        "    pass"
    )
    assert "psycopg" in opened
