"""An offline "agent" with two prompt versions, for trying ``--stop-when-settled``.

It answers arithmetic questions the way a model might: mostly right, sometimes off by
one. Which answers go wrong is decided by a hash of (version, test, attempt), so every
run gives the same results. v1 slips on about 30% of the questions, v2 on about 18%:
v2 is really better, by about 12 points, which a run against v1 can tell long before
it has asked all 1,000 questions (and its shorter prompt answers faster).
"""

from __future__ import annotations

import hashlib
import re
import time
from typing import Any

#: How often each version slips.
SLIPS = {"v1": 0.30, "v2": 0.18}
#: Dollars per token, in and out (a small model's price).
PRICE = (0.15e-6, 0.60e-6)


def _chance(*key: object) -> float:
    """A number in [0, 1) fixed by ``key``: the same attempt slips the same way."""
    digest = hashlib.sha256(repr(key).encode()).digest()
    return int.from_bytes(digest[:8], "big") / 2**64


def _answer(version: str, question: str, context: dict[str, Any]) -> dict[str, Any]:
    # A question v2 gets wrong, v1 mostly gets wrong too: the versions share the hard
    # questions, as two prompts of one model do.
    hard = _chance("hard", context["id"])
    slip = hard < SLIPS[version] or _chance(version, context["id"], context["attempt"]) < 0.02
    a, op, b = re.search(r"(\d+) ([-+*]) (\d+)", question).groups()  # type: ignore[union-attr]
    value = {"+": int(a) + int(b), "-": int(a) - int(b), "*": int(a) * int(b)}[op]
    text = str(value + 1 if slip else value)
    # A call takes a while; v2's shorter prompt answers in well under v1's time, so that
    # the latency, measured by the clock, stays on v2's side however busy the machine.
    time.sleep(0.020 if version == "v1" else 0.008)
    prompt_tokens = 350 + len(question.split())
    out_tokens = 180 + len(text)
    return {
        "output": text,
        "input_tokens": prompt_tokens,
        "output_tokens": out_tokens,
        "cost_usd": prompt_tokens * PRICE[0] + out_tokens * PRICE[1],
    }


def answer_v1(question: str, context: dict[str, Any]) -> dict[str, Any]:
    return _answer("v1", question, context)


def answer_v2(question: str, context: dict[str, Any]) -> dict[str, Any]:
    return _answer("v2", question, context)
