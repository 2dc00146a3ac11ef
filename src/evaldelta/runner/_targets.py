"""The three kinds of target a suite runs against, and how their calls are retried.

    openai    an OpenAI-compatible ``/chat/completions`` endpoint (httpx, lazily)
    python    a function, ``"module:function"`` or given directly
    command   a program reading the test as JSON on stdin, answering on stdout

Every target answers :meth:`Target.call` with a :class:`~evaldelta.runner._spec.Reply`,
or raises :class:`~evaldelta.runner._spec.TaskFailure` (the agent's own failure),
:class:`~evaldelta.runner._spec.InfraFailure` (retries exhausted on transient
failures) or :class:`~evaldelta.errors.TargetError` (a target that cannot be used at
all: the runner stops it). Transient failures (HTTP 408, 409, 429, 5xx, connection
errors, transport timeouts, a malformed 200; a command's exit code 75) are retried
with exponential backoff and full jitter (see :func:`backoff_delay`).
"""

from __future__ import annotations

import asyncio
import functools
import inspect
import json
import math
import shlex
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, replace
from datetime import datetime, timezone
from pathlib import Path
from random import Random
from typing import TYPE_CHECKING, Any, Protocol

from evaldelta.errors import TargetError
from evaldelta.runner._spec import (
    InfraFailure,
    Reply,
    RetryPolicy,
    TargetSpec,
    TaskFailure,
    TestCase,
    import_callable,
    redact_url,
)

if TYPE_CHECKING:
    import httpx

__all__ = [
    "EX_TEMPFAIL",
    "CommandTarget",
    "OpenAITarget",
    "PythonTarget",
    "Target",
    "backoff_delay",
    "build_target",
    "parse_retry_after",
]

#: The exit code by which a command target says "try me again" (sysexits.h).
EX_TEMPFAIL = 75

#: HTTP statuses worth another try: the server may answer differently in a moment.
_RETRYABLE_STATUS = frozenset({408, 409, 429})

Sleep = Callable[[float], Awaitable[None]]


class Target(Protocol):
    """What the runner calls: one reply per attempt of a test."""

    name: str

    async def call(self, test: TestCase, attempt: int) -> Reply:
        """The target's reply to ``test`` (``attempt`` is 1-based)."""
        ...

    async def aclose(self) -> None:
        """Release what the target holds (connections)."""
        ...


@dataclass(frozen=True, slots=True)
class Calling:
    """How a target is called, the same for every target of a suite.

    Attributes:
        base_dir: the suite's folder: ``module:function`` imports and a command's
            default ``cwd`` are relative to it.
        timeout_s: the longest one call may take (a target's ``timeout_s`` setting
            overrides it).
        retries: how transient failures are retried.
        rng: the seeded generator the backoff jitter draws from.
        sleep: how to wait between retries (tests pass a fake one).
        env: the environment a command target runs in (the caller's copy of it);
            ``None`` lets the command inherit this process's.
    """

    base_dir: Path
    timeout_s: float
    retries: RetryPolicy
    rng: Random
    sleep: Sleep = asyncio.sleep
    env: Mapping[str, str] | None = None


def build_target(spec: TargetSpec, calling: Calling) -> Target:
    """The target ``spec`` defines, ready to call as ``calling`` says.

    Raises:
        TargetError: a spec that names no function or command.
        ParseError: a ``module:function`` that cannot be imported (at its line).
    """
    c = replace(calling, timeout_s=_timeout(spec, calling.timeout_s))
    if spec.type == "openai":
        return OpenAITarget(
            spec, timeout_s=c.timeout_s, retries=c.retries, rng=c.rng, sleep=c.sleep
        )
    if spec.type == "python":
        return PythonTarget(spec, base_dir=c.base_dir, timeout_s=c.timeout_s)
    if spec.type == "command":
        return CommandTarget(spec, c)
    raise TargetError(
        spec.name,
        f'target "{spec.name}": unknown type {spec.type!r}; use openai, python or command',
    )


# -- retries -------------------------------------------------------------------------


def backoff_delay(
    policy: RetryPolicy, retry_index: int, rng: Random, retry_after: float | None = None
) -> float:
    """Seconds to wait before retry ``retry_index`` (0 for the first retry).

    Exponential backoff with full jitter (AWS Architecture Blog, "Exponential Backoff
    and Jitter", 2015): uniform on ``[0, min(max_delay_s, initial_delay_s * 2**k)]``.
    A server's ``Retry-After`` wins over ``max_delay_s``, capped at
    ``retry_after_cap_s``.
    """
    if retry_after is not None:
        return min(max(retry_after, 0.0), policy.retry_after_cap_s)
    # 2**k overflows a float past k = 1023; the cap is reached long before.
    ceiling = min(policy.max_delay_s, policy.initial_delay_s * 2.0 ** min(retry_index, 64))
    return rng.uniform(0.0, max(ceiling, 0.0))


def parse_retry_after(value: str | None, now: datetime | None = None) -> float | None:
    """A ``Retry-After`` header in seconds (RFC 9110 §10.2.3: delay-seconds or an
    HTTP-date), or ``None`` when absent or unreadable."""
    if value is None or not value.strip():
        return None
    text = value.strip()
    try:
        seconds = float(text)
    except ValueError:
        pass
    else:
        return max(seconds, 0.0) if math.isfinite(seconds) else None
    from email.utils import parsedate_to_datetime

    try:
        when = parsedate_to_datetime(text)
    except (TypeError, ValueError, IndexError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=timezone.utc)
    now = now if now is not None else datetime.now(timezone.utc)
    return max((when - now).total_seconds(), 0.0)


class _TransientError(Exception):
    """One try lost to something that may pass: worth another try."""

    def __init__(self, message: str, retry_after: float | None = None) -> None:
        self.retry_after = retry_after
        super().__init__(message)


async def _with_retries(
    name: str,
    policy: RetryPolicy,
    rng: Random,
    sleep: Sleep,
    once: Callable[[], Awaitable[Reply]],
) -> Reply:
    """``once()`` until it answers, retrying :class:`_TransientError` failures.

    ``latency_ms`` is the answering try's own duration; ``wait_ms`` the time lost to
    retrying: the (measured) waits between tries and the tries that failed.
    """
    lost_ms = 0.0
    tries = 0
    last: _TransientError | None = None
    while True:
        tries += 1
        started = time.monotonic()
        try:
            reply = await once()
        except _TransientError as exc:
            lost_ms += (time.monotonic() - started) * 1000
            last = exc
        except TaskFailure as exc:
            took = (time.monotonic() - started) * 1000
            raise TaskFailure(str(exc), wait_ms=lost_ms, latency_ms=took) from exc
        else:
            took = (time.monotonic() - started) * 1000
            return replace(reply, latency_ms=took, wait_ms=lost_ms, tries=tries)
        if tries > policy.max:
            break
        delay = backoff_delay(policy, tries - 1, rng, last.retry_after)
        waited = time.monotonic()
        await sleep(delay)
        lost_ms += (time.monotonic() - waited) * 1000
    raise InfraFailure(
        f'target "{name}": gave up after {tries} {"try" if tries == 1 else "tries"}: last: {last}',
        wait_ms=lost_ms,
        latency_ms=0.0,
    )


# -- what a function or command returns ---------------------------------------------


def _number(value: Any, key: str, who: str) -> float | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise TaskFailure(f"{who} {key} {value!r}, which is not a number")
    return float(value)


def _reply_from_value(value: Any, who: str) -> Reply:
    """A reply from what a function returned or a command printed as JSON: a string,
    ``{"output", "input_tokens", "output_tokens", "cost_usd"}``, or other JSON."""
    if value is None:
        raise TaskFailure(f"{who} None")
    if isinstance(value, str):
        return Reply(output=value, latency_ms=0.0)
    if isinstance(value, dict) and "output" in value:
        if value["output"] is None:
            raise TaskFailure(f"{who} output None")
        try:
            json.dumps(value["output"])
        except (TypeError, ValueError) as exc:
            raise TaskFailure(f"{who} an output that is not JSON ({exc})") from exc
        return Reply(
            output=value["output"],
            latency_ms=0.0,
            input_tokens=_number(value.get("input_tokens"), "input_tokens", who),
            output_tokens=_number(value.get("output_tokens"), "output_tokens", who),
            cost_usd=_number(value.get("cost_usd"), "cost_usd", who),
        )
    try:
        json.dumps(value)
    except (TypeError, ValueError) as exc:
        raise TaskFailure(
            f"{who} a {type(value).__name__}, which is neither text nor JSON ({exc})"
        ) from exc
    return Reply(output=value, latency_ms=0.0)


def _timeout(spec: TargetSpec, default: float) -> float:
    value = spec.settings.get("timeout_s")
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value <= 0:
        raise TargetError(
            spec.name,
            f'target "{spec.name}": timeout_s must be a positive number of seconds, got {value!r}',
        )
    return float(value)


def _context(test: TestCase, attempt: int) -> dict[str, Any]:
    return {**test.to_dict(), "attempt": attempt}


# -- openai ----------------------------------------------------------------------------


class OpenAITarget:
    """An OpenAI-compatible chat completions endpoint.

    Settings: ``base_url`` (default OpenAI's), ``model``, ``api_key`` (a secret, read
    from ``api_key_env`` by the suite reader), ``headers``, ``params`` (sent with every
    request: ``temperature``, ``max_tokens``...), ``system`` (a first system message),
    ``price: {input_per_mtok, output_per_mtok}`` (dollars per million tokens, for
    ``cost_usd``), ``timeout_s``.
    """

    def __init__(
        self,
        spec: TargetSpec,
        *,
        timeout_s: float,
        retries: RetryPolicy,
        rng: Random,
        sleep: Sleep = asyncio.sleep,
    ) -> None:
        self.name = spec.name
        self.spec = spec
        settings = spec.settings
        url = str(settings.get("base_url") or "https://api.openai.com/v1")
        self.url = _endpoint(url, "chat/completions")
        self.shown_url = redact_url(self.url)
        # Shown in messages: without a password or a key it may carry.
        self.base_url = redact_url(url)
        self.model = settings.get("model")
        self.timeout_s = timeout_s
        self.retries = retries
        self.rng = rng
        self.sleep = sleep
        self._client: httpx.AsyncClient | None = None
        # Anything secret is scrubbed from every message, whatever the server echoes.
        self._secrets = spec.secret_values()

    async def call(self, test: TestCase, attempt: int) -> Reply:
        """The model's reply to the test's input (a string, or chat messages as is)."""
        messages: list[dict[str, Any]]
        if isinstance(test.input, str):
            messages = [{"role": "user", "content": test.input}]
        else:
            messages = [dict(m) for m in test.input]
        return await self.chat(messages)

    async def chat(self, messages: list[dict[str, Any]], **params: Any) -> Reply:
        """The model's reply to ``messages`` (after the ``system`` setting, if any);
        ``params`` go over the ``params`` setting (the judge passes temperature=0)."""
        if not self.model:
            raise TargetError(
                self.name, f'target "{self.name}": no model set; add `model:` to the target'
            )
        system = self.spec.settings.get("system")
        sent = [{"role": "system", "content": system}, *messages] if system else list(messages)
        body = {
            **dict(self.spec.settings.get("params") or {}),
            **params,
            "model": self.model,
            "messages": sent,
        }
        return await _with_retries(
            self.name, self.retries, self.rng, self.sleep, lambda: self._once(body)
        )

    async def aclose(self) -> None:
        """Close the connection pool (a later call opens a new one)."""
        if self._client is not None:
            client, self._client = self._client, None
            await client.aclose()

    def _http(self) -> httpx.AsyncClient:
        if self._client is None:
            import httpx

            headers = {"User-Agent": "evaldelta"}
            api_key = self.spec.settings.get("api_key")
            if api_key:
                headers["Authorization"] = f"Bearer {api_key}"
            headers.update(
                {str(k): str(v) for k, v in (self.spec.settings.get("headers") or {}).items()}
            )
            # The runner bounds calls at once; a request waits for a connection rather
            # than fail, so the pool has no timeout of its own.
            self._client = httpx.AsyncClient(
                headers=headers,
                timeout=httpx.Timeout(self.timeout_s, pool=None),
                limits=httpx.Limits(max_connections=None, max_keepalive_connections=32),
                follow_redirects=False,
                trust_env=False,
            )
        return self._client

    def _redact(self, text: str) -> str:
        for secret in self._secrets:
            text = text.replace(secret, "***")
        return text

    async def _once(self, body: dict[str, Any]) -> Reply:
        import httpx

        client = self._http()
        try:
            response = await client.post(self.url, json=body)
        except httpx.TimeoutException as exc:
            raise _TransientError(
                f"no answer within timeout_s ({self.timeout_s:g} s) from {self.shown_url} "
                f"({type(exc).__name__})"
            ) from exc
        except httpx.TransportError as exc:
            detail = self._redact(str(exc)) or "no detail"
            raise _TransientError(
                f"connection error with {self.shown_url}: {type(exc).__name__}: {detail}"
            ) from exc
        return self._reply(response)

    def _reply(self, response: httpx.Response) -> Reply:
        status = response.status_code
        seen = f"{status} {response.reason_phrase or _phrase(status)} from {self.shown_url}"
        if status in _RETRYABLE_STATUS or 500 <= status <= 599:
            detail = _error_message(response)
            raise _TransientError(
                self._redact(f"{seen}: {detail}" if detail else seen),
                retry_after=parse_retry_after(response.headers.get("Retry-After")),
            )
        if status in (401, 403):
            key_env = self.spec.settings.get("api_key_env")
            mend = f"check api_key_env ({key_env})" if key_env else "set api_key_env"
            if not self.spec.settings.get("api_key"):
                raise TargetError(
                    self.name,
                    f'target "{self.name}": the endpoint wants an API key and none was sent '
                    f"({seen}); {mend}",
                    status,
                )
            raise TargetError(
                self.name,
                f'target "{self.name}": the endpoint refused the API key ({seen}); {mend}',
                status,
            )
        if status == 404:
            raise TargetError(
                self.name,
                f'target "{self.name}": no such model or path ({seen}): check base_url '
                f"({self.base_url}) and model ({self.model})",
                status,
            )
        if not 200 <= status <= 299:
            detail = _error_message(response)
            raise TargetError(
                self.name,
                self._redact(
                    f'target "{self.name}": the endpoint rejected the request ({seen})'
                    + (f": {detail}" if detail else "")
                    + "; check the target's params, base_url and model"
                ),
                status,
            )
        try:
            data = response.json()
            choice = data["choices"][0]
            message = choice["message"]
        except (ValueError, KeyError, IndexError, TypeError) as exc:
            head = self._redact(response.text[:80])
            raise _TransientError(
                f"a malformed reply ({status} from {self.shown_url}, "
                f"not a chat completion: {head!r})"
            ) from exc
        content = message.get("content") if isinstance(message, dict) else None
        if content is None:
            reason = choice.get("finish_reason") if isinstance(choice, dict) else None
            raise TaskFailure(f"the model replied with no content (finish_reason: {reason})")
        return self._priced(content, data.get("usage") if isinstance(data, dict) else None)

    def _priced(self, content: Any, usage: Any) -> Reply:
        input_tokens = output_tokens = cost = None
        if isinstance(usage, dict):
            input_tokens = _count(usage.get("prompt_tokens"))
            output_tokens = _count(usage.get("completion_tokens"))
        price = self.spec.settings.get("price")
        if isinstance(price, Mapping) and input_tokens is not None and output_tokens is not None:
            cost = (
                input_tokens * float(price.get("input_per_mtok", 0.0))
                + output_tokens * float(price.get("output_per_mtok", 0.0))
            ) / 1e6
        return Reply(
            output=content,
            latency_ms=0.0,
            input_tokens=input_tokens,
            output_tokens=output_tokens,
            cost_usd=cost,
        )


def _endpoint(base_url: str, path: str) -> str:
    """``path`` below ``base_url``, keeping its query (``...?api-version=...``)."""
    from urllib.parse import urlsplit, urlunsplit

    parts = urlsplit(base_url)
    return urlunsplit(parts._replace(path=parts.path.rstrip("/") + "/" + path))


def _count(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return float(value)


def _phrase(status: int) -> str:
    from http import HTTPStatus

    try:
        return HTTPStatus(status).phrase
    except ValueError:
        return ""


def _error_message(response: httpx.Response) -> str:
    """The first 200 characters of the server's ``error.message`` (or of its body)."""
    try:
        data = response.json()
    except ValueError:
        return response.text.strip()[:200]
    if isinstance(data, dict):
        error = data.get("error")
        if isinstance(error, dict) and error.get("message"):
            return str(error["message"])[:200]
        if isinstance(error, str):
            return error[:200]
        if isinstance(data.get("message"), str):
            return str(data["message"])[:200]
    return response.text.strip()[:200]


# -- python ----------------------------------------------------------------------------


class PythonTarget:
    """A Python function: called with the input (and a context dict, when it takes
    one: the test's fields and ``attempt``). Sync functions run in a worker thread."""

    def __init__(self, spec: TargetSpec, *, base_dir: Path, timeout_s: float) -> None:
        self.name = spec.name
        self.timeout_s = timeout_s
        ref = spec.settings.get("function")
        if spec.function is not None:
            self.function: Callable[..., Any] = spec.function
        elif isinstance(ref, str):
            self.function = import_callable(ref, base_dir, spec.where)
        else:
            raise TargetError(
                spec.name,
                f'target "{spec.name}": a python target needs `function: module:function`',
            )
        self._is_async = _is_async(self.function)
        self._context_by = _takes_context(self.function)

    async def call(self, test: TestCase, attempt: int) -> Reply:
        """The function's answer to the test's input."""
        args: tuple[Any, ...] = (test.input,)
        kwargs: dict[str, Any] = {}
        if self._context_by == "keyword":
            kwargs["context"] = _context(test, attempt)
        elif self._context_by == "positional":
            args = (test.input, _context(test, attempt))
        started = time.monotonic()

        thread: asyncio.Future[Any] | None = None

        async def run() -> Any:
            nonlocal thread
            if self._is_async:
                result = self.function(*args, **kwargs)
            else:
                call = functools.partial(self.function, *args, **kwargs)
                thread = asyncio.get_running_loop().run_in_executor(None, call)
                result = await asyncio.shield(thread)
            if inspect.isawaitable(result):
                result = await result
            return result

        # asyncio.wait, not wait_for: a TimeoutError the function raises itself is
        # its own failure, not the timeout's.
        task = asyncio.ensure_future(run())
        try:
            done, _ = await asyncio.wait({task}, timeout=self.timeout_s)
        except asyncio.CancelledError:
            task.cancel()
            raise
        if not done:
            task.cancel()
            failure = TaskFailure(
                f"exceeded timeout_s ({self.timeout_s:g} s)", latency_ms=_ms(started)
            )
            if thread is not None and not thread.done():
                # A sync function's thread cannot be stopped: its result is dropped, and
                # the caller keeps its slot until the thread ends (calls at once never
                # exceed the limit).
                failure.still_running = thread
            raise failure
        try:
            value = task.result()
        except (TaskFailure, InfraFailure, TargetError):
            raise  # the function said which kind of failure it is
        except Exception as exc:
            raise TaskFailure(
                f"raised {type(exc).__name__}: {exc}", latency_ms=_ms(started)
            ) from exc
        latency_ms = _ms(started)
        try:
            reply = _reply_from_value(value, "returned")
        except TaskFailure as exc:
            raise TaskFailure(str(exc), latency_ms=latency_ms) from None
        return replace(reply, latency_ms=latency_ms)

    async def aclose(self) -> None:
        """Nothing to release."""


def _ms(started: float) -> float:
    return (time.monotonic() - started) * 1000


def _is_async(func: Callable[..., Any]) -> bool:
    # An object whose __call__ is async counts too.
    return inspect.iscoroutinefunction(func) or inspect.iscoroutinefunction(type(func).__call__)


def _takes_context(func: Callable[..., Any]) -> str | None:
    """How ``func`` takes the context: ``"keyword"`` (a ``context`` parameter),
    ``"positional"`` (a second positional parameter, or ``*args``), or ``None``."""
    try:
        params = list(inspect.signature(func).parameters.values())
    except (TypeError, ValueError):  # a builtin without a signature: the input only
        return None
    kinds = inspect.Parameter
    if any(p.name == "context" and p.kind != kinds.POSITIONAL_ONLY for p in params[1:]):
        return "keyword"
    positional = [
        p for p in params if p.kind in (kinds.POSITIONAL_ONLY, kinds.POSITIONAL_OR_KEYWORD)
    ]
    if len(positional) >= 2 or any(p.kind == kinds.VAR_POSITIONAL for p in params):
        return "positional"
    return None


# -- command ---------------------------------------------------------------------------


class CommandTarget:
    """A program: reads the test as one line of JSON on stdin (its fields and
    ``attempt``), answers on stdout (text, or JSON with ``output``). Exit code 75 asks
    for a retry; any other non-zero exit is the task's failure."""

    def __init__(self, spec: TargetSpec, calling: Calling) -> None:
        self.name = spec.name
        self.timeout_s = calling.timeout_s
        self.retries = calling.retries
        self.rng = calling.rng
        self.sleep = calling.sleep
        base_dir, env = calling.base_dir, calling.env
        command = spec.settings.get("command")
        if isinstance(command, str):
            command = shlex.split(command)
        if (
            not isinstance(command, (list, tuple))
            or not command
            or not all(isinstance(c, str) for c in command)
        ):
            raise TargetError(
                spec.name,
                f'target "{spec.name}": a command target needs `command:` as a list of '
                'strings, e.g. ["python", "agent.py"]',
            )
        self.command: list[str] = list(command)
        cwd = spec.settings.get("cwd")
        self.cwd = base_dir / cwd if cwd else base_dir
        extra = spec.settings.get("env") or {}
        self.env: dict[str, str] | None
        if env is None and extra:
            # Without the caller's environment there is nothing to lay these over, and
            # a child with only them would lose PATH and HOME.
            raise TargetError(
                spec.name,
                f'target "{spec.name}": its `env:` settings need the environment to add '
                "them to; pass env= (a copy of os.environ) to the runner",
            )
        self.env = None if env is None else {**env, **{str(k): str(v) for k, v in extra.items()}}

    async def call(self, test: TestCase, attempt: int) -> Reply:
        """The command's answer to the test, retried on exit code 75."""
        stdin = (json.dumps(_context(test, attempt), ensure_ascii=False) + "\n").encode()
        return await _with_retries(
            self.name, self.retries, self.rng, self.sleep, lambda: self._once(stdin)
        )

    async def aclose(self) -> None:
        """Nothing to release: each call's process is gone when it returns."""

    async def _once(self, stdin: bytes) -> Reply:
        if not self.cwd.is_dir():
            raise TargetError(
                self.name,
                f'target "{self.name}": cwd {str(self.cwd)!r} is not a folder; check `cwd:`',
            )
        try:
            process = await asyncio.create_subprocess_exec(
                *self.command,
                stdin=asyncio.subprocess.PIPE,
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.PIPE,
                cwd=self.cwd,
                env=self.env,
            )
        except OSError as exc:
            raise TargetError(
                self.name,
                f'target "{self.name}": cannot run {self.command[0]!r} '
                f"({exc.strerror or exc}); check the command, and that it is installed",
            ) from exc
        try:
            out, err = await asyncio.wait_for(process.communicate(stdin), self.timeout_s)
        except asyncio.TimeoutError:
            raise TaskFailure(f"exceeded timeout_s ({self.timeout_s:g} s)") from None
        finally:
            if process.returncode is None:  # timed out, or the run was cancelled
                process.kill()
                await process.wait()
        rc = process.returncode
        if rc == EX_TEMPFAIL:
            raise _TransientError(f"exited with code {rc} (EX_TEMPFAIL){_last_line(err, ': ')}")
        if rc != 0:
            raise TaskFailure(f"exited with code {rc}{_last_line(err, ': ')}")
        text = out.decode("utf-8", errors="replace")
        if text.endswith("\n"):
            text = text[:-1].removesuffix("\r")
        try:
            value = json.loads(text)
        except ValueError:
            value = None
        if isinstance(value, dict) and "output" in value:
            return _reply_from_value(value, "printed")
        return Reply(output=text, latency_ms=0.0)


def _last_line(stderr: bytes, lead: str) -> str:
    lines = [ln for ln in stderr.decode("utf-8", errors="replace").splitlines() if ln.strip()]
    return f"{lead}{lines[-1].strip()[:200]}" if lines else ""
