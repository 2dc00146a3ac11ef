"""The run store's API: a run stored and read back is the same run; references, lists,
renames and deletions; an import that fails halfway leaves nothing behind."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import evaldelta
from evaldelta.errors import PairingError, StoreError
from evaldelta.model import Run
from evaldelta.store import RunStore, dataset_hash, default_name, open_store
from evaldelta.store import _codec as codec
from tests.conftest import FIXTURES
from tests.store.conftest import synthetic_run

#: Every fixture evaldelta reads without options (zstd .eval logs need inspect_ai).
FIXTURE_FILES = sorted(
    p.relative_to(FIXTURES).as_posix()
    for p in FIXTURES.rglob("*")
    if p.is_file() and p.suffix != ".md" and p.name not in ("mapped.csv",) and "zstd" not in p.name
)


def same_run(a: Run, b: Run) -> None:
    """``b`` holds what ``a`` holds: records, and the facts fairness checks read."""
    assert b.records() == a.records()
    assert (b.status, b.config, b.started_at, b.finished_at, b.format) == (
        a.status,
        a.config,
        a.started_at,
        a.finished_at,
        a.format,
    )
    assert b.input_hash.tolist() == a.input_hash.tolist()
    assert (b.test_ids, b.targets, b.categories, b.scorers) == (
        a.test_ids,
        a.targets,
        a.categories,
        a.scorers,
    )
    assert b.extra == a.extra
    assert b.texts == a.texts
    for name in Run.__slots__:
        value = getattr(b, name)
        if isinstance(value, np.ndarray):
            assert value.dtype == getattr(a, name).dtype, name


def test_every_fixture_format_round_trips() -> None:
    assert len(FIXTURE_FILES) >= 30
    formats = set()
    with open_store(":memory:") as store:
        for rel in FIXTURE_FILES:
            run = evaldelta.load(FIXTURES / rel, keep_text=True)
            formats.add(run.format)
            back = store.get_run(store.add_run(run, name="r"), keep_text=True)
            same_run(run, back)
    assert formats == {
        "jsonl",
        "csv",
        "deepeval",
        "inspect",
        "lm-eval",
        "openai-evals",
        "parquet",
        "promptfoo",
    }


@pytest.mark.parametrize("rel", ["csv/mapped.csv", "lm_eval/SYNTHETIC_model_A"])
def test_mapped_files_and_run_folders_round_trip(rel: str, store: RunStore) -> None:
    mapping = (
        {"test_id": "question_id", "target": "model", "score": "correct", "category": "difficulty"}
        if rel.endswith(".csv")
        else None
    )
    run = evaldelta.load(FIXTURES / rel, mapping=mapping)
    same_run(run, store.get_run(store.add_run(run)))


def test_the_store_says_which_database_it_lives_in(store: RunStore, location: str) -> None:
    assert store.backend == ("postgresql" if location.startswith("postgresql://") else "sqlite")


def test_without_text_and_with_extra_fields(store: RunStore) -> None:
    run = evaldelta.load(FIXTURES / "combined-results.jsonl", extra_fields=("timestamp",))
    rid = store.add_run(run)
    back = store.get_run(rid, keep_text=False)
    assert back.texts is None
    assert back.extra == run.extra
    assert run.extra["timestamp"][0] is not None
    without = evaldelta.load(FIXTURES / "combined-results.jsonl", keep_text=False)
    assert back.records() == without.records()


def test_big_run_in_many_chunks(store: RunStore, monkeypatch: pytest.MonkeyPatch) -> None:
    """Chunks are cut by record count, and a too-big chunk of text is split in two."""
    monkeypatch.setattr(codec, "NUMERIC_CHUNK", 1000)
    monkeypatch.setattr(codec, "OBJECT_CHUNK", 512)
    monkeypatch.setattr(codec, "MAX_BLOB", 2000)
    run = synthetic_run(1500, attempts=2)
    texts = {"input": [f"question {i // 2}" * 5 for i in range(len(run))]}
    object.__setattr__(run, "texts", texts)
    rid = store.add_run(run)
    chunks = dict(
        store._conn.execute(
            "SELECT name, count(*) FROM record_columns WHERE run = ? GROUP BY name", (rid,)
        ).fetchall()
    )
    assert chunks["score"] == 3
    assert chunks["text:input"] > 6  # 512 records of ~50 bytes exceed 2,000 bytes
    same_run(run, store.get_run(rid))


def test_facts_kept_with_the_run(store: RunStore) -> None:
    run = synthetic_run(20)
    rid = store.add_run(run, name="before", config={"prompt": "v1"}, notes="first try")
    info = store.info(rid)
    assert (info.id, info.name, info.status, info.format, info.notes) == (
        1,
        "before",
        "complete",
        "jsonl",
        "first try",
    )
    assert info.config == {"model": "m", "temperature": 0.2, "prompt": "v1"}
    assert (info.records, info.cases, info.targets) == (20, 20, ["model-0"])
    assert (info.started_at, info.finished_at) == ("2026-01-01T00:00:00Z", "2026-01-01T01:00:00Z")
    assert info.created_at.endswith("Z")
    assert len(info.created_at) == 20
    back = store.get_run("before")
    assert back.config == info.config
    assert back.source == "before (run 1)"


def test_config_given_wins_over_the_declared_one(store: RunStore) -> None:
    rid = store.add_run(synthetic_run(3), config={"temperature": 0.7})
    assert store.get_run(rid).config == {"model": "m", "temperature": 0.7}


def test_dataset_hash_agrees_with_compare(store: RunStore) -> None:
    run = evaldelta.load(FIXTURES / "baseline.jsonl")
    rid = store.add_run(run)
    c = evaldelta.compare(run, evaldelta.load(FIXTURES / "candidate.jsonl"))
    assert c.analysis is not None
    shown = c.analysis.dataset.baseline_hash
    assert store.info(rid).dataset_hash[: len(shown)] == shown
    assert dataset_hash(run) == store.info(rid).dataset_hash
    # Same questions, same hash; another input, another hash.
    edited = Run.from_columns(
        source="x", format="jsonl", test_id=["a"], score=[1.0], input_hash=[5]
    )
    assert dataset_hash(edited) != dataset_hash(
        Run.from_columns(source="y", format="jsonl", test_id=["a"], score=[0.0], input_hash=[6])
    )


def test_interrupted_run_stays_interrupted(store: RunStore) -> None:
    run = evaldelta.load(FIXTURES / "openai_evals" / "oaieval-interrupted.jsonl")
    assert run.status == "interrupted"
    assert store.get_run(store.add_run(run)).status == "interrupted"


# -- import_run: one stored run per target --------------------------------------------


def test_import_splits_targets(store: RunStore) -> None:
    run = evaldelta.load(FIXTURES / "combined-results.jsonl")
    ids = store.import_run(run, name="bench")
    assert [store.info(i).name for i in ids] == [f"bench/{t}" for t in run.target_names]
    for rid, target in zip(ids, run.target_names, strict=True):
        same_run(run.select_target(target), store.get_run(rid))


def test_import_one_target(store: RunStore) -> None:
    run = evaldelta.load(FIXTURES / "combined-results.jsonl")
    (rid,) = store.import_run(run, name="bench", target="gpt-4.1")
    assert store.info(rid).name == "bench"
    same_run(run.select_target("gpt-4.1"), store.get_run(rid))
    with pytest.raises(PairingError, match="no records for target 'nope'"):
        store.import_run(run, target="nope")


def test_import_names_the_run_after_its_file(store: RunStore) -> None:
    (rid,) = store.import_run(evaldelta.load(FIXTURES / "baseline.jsonl"))
    assert store.info(rid).name == "baseline"
    assert default_name("results/run.2.jsonl.gz") == "run.2"
    assert default_name("logs/SYNTHETIC_model_A") == "SYNTHETIC_model_A"


def test_import_refuses_a_mix_of_named_and_unnamed_targets(store: RunStore) -> None:
    run = Run.from_columns(
        source="mixed.jsonl", format="jsonl", test_id=["a", "a"], score=[1, 0], target=["x", None]
    )
    with pytest.raises(StoreError) as err:
        store.import_run(run)
    assert str(err.value) == (
        "mixed.jsonl: some records name a target (x) and some do not; give every record "
        "a target, or pick one with target=TARGET"
    )
    assert err.value.option == "target"
    assert store.list_runs() == []


# -- references, lists, renames, deletions --------------------------------------------


def test_references(store: RunStore) -> None:
    first = store.add_run(synthetic_run(3), name="main")
    second = store.add_run(synthetic_run(4), name="main")
    other = store.add_run(synthetic_run(5), name="pr-12")
    assert store.resolve("main") == second  # the latest of that name
    assert store.resolve(str(first)) == store.resolve(first) == first
    assert store.resolve("pr-12") == other
    assert store.find("nope") is None
    path = store.location
    with pytest.raises(StoreError) as err:
        store.get_run(99)
    assert str(err.value) == f"run 99 not found in {path}; list runs with `evaldelta runs list`"
    with pytest.raises(StoreError) as err:
        store.get_run("nope")
    assert str(err.value) == f"no run named 'nope' in {path}; list runs with `evaldelta runs list`"


@pytest.mark.parametrize(
    ("name", "message"),
    [
        ("", "a run's name cannot be empty; give one with name=NAME"),
        (" ", "a run's name cannot be empty; give one with name=NAME"),
        (
            "42",
            "a run cannot be named '42': a number refers to a run by id; "
            "choose a name with a letter in it",
        ),
    ],
)
def test_bad_names(store: RunStore, name: str, message: str) -> None:
    with pytest.raises(StoreError) as err:
        store.add_run(synthetic_run(2), name=name)
    assert str(err.value) == message
    rid = store.add_run(synthetic_run(2), name="ok")
    with pytest.raises(StoreError) as err:
        store.rename_run(rid, name)
    assert str(err.value) == message
    assert [r.name for r in store.list_runs()] == ["ok"]


def test_empty_run_is_refused(store: RunStore) -> None:
    empty = Run.from_columns(source="empty.jsonl", format="jsonl", test_id=[], score=[])
    with pytest.raises(
        StoreError, match=r"^empty.jsonl: has no records; there is nothing to store$"
    ):
        store.add_run(empty)


def test_list_newest_first_with_glob_and_limit(store: RunStore) -> None:
    for name in ("main", "main", "pr-1", "pr-2"):
        store.add_run(synthetic_run(2), name=name)
    assert [(r.id, r.name) for r in store.list_runs()] == [
        (4, "pr-2"),
        (3, "pr-1"),
        (2, "main"),
        (1, "main"),
    ]
    assert [r.id for r in store.list_runs(pattern="pr-*")] == [4, 3]
    assert [r.id for r in store.list_runs(name="main")] == [2, 1]
    assert [r.id for r in store.list_runs(limit=2)] == [4, 3]
    assert store.list_runs(pattern="nothing*") == []
    assert store.list_runs(name="pr-*") == []  # a name is exact, never a glob


def test_list_by_a_name_that_looks_like_a_glob(store: RunStore) -> None:
    for name in ("qa[v2]", "qav", "qa2"):
        store.add_run(synthetic_run(2), name=name)
    assert [r.name for r in store.list_runs(name="qa[v2]")] == ["qa[v2]"]
    assert [r.name for r in store.list_runs(pattern="qa[v2]")] == ["qa2", "qav"]
    assert [r.name for r in store.list_runs(name="qa[v2]", pattern="qa*")] == ["qa[v2]"]


def test_rename(store: RunStore) -> None:
    rid = store.add_run(synthetic_run(2), name="before")
    assert store.rename_run("before", "baseline").name == "baseline"
    assert store.resolve("baseline") == rid
    assert store.find("before") is None


def test_delete_takes_the_records_and_never_reuses_the_id(store: RunStore) -> None:
    keep = store.add_run(synthetic_run(3), name="keep")
    gone = store.add_run(synthetic_run(3), name="gone")
    assert store.delete_run("gone").id == gone
    count = store._conn.execute(
        "SELECT count(*) FROM record_columns WHERE run = ?", (gone,)
    ).fetchone()[0]
    assert count == 0
    assert [r.id for r in store.list_runs()] == [keep]
    assert store.add_run(synthetic_run(3)) == gone + 1
    with pytest.raises(StoreError, match="run 2 not found"):
        store.delete_run(gone)


# -- atomicity ------------------------------------------------------------------------


def _raising_after(count: int) -> Any:
    original = codec.encode_run

    def encode(run: Run) -> Any:
        for i, chunk in enumerate(original(run)):
            if i == count:
                raise RuntimeError("disk on fire")
            yield chunk

    return encode


@pytest.mark.parametrize("error", [RuntimeError, KeyboardInterrupt])
def test_an_import_that_fails_halfway_leaves_nothing(
    store: RunStore, monkeypatch: pytest.MonkeyPatch, error: type[BaseException]
) -> None:
    kept = store.add_run(synthetic_run(10), name="kept")
    original = codec.encode_run
    calls = []

    def encode(run: Run) -> Any:
        calls.append(run)
        for i, chunk in enumerate(original(run)):
            if len(calls) == 2 and i == 8:
                raise error("stop")
            yield chunk

    monkeypatch.setattr(codec, "encode_run", encode)
    run = evaldelta.load(FIXTURES / "combined-results.jsonl")
    with pytest.raises(error):
        store.import_run(run, name="split")  # the first target is written, the second fails
    monkeypatch.undo()

    assert [r.id for r in store.list_runs()] == [kept]
    rows = store._conn.execute("SELECT DISTINCT run FROM record_columns").fetchall()
    assert rows == [(kept,)]
    # Still usable. (PostgreSQL spends the ids a failed import took: never reused either.)
    ids = store.import_run(run, name="split")
    assert len(ids) == 3
    assert kept < ids[0] < ids[1] < ids[2]


def test_the_file_holds_no_partial_run_after_a_failed_import(
    store_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with open_store(store_path) as store:
        monkeypatch.setattr(codec, "encode_run", _raising_after(5))
        with pytest.raises(RuntimeError):
            store.add_run(synthetic_run(10))
    conn = sqlite3.connect(store_path)
    assert conn.execute("SELECT count(*) FROM runs").fetchone()[0] == 0
    assert conn.execute("SELECT count(*) FROM record_columns").fetchone()[0] == 0
    assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    conn.close()


# -- figures kept with each run (schema version 2) -------------------------------------


def test_figures_are_kept_when_a_run_is_stored(store: RunStore) -> None:
    from evaldelta.analysis._summary import summarise

    run = evaldelta.load(FIXTURES / "combined-results.jsonl")
    whole = store.add_run(run, name="all")
    (one,) = store.import_run(run, name="bench", target="gpt-4.1")
    rows = store._conn.execute(
        "SELECT run, position, target, pass_threshold FROM run_summaries ORDER BY run, position"
    ).fetchall()
    assert rows == [
        (whole, 0, "gemini-3-flash-preview", 0.5),
        (whole, 1, "gpt-4.1", 0.5),
        (whole, 2, "gpt-5-mini", 0.5),
        (one, 0, "gpt-4.1", 0.5),
    ]
    assert store.summary("all") == summarise(run)
    assert store.summary(one) == summarise(run.select_target("gpt-4.1"))
    big = synthetic_run(500, attempts=3, targets=2)
    assert store.summary(store.add_run(big, name="big")) == summarise(big)
    store.delete_run("all")
    assert store._conn.execute(
        "SELECT count(*) FROM run_summaries WHERE run = ?", (whole,)
    ).fetchone() == (0,)
    with pytest.raises(StoreError):
        store.summaries([one, 99])


# -- progress ---------------------------------------------------------------------------


class Calls(list[tuple[int, int]]):
    """A progress callback that keeps what it is told."""

    def __call__(self, done: int, total: int) -> None:
        self.append((done, total))


def _check_progress(calls: Calls) -> None:
    assert calls
    totals = {total for _, total in calls}
    assert len(totals) == 1
    done = [d for d, _ in calls]
    assert done == sorted(done)
    assert calls[-1] == (totals.pop(),) * 2


def test_column_names_are_those_encode_run_writes() -> None:
    for run in (
        synthetic_run(20_000, targets=2),
        evaldelta.load(FIXTURES / "combined-results.jsonl", extra_fields=("answer",)),
        evaldelta.load(FIXTURES / "baseline.jsonl", keep_text=False),
    ):
        names = list(dict.fromkeys(chunk.name for chunk in codec.encode_run(run)))
        assert codec.column_names(run) == names


def test_storing_tells_how_far_it_has_got(store: RunStore, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(codec, "NUMERIC_CHUNK", 100)  # many chunks per column
    run = synthetic_run(1000, targets=3)
    calls = Calls()
    ids = store.import_run(run, name="r", progress=calls)
    assert len(ids) == 3
    _check_progress(calls)
    per_target = len(run) // 3
    assert calls[-1][1] == sum(
        per_target * len(codec.column_names(run.select_target(t))) for t in run.target_names
    )
    assert len(calls) > len(codec.column_names(run)) * 3  # within columns too

    calls = Calls()
    store.add_run(run, name="whole", progress=calls)
    _check_progress(calls)
    assert calls[-1][1] == len(run) * len(codec.column_names(run))


def test_reading_tells_how_many_bytes_have_been_read(store: RunStore) -> None:
    rid = store.add_run(evaldelta.load(FIXTURES / "baseline.jsonl"), name="r")
    stored = store._conn.execute(
        "SELECT sum(length(data)), count(*) FROM record_columns WHERE run = ?", (rid,)
    ).fetchone()
    calls = Calls()
    run = store.get_run(rid, progress=calls)
    _check_progress(calls)
    assert calls[0] == (0, stored[0])
    assert len(calls) == stored[1] + 1
    same_run(evaldelta.load(FIXTURES / "baseline.jsonl"), run)
    calls = Calls()
    store.get_run(rid, keep_text=False, progress=calls)
    assert calls[-1][1] < stored[0]  # the texts are not read


def test_a_failed_import_reports_no_end(store: RunStore) -> None:
    calls = Calls()
    bad = synthetic_run(10)
    with pytest.raises(StoreError):
        store.add_run(bad, name="12", progress=calls)
    assert calls == []


def test_a_store_is_read_while_another_process_holds_the_write_lock(
    store: RunStore, location: str
) -> None:
    """Opening an up-to-date store takes no write lock: listing, showing and reading
    runs work while an import (here: a held write transaction) is under way."""
    rid = store.add_run(evaldelta.load(FIXTURES / "baseline.jsonl"), name="before")
    with RunStore(location) as writer:
        writer._conn.execute(writer._dialect.begin_write)
        writer._conn.execute("INSERT INTO suites (name, created_at) VALUES ('qa', 'now')")
        with RunStore(location, create=False, timeout=0.2) as reader:
            assert [r.id for r in reader.list_runs()] == [rid]
            assert len(reader.get_run("before")) == 3
            assert reader.find("before") == rid
            assert reader.list_suites() == []
        writer._conn.execute("ROLLBACK")


def test_only_ascii_digits_refer_to_a_run_by_id(store: RunStore) -> None:
    rid = store.add_run(evaldelta.load(FIXTURES / "baseline.jsonl"), name="²")
    assert store.resolve("²") == rid  # a name: "²" is no id
    assert store.find("²") == rid
    assert store.find(str(rid + 1)) is None
    with pytest.raises(StoreError, match="a number refers to a run by id"):
        store.add_run(evaldelta.load(FIXTURES / "baseline.jsonl"), name="12")


def test_find_says_none_only_for_a_missing_run(store: RunStore) -> None:
    """A store that cannot be read is an error, not a missing run."""
    assert store.find("nothing-of-that-name") is None
    store.close()
    with pytest.raises(StoreError):
        store.find("nothing-of-that-name")
