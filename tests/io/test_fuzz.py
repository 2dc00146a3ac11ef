"""The fuzz suite: generated, mutated, truncated and wrong-typed inputs for every reader.

Whatever a file holds, reading it ends in one of two ways: a run (and then the same run
as its valid records give through the common model), or an :class:`EvalDeltaError`
naming the file. Never another exception, never more than a bounded amount of memory.

Seeded (``derandomize``): the same examples on every machine. ``EVALDELTA_FUZZ=long``
runs many more (``EVALDELTA_FUZZ_EXAMPLES=N`` sets the number).
"""

from __future__ import annotations

import copy
import json
import os
import tracemalloc
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from evaldelta.errors import EvalDeltaError
from evaldelta.io import load
from evaldelta.model import Record, Run

FIXTURES = Path(__file__).parent.parent / "fixtures"

_LONG = os.environ.get("EVALDELTA_FUZZ") == "long"
EXAMPLES = int(os.environ.get("EVALDELTA_FUZZ_EXAMPLES", "2000" if _LONG else "60"))
FUZZ = settings(
    max_examples=EXAMPLES,
    derandomize=True,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
    database=None,
)
#: What reading one small generated file may allocate at the most.
MEMORY_BOUND = 64 * 2**20

# -- what a file may hold -----------------------------------------------------------------

json_scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=12),
)
json_values = st.recursive(
    json_scalars,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4), st.dictionaries(st.text(max_size=6), inner, max_size=4)
    ),
    max_leaves=10,
)
test_ids = st.text(
    alphabet=st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00"),
    min_size=1,
    max_size=10,
).filter(lambda t: bool(t.strip()))
valid_records = st.fixed_dictionaries(
    {"test_id": test_ids, "score": st.floats(min_value=0, max_value=1)},
    optional={
        "target": st.sampled_from(["a", "b"]),
        "passed": st.booleans(),
        "latency_ms": st.floats(min_value=0, max_value=1e6),
        "cost_usd": st.floats(min_value=-1, max_value=1),
        "input": st.text(max_size=20),
        "output": st.text(max_size=20),
        "category": st.sampled_from(["x", "y"]),
    },
)


def _read(path: Path, **options: Any) -> Run | EvalDeltaError:
    """Read ``path``: the run, or the library's error; anything else fails the test."""
    tracemalloc.start()
    try:
        got: Run | EvalDeltaError = load(path, **options)
    except EvalDeltaError as exc:
        got = exc
    finally:
        _, peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
        assert peak < MEMORY_BOUND, f"reading {path.stat().st_size} bytes took {peak:,} bytes"
    if isinstance(got, EvalDeltaError):
        assert path.name in str(got), f"the error names no file: {got}"
    return got


# -- JSON Lines: the model's own records ---------------------------------------------------


@FUZZ
@given(records=st.lists(valid_records, min_size=1, max_size=8))
def test_valid_records_read_as_the_common_model_says(tmp_path: Path, records: list[Any]) -> None:
    path = tmp_path / "valid.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    run = _read(path)
    if isinstance(run, EvalDeltaError):
        # The one refusal valid fields may meet: a target on some records, not on all.
        assert "target" in str(run), run
        return
    expected = Run.from_records(
        [
            Record(
                r["test_id"],
                r["score"],
                target=r.get("target"),
                passed=r.get("passed"),
                latency_ms=r.get("latency_ms"),
                cost_usd=r.get("cost_usd"),
                category=r.get("category"),
            )
            for r in records
        ]
    )
    assert run.test_ids == expected.test_ids
    assert run.score.tolist() == expected.score.tolist()
    assert run.targets == expected.targets
    assert run.passed.tolist() == expected.passed.tolist()


mutations = st.sampled_from(["truncate", "retype", "garbage", "drop", "nest", "duplicate"])


@FUZZ
@given(
    records=st.lists(valid_records, min_size=1, max_size=6),
    how=mutations,
    where=st.integers(min_value=0, max_value=10_000),
    value=json_values,
    noise=st.binary(min_size=1, max_size=8),
)
def test_mutated_jsonl_is_read_or_refused_by_name(
    tmp_path: Path, records: list[Any], how: str, where: int, value: Any, noise: bytes
) -> None:
    lines = [json.dumps(r).encode() for r in records]
    i = where % len(lines)
    if how == "truncate":
        lines[i] = lines[i][: where % max(len(lines[i]), 1)]
    elif how == "retype":
        rec = dict(records[i])
        rec[sorted(rec)[where % len(rec)]] = value
        lines[i] = json.dumps(rec).encode()
    elif how == "garbage":
        cut = where % (len(lines[i]) + 1)
        lines[i] = lines[i][:cut] + noise + lines[i][cut:]
    elif how == "drop":
        rec = dict(records[i])
        rec.pop(sorted(rec)[where % len(rec)])
        lines[i] = json.dumps(rec).encode()
    elif how == "nest":
        rec = dict(records[i])
        rec["output"] = value
        lines[i] = json.dumps(rec).encode()
    else:
        lines.insert(i, lines[i])
    path = tmp_path / "mutated.jsonl"
    path.write_bytes(b"\n".join(lines) + b"\n")
    got = _read(path)
    if isinstance(got, Run):
        # Whatever was read is a run of the file's records: every score finite.
        assert bool(abs(got.score).max() <= 1e12) if len(got) else True


# -- CSV ----------------------------------------------------------------------------------


cells = st.one_of(
    st.floats(allow_nan=True, allow_infinity=True).map(repr),
    st.text(max_size=8),
    st.sampled_from(["", "true", "false", "0.5", "1", "０.5", "1_000", '"', ",", "\n"]),
)


@FUZZ
@given(rows=st.lists(st.tuples(test_ids, cells, cells), min_size=1, max_size=6))
def test_csv_is_read_or_refused_by_name(tmp_path: Path, rows: list[tuple[str, str, str]]) -> None:
    import csv

    path = tmp_path / "results.csv"
    with path.open("w", encoding="utf-8", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(["test_id", "score", "passed"])
        writer.writerows(rows)
    _read(path)


# -- the document formats: every fixture, mutated -----------------------------------------


DOCUMENTS = [
    ("promptfoo", FIXTURES / "promptfoo" / "sample-export.json"),
    ("inspect", FIXTURES / "inspect_ai" / "SYNTHETIC_epochs.json"),
    ("deepeval", FIXTURES / "deepeval" / "test_run_sample.json"),
    (
        "lm-eval",
        FIXTURES / "lm_eval" / "SYNTHETIC_model_A" / "results_2025-06-01T12-00-00.000000.json",
    ),
    ("openai-evals", FIXTURES / "openai_evals" / "output-items.jsonl"),
]


def _paths(tree: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Every place in a JSON tree, as the keys and indexes that lead there."""
    found = [prefix]
    if isinstance(tree, dict):
        for k, v in tree.items():
            found += _paths(v, (*prefix, k))
    elif isinstance(tree, list):
        for k, v in enumerate(tree[:6]):
            found += _paths(v, (*prefix, k))
    return found


def _replace(tree: Any, place: tuple[Any, ...], value: Any) -> Any:
    if not place:
        return value
    out = copy.copy(tree)
    out[place[0]] = _replace(tree[place[0]], place[1:], value)
    return out


def _delete(tree: Any, place: tuple[Any, ...]) -> Any:
    if len(place) == 1:
        out = copy.copy(tree)
        del out[place[0]]
        return out
    out = copy.copy(tree)
    out[place[0]] = _delete(tree[place[0]], place[1:])
    return out


@pytest.mark.parametrize(("fmt", "fixture"), DOCUMENTS, ids=[d[0] for d in DOCUMENTS])
def test_document_formats_are_read_or_refused_by_name(
    tmp_path: Path, fmt: str, fixture: Path
) -> None:
    lines = fixture.suffix == ".jsonl"
    text = fixture.read_text(encoding="utf-8")
    trees = [json.loads(t) for t in text.splitlines() if t.strip()] if lines else [json.loads(text)]

    @FUZZ
    @given(
        which=st.integers(min_value=0, max_value=10_000),
        where=st.integers(min_value=0, max_value=100_000),
        how=st.sampled_from(["replace", "delete", "truncate"]),
        value=json_values,
    )
    def check(which: int, where: int, how: str, value: Any) -> None:
        docs = list(trees)
        k = which % len(docs)
        places = _paths(docs[k])
        place = places[where % len(places)]
        if how == "replace":
            docs[k] = _replace(docs[k], place, value)
        elif how == "delete" and place:
            docs[k] = _delete(docs[k], place)
        body = "\n".join(json.dumps(d) for d in docs) if lines else json.dumps(docs[0])
        data = body.encode("utf-8")
        if how == "truncate":
            data = data[: where % max(len(data), 1)]
        target = tmp_path / fixture.name
        if fmt == "lm-eval":
            # The results file and its samples go together: mutate the results beside them.
            for sibling in fixture.parent.iterdir():
                if sibling.name != fixture.name:
                    (tmp_path / sibling.name).write_bytes(sibling.read_bytes())
        target.write_bytes(data)
        _read(target, format=fmt)

    check()
