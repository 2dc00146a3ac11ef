"""A fake OpenAI-compatible server for the runner's tests: scriptable, on 127.0.0.1.

In a test::

    with FakeOpenAI() as server:
        server.script(Step(status=429, headers={"Retry-After": "1"}), Step(status=503))
        ...  # call server.base_url ("http://127.0.0.1:PORT/v1")
        assert server.count() == 3

Scripted steps answer the first requests, one each, in order; then ``responder`` (when
set) or ``default`` (echo: the last user message back) answers. ``requests`` holds each
request's JSON body (with ``.headers``, lower-cased names), ``max_in_flight`` the most
requests handled at once.

As a program, for tests that need it in a process of its own (to SIGKILL the runner)::

    python tests/runner/fake_openai.py --port 0 --script script.json --log requests.jsonl

prints the port on its first line; ``script.json`` is
``{"default": {"content": "...", "delay_s": 0.2}, "by_model": {"m1": {...}}, "steps": [...]}``
(each a :class:`Step`'s fields), and ``--log`` appends one JSON line per request
(``model``, ``content``: the last user message) as it arrives.

Only the standard library, so that any Python can run it.
"""

from __future__ import annotations

import argparse
import json
import signal
import sys
import threading
import time
from collections import deque
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, fields
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

__all__ = ["ECHO", "FakeOpenAI", "Received", "Step", "echo"]


class _Echo:
    def __repr__(self) -> str:
        return "ECHO"


#: A step's ``content`` (the default): the last user message back. As its ``usage``:
#: word counts of the messages and of the reply.
ECHO: Any = _Echo()


@dataclass
class Step:
    """One response of the fake server.

    ``content`` is the reply's message content (``ECHO``: the last user message;
    ``None``: a null content); ``usage`` ``(prompt_tokens, completion_tokens)``, ``ECHO``
    for word counts, ``None`` for no usage at all; ``body`` a JSON value sent instead of
    the chat completion (an error's body, by default OpenAI's ``{"error": {...}}`` when
    ``status >= 400``); ``raw_body`` bytes or text sent as they are; ``drop`` closes
    the connection without answering; ``delay_s`` waits before answering.
    """

    status: int = 200
    content: Any = ECHO
    usage: Any = ECHO
    headers: Mapping[str, str] = field(default_factory=dict)
    body: Any = None
    raw_body: bytes | str | None = None
    delay_s: float = 0.0
    drop: bool = False
    model: str | None = None
    finish_reason: str = "stop"

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Step:
        """A step from a script file's object (its keys are the fields)."""
        known = {f.name for f in fields(cls)}
        unknown = set(data) - known
        if unknown:
            raise ValueError(f"unknown step keys {sorted(unknown)}; known: {sorted(known)}")
        values = dict(data)
        if isinstance(values.get("usage"), list):
            values["usage"] = tuple(values["usage"])
        return cls(**values)


class Received(dict[str, Any]):
    """A request's JSON body, with its ``headers`` (lower-cased names) and ``path``."""

    headers: dict[str, str]
    path: str


Responder = Callable[[Received], "Step | str"]


def _words(text: Any) -> int:
    return len(text.split()) if isinstance(text, str) else 0


def last_user_content(request: Mapping[str, Any]) -> Any:
    """The content of the request's last user message (``None`` when there is none)."""
    messages = request.get("messages")
    if not isinstance(messages, list):
        return None
    for message in reversed(messages):
        if isinstance(message, dict) and message.get("role") == "user":
            return message.get("content")
    return None


def echo(request: Received) -> Step:
    """The default answer: the last user message back."""
    return Step()


class FakeOpenAI:
    """The fake server: started on a free port in a daemon thread, a context manager."""

    def __init__(self, *, host: str = "127.0.0.1", port: int = 0, log: Path | None = None):
        self.default: Responder = echo
        self.responder: Responder | None = None
        self.models: list[str] = ["fake-model"]
        self.requests: list[Received] = []
        self.max_in_flight = 0
        self.in_flight = 0
        self.log = log
        self._steps: deque[Step] = deque()
        self._lock = threading.Lock()
        self._httpd = ThreadingHTTPServer((host, port), _handler(self))
        self._httpd.daemon_threads = True
        self.port: int = self._httpd.server_address[1]
        self.base_url = f"http://{host}:{self.port}/v1"
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )
        self._thread.start()

    def __enter__(self) -> FakeOpenAI:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Stop serving and close the listening socket."""
        self._httpd.shutdown()
        self._httpd.server_close()
        self._thread.join(timeout=5)

    def script(self, *steps: Step) -> None:
        """Queue ``steps``: each answers one request, in order, before the default."""
        with self._lock:
            self._steps.extend(steps)

    def count(self, model: str | None = None) -> int:
        """Chat requests received (for ``model`` only, when given)."""
        with self._lock:
            return sum(1 for r in self.requests if model is None or r.get("model") == model)

    @property
    def pending(self) -> int:
        """Scripted steps not yet used."""
        with self._lock:
            return len(self._steps)

    # -- called from the handler threads -------------------------------------------

    def _arrive(self, request: Received) -> Step:
        with self._lock:
            self.requests.append(request)
            self.in_flight += 1
            self.max_in_flight = max(self.max_in_flight, self.in_flight)
            step = self._steps.popleft() if self._steps else None
            if self.log is not None:
                line = {"model": request.get("model"), "content": last_user_content(request)}
                with self.log.open("a", encoding="utf-8") as f:
                    f.write(json.dumps(line) + "\n")
        if step is None:
            answer = (self.responder or self.default)(request)
            step = Step(content=answer) if isinstance(answer, str) else answer
        return step

    def _leave(self) -> None:
        with self._lock:
            self.in_flight -= 1


def completion(request: Mapping[str, Any], step: Step) -> dict[str, Any]:
    """The chat.completion body ``step`` answers ``request`` with."""
    content = last_user_content(request) if step.content is ECHO else step.content
    out: dict[str, Any] = {
        "id": f"chatcmpl-fake-{time.monotonic_ns()}",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": step.model or request.get("model") or "fake-model",
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": content},
                "finish_reason": step.finish_reason,
            }
        ],
    }
    if step.usage is ECHO:
        messages = request.get("messages") or []
        prompt = sum(_words(m.get("content")) for m in messages if isinstance(m, dict))
        usage: tuple[int, int] | None = (prompt, _words(content))
    else:
        usage = step.usage
    if usage is not None:
        out["usage"] = {
            "prompt_tokens": usage[0],
            "completion_tokens": usage[1],
            "total_tokens": usage[0] + usage[1],
        }
    return out


def _handler(server: FakeOpenAI) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        # Headers and body go out in two writes: without this, Nagle's algorithm holds
        # the body back until the client's delayed ACK (about 40 ms a reply).
        disable_nagle_algorithm = True

        def log_message(self, format: str, *args: Any) -> None:  # quiet
            pass

        def _send(self, status: int, body: bytes, headers: Mapping[str, str] | None = None) -> None:
            headers = headers or {}
            self.send_response(status)
            names = {k.lower() for k in headers}
            if "content-type" not in names:
                self.send_header("Content-Type", "application/json")
            for name, value in headers.items():
                self.send_header(name, value)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
            self.wfile.flush()

        def do_GET(self) -> None:
            if self.path.rstrip("/") == "/v1/models":
                data = [{"id": m, "object": "model", "owned_by": "fake"} for m in server.models]
                self._send(200, json.dumps({"object": "list", "data": data}).encode())
            else:
                self._not_found()

        def _not_found(self) -> None:
            error = {"message": f"no route {self.path}", "type": "invalid_request_error"}
            self._send(404, json.dumps({"error": error}).encode())

        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            raw = self.rfile.read(length) if length else b""
            if self.path.rstrip("/") != "/v1/chat/completions":
                self._not_found()
                return
            try:
                parsed = json.loads(raw or b"{}")
            except ValueError:
                parsed = {"_raw": raw.decode("utf-8", "replace")}
            request = Received(parsed if isinstance(parsed, dict) else {"_body": parsed})
            request.headers = {k.lower(): v for k, v in self.headers.items()}
            request.path = self.path
            step = server._arrive(request)
            try:
                self._answer(request, step)
            except (BrokenPipeError, ConnectionResetError):  # the client gave up first
                self.close_connection = True
            finally:
                server._leave()

        def _answer(self, request: Received, step: Step) -> None:
            if step.delay_s:
                time.sleep(step.delay_s)
            if step.drop:
                self.close_connection = True
                return
            if step.raw_body is not None:
                raw = step.raw_body
                body = raw.encode() if isinstance(raw, str) else raw
            elif step.body is not None:
                body = json.dumps(step.body).encode()
            elif step.status >= 400:
                phrase = HTTPStatus(step.status).phrase
                error = {"message": f"fake {phrase}", "type": "fake_error", "code": step.status}
                body = json.dumps({"error": error}).encode()
            else:
                body = json.dumps(completion(request, step)).encode()
            self._send(step.status, body, step.headers)

    return Handler


# -- as a program ----------------------------------------------------------------------


def _scripted(script: Mapping[str, Any]) -> Callable[[Received], Step]:
    default = Step.from_dict(script.get("default") or {})
    by_model = {m: Step.from_dict(s) for m, s in (script.get("by_model") or {}).items()}

    def respond(request: Received) -> Step:
        return by_model.get(str(request.get("model")), default)

    return respond


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="A fake OpenAI-compatible server for tests.")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--script", type=Path, help="JSON: default, by_model, steps")
    parser.add_argument("--log", type=Path, help="append one JSON line per request")
    args = parser.parse_args(argv)
    script = json.loads(args.script.read_text(encoding="utf-8")) if args.script else {}
    stop = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: stop.set())
    with FakeOpenAI(host=args.host, port=args.port, log=args.log) as server:
        server.default = _scripted(script)
        server.script(*(Step.from_dict(s) for s in script.get("steps") or []))
        sys.stdout.write(f"{server.port}\n")
        sys.stdout.flush()
        while not stop.wait(0.2):
            pass
    return 0


if __name__ == "__main__":
    sys.exit(main())
