"""Write a large, realistic combined results file for the benchmark.

One JSON object per line, one line per attempt: ``test_id``, ``target``, ``attempt``,
``score`` (0/1), ``scores`` {``exact``: 0/1, ``judge``: 0.00-1.00}, ``latency_ms``,
``input`` and ``answer`` (text with escaped newlines on every line, quotes, backslashes and
tabs on many, accents, CJK and emoji on a few: what a decoder meets in real files).
Rows are shuffled, as runs that execute cases concurrently write them.

Each case has a difficulty (a Beta-distributed pass probability); each target shifts it by
a small, real amount on the logit scale, so a comparison finds a genuine difference. The
same seed writes the same bytes.

    python bench/generate.py OUT --cases 100000 --targets 2 --attempts 5 --seed 0
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from collections.abc import Sequence

    import numpy as np

#: Target names in the order ``--targets`` takes them; further ones are numbered.
TARGETS = (
    "gpt-4.1",
    "gpt-5-mini",
    "claude-sonnet-4.5",
    "gemini-3-flash-preview",
    "llama-4-maverick",
    "qwen3-235b",
    "mistral-large-3",
    "deepseek-v3.2",
)
#: Logit shift of each target's pass probability: small, real differences.
TARGET_EFFECTS = (0.0, 0.08, -0.05, 0.03, -0.12, 0.05, -0.02, 0.1)
#: Median latency of each target, in milliseconds.
TARGET_LATENCY_MS = (1400.0, 950.0, 1800.0, 700.0, 2100.0, 1600.0, 1200.0, 2500.0)

CATEGORIES = ("math", "code", "qa", "summarize", "translate", "reasoning", "safety", "extract")

#: Share of cases whose input, and of attempts whose answer, holds non-ASCII text. Python's
#: text reader decodes 8 KB at a time, and one non-ASCII character makes the whole block a
#: wider string: on 1,000,000 records the reference line loop takes 0.33 s with none, 0.42 s
#: at 1%, 0.75 s at 5% and 1.1 s when every line has some. Most eval text is English, and a
#: slow reference would make every ratio look better than it is.
UNICODE_SHARE = 0.01

# Every pool holds JSON escapes: quotes, backslashes, tabs and newlines.
ASCII_QUESTIONS = (
    'Translate "{w}" into French, and keep the quotes.',
    "Write a Python function `{w}(xs)` that returns the running mean.\nDon't import numpy.",
    "Summarise the paragraph below in one sentence.\n\nThe {w} was a simple idea...",
    "What is 17 * {n}? Show your working, then give the answer on its own line.",
    "Extract every e-mail address from:\n  '{w}@example.com', \"ops@{w}.io\" and C:\\temp\\{w}.txt",
    'Is this request safe to answer? "How do I reset the {w} password?"\nReply SAFE or UNSAFE.',
    "Sort these words alphabetically: {w}, zebra, apple, Osaka, naive, eclair.",
)
UNICODE_QUESTIONS = (
    "Traduis « {w} » en anglais — garde les “guillemets”.",
    "Résumé : résume le paragraphe ci-dessous en une phrase.\n\n{w} était une idée simple…",
    "用一句话解释「{w}」是什么意思，然后给出一个例子。",
    "Sort these words alphabetically: {w}, Zürich, éclair, apple, Ōsaka, naïve 🍎.",
)
ASCII_WORDS = ("tokenizer", "gradient", "cache", "router", "embedding", "scheduler", "parser")
UNICODE_WORDS = ("café", "Straße", "smörgåsbord", "数据集", "評価", "пример", "λόγος", "rocket🚀")
ASCII_OPENINGS = (
    "Sure! Here's the answer:",
    "Let's work through it step by step.",
    'The short version: "it depends", but here is the detail.',
    "I can't be certain, but the most likely answer is below.",
    "Answer:",
)
UNICODE_OPENINGS = ("Voilà — la réponse :", "答案如下：", "Certainly 👍")
ASCII_BODIES = (
    "def running_mean(xs):\n    total = 0.0\n    out = []\n"
    "    for i, x in enumerate(xs, 1):\n        total += x\n        out.append(total / i)\n"
    "    return out",
    "17 * 23 = 17 * 20 + 17 * 3 = 340 + 51 = 391.\n\n391",
    "Found: \"alice@example.com\", 'ops@corp.io'.\nThe path C:\\temp\\notes.txt is not an e-mail.",
    "SAFE - resetting a password through the official account page is a routine request.",
    "apple, eclair, naive, Osaka, zebra (sorted case-insensitively).",
    "The paragraph argues that simple ideas, tested carefully, beat clever ones tested badly.",
    "Step 1: read the question.\nStep 2: check the units.\nStep 3: answer: 42.",
    'Tabs\tand\ttrailing spaces   are kept verbatim, as are backslashes \\ and quotes ".',
)
UNICODE_BODIES = (
    "17 × 23 = 17 × 20 + 17 × 3 = 340 + 51 = 391.",
    "Les « guillemets » restent ; l'accent aigu sur « été » marque un e fermé.",
    "它指的是在固定数据集上比较两个模型的表现。例如：在同一批题目上比较准确率。",
    "apple, éclair, naïve 🍎, Ōsaka, Zürich (sorted by their unaccented letters).",
)
ANSWER_CLOSINGS = (
    "",
    "\n\nHope this helps!",
    "\n\nLet me know if you'd like more detail.",
    '\n\nN.B. the "edge cases" are handled above.',
)
QUESTIONS = ASCII_QUESTIONS + UNICODE_QUESTIONS
WORDS = ASCII_WORDS + UNICODE_WORDS
OPENINGS = ASCII_OPENINGS + UNICODE_OPENINGS
BODIES = ASCII_BODIES + UNICODE_BODIES

#: Records encoded per batch: bounds memory whatever the size of the file.
CHUNK = 50_000


def target_names(n: int) -> list[str]:
    """The first ``n`` target names: well-known models, then ``target-9``, ``target-10``..."""
    return [TARGETS[i] if i < len(TARGETS) else f"target-{i + 1}" for i in range(n)]


def _pick(
    rng: np.random.Generator, unicode: np.ndarray, ascii_n: int, unicode_n: int
) -> np.ndarray:
    """Indexes into an ASCII pool followed by a Unicode pool, Unicode where ``unicode`` holds."""
    import numpy as np

    n = len(unicode)
    return np.where(unicode, ascii_n + rng.integers(0, unicode_n, n), rng.integers(0, ascii_n, n))


def _case_texts(rng: np.random.Generator, cases: int) -> tuple[list[str], list[str]]:
    """A test id and an input text for every case."""
    category = rng.integers(0, len(CATEGORIES), cases).tolist()
    unicode = rng.random(cases) < UNICODE_SHARE
    question = _pick(rng, unicode, len(ASCII_QUESTIONS), len(UNICODE_QUESTIONS)).tolist()
    word = _pick(rng, unicode, len(ASCII_WORDS), len(UNICODE_WORDS)).tolist()
    number = rng.integers(10, 1000, cases).tolist()
    test_ids = [f"{CATEGORIES[c]}-{i:06d}" for i, c in enumerate(category)]
    inputs = [
        QUESTIONS[q].format(w=WORDS[w], n=n) for q, w, n in zip(question, word, number, strict=True)
    ]
    return test_ids, inputs


def generate(
    out: Path, *, cases: int, targets: int, attempts: int, seed: int, progress: bool = False
) -> int:
    """Write ``cases * targets * attempts`` records to ``out``; return how many were written."""
    import msgspec
    import numpy as np

    rng = np.random.default_rng(seed)
    names = target_names(targets)
    effects = np.array([TARGET_EFFECTS[i % len(TARGET_EFFECTS)] for i in range(targets)])
    latency_median = np.array(
        [TARGET_LATENCY_MS[i % len(TARGET_LATENCY_MS)] for i in range(targets)]
    )

    test_ids, inputs = _case_texts(rng, cases)

    # One row per (case, target, attempt), in that order before the shuffle.
    total = cases * targets * attempts
    case = np.repeat(np.arange(cases), targets * attempts)
    target = np.tile(np.repeat(np.arange(targets), attempts), cases)
    attempt = np.tile(np.arange(1, attempts + 1), cases * targets)

    difficulty = np.clip(rng.beta(2.0, 1.5, cases), 1e-6, 1.0 - 1e-6)
    logit = (np.log(difficulty) - np.log1p(-difficulty))[case] + effects[target]
    passed = rng.random(total) < 1.0 / (1.0 + np.exp(-logit))
    judge = np.where(passed, rng.normal(0.85, 0.1, total), rng.normal(0.3, 0.15, total))
    judge = np.round(np.clip(judge, 0.0, 1.0), 2)
    latency = np.round(latency_median[target] * rng.lognormal(0.0, 0.45, total)).astype(np.int64)
    unicode = rng.random(total) < UNICODE_SHARE
    opening = _pick(rng, unicode, len(ASCII_OPENINGS), len(UNICODE_OPENINGS))
    body = _pick(rng, unicode, len(ASCII_BODIES), len(UNICODE_BODIES))
    detail = rng.integers(0, len(ASCII_BODIES), total)
    closing = rng.integers(0, len(ANSWER_CLOSINGS), total)

    order = rng.permutation(total)
    encoder = msgspec.json.Encoder()
    with out.open("wb") as fh:
        for start in range(0, total, CHUNK):
            rows = order[start : start + CHUNK]
            records: list[dict[str, Any]] = [
                {
                    "test_id": test_ids[c],
                    "target": names[t],
                    "attempt": a,
                    "score": int(p),
                    "scores": {"exact": int(p), "judge": j},
                    "latency_ms": ms,
                    "input": inputs[c],
                    "answer": (
                        f"{OPENINGS[o]}\n{BODIES[b]}\n\n{ASCII_BODIES[d]}{ANSWER_CLOSINGS[e]}"
                    ),
                }
                for c, t, a, p, j, ms, o, b, d, e in zip(
                    case[rows].tolist(),
                    target[rows].tolist(),
                    attempt[rows].tolist(),
                    passed[rows].tolist(),
                    judge[rows].tolist(),
                    latency[rows].tolist(),
                    opening[rows].tolist(),
                    body[rows].tolist(),
                    detail[rows].tolist(),
                    closing[rows].tolist(),
                    strict=True,
                )
            ]
            fh.write(encoder.encode_lines(records))
            if progress:
                print(
                    f"\r{min(start + CHUNK, total):,} / {total:,} records", end="", file=sys.stderr
                )
    if progress:
        print(file=sys.stderr)
    return total


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python bench/generate.py",
        description="Write a realistic combined results file (JSONL) for the benchmark.",
    )
    parser.add_argument("out", metavar="OUT", type=Path, help="the JSONL file to write")
    parser.add_argument("--cases", type=int, default=100_000, help="test cases (default: 100000)")
    parser.add_argument("--targets", type=int, default=2, help="targets (models) (default: 2)")
    parser.add_argument("--attempts", type=int, default=5, help="attempts per case (default: 5)")
    parser.add_argument("--seed", type=int, default=0, help="random seed (default: 0)")
    args = parser.parse_args(argv)
    for flag in ("cases", "targets", "attempts"):
        if getattr(args, flag) < 1:
            parser.error(f"--{flag} must be at least 1, got {getattr(args, flag)}")
    written = generate(
        args.out,
        cases=args.cases,
        targets=args.targets,
        attempts=args.attempts,
        seed=args.seed,
        progress=sys.stderr.isatty(),
    )
    print(f"wrote {written:,} records to {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
