"""evaldelta.cli._store: which run store the options name (``--store``, else
$EVALDELTA_STORE, else the default), how a store is shown (a URL without its password),
opening it (read-only for a reader who may not write it), telling a store file from a
results file, ``store.db`` / ``store.db:REF`` inputs (``run_from_store_file``) and run
references looked up in the store of the options (``stored_run``), with every message a
user can meet. No PostgreSQL server is connected to: URLs are only parsed and masked."""

from __future__ import annotations

import argparse
import os
from pathlib import Path

import pytest

import evaldelta.store._runstore as runstore
from evaldelta.cli import _store as cli_store
from evaldelta.cli._store import (
    REFERENCE_STORE_HELP,
    SQLITE_HEADER,
    STORE_HELP,
    is_store_file,
    open_store,
    open_store_of,
    run_from_store_file,
    shown,
    store_file_ref,
    store_path,
    stored_run,
)
from evaldelta.errors import InputError, StoreError
from evaldelta.model import Run
from evaldelta.store import DEFAULT_STORE, RunStore
from tests.conftest import run_evaldelta, write_jsonl

URL = "postgresql://ci:s3cret@db.example:5432/evals"


@pytest.fixture(autouse=True)
def _isolated(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Run in ``tmp_path``, with no $EVALDELTA_STORE: no store of the machine is seen."""
    monkeypatch.delenv("EVALDELTA_STORE", raising=False)
    monkeypatch.chdir(tmp_path)


def _run(name: str, score: float) -> Run:
    return Run.from_columns(
        source=f"{name}.jsonl",
        format="jsonl",
        test_id=["t0", "t1", "t2"],
        score=[score] * 3,
        extra={"doc": ["d0", "d1", "d0"]},
        texts={"input": ["q0", "q1", "q2"]},
    )


def _store(path: str, *runs: tuple[str, float]) -> str:
    """A store file holding a run per ``(name, score)``, ids from 1 in that order."""
    with RunStore(path) as store:
        for name, score in runs:
            store.import_run(_run(name, score), name=name)
    return path


def _ns(**given: object) -> argparse.Namespace:
    return argparse.Namespace(**given)


# -- the help texts -------------------------------------------------------------------------


def test_help_texts_name_the_default_store() -> None:
    assert os.path.join(".evaldelta", "runs.db") == DEFAULT_STORE
    assert STORE_HELP == (
        "the run store: a file, or postgresql://user@host:port/db for a team's "
        "(default: $EVALDELTA_STORE, else .evaldelta/runs.db)"
    )
    assert REFERENCE_STORE_HELP == (
        "run store in which RESULTS that are no file are looked up as run ids or names: a "
        "file, or postgresql://user@host:port/db (default: $EVALDELTA_STORE, else "
        ".evaldelta/runs.db)"
    )


def test_public_names() -> None:
    assert sorted(cli_store.__all__) == [
        "REFERENCE_STORE_HELP",
        "STORE_HELP",
        "open_store_of",
        "run_from_store_file",
        "shown",
        "store_file_ref",
        "store_path",
        "stored_run",
    ]


# -- store_path ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("option", "env", "expected"),
    [
        ("opt.db", "env.db", "opt.db"),  # --store wins
        ("opt.db", None, "opt.db"),
        (None, "env.db", "env.db"),
        ("", "env.db", "env.db"),  # an empty --store is none
        (None, None, DEFAULT_STORE),
        (None, "", DEFAULT_STORE),  # an empty EVALDELTA_STORE is none
        ("", "", DEFAULT_STORE),
        (URL, None, URL),
        (None, URL, URL),
    ],
)
def test_store_path(
    monkeypatch: pytest.MonkeyPatch, option: str | None, env: str | None, expected: str
) -> None:
    if env is not None:
        monkeypatch.setenv("EVALDELTA_STORE", env)
    assert store_path(_ns(store=option)) == expected


def test_store_path_of_a_command_without_store(monkeypatch: pytest.MonkeyPatch) -> None:
    assert store_path(_ns()) == DEFAULT_STORE
    monkeypatch.setenv("EVALDELTA_STORE", "env.db")
    assert store_path(_ns(command="serve")) == "env.db"


def test_empty_store_option_falls_back_to_the_environment_end_to_end(tmp_path: Path) -> None:
    _store("env.db", ("before", 0.2), ("after", 0.8))
    r = run_evaldelta(
        "compare",
        "before",
        "after",
        "--store",
        "",
        "--format",
        "json",
        env={"EVALDELTA_STORE": str(tmp_path / "env.db")},
        cwd=tmp_path,
    )
    assert r.code == 0, r.err
    assert '"baseline": "before (run 1)"' in r.out
    assert '"candidate": "after (run 2)"' in r.out


# -- shown ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("location", "expected"),
    [
        ("runs.db", "runs.db"),
        (".evaldelta/runs.db", ".evaldelta/runs.db"),
        ("odd:pass@word.db", "odd:pass@word.db"),  # a file, however it reads
        (URL, "postgresql://ci:***@db.example:5432/evals"),
        ("postgres://u:p@h/db", "postgres://u:***@h/db"),
        ("postgresql://ci@db/evals", "postgresql://ci@db/evals"),
        ("postgresql://", "postgresql://"),
        (
            "postgresql://db/evals?user=ci&password=hunter2&sslmode=require",
            "postgresql://db/evals?user=ci&password=***&sslmode=require",
        ),
        ("POSTGRESQL://u:p@h/db", "POSTGRESQL://u:***@h/db"),
    ],
)
def test_shown_masks_a_urls_password(location: str, expected: str) -> None:
    assert shown(location) == expected


# -- open_store_of / open_store -----------------------------------------------------------


def test_open_store_of_creates_the_store_named_when_asked() -> None:
    store = open_store_of(_ns(store=os.path.join("sub", "new.db")), create=True)
    try:
        assert (store.location, store.readonly, store.backend) == (
            os.path.join("sub", "new.db"),
            False,
            "sqlite",
        )
    finally:
        store.close()
    assert is_store_file(os.path.join("sub", "new.db"))


def test_open_store_of_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    _store("env.db", ("before", 0.2))
    monkeypatch.setenv("EVALDELTA_STORE", "env.db")
    with open_store_of(_ns(store=None)) as store:
        assert store.location == "env.db"
        assert [r.name for r in store.list_runs()] == ["before"]


def test_open_store_of_a_missing_store_without_create() -> None:
    with pytest.raises(StoreError) as exc:
        open_store_of(_ns(store="missing.db"))
    assert str(exc.value) == (
        "no run store at missing.db; store a run first with evaldelta.evaluate() or "
        "RunStore(PATH).import_run(), or choose a store with store=PATH"
    )
    assert exc.value.option == "store"
    assert not os.path.exists("missing.db")


def test_a_reader_opens_a_store_it_may_not_write_read_only(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    _store("s.db", ("before", 0.2))
    monkeypatch.setattr(runstore, "can_write", lambda path: False)
    with open_store("s.db", reading=True) as store:
        assert store.readonly is True
        assert store.find("before") == 1
        with pytest.raises(StoreError) as exc:
            store.rename_run(1, "renamed")
        assert str(exc.value) == (
            "s.db: opened for reading only (no write access to it or its folder), so it "
            "cannot rename the run; ask for write access, or copy the store"
        )
    # Reading it through the options does too, and finds the run.
    with open_store_of(_ns(store="s.db"), reading=True) as store:
        assert store.readonly is True


def test_a_store_that_may_be_written_is_opened_for_writing(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    _store("s.db", ("before", 0.2))
    with open_store("s.db", reading=True) as store:
        assert store.readonly is False
    monkeypatch.setattr(runstore, "can_write", lambda path: False)
    # Only a command that only reads gets a read-only store.
    with open_store("s.db") as store:
        assert store.readonly is False


def test_reading_a_store_that_is_not_there_yet(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(runstore, "can_write", lambda path: False)
    with open_store("new.db", reading=True, create=True) as store:
        assert store.readonly is False
    assert is_store_file("new.db")
    with pytest.raises(StoreError) as exc:
        open_store("other.db", reading=True)
    assert str(exc.value).startswith("no run store at other.db; ")


# -- is_store_file / store_file_ref -------------------------------------------------------


def test_sqlite_header() -> None:
    assert SQLITE_HEADER == b"SQLite format 3\x00"
    assert len(SQLITE_HEADER) == 16


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        (SQLITE_HEADER + b"\x00" * 100, True),
        (SQLITE_HEADER, True),  # the header alone is enough to be taken for a store
        (SQLITE_HEADER[:-1], False),
        (b"SQLite format 3 and then some text\n", False),  # no NUL after the 3
        (b'{"test_id": "t1", "score": 1}\n', False),
        (b"", False),
    ],
)
def test_is_store_file(content: bytes, expected: bool) -> None:
    Path("f").write_bytes(content)
    assert is_store_file("f") is expected


def test_is_store_file_of_a_real_store_and_of_what_is_no_file() -> None:
    _store("s.db", ("before", 0.2))
    os.mkdir("folder")
    assert is_store_file("s.db") is True
    assert is_store_file("folder") is False
    assert is_store_file("missing.db") is False
    assert is_store_file("") is False


def test_a_named_pipe_is_no_store_file_and_is_not_opened() -> None:
    os.mkfifo("pipe")  # opening it to read would wait for a writer forever
    assert is_store_file("pipe") is False
    assert store_file_ref("pipe") is None


def test_a_named_pipe_as_an_input_is_refused_at_once() -> None:
    os.mkfifo("pipe")
    write_jsonl(Path("b.jsonl"), [{"test_id": "t", "score": 1}])
    r = run_evaldelta("compare", "pipe", "b.jsonl")
    assert (r.code, r.out) == (2, "")
    assert r.err == "evaldelta: error: pipe: not a regular file\n"


def test_store_file_ref() -> None:
    _store("s.db", ("before", 0.2))
    _store("a:b.db", ("x", 0.2))
    write_jsonl(Path("res:v2.jsonl"), [{"test_id": "t", "score": 1}])
    assert store_file_ref("s.db") == ("s.db", None)
    assert store_file_ref("s.db:before") == ("s.db", "before")
    assert store_file_ref("s.db:7") == ("s.db", "7")
    # Only the last ":" splits.
    assert store_file_ref("s.db:before:x") is None
    assert store_file_ref("a:b.db") == ("a:b.db", None)
    assert store_file_ref("a:b.db:x") == ("a:b.db", "x")
    # Not a store: a results file with a ":", a name with nothing after the ":", ...
    assert store_file_ref("res:v2.jsonl") is None
    assert store_file_ref("s.db:") is None
    assert store_file_ref(":before") is None
    assert store_file_ref("missing.db:before") is None
    assert store_file_ref("before") is None
    assert store_file_ref(URL) is None


# -- run_from_store_file ------------------------------------------------------------------


def test_run_from_store_file_is_its_latest_run() -> None:
    _store("s.db", ("before", 0.2), ("after", 0.8))
    run = run_from_store_file(_ns(), "s.db", None)
    assert run.source == "s.db:after (run 2)"
    assert (run.format, len(run), run.score.tolist()) == ("jsonl", 3, [0.8, 0.8, 0.8])


@pytest.mark.parametrize(
    ("ref", "source", "score"),
    [
        ("before", "s.db:before (run 1)", 0.2),
        ("1", "s.db:before (run 1)", 0.2),
        ("2", "s.db:after (run 2)", 0.8),
    ],
)
def test_run_from_store_file_by_name_or_id(ref: str, source: str, score: float) -> None:
    _store("s.db", ("before", 0.2), ("after", 0.8))
    run = run_from_store_file(_ns(), "s.db", ref)
    assert (run.source, run.score.tolist()) == (source, [score] * 3)


def test_run_from_store_file_keeps_text_only_when_asked() -> None:
    _store("s.db", ("before", 0.2))
    assert run_from_store_file(_ns(), "s.db", None).texts is None
    texts = run_from_store_file(_ns(), "s.db", None, keep_text=True).texts
    assert texts is not None
    assert texts["input"] == ["q0", "q1", "q2"]


def test_run_from_store_file_with_the_fields_it_was_stored_with() -> None:
    _store("s.db", ("before", 0.2))
    run = run_from_store_file(_ns(), "s.db", "before", ("doc",))
    assert run.extra == {"doc": ["d0", "d1", "d0"]}


def test_run_from_store_file_without_a_field_asked_for() -> None:
    _store("s.db", ("before", 0.2))
    with pytest.raises(StoreError) as exc:
        run_from_store_file(_ns(), "s.db", "before", ("doc", "lang"))
    assert str(exc.value) == (
        "s.db:before (run 1) was stored without the field 'lang'; import it again with "
        "`evaldelta runs import FILE --keep-field lang` to group cases by it"
    )


def test_run_from_an_empty_store_file() -> None:
    RunStore("empty.db").close()
    with pytest.raises(InputError) as exc:
        run_from_store_file(_ns(), "empty.db", None)
    assert str(exc.value) == (
        "empty.db: the run store holds no runs; import one with "
        "`evaldelta runs import FILE --store empty.db`, or give a results file"
    )


@pytest.mark.parametrize(
    ("ref", "what"),
    [("nope", "named 'nope'"), ("9", "with id 9"), ("\u00b2", "named '\u00b2'")],
    ids=["name", "id", "superscript-is-a-name"],
)
def test_run_from_store_file_unknown_ref(ref: str, what: str) -> None:
    _store("s.db", ("before", 0.2))
    with pytest.raises(InputError) as exc:
        run_from_store_file(_ns(), "s.db", ref)
    assert str(exc.value) == (
        f"s.db:{ref}: no run {what} in the run store s.db; "
        "list its runs with `evaldelta runs list --store s.db`"
    )


def test_run_from_a_file_that_only_looks_like_a_store() -> None:
    Path("bad.db").write_bytes(SQLITE_HEADER + b"\x00" * 200)
    with pytest.raises(StoreError) as exc:
        run_from_store_file(_ns(), "bad.db", None)
    assert str(exc.value) == (
        "bad.db: not a run store evaldelta can read (file is not a database); "
        "choose another file with store=PATH"
    )


def test_run_from_a_store_file_that_may_not_be_written(monkeypatch: pytest.MonkeyPatch) -> None:
    _store("s.db", ("before", 0.2))
    monkeypatch.setattr(runstore, "can_write", lambda path: False)
    before = Path("s.db").read_bytes()
    assert run_from_store_file(_ns(), "s.db", "before").source == "s.db:before (run 1)"
    assert Path("s.db").read_bytes() == before


def test_run_from_store_file_ignores_the_store_of_the_options() -> None:
    _store("s.db", ("before", 0.2))
    _store("other.db", ("other", 0.9))
    run = run_from_store_file(_ns(store="other.db"), "s.db", None)
    assert run.source == "s.db:before (run 1)"


# -- stored_run ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("ref", "source"),
    [("before", "before (run 1)"), ("after", "after (run 2)"), ("1", "before (run 1)")],
)
def test_stored_run_by_name_or_id(ref: str, source: str) -> None:
    _store("s.db", ("before", 0.2), ("after", 0.8))
    run = stored_run(_ns(store="s.db"), ref)
    assert run is not None
    assert run.source == source


def test_stored_run_in_the_store_of_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    _store("env.db", ("before", 0.2))
    monkeypatch.setenv("EVALDELTA_STORE", "env.db")
    run = stored_run(_ns(), "before")
    assert run is not None
    assert run.source == "before (run 1)"


def test_stored_run_in_the_default_store() -> None:
    os.mkdir(".evaldelta")
    _store(DEFAULT_STORE, ("before", 0.2))
    run = stored_run(_ns(store=None), "1")
    assert run is not None
    assert run.source == "before (run 1)"


def test_stored_run_the_option_wins_over_the_environment(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    _store("opt.db", ("mine", 0.2))
    _store("env.db", ("theirs", 0.8))
    monkeypatch.setenv("EVALDELTA_STORE", "env.db")
    run = stored_run(_ns(store="opt.db"), "1")
    assert run is not None
    assert run.source == "mine (run 1)"


def test_stored_run_without_a_store_is_none() -> None:
    assert stored_run(_ns(store="missing.db"), "before") is None
    assert stored_run(_ns(store=None), "before") is None  # no .evaldelta/runs.db here
    assert not os.path.exists("missing.db")
    assert not os.path.exists(".evaldelta")


def test_stored_run_a_folder_is_no_store() -> None:
    os.mkdir("folder.db")
    assert stored_run(_ns(store="folder.db"), "before") is None


def test_stored_run_keeps_text_and_fields_as_asked() -> None:
    _store("s.db", ("before", 0.2))
    plain = stored_run(_ns(store="s.db"), "before")
    assert plain is not None
    assert plain.texts is None
    full = stored_run(_ns(store="s.db"), "before", ("doc",), keep_text=True)
    assert full is not None
    assert full.texts is not None
    assert full.texts["input"] == ["q0", "q1", "q2"]
    assert full.extra == {"doc": ["d0", "d1", "d0"]}


def test_stored_run_without_a_field_asked_for() -> None:
    _store("s.db", ("before", 0.2))
    with pytest.raises(StoreError) as exc:
        stored_run(_ns(store="s.db"), "before", ("topic",))
    assert str(exc.value) == (
        "before (run 1) was stored without the field 'topic'; import it again with "
        "`evaldelta runs import FILE --keep-field topic` to group cases by it"
    )


@pytest.mark.parametrize(
    ("ref", "what"), [("after.jsonl", "named 'after.jsonl'"), ("99", "with id 99")]
)
def test_stored_run_unknown_ref(ref: str, what: str) -> None:
    _store("s.db", ("before", 0.2))
    with pytest.raises(InputError) as exc:
        stored_run(_ns(store="s.db"), ref)
    assert str(exc.value) == (
        f"{ref}: no such file, and no stored run {what} in s.db; check the path, "
        "or list stored runs with `evaldelta runs list`"
    )


def test_stored_run_in_a_file_that_is_no_store() -> None:
    Path("notes.db").write_text("hello\n", encoding="utf-8")
    with pytest.raises(StoreError) as exc:
        stored_run(_ns(store="notes.db"), "before")
    assert str(exc.value) == (
        "notes.db: not a run store evaldelta can read (file is not a database); "
        "choose another file with store=PATH"
    )
    assert exc.value.option == "store"
    assert Path("notes.db").read_text(encoding="utf-8") == "hello\n"
