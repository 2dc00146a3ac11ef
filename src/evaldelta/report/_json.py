"""JSON renderer: the result's ``to_dict()``, indented, UTF-8."""

from __future__ import annotations

from typing import Any, Protocol


class _HasDict(Protocol):
    def to_dict(self) -> dict[str, Any]: ...


def render_json(result: _HasDict) -> str:
    """``result.to_dict()`` as indented JSON, ending with a newline."""
    import msgspec

    raw = msgspec.json.encode(result.to_dict())
    return msgspec.json.format(raw, indent=2).decode() + "\n"
