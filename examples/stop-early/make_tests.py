"""Write tests.jsonl: 1,000 arithmetic questions with their answers (seeded, so the
file is the same every time): python examples/stop-early/make_tests.py"""

from __future__ import annotations

import json
import random
from pathlib import Path

HERE = Path(__file__).parent


def main() -> None:
    rng = random.Random(12)
    lines = []
    for i in range(1, 1001):
        a, b, op = rng.randint(10, 99), rng.randint(10, 99), rng.choice("+-*")
        value = {"+": a + b, "-": a - b, "*": a * b}[op]
        lines.append(
            {
                "id": f"q{i:04d}",
                "input": f"What is {a} {op} {b}? Reply with the number only.",
                "expected_output": str(value),
                "assert": [{"type": "numeric", "value": value}],
            }
        )
    with open(HERE / "tests.jsonl", "w", encoding="utf-8") as fh:
        fh.writelines(json.dumps(line) + "\n" for line in lines)


if __name__ == "__main__":
    main()
