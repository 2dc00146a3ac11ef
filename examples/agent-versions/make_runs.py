"""Write before.jsonl and after.jsonl: two versions of a support agent on the same
60 questions, 3 attempts each. Deterministic (seeded), so the README's output is
reproducible: python examples/agent-versions/make_runs.py
"""

from __future__ import annotations

import json
import random
from pathlib import Path

HERE = Path(__file__).parent
CATEGORIES = {
    # category: (baseline pass probability, candidate pass probability)
    "long_chain": (0.70, 0.45),
    "no_tool": (0.65, 0.95),
    "retrieval": (0.85, 0.90),
    "math": (0.80, 0.82),
}


def write(name: str, version: int, prompt: str, start: str) -> None:
    rng = random.Random(1000 + version)
    lines = []
    for i in range(60):
        category = list(CATEGORIES)[i % 4]
        p = CATEGORIES[category][version]
        for attempt in range(1, 4):
            ok = rng.random() < p
            wait = rng.choice([0, 0, 0, 250, 800])
            lines.append(
                {
                    "test_id": f"{category}-{i:02d}",
                    "target": "support-agent",
                    "attempt": attempt,
                    "score": 1.0 if ok else 0.0,
                    "category": category,
                    "latency_ms": round(rng.gauss(1650 - 110 * version, 300)) + wait,
                    "wait_ms": wait,
                    "cost_usd": round(rng.uniform(0.0018, 0.0026), 5),
                    "token_usage": {
                        "input": rng.randint(900, 1300),
                        "output": rng.randint(80, 260),
                    },
                    "input": f"Customer question #{i} ({category.replace('_', ' ')})",
                    "timestamp": f"{start}:{i % 60:02d}.000Z",
                    "config": {"model": "gpt-4.1", "prompt": prompt, "temperature": 0.2},
                }
            )
    (HERE / name).write_text("".join(json.dumps(x) + "\n" for x in lines), encoding="utf-8")


if __name__ == "__main__":
    write("before.jsonl", 0, "support-v1", "2026-11-30T09:15")
    write("after.jsonl", 1, "support-v2", "2026-11-30T11:40")
