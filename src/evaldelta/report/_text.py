"""Small text helpers for terminal renderers: colour that can be switched off, and
padding that counts wide (CJK) characters as two columns."""

from __future__ import annotations

import math
import unicodedata
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from evaldelta.analysis._comparison import Comparison, MatrixComparison
from evaldelta.pairing._matrix import MatrixPairing
from evaldelta.pairing._pairwise import Pairing

if TYPE_CHECKING:
    from evaldelta.analysis import Analysis
    from evaldelta.stats import Interval

#: What a pairwise renderer formats: a comparison (with statistics and a verdict), or a
#: plain pairing (the specs' output: cases, wins and losses, mean delta).
Pairwise = Comparison | Pairing
#: What a matrix renderer formats: the same, for every target of a combined run.
Matrix = MatrixComparison | MatrixPairing

_CODES = {
    "bold": "1",
    "dim": "2",
    "red": "31",
    "green": "32",
    "yellow": "33",
    "cyan": "36",
    "gray": "90",
}


class Style:
    """Wraps text in ANSI colour codes, or leaves it alone when colour is off."""

    def __init__(self, color: bool) -> None:
        self.color = color

    def __call__(self, text: str, *styles: str) -> str:
        if not self.color or not styles or not text:
            return text
        codes = ";".join(_CODES[s] for s in styles)
        return f"\x1b[{codes}m{text}\x1b[0m"


#: Glyphs the tables use, and plain-ASCII stand-ins for terminals that lack them.
UNICODE_GLYPHS = {"win": "✓ win", "loss": "✗ loss", "arrow": "→", "rule": "─", "delta": "Δ"}
ASCII_GLYPHS = {"win": "+ win", "loss": "x loss", "arrow": "->", "rule": "-", "delta": "delta"}


def printable(text: str) -> str:
    """``text`` with control characters (newlines, escape codes...) shown escaped, so
    that an id from a results file can neither break a table row nor drive the terminal."""
    if text.isprintable():
        return text
    return "".join(ch if ch.isprintable() else repr(ch)[1:-1] for ch in text)


def width(text: str) -> int:
    """Columns ``text`` takes in a terminal (ANSI codes not counted)."""
    if text.isascii():
        return len(text) - _ansi_len(text)
    cols = 0
    for ch in text:
        if unicodedata.combining(ch):
            continue
        cols += 2 if unicodedata.east_asian_width(ch) in ("W", "F") else 1
    return cols - _ansi_len(text)


def _ansi_len(text: str) -> int:
    if "\x1b[" not in text:
        return 0
    import re

    return sum(len(m) for m in re.findall(r"\x1b\[[0-9;]*m", text))


def ljust(text: str, cols: int) -> str:
    return text + " " * max(0, cols - width(text))


def rjust(text: str, cols: int) -> str:
    return " " * max(0, cols - width(text)) + text


def plural(n: int, one: str, many: str) -> str:
    return f"{n} {one if n == 1 else many}"


def clip_list(items: list[str], total: int | None = None, limit: int = 5) -> str:
    """``a, b, c`` or ``a, b, ... (+3 more)``; ``total`` when ``items`` is already cut."""
    total = len(items) if total is None else total
    shown = ", ".join(items[:limit])
    return shown if total <= limit else f"{shown}, ... (+{total - limit} more)"


def analysis_of(c: Pairwise) -> Analysis | None:
    """The statistics of a comparison; ``None`` for a plain pairing."""
    return c.analysis if isinstance(c, Comparison) else None


def signed_metric(x: float, fmt: Callable[[float], str]) -> str:
    """``x`` formatted by ``fmt`` with an explicit sign."""
    if math.isnan(x):
        return "n/a"
    return ("+" if x >= 0 else "-") + fmt(abs(x))


def relative_suffix(x: float) -> str:
    """`` (+12%)`` for a relative change; a change under 1% keeps a decimal (``-0.4%``),
    so that it never shows as "-0%"; nothing when there is no relative change."""
    if math.isnan(x):
        return ""
    if abs(x) >= 0.0095:
        return f" ({x:+.0%})"
    text = f"{x:+.1%}"
    return " (0%)" if text in ("+0.0%", "-0.0%") else f" ({text})"


def ms(x: float) -> str:
    return f"{x:,.0f}ms"


def usd(x: float) -> str:
    """Dollars, two significant digits however small ($0.0022, $0.000031); a negative
    amount (a refund or a credit, which records may hold) as -$0.01."""
    if math.isnan(x):
        return "n/a"
    if x < 0:
        return "-" + usd(-x)
    if x == 0:
        return "$0"
    if x >= 1:
        return f"${x:,.2f}"
    return f"${x:.{max(2, 1 - math.floor(math.log10(x)))}f}"


def tokens(x: float) -> str:
    return f"{x:,.0f}"


#: Label and formatter of each paired metric, by name.
METRIC_FORMATS: dict[str, tuple[str, Callable[[float], str]]] = {
    "latency_ms": ("Latency", ms),
    "cost_usd": ("Cost", usd),
    "input_tokens": ("Tokens in", tokens),
    "output_tokens": ("Tokens out", tokens),
}


def method_text(iv: Interval) -> str:
    """How an interval was made, in words: ``bootstrap, 10,000 resamples, seed 0``,
    ``Student's t, 12 cases``."""
    if iv.method.startswith("bootstrap"):
        units = f" of {iv.n:,} clusters" if iv.units == "clusters" else ""
        return f"bootstrap{units}, {iv.resamples:,} resamples, seed {iv.seed}"
    if iv.method == "t":
        return f"Student's t, {iv.n:,} {iv.units[:-1] if iv.n == 1 else iv.units}"
    return iv.method


def holm_line(pairs: Sequence[Pairwise], baseline: str, name: Callable[[str], str] = str) -> str:
    """``Intervals: Holm's step-down for 3 comparisons against base (b at 98.33%, c at
    97.5%, d at 97.5%).``: each candidate's level, as the procedure set it."""
    from evaldelta.analysis._verdict import level_text

    levels = [
        f"{name(p.candidate)} at {level_text(a.figures.level)}"
        for p in pairs
        if (a := analysis_of(p)) is not None
    ]
    return (
        f"Intervals: Holm's step-down for {len(pairs)} comparisons against "
        f"{name(baseline)} ({', '.join(levels)})."
    )
