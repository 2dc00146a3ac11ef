"""What a suite is once read: its tests, targets, assertions and policies.

These are plain frozen values: :mod:`evaldelta.runner._suite` builds them from a
YAML file (or :func:`evaldelta.evaluate` from Python), and the rest of the runner
only reads them. ``where`` on each says which file and line it came from, so that a
problem found later (a function that cannot be imported) still names its line.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from evaldelta.errors import ParseError

__all__ = [
    "ASSERTION_TYPES",
    "TARGET_TYPES",
    "AssertionSpec",
    "RetryPolicy",
    "Suite",
    "TargetSpec",
    "TestCase",
    "Where",
    "import_callable",
    "redact_url",
    "secret_name",
    "url_secrets",
]

#: Assertion types a suite may use (each may also take a ``not-`` prefix).
ASSERTION_TYPES = (
    "equals",
    "contains",
    "icontains",
    "contains-any",
    "contains-all",
    "starts-with",
    "regex",
    "is-json",
    "numeric",
    "python",
    "latency",
    "cost",
    "llm-rubric",
)

TargetType = Literal["openai", "python", "command"]
#: Target types a suite may define.
TARGET_TYPES: tuple[TargetType, ...] = ("openai", "python", "command")


@dataclass(frozen=True, slots=True)
class Where:
    """A place in a file: ``path:line`` (``line`` 1-based, ``None`` for the whole file)."""

    path: str
    line: int | None = None

    def __str__(self) -> str:
        return f"{self.path}:{self.line}" if self.line is not None else self.path

    def error(self, message: str) -> ParseError:
        """A :class:`ParseError` at this place."""
        return ParseError(self.path, self.line, message)


@dataclass(frozen=True, slots=True)
class RetryPolicy:
    """How transient failures (408, 409, 429, 5xx, connection errors, transport
    timeouts; a command's exit code 75) are retried: exponential backoff with full
    jitter, ``initial_delay_s * 2**k`` capped at ``max_delay_s``; a ``Retry-After``
    header wins over the cap, up to ``retry_after_cap_s``."""

    max: int = 3  # retries after the first try (so up to max + 1 calls)
    initial_delay_s: float = 1.0
    max_delay_s: float = 30.0
    retry_after_cap_s: float = 60.0


@dataclass(frozen=True, slots=True)
class AssertionSpec:
    """One check of an attempt's output.

    ``type`` is one of :data:`ASSERTION_TYPES` (without the ``not-`` prefix, which
    sets ``negate``); ``value`` its argument (the text to contain, the pattern, the
    rubric, ``"module:function"``, the JSON Schema for ``is-json``); ``threshold`` the
    limit of ``latency`` (ms), ``cost`` (dollars) or the score ``llm-rubric`` and
    ``python`` must reach; ``options`` any further keys (``abs_tol`` for ``numeric``,
    ``schema`` for ``is-json``). ``metric`` is the name it gets in a record's
    ``scores`` (default: its type, numbered when a test repeats a type).
    """

    type: str
    value: Any = None
    negate: bool = False
    threshold: float | None = None
    weight: float = 1.0
    required: bool = False
    metric: str | None = None
    options: Mapping[str, Any] = field(default_factory=dict)
    where: Where = field(default_factory=lambda: Where("<python>"))

    @property
    def label(self) -> str:
        """The assertion as a suite writes its type: ``not-contains``."""
        return f"not-{self.type}" if self.negate else self.type


@dataclass(frozen=True, slots=True)
class TestCase:
    """One test of a suite: what the target is asked, and how its answer is scored.

    ``input`` is a string or a list of chat messages (``{"role", "content"}``);
    ``threshold`` is the score at which an attempt passes; without one, an attempt
    passes when every assertion passed (see :func:`evaldelta.runner._assertions.combine`).
    """

    __test__ = False  # not a pytest class, whatever its name

    id: str
    input: str | list[dict[str, Any]]
    expected_output: Any = None
    category: str | None = None
    metadata: Mapping[str, Any] = field(default_factory=dict)
    threshold: float | None = None
    assertions: tuple[AssertionSpec, ...] = ()
    where: Where = field(default_factory=lambda: Where("<python>"))

    def to_dict(self) -> dict[str, Any]:
        """The test as a command target reads it on stdin, and a python target's
        context holds it."""
        return {
            "id": self.id,
            "input": self.input,
            "expected_output": self.expected_output,
            "category": self.category,
            "metadata": dict(self.metadata),
        }


@dataclass(frozen=True, slots=True)
class TargetSpec:
    """A target as defined in a suite or targets file.

    ``settings`` holds the type's own keys (``base_url``, ``model``, ``api_key_env``,
    ``params``, ``system``, ``price`` for ``openai``; ``function`` for ``python``;
    ``command``, ``cwd``, ``env`` for ``command``) with ``${VAR}`` already replaced.
    ``secrets`` names the settings that must never be shown or stored (an API key
    read from the environment is kept only in ``api_key``, which is one of them).
    ``function`` is a Python callable given directly (by :func:`evaldelta.evaluate`).
    """

    name: str
    type: TargetType
    settings: Mapping[str, Any] = field(default_factory=dict)
    secrets: frozenset[str] = frozenset()
    function: Callable[..., Any] | None = None
    where: Where = field(default_factory=lambda: Where("<python>"))

    def public_settings(self) -> dict[str, Any]:
        """The settings without secrets: what a stored run's config records and the
        plan shows. A password or a key in ``base_url`` (``user:pw@``, ``?key=``) and
        ``params`` whose names say key, token, secret or password are masked too."""
        shown: dict[str, Any] = {}
        for k, v in self.settings.items():
            if k in self.secrets:
                continue
            if k in ("base_url", "endpoint") and isinstance(v, str):
                v = redact_url(v)
            elif k == "params" and isinstance(v, Mapping):
                v = {pk: "***" if secret_name(str(pk)) else pv for pk, pv in v.items()}
            shown[k] = v
        return {"type": self.type, **shown}

    def secret_values(self) -> list[str]:
        """Every secret text this target holds, to scrub from messages: its key, secret
        headers, a password or key in its URL, secret params."""
        found: list[str] = []
        for k in self.secrets | {"api_key"}:
            v = self.settings.get(k)
            if isinstance(v, Mapping):
                found.extend(str(x) for x in v.values())
            elif v:
                found.append(str(v))
        url = self.settings.get("base_url")
        if isinstance(url, str):
            found.extend(url_secrets(url))
        params = self.settings.get("params")
        if isinstance(params, Mapping):
            found.extend(str(v) for k, v in params.items() if secret_name(str(k)) and v)
        # Longest first, so that a secret containing another is scrubbed whole.
        return sorted({s for s in found if len(s) >= 3}, key=lambda s: (-len(s), s))


@dataclass(frozen=True, slots=True)
class Suite:
    """A suite once read: every test runs against every target, ``attempts`` times.

    ``hash`` fingerprints everything that decides what runs and how it is scored
    (tests, assertions, targets' public settings, attempts, the judge), so that
    ``--resume`` can refuse a suite that changed since. ``base_dir`` is the suite
    file's folder: ``module:function`` references import from there.
    """

    name: str
    tests: tuple[TestCase, ...]
    targets: tuple[TargetSpec, ...]
    description: str | None = None
    attempts: int = 1
    concurrency: int = 4
    timeout_s: float = 120.0
    retries: RetryPolicy = field(default_factory=RetryPolicy)
    seed: int = 0
    judge: str | None = None
    #: The judge's own target (it may be defined in the targets file without running).
    judge_target: TargetSpec | None = None
    base_dir: Path = field(default_factory=Path.cwd)
    hash: str = ""
    where: Where = field(default_factory=lambda: Where("<python>"))

    def target(self, name: str) -> TargetSpec:
        """The target called ``name`` (``KeyError`` when there is none)."""
        for t in self.targets:
            if t.name == name:
                return t
        raise KeyError(name)


_SECRET_WORDS = ("key", "token", "secret", "password", "passwd", "credential")


def secret_name(name: str) -> bool:
    """Whether a setting, header or query parameter's name says it holds a secret."""
    lowered = name.lower().replace("-", "_")
    return any(word in lowered for word in _SECRET_WORDS)


def url_secrets(url: str) -> list[str]:
    """The secret parts of a URL: the password of ``user:pw@host``, and the values of
    query parameters named like secrets (``?key=...``), each as written in the URL and,
    where that differs, percent-decoded (as a message may show either)."""
    from urllib.parse import unquote, unquote_plus, urlsplit

    parts = urlsplit(url)
    found = [parts.password, unquote(parts.password)] if parts.password else []
    for name, _, value in _query_pieces(parts.query):
        if value and secret_name(unquote_plus(name)):
            found.extend((value, unquote_plus(value)))
    return list(dict.fromkeys(f for f in found if f))


def _query_pieces(query: str) -> list[tuple[str, str, str]]:
    """A URL's query as ``(name, "=", value)`` pieces, as written (not decoded)."""
    return [piece.partition("=") for piece in query.split("&")]


def redact_url(url: str) -> str:
    """The URL with its secret parts (see :func:`url_secrets`) shown as ``***``: the
    password in the URL's authority, secret query values in its query; nothing else."""
    from urllib.parse import unquote_plus, urlsplit, urlunsplit

    parts = urlsplit(url)
    netloc = parts.netloc
    if parts.password:
        userinfo, _, host = netloc.rpartition("@")
        netloc = f"{userinfo.partition(':')[0]}:***@{host}"
    query = "&".join(
        f"{name}=***" if value and secret_name(unquote_plus(name)) else f"{name}{sep}{value}"
        for name, sep, value in _query_pieces(parts.query)
    )
    if (netloc, query) == (parts.netloc, parts.query):
        return url
    shown = urlunsplit(parts._replace(netloc=netloc, query=query))
    # The same secret elsewhere (in the path): masked too, if long enough to be one
    # (as messages are scrubbed: a two-letter password is not looked for in a path).
    for secret in sorted(url_secrets(url), key=lambda s: (-len(s), s)):
        if len(secret) >= 3:
            shown = shown.replace(secret, "***")
    return shown


def import_callable(ref: str, base_dir: Path, where: Where) -> Callable[..., Any]:
    """The function ``"package.module:func"`` names, imported with ``base_dir`` first
    on the import path (a suite's own modules sit beside it).

    Raises:
        ParseError: at ``where``, saying which part is missing and how to mend it.
    """
    module_name, sep, attr = ref.partition(":")
    if not sep or not module_name or not attr:
        raise where.error(f'{ref!r} is not "module:function"; write e.g. "my_agent:answer"')
    base = str(base_dir)
    if base not in sys.path:
        sys.path.insert(0, base)
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise where.error(
            f"cannot import module {module_name!r} for {ref!r} ({exc}); check the name, "
            f"and that the module sits beside the suite ({base}) or is installed"
        ) from exc
    except Exception as exc:  # the module itself raised while loading
        raise where.error(
            f"importing module {module_name!r} for {ref!r} failed: {type(exc).__name__}: {exc}"
        ) from exc
    func: Any = module
    for part in attr.split("."):
        func = getattr(func, part, None)
        if func is None:
            raise where.error(
                f"module {module_name!r} has no {attr!r}; check the name after the colon"
            )
    if not callable(func):
        raise where.error(f"{ref!r} is not a function; name a function after the colon")
    return func  # type: ignore[no-any-return]


@dataclass(frozen=True, slots=True)
class Reply:
    """What a target answered to one attempt.

    ``output`` is the answer (text, or the JSON a command or function returned);
    ``latency_ms`` the target's own time, waits between retries excluded; ``wait_ms``
    the time spent waiting to retry (backoff, ``Retry-After``); ``tries`` how many
    calls it took.
    """

    output: Any
    latency_ms: float
    wait_ms: float = 0.0
    input_tokens: float | None = None
    output_tokens: float | None = None
    cost_usd: float | None = None
    tries: int = 1


class InfraFailure(Exception):  # noqa: N818 (an outcome of an attempt, not a bug)
    """An attempt lost to infrastructure: retries exhausted on 429/5xx/timeouts, or a
    judge whose reply stayed unreadable. Not the agent's fault: the attempt gets no
    score and ``error_kind: "infra"``. ``wait_ms``/``latency_ms`` say what it cost."""

    def __init__(self, message: str, *, wait_ms: float = 0.0, latency_ms: float = 0.0) -> None:
        self.wait_ms = wait_ms
        self.latency_ms = latency_ms
        super().__init__(message)


class TaskFailure(Exception):  # noqa: N818 (an outcome of an attempt, not a bug)
    """The agent's own failure: it raised, exceeded ``timeout_s``, exited non-zero (but
    75) or returned junk. The attempt scores 0 with ``error_kind: "task"``.

    ``still_running`` is the work a timeout could not stop (a sync function's thread):
    the runner keeps the attempt's slot until it ends.
    """

    def __init__(self, message: str, *, wait_ms: float = 0.0, latency_ms: float = 0.0) -> None:
        self.wait_ms = wait_ms
        self.latency_ms = latency_ms
        self.still_running: Awaitable[Any] | None = None
        super().__init__(message)
