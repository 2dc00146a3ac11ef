"""The lm-evaluation-harness reader: a run's folder, one samples file, its results file,
metric values as lm-eval writes them, and every bad input it names."""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from evaldelta.errors import InputError, ParseError
from evaldelta.io import _lm_eval as lm_eval
from evaldelta.io._registry import _head
from tests.conftest import FIXTURES, write_jsonl

RUN_A = FIXTURES / "lm_eval" / "SYNTHETIC_model_A"
RUN_B = FIXTURES / "lm_eval" / "SYNTHETIC_model_B"
STAMP = "2025-06-01T12-00-00.000000"
GSM8K = RUN_A / f"samples_gsm8k_{STAMP}.jsonl"
SHARED = FIXTURES.parent.parent.parent / "shared" / "fixtures"

Make = Callable[..., Path]


@pytest.fixture
def samples(tmp_path: Path) -> Make:
    """Write a samples file (no results file beside it) from records or raw lines."""

    def make(
        records: list[dict[str, Any] | str], name: str = f"samples_demo_{STAMP}.jsonl"
    ) -> Path:
        return write_jsonl(tmp_path / name, records)

    return make


def _line(doc_id: int = 0, **fields: Any) -> dict[str, Any]:
    record: dict[str, Any] = {
        "doc_id": doc_id,
        "doc": {"question": f"q{doc_id}"},
        "target": "a",
        "arguments": {"gen_args_0": {"arg_0": "Q:", "arg_1": " a"}},
        "resps": [["a"]],
        "filtered_resps": ["a"],
        "filter": "none",
        "metrics": ["acc"],
        "doc_hash": f"h{doc_id}",
        "acc": 1.0,
    }
    record.update(fields)
    return record


# -- the fixture runs -------------------------------------------------------------------


def test_reads_a_run_folder() -> None:
    run = lm_eval.read(RUN_A)
    assert [r.test_id for r in run] == [
        "arc_easy/0",
        "arc_easy/1",
        "gsm8k/0/strict-match",
        "gsm8k/1/strict-match",
        "gsm8k/0/flexible-extract",
        "gsm8k/1/flexible-extract",
    ]
    assert run.score.tolist() == [1.0, 0.0, 1.0, 0.0, 1.0, 1.0]
    records = run.records()
    assert dict(records[0].scores) == {"acc": 1.0, "acc_norm": 1.0}
    assert dict(records[3].scores) == {"exact_match": 0.0}
    assert run.scorers == ["acc", "acc_norm", "exact_match"]
    assert [r.category for r in run] == ["arc_easy"] * 2 + ["gsm8k"] * 4
    assert run.target_names == ["EleutherAI/pythia-160m"]
    assert run.attempt.tolist() == [1] * 6
    # lm-eval records none of these: absent, never 0.
    for r in run:
        assert (r.passed, r.latency_ms, r.wait_ms, r.error) == (None, None, None, None)
        assert (r.input_tokens, r.output_tokens, r.cost_usd) == (None, None, None)
    assert (run.status, run.format, run.lines) == ("complete", "lm-eval", None)
    assert (run.started_at, run.finished_at) == (
        "2025-06-01T12:00:00+00:00",
        "2025-06-01T12:00:42.500000+00:00",
    )
    assert run.config == {
        "model": "EleutherAI/pythia-160m",
        "tasks": ["arc_easy", "gsm8k"],
        "backend": "hf",
        "random_seed": 0,
        "numpy_seed": 1234,
        "torch_seed": 1234,
        "fewshot_seed": 1234,
        "fewshot_as_multiturn": False,
        "lm_eval_version": "0.4.9",
        "arc_easy.version": 1.0,
        "arc_easy.num_fewshot": 0,
        "arc_easy.hash": "bf6076c13a9498e0a95fd5de55e5de6178c3cf7b8063457d02542adb78736a71",
        "gsm8k.version": 3.0,
        "gsm8k.num_fewshot": 0,
        "gsm8k.hash": "9159fe703f0084446780512e4b3685536ef44f92e213739ea1b54cfacf63f65e",
    }
    first = records[0]
    assert first.input["id"] == "Mercury_7175875"
    assert (first.expected, first.output[2]) == ("2", ["-9.75", "False"])
    assert records[3].output == "[invalid]"
    assert records[3].metadata == {
        "filter": "strict-match",
        "doc_hash": "22241afd0adb817e8ba1b5faf8edeeab0cd681c8ea443138dd6ec6cb9757407e",
        "prompt_hash": "af3ee865122c4332542e5063ddad0d3383c2c016fe42fd8ef83504ce0db9a12b",
        "target_hash": "493697d1ee03ca3ccdc97395467a4e691c5318a107a3cd86e5a6597f9f42af59",
    }


def test_one_samples_file_and_the_folder_agree() -> None:
    folder = lm_eval.read(RUN_A)
    one = lm_eval.read(GSM8K)
    assert one.records() != folder.records()[2:]  # only the lines differ
    assert [(r.test_id, r.score, dict(r.scores)) for r in one] == [
        (r.test_id, r.score, dict(r.scores)) for r in folder.records()[2:]
    ]
    assert [r.line for r in one] == [1, 2, 3, 4]
    assert one.target_names == folder.target_names
    assert one.config["tasks"] == ["gsm8k"]
    assert "arc_easy.hash" not in one.config
    assert one.input_hash.tolist() == folder.input_hash.tolist()[2:]


def test_results_file_reads_its_run() -> None:
    run = lm_eval.read(RUN_A / f"results_{STAMP}.json")
    assert run.records() == lm_eval.read(RUN_A).records()


def test_two_models_on_the_same_dataset() -> None:
    a, b = lm_eval.read(RUN_A), lm_eval.read(RUN_B)
    assert [r.test_id for r in a] == [r.test_id for r in b]
    assert a.input_hash.tolist() == b.input_hash.tolist()
    assert len(set(a.input_hash.tolist())) == 4  # two documents in each of two tasks
    # Only the model differs: model_args' pretrained= is the model, not a setting.
    assert [k for k in a.config if a.config[k] != b.config.get(k)] == ["model"]
    assert b.target_names == ["EleutherAI/pythia-410m"]
    assert b.score.tolist() == [1.0, 0.5, 1.0, 1.0, 1.0, 1.0]


def test_samples_without_results_file(tmp_path: Path) -> None:
    shutil.copy(GSM8K, tmp_path)
    run = lm_eval.read(tmp_path / GSM8K.name)
    assert run.target_names == []
    assert run.config == {"model": None, "tasks": ["gsm8k"]}
    assert (run.started_at, run.finished_at) == (None, None)
    assert len(run) == 4


def test_results_named_after_output_path(tmp_path: Path) -> None:
    # --output_path out/run.json makes run_<timestamp>.json beside the samples.
    shutil.copy(GSM8K, tmp_path)
    shutil.copy(RUN_A / f"results_{STAMP}.json", tmp_path / f"run_{STAMP}.json")
    assert lm_eval.read(tmp_path / GSM8K.name).target_names == ["EleutherAI/pythia-160m"]


def test_metric_values_as_lm_eval_writes_them(samples: Make) -> None:
    path = samples(
        [
            _line(0, metrics=["acc", "f1"], acc="True", f1="0.5"),
            _line(1, metrics=["acc", "inst"], acc=False, inst=[True, False, True, True]),
            # Corpus-level pairs (bleu) are not per-sample scores.
            _line(2, metrics=["acc", "bleu"], acc=1, bleu=[["a ref"], "a pred"]),
            _line(3, filter="maj@8"),
            '{"doc_id": 4, "doc": {"q": 4}, "filter": "none", "metrics": ["acc", "ppl"], '
            '"acc": 0.0, "ppl": NaN}',
        ]
    )
    run = lm_eval.read(path)
    assert [r.test_id for r in run] == ["demo/0", "demo/1", "demo/2", "demo/3/maj@8", "demo/4"]
    assert [dict(r.scores) for r in run] == [
        {"acc": 1.0, "f1": 0.5},
        {"acc": 0.0, "inst": 0.75},
        {"acc": 1.0},
        {"acc": 1.0},
        {"acc": 0.0},
    ]
    assert run.score.tolist() == [0.75, 0.375, 1.0, 1.0, 0.0]
    assert [r.line for r in run] == [1, 2, 3, 4, 5]


def test_old_files_without_metrics_list(samples: Make) -> None:
    line = _line(0, exact_match=1.0)
    del line["metrics"], line["acc"], line["doc_hash"]
    run = lm_eval.read(samples([line]))
    assert dict(run.records()[0].scores) == {"exact_match": 1.0}
    assert run.input_hash[0] != 0  # fingerprinted from the doc itself


def test_file_not_named_by_lm_eval(samples: Make) -> None:
    run = lm_eval.read(samples([_line(0)], name="gsm8k.jsonl"))
    assert [r.test_id for r in run] == ["gsm8k/0"]


def test_keep_text_false_and_extra_fields() -> None:
    run = lm_eval.read(RUN_A, keep_text=False, extra_fields=["prompt_hash", "id", "filter"])
    assert run.texts is None
    assert run.extra["prompt_hash"][0] == (
        "18a38ce966dd79d82ad53d9cbd967a02bb4578f1723b4b496db57968ffa22054"
    )
    assert run.extra["id"] == ["Mercury_7175875", "Mercury_SC_409171", None, None, None, None]
    assert run.extra["filter"][2:4] == ["strict-match", "strict-match"]


# -- bad input: each message says what, where and how to mend it -----------------------


@pytest.mark.parametrize(
    ("lines", "line", "message"),
    [
        (
            [_line(0), {"doc": {}, "metrics": ["acc"], "acc": 1}],
            2,
            'record has no "doc_id"; pass the samples file as lm-eval wrote it',
        ),
        (
            [_line(0), _line(1, metrics=["acc", "acc_norm"])],
            2,
            'record lists "acc_norm" in "metrics" but has no "acc_norm" value; '
            "the line was cut or edited: re-run lm-eval with --log_samples",
        ),
        (
            [_line(0, metrics=["bleu"], bleu=[["ref"], "pred"])],
            1,
            'doc 0: no metric is a per-sample score (bleu = [["ref"],"pred"]); lm-eval '
            "computes these over the whole corpus (bleu, perplexity...), which cannot be "
            "compared case by case: compare a task with per-sample metrics",
        ),
        (
            [_line(0), '{"doc_id": 1, "doc": {}, "metrics": ["acc"], "acc": NaN}'],
            2,
            "doc 1: every metric is NaN or null (acc), so there is no score; check the "
            "task's metrics on this document, or leave the task out",
        ),
        (
            [_line(0, metrics=[])],
            1,
            'doc 0: "metrics" is empty, so there is no score; pass the samples file as '
            "lm-eval wrote it",
        ),
        (
            [_line(0), '{"doc_id": 1, "doc": {}, "acc": '],
            2,
            "not valid JSON (Expecting value: line 1 column 33 (char 32)); each line must be "
            "one JSON object, as lm-eval writes it",
        ),
        (
            [_line(0), {**_line(1), "doc_id": [1]}],
            2,
            '"doc_id" must be an integer or a string, got a list',
        ),
        (
            [_line(0, metrics="acc")],
            1,
            '"metrics" must be a list, got a string',
        ),
        (
            [{"doc_id": 0, "doc": {}, "resps": []}],
            1,
            'record has no "metrics" and no metric values; pass the samples file as lm-eval '
            "wrote it (with --log_samples)",
        ),
    ],
)
def test_bad_lines_are_named(
    samples: Make, lines: list[dict[str, Any] | str], line: int, message: str
) -> None:
    path = samples(lines)
    with pytest.raises(ParseError) as info:
        lm_eval.read(path)
    assert (info.value.path, info.value.line, info.value.reason) == (str(path), line, message)
    assert str(info.value) == f"{path}:{line}: {message}"


def test_empty_samples_file(samples: Make) -> None:
    path = samples([])
    with pytest.raises(ParseError) as info:
        lm_eval.read(path)
    assert str(info.value) == (
        f"{path}: is empty: no samples to compare; check lm-eval ran with --log_samples"
    )


def test_folder_of_two_runs(tmp_path: Path) -> None:
    for source in (GSM8K, RUN_B / "samples_gsm8k_2025-06-02T09-30-00.000000.jsonl"):
        shutil.copy(source, tmp_path)
    with pytest.raises(InputError) as info:
        lm_eval.read(tmp_path)
    assert str(info.value) == (
        f"{tmp_path}: holds the samples of 2 lm-eval runs (2025-06-01T12-00-00.000000, "
        "2025-06-02T09-30-00.000000); pass one run's results_<timestamp>.json (its samples "
        "are read beside it) or one samples file"
    )


def test_folder_without_samples(tmp_path: Path) -> None:
    with pytest.raises(InputError) as info:
        lm_eval.read(tmp_path)
    assert str(info.value) == (
        f"{tmp_path}: no samples_<task>_<timestamp>.jsonl files in this folder; run lm-eval "
        "with --log_samples, and pass the folder it wrote them to"
    )


def test_results_file_without_samples(tmp_path: Path) -> None:
    path = tmp_path / f"results_{STAMP}.json"
    shutil.copy(RUN_A / path.name, path)
    with pytest.raises(InputError) as info:
        lm_eval.read(path)
    assert str(info.value) == (
        f"{path}: is an lm-eval results file without its per-sample results beside it "
        "(samples_<task>_<timestamp>.jsonl of the same timestamp); run lm-eval with "
        "--log_samples, or pass the samples files"
    )


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (
            '{"results": {}, "model_name": 7}',
            '"model_name" must be a string, got an integer',
        ),
        (
            '{"results": {',
            "is not valid JSON (Input data was truncated); pass the results file lm-eval wrote",
        ),
    ],
)
def test_bad_results_file(tmp_path: Path, content: str, message: str) -> None:
    shutil.copy(GSM8K, tmp_path)
    results = tmp_path / f"results_{STAMP}.json"
    results.write_text(content)
    with pytest.raises(ParseError) as info:
        lm_eval.read(tmp_path)
    assert str(info.value) == f"{results}: {message}"


# -- sniffing ---------------------------------------------------------------------------


def _every_fixture() -> list[Path]:
    roots = [FIXTURES, SHARED] if SHARED.is_dir() else [FIXTURES]
    return sorted(p for root in roots for p in root.rglob("*") if p.name != "README.md")


def test_sniff_claims_lm_eval_files_only() -> None:
    for path in _every_fixture():
        head = b"" if path.is_dir() else _head(path)
        mine = "SYNTHETIC_model_" in str(path)
        assert lm_eval.sniff(path, head) is mine, path
    agentv = b'{"test_id": "a", "target": "x", "score": 1}\n'
    assert not lm_eval.sniff(Path("results.jsonl"), agentv)
    renamed = json.dumps(_line(0)).encode() + b"\n"
    assert lm_eval.sniff(Path("anything.jsonl"), renamed)
    # A doc_id first, without the doc after it, is lm-eval only by its file name.
    bare = b'{"doc_id": 0, "acc": 1}\n'
    assert lm_eval.sniff(Path(f"samples_x_{STAMP}.jsonl"), bare)
    assert not lm_eval.sniff(Path("other.jsonl"), bare)
