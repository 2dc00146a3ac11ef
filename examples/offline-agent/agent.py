"""A small offline "agent" with two prompt versions, for trying evaldelta without a key.

It answers arithmetic, capitals, JSON and one-sentence questions the way a model
might: mostly right, sometimes wrong, differently on each attempt. Which answers
go wrong is decided by a hash of (version, test, attempt), so every run of the
example gives the same results. v2's prompt fixes most JSON answers and some
arithmetic, and makes brief answers wordier.
"""

from __future__ import annotations

import hashlib
import json
import re
import time
from typing import Any

CAPITALS = {
    "France": "Paris",
    "Japan": "Tokyo",
    "Kenya": "Nairobi",
    "Canada": "Ottawa",
    "Peru": "Lima",
    "Norway": "Oslo",
    "Egypt": "Cairo",
    "Chile": "Santiago",
    "Vietnam": "Hanoi",
    "Poland": "Warsaw",
    "Ghana": "Accra",
    "Portugal": "Lisbon",
}

#: How often each version slips, by category.
SLIPS = {
    "v1": {"math": 0.30, "facts": 0.08, "json": 0.45, "brief": 0.10},
    "v2": {"math": 0.12, "facts": 0.08, "json": 0.05, "brief": 0.35},
}
#: Dollars per token, in and out (a small model's price).
PRICE = (0.15e-6, 0.60e-6)


def _chance(*key: object) -> float:
    """A number in [0, 1) fixed by ``key``: the same attempt slips the same way."""
    digest = hashlib.sha256(repr(key).encode()).digest()
    return int.from_bytes(digest[:8], "big") / 2**64


def _answer(version: str, question: str, context: dict[str, Any]) -> dict[str, Any]:
    category = context.get("category") or ""
    rate = SLIPS[version].get(category, 0.0)
    # Where the prompt changes nothing, both versions slip on the same attempts.
    same = SLIPS["v1"].get(category) == SLIPS["v2"].get(category)
    slip = _chance("both" if same else version, context["id"], context["attempt"]) < rate
    time.sleep(0.010 if version == "v1" else 0.015)  # v2's longer prompt is slower
    if category == "math":
        a, op, b = re.search(r"(\d+) ([-+*]) (\d+)", question).groups()  # type: ignore[union-attr]
        value = {"+": int(a) + int(b), "-": int(a) - int(b), "*": int(a) * int(b)}[op]
        text = str(value + 1 if slip else value)
    elif category == "facts":
        country = question.rsplit(" ", 1)[-1].rstrip("?")
        text = "I am not sure." if slip else f"The capital of {country} is {CAPITALS[country]}."
    elif category == "json":
        name, age = re.search(r"user (\w+), aged (\d+)", question).groups()  # type: ignore[union-attr]
        user = json.dumps({"name": name, "age": int(age)})
        text = f"Here is the user: {user}" if slip else user
    else:
        topic = question.rsplit("use ", 1)[-1].rstrip("?")
        text = (
            f"Teams use {topic} for many reasons, and in this answer I will go through "
            "several of them one by one, starting with the most common."
            if slip
            else f"Teams use {topic} to catch problems early."
        )
    prompt_tokens = len(question.split()) + (40 if version == "v1" else 65)
    out_tokens = len(text.split())
    return {
        "output": text,
        "input_tokens": prompt_tokens,
        "output_tokens": out_tokens,
        "cost_usd": prompt_tokens * PRICE[0] + out_tokens * PRICE[1],
    }


def answer_v1(question: str, context: dict[str, Any]) -> dict[str, Any]:
    """The agent with its first prompt."""
    return _answer("v1", question, context)


def answer_v2(question: str, context: dict[str, Any]) -> dict[str, Any]:
    """The agent with the new prompt: "answer exactly in the format asked"."""
    return _answer("v2", question, context)
