"""The suite file (agentv's YAML shape) and its targets file, read into a :class:`Suite`.

Every value keeps the line it came from, so that any problem, here or later in the
runner, names ``path:line``, says what is wrong and how to mend it. ``${VAR}`` in a
target's settings is replaced from the ``env`` mapping the caller passes in: nothing
here reads the process environment.

Targets named by a suite are looked up, in order, among the suite's inline target
mappings, then in the targets file: ``targets_file`` (``--targets FILE``), else
``targets.yaml``/``targets.yml`` beside the suite, else ``.agentv/targets.yaml`` in
the suite's folder or up to three folders above it (agentv's convention).
"""

from __future__ import annotations

import difflib
import functools
import hashlib
import json
import os
import re
import shlex
import warnings
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

from evaldelta.errors import ParseError, UsageError
from evaldelta.runner._spec import (
    ASSERTION_TYPES,
    TARGET_TYPES,
    AssertionSpec,
    RetryPolicy,
    Suite,
    TargetSpec,
    TargetType,
    TestCase,
    Where,
    secret_name,
)

if TYPE_CHECKING:
    import yaml

__all__ = ["load_suite", "suite_from_mapping"]

SUITE_KEYS = (
    "name",
    "description",
    "targets",
    "execution",
    "tests",
    "assert",
    "attempts",
    "repeat",
    "concurrency",
    "timeout_s",
    "retries",
    "seed",
    "judge",
)
EXECUTION_KEYS = ("targets", "target", "trials")
TEST_KEYS = (
    "id",
    "input",
    "expected_output",
    "expected",
    "criteria",
    "category",
    "metadata",
    "threshold",
    "assert",
)
MESSAGE_KEYS = ("role", "content", "name", "tool_call_id", "tool_calls")
MESSAGE_ROLES = ("system", "user", "assistant", "tool")
ASSERTION_KEYS = ("type", "value", "threshold", "weight", "required", "metric")
#: Options each assertion type reads (other keys still pass through to ``options``).
ASSERTION_OPTIONS: Mapping[str, tuple[str, ...]] = {
    "numeric": ("abs_tol", "rel_tol"),
    "is-json": ("schema",),
}
RETRY_KEYS = ("max", "initial_delay_s", "max_delay_s", "retry_after_cap_s")
#: ``judge_target`` (agentv's name) names the target that judges this one's answers
#: when the suite sets no ``judge``.
TARGET_COMMON_KEYS = ("name", "type", "provider", "timeout_s", "judge_target")
TARGET_KEYS: Mapping[str, tuple[str, ...]] = {
    "openai": (
        "base_url",
        "endpoint",
        "model",
        "api_key_env",
        "api_key",
        "params",
        "system",
        "price",
        "headers",
    ),
    "python": ("function",),
    "command": ("command", "cwd", "env"),
}
PRICE_KEYS = ("input_per_mtok", "output_per_mtok")
TARGETS_FILE_NAMES = ("targets.yaml", "targets.yml")
#: How many folders above the suite's own ``.agentv/targets.yaml`` is looked for.
AGENTV_LEVELS = 3

_SUPPORTED_TYPES = (
    "evaldelta runs openai-compatible endpoints (type: openai), python functions "
    "(type: python) and commands (type: command)"
)
_REF = re.compile(r"[A-Za-z_]\w*(\.[A-Za-z_]\w*)*:[A-Za-z_]\w*(\.[A-Za-z_]\w*)*")
_VAR = re.compile(
    r"\$\{\{\s*(?P<agentv>[A-Za-z_]\w*)\s*\}\}"  # agentv writes ${{ VAR }}
    r"|\$\{(?P<name>[A-Za-z_]\w*)(?::-(?P<default>[^}]*))?\}"
)


# -- YAML with lines -------------------------------------------------------------------


class _Map(dict[Any, Any]):
    """A mapping that remembers its own line, and each of its keys' and values'."""

    def __init__(self, line: int | None = None) -> None:
        super().__init__()
        self.line = line
        self.key_lines: dict[Any, int | None] = {}
        self.value_lines: dict[Any, int | None] = {}


class _Seq(list[Any]):
    """A list that remembers its own line and each item's."""

    def __init__(self, line: int | None = None) -> None:
        super().__init__()
        self.line = line
        self.item_lines: list[int | None] = []


class _DuplicateKeyError(Exception):
    def __init__(self, line: int, message: str) -> None:
        self.line = line
        super().__init__(message)


def _line_of(value: Any) -> int | None:
    return value.line if isinstance(value, (_Map, _Seq)) else None


def _key_line(m: Mapping[Any, Any], key: Any) -> int | None:
    if isinstance(m, _Map):
        return m.key_lines.get(key, m.line)
    return None


def _value_line(m: Mapping[Any, Any], key: Any) -> int | None:
    if isinstance(m, _Map):
        return m.value_lines.get(key, m.line)
    return None


def _item_line(seq: Sequence[Any], index: int, default: int | None) -> int | None:
    if isinstance(seq, _Seq) and index < len(seq.item_lines):
        return seq.item_lines[index]
    return default


@functools.lru_cache(maxsize=1)
def _loader() -> type[yaml.SafeLoader]:
    import yaml

    class Loader(yaml.SafeLoader):
        """PyYAML's safe loader, with mappings and lists that keep their lines."""

    def construct_map(loader: yaml.SafeLoader, node: yaml.MappingNode) -> Iterator[_Map]:
        data = _Map(node.start_mark.line + 1)
        yield data
        own = sum(1 for k, _ in node.value if k.tag != "tag:yaml.org,2002:merge")
        loader.flatten_mapping(node)
        first_own = len(node.value) - own  # merged (<<) keys come first, and may be overridden
        own_keys: set[Any] = set()
        for index, (key_node, value_node) in enumerate(node.value):
            key = loader.construct_object(key_node, deep=True)
            line = key_node.start_mark.line + 1
            try:
                hash(key)
            except TypeError:
                raise _DuplicateKeyError(
                    line, "a key must be a plain word or number, not a list or mapping"
                ) from None
            if index >= first_own:
                if key in own_keys:
                    raise _DuplicateKeyError(
                        line,
                        f"`{key}` is given twice in this mapping (first at line "
                        f"{data.key_lines[key]}); keep one",
                    )
                own_keys.add(key)
            data[key] = loader.construct_object(value_node, deep=True)
            data.key_lines[key] = line
            data.value_lines[key] = value_node.start_mark.line + 1

    def construct_seq(loader: yaml.SafeLoader, node: yaml.SequenceNode) -> Iterator[_Seq]:
        data = _Seq(node.start_mark.line + 1)
        yield data
        for item in node.value:
            data.append(loader.construct_object(item, deep=True))
            data.item_lines.append(item.start_mark.line + 1)

    Loader.add_constructor("tag:yaml.org,2002:map", construct_map)
    Loader.add_constructor("tag:yaml.org,2002:seq", construct_seq)
    return Loader


def _parse_yaml(text: str, path: str) -> Any:
    import yaml

    try:
        return yaml.load(text, Loader=_loader())
    except _DuplicateKeyError as exc:
        raise ParseError(path, exc.line, str(exc)) from exc
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        problem = exc.problem or "this is not valid YAML"
        context = f" ({exc.context})" if exc.context else ""
        raise ParseError(
            path,
            mark.line + 1 if mark is not None else None,
            f"invalid YAML: {problem}{context}; check the indentation, colons and quotes "
            "on this line and the one above",
        ) from exc
    except yaml.YAMLError as exc:
        raise ParseError(path, None, f"invalid YAML: {exc}") from exc


def _read(file: Path, shown: str, what: str, mend: str) -> str:
    try:
        return file.read_text(encoding="utf-8")
    except FileNotFoundError as exc:
        raise ParseError(shown, None, f"no such {what}; {mend}") from exc
    except UnicodeDecodeError as exc:
        raise ParseError(shown, None, f"the {what} is not UTF-8 text ({exc.reason})") from exc
    except OSError as exc:
        raise ParseError(shown, None, f"cannot read the {what}: {exc.strerror}") from exc


def _located(value: Any, line: int | None) -> Any:
    """A JSON value with every mapping and list marked as being on ``line``."""
    if isinstance(value, dict):
        m = _Map(line)
        for k, v in value.items():
            m[k] = _located(v, line)
            m.key_lines[k] = m.value_lines[k] = line
        return m
    if isinstance(value, list):
        s = _Seq(line)
        for v in value:
            s.append(_located(v, line))
            s.item_lines.append(line)
        return s
    return value


def _plain(value: Any) -> Any:
    """``value`` with every mapping a plain dict and every list a plain list."""
    if isinstance(value, Mapping):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return value


# -- small checks ----------------------------------------------------------------------


def _shown(value: Any) -> str:
    """``value`` as an error message shows it: strings quoted, containers named."""
    if isinstance(value, Mapping):
        return "a mapping"
    if isinstance(value, (list, tuple)):
        return "a list"
    if value is None:
        return "nothing"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    return str(value)


def _check_keys(
    m: Mapping[Any, Any], known: Sequence[str], path: str, what: str, *, ignore: bool = False
) -> None:
    """Refuse a key not in ``known`` (``ignore``: but let ``x-...`` and ``$schema`` be)."""
    for key in m:
        if ignore and isinstance(key, str) and (key.startswith("x-") or key == "$schema"):
            continue
        if key not in known:
            close = difflib.get_close_matches(str(key), known, n=1)
            hint = f"did you mean `{close[0]}`? " if close else ""
            raise Where(path, _key_line(m, key)).error(
                f"unknown key `{key}` in {what}; {hint}known keys: {', '.join(known)}"
            )


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _int(value: Any, where: Where, key: str, minimum: int | None) -> int:
    if (
        isinstance(value, bool)
        or not isinstance(value, int)
        or (minimum is not None and value < minimum)
    ):
        at_least = f" of at least {minimum}" if minimum is not None else ""
        raise where.error(f"`{key}` must be a whole number{at_least}, got {_shown(value)}")
    return value


def _number(
    value: Any,
    where: Where,
    key: str,
    *,
    minimum: float | None = None,
    positive: bool = False,
    maximum: float | None = None,
) -> float:
    ok = _is_number(value)
    if ok and positive and value <= 0:
        ok = False
    if ok and minimum is not None and value < minimum:
        ok = False
    if ok and maximum is not None and value > maximum:
        ok = False
    if not ok:
        if maximum is not None:
            bound = f" between {minimum:g} and {maximum:g}"
        elif positive:
            bound = " greater than 0"
        elif minimum is not None:
            bound = f" of at least {minimum:g}"
        else:
            bound = ""
        raise where.error(f"`{key}` must be a number{bound}, got {_shown(value)}")
    return float(value)


def _str(value: Any, where: Where, key: str, example: str) -> str:
    if not isinstance(value, str) or not value.strip():
        got = "an empty string" if isinstance(value, str) else _shown(value)
        raise where.error(f"`{key}` must be a non-empty string, got {got}; write e.g. {example}")
    return value


def _mapping(value: Any, where: Where, key: str, example: str) -> Mapping[Any, Any]:
    if not isinstance(value, Mapping):
        raise where.error(f"`{key}` must be a mapping, got {_shown(value)}; write e.g. {example}")
    return value


def _ref(value: Any, where: Where, key: str) -> str:
    if not isinstance(value, str) or not _REF.fullmatch(value.strip()):
        raise where.error(
            f'`{key}` must be "module:function", got {_shown(value)}; write e.g. '
            '"my_agent:answer" (a module beside the suite, or an installed package)'
        )
    return value.strip()


# -- targets ---------------------------------------------------------------------------


@dataclass(frozen=True)
class _TargetDef:
    """A target's mapping as written, and the file (and folder) that defines it."""

    name: str
    raw: Mapping[Any, Any]
    path: str
    folder: Path  # absolute: a command's ``cwd`` is relative to it


class Unchecked(dict[str, str]):
    """The environment for a plan that calls nothing (``--dry-run``): a ``${VAR}`` or
    an ``api_key_env`` that is not set is left as written instead of refused."""


def _expand(value: Any, env: Mapping[str, str], path: str, line: int | None, target: str) -> Any:
    """``value`` with ``${VAR}``, ``${VAR:-default}`` and ``${{ VAR }}`` replaced from
    ``env`` in every string, keeping lines."""
    if isinstance(value, str):

        def sub(match: re.Match[str]) -> str:
            name = match.group("agentv") or match.group("name")
            default = match.group("default")
            found = env.get(name)
            if found is None or (found == "" and default is not None):
                if default is not None:
                    return default
                if isinstance(env, Unchecked):
                    return match.group(0)  # shown as written: `--dry-run` needs no values
                raise Where(path, line).error(
                    f"${{{name}}} is not set (target {_shown(target)}); export it, "
                    f"or write ${{{name}:-default}} to give a default"
                )
            return found

        return _VAR.sub(sub, value)
    if isinstance(value, Mapping):
        m = _Map(_line_of(value) if isinstance(value, _Map) else line)
        for k, v in value.items():
            m[k] = _expand(v, env, path, _value_line(value, k) or line, target)
            m.key_lines[k] = _key_line(value, k) or line
            m.value_lines[k] = _value_line(value, k) or line
        return m
    if isinstance(value, list):
        s = _Seq(_line_of(value) if isinstance(value, _Seq) else line)
        for i, v in enumerate(value):
            item_line = _item_line(value, i, line)
            s.append(_expand(v, env, path, item_line, target))
            s.item_lines.append(item_line)
        return s
    return value


def _target_defs(entries: Any, path: str, folder: Path, what: str) -> dict[str, _TargetDef]:
    """The target mappings of a targets file (or a suite's inline ones), by name."""
    defs: dict[str, _TargetDef] = {}
    line0 = _line_of(entries)
    for i, entry in enumerate(entries):
        line = _item_line(entries, i, line0)
        if not isinstance(entry, Mapping):
            raise Where(path, line).error(
                f"each target in {what} is a mapping, got {_shown(entry)}; write e.g. "
                '{name: local, type: openai, base_url: "http://localhost:8000/v1", model: m}'
            )
        where = Where(path, _line_of(entry) or line)
        if "name" not in entry:
            raise where.error("a target needs `name:`; give it one, e.g. name: gpt-4.1")
        name = _str(entry["name"], Where(path, _value_line(entry, "name")), "name", "name: gpt-4.1")
        if name in defs:
            raise Where(path, _value_line(entry, "name")).error(
                f'target "{name}" is defined twice (first at {path}:'
                f"{_line_of(defs[name].raw)}); keep one, or rename one"
            )
        defs[name] = _TargetDef(name, entry, path, folder)
    return defs


def _one_of(m: Mapping[Any, Any], path: str, what: str, keep: str, alias: str) -> str:
    """``keep`` or its alias ``alias``, whichever ``m`` gives (``keep`` when neither);
    both given is an error at the alias, saying to keep ``keep``."""
    if keep in m and alias in m:
        raise Where(path, _key_line(m, alias)).error(
            f"{what} gives both `{keep}` and `{alias}`; keep `{keep}`"
        )
    return alias if alias in m else keep


def _target_type(m: Mapping[Any, Any], path: str, name: str) -> TargetType:
    key = _one_of(m, path, f'target "{name}"', "type", "provider")
    if key not in m:
        raise Where(path, _line_of(m)).error(
            f'target "{name}" needs `type:` (one of {", ".join(TARGET_TYPES)}); '
            "write e.g. type: openai"
        )
    value = m[key]
    where = Where(path, _value_line(m, key))
    for known in TARGET_TYPES:
        if value == known:
            return known
    if key == "provider" and isinstance(value, str):
        raise where.error(
            f'target "{name}": provider {_shown(value)} is not supported; {_SUPPORTED_TYPES}. '
            "For a provider with an OpenAI-compatible endpoint, write type: openai with its "
            "base_url"
        )
    close = difflib.get_close_matches(str(value), TARGET_TYPES, n=1)
    hint = f'did you mean "{close[0]}"? ' if close else ""
    raise where.error(f'target "{name}": unknown type {_shown(value)}; {hint}{_SUPPORTED_TYPES}')


def _build_target(d: _TargetDef, env: Mapping[str, str]) -> TargetSpec:
    """The target ``d`` defines, checked, with ``${VAR}`` replaced and its key read."""
    path, name = d.path, d.name
    m = _expand(d.raw, env, path, _line_of(d.raw), name)
    kind = _target_type(m, path, name)
    _check_keys(m, (*TARGET_COMMON_KEYS, *TARGET_KEYS[kind]), path, f'{kind} target "{name}"')

    def at(key: str) -> Where:
        return Where(path, _value_line(m, key))

    settings: dict[str, Any] = {}
    secrets: set[str] = set()
    if "timeout_s" in m:
        settings["timeout_s"] = _number(m["timeout_s"], at("timeout_s"), "timeout_s", positive=True)
    if "judge_target" in m:
        settings["judge_target"] = _str(
            m["judge_target"], at("judge_target"), "judge_target", "judge_target: gpt-4.1"
        )
    if kind == "openai":
        url_key = _one_of(m, path, f'target "{name}"', "base_url", "endpoint")
        if url_key not in m:
            raise Where(path, _line_of(m)).error(
                f'openai target "{name}" needs `base_url:`; write e.g. '
                'base_url: "https://api.openai.com/v1" (or "http://localhost:8000/v1")'
            )
        url = _str(m[url_key], at(url_key), url_key, 'base_url: "https://api.openai.com/v1"')
        if not url.startswith(("http://", "https://")):
            raise at(url_key).error(
                f'`{url_key}` of target "{name}" must start with http:// or https://, '
                f"got {_shown(url)}"
            )
        settings["base_url"] = url
        if "model" not in m:
            raise Where(path, _line_of(m)).error(
                f'openai target "{name}" needs `model:`; write e.g. model: gpt-4.1-mini'
            )
        settings["model"] = _str(m["model"], at("model"), "model", "model: gpt-4.1-mini")
        if "api_key_env" in m and "api_key" in m:
            raise at("api_key").error(
                f'target "{name}" gives both `api_key_env` and `api_key`; keep api_key_env '
                "(a key in a file is easily shared by mistake)"
            )
        if "api_key_env" in m:
            var = _str(m["api_key_env"], at("api_key_env"), "api_key_env", "OPENAI_API_KEY")
            key = env.get(var)
            if not key and isinstance(env, Unchecked):
                key = ""  # --dry-run: the plan needs no key
            elif not key:
                raise at("api_key_env").error(
                    f'environment variable {var} (api_key_env of target "{name}") is not set; '
                    "export it, or remove api_key_env for an endpoint that needs no key"
                )
            settings["api_key_env"] = var
            if key:
                settings["api_key"] = key
            secrets.add("api_key")
        elif "api_key" in m:
            if not isinstance(m["api_key"], str) or not m["api_key"]:
                raise at("api_key").error(
                    f'`api_key` of target "{name}" must be a string; better, name the '
                    "variable that holds it: api_key_env: OPENAI_API_KEY"
                )
            settings["api_key"] = m["api_key"]
            secrets.add("api_key")
        if "params" in m:
            params = _mapping(m["params"], at("params"), "params", "{temperature: 0}")
            settings["params"] = _plain(params)
        if "system" in m:
            settings["system"] = _str(m["system"], at("system"), "system", '"Answer briefly."')
        if "price" in m:
            price = _mapping(
                m["price"], at("price"), "price", "{input_per_mtok: 0.4, output_per_mtok: 1.6}"
            )
            _check_keys(price, PRICE_KEYS, path, f'the price of target "{name}"')
            settings["price"] = {
                k: _number(price[k], Where(path, _value_line(price, k)), k, minimum=0)
                for k in PRICE_KEYS
                if k in price
            }
        if "headers" in m:
            headers = _mapping(m["headers"], at("headers"), "headers", '{"X-Team": evals}')
            settings["headers"] = _strings(headers, path, "headers", name)
            if any(_secret_header(str(h)) for h in headers):
                secrets.add("headers")
    elif kind == "python":
        if "function" not in m:
            raise Where(path, _line_of(m)).error(
                f'python target "{name}" needs `function:`; write e.g. function: "my_agent:answer"'
            )
        settings["function"] = _ref(m["function"], at("function"), "function")
    else:
        if "command" not in m:
            raise Where(path, _line_of(m)).error(
                f'command target "{name}" needs `command:`; write e.g. '
                'command: ["python", "agent.py"]'
            )
        settings["command"] = _command(m["command"], at("command"), name)
        if "cwd" in m:
            cwd = _str(m["cwd"], at("cwd"), "cwd", "cwd: agent")
            settings["cwd"] = os.path.normpath(d.folder / os.path.expanduser(cwd))
        if "env" in m:
            extra = _mapping(m["env"], at("env"), "env", "{LOG_LEVEL: debug}")
            settings["env"] = _strings(extra, path, "env", name)
            if any(_secret_name(str(k)) for k in extra):
                secrets.add("env")
    return TargetSpec(
        name=name,
        type=kind,
        settings=settings,
        secrets=frozenset(secrets),
        where=Where(path, _line_of(m)),
    )


def _strings(m: Mapping[Any, Any], path: str, key: str, target: str) -> dict[str, str]:
    out: dict[str, str] = {}
    for k, v in m.items():
        if isinstance(v, bool) or not isinstance(v, (str, int, float)):
            raise Where(path, _value_line(m, k)).error(
                f'`{key}` of target "{target}": {k} must be a string, got {_shown(v)}'
            )
        out[str(k)] = str(v)
    return out


def _secret_name(name: str) -> bool:
    return secret_name(name)


def _secret_header(name: str) -> bool:
    return name.lower() in ("authorization", "proxy-authorization") or _secret_name(name)


def _command(value: Any, where: Where, target: str) -> list[str]:
    if isinstance(value, str):
        try:
            parts = shlex.split(value)
        except ValueError as exc:
            raise where.error(
                f'`command` of target "{target}" cannot be split into words ({exc}); '
                'check its quotes, or write it as a list: ["python", "agent.py"]'
            ) from exc
    elif isinstance(value, list) and all(isinstance(p, str) for p in value):
        parts = list(value)
    else:
        parts = []
    if not parts:
        raise where.error(
            f'`command` of target "{target}" must be a non-empty list of strings (or one '
            f'string), got {_shown(value)}; write e.g. command: ["python", "agent.py"]'
        )
    return parts


# -- assertions ------------------------------------------------------------------------


def _assertions(value: Any, path: str, line: int | None, key: str) -> list[AssertionSpec]:
    if not isinstance(value, list):
        raise Where(path, line).error(
            f"`{key}` must be a list of assertions, got {_shown(value)}; write e.g. "
            f'{key}: [{{type: contains, value: "hello"}}]'
        )
    return [_assertion(item, path, _item_line(value, i, line)) for i, item in enumerate(value)]


def _places(
    m: Any, path: str, line: int | None, what: str, example: str
) -> tuple[Where, Callable[[str], Where]]:
    """Refuse ``m`` unless it is a mapping (``each {what}``); else where it stands and
    a function giving where each of its keys' values stands."""
    if not isinstance(m, Mapping):
        raise Where(path, line).error(f"each {what}, got {_shown(m)}; write e.g. {example}")
    where = Where(path, _line_of(m) or line)

    def at(key: str) -> Where:
        return Where(path, _value_line(m, key) or where.line)

    return where, at


def _assertion(m: Any, path: str, line: int | None) -> AssertionSpec:
    where, at = _places(
        m, path, line, "assertion is a mapping with `type:`", '{type: contains, value: "hello"}'
    )

    if "type" not in m:
        raise where.error(
            f"an assertion needs `type:` (one of {', '.join(ASSERTION_TYPES)}); "
            "write e.g. type: contains"
        )
    label = m["type"]
    if not isinstance(label, str):
        raise at("type").error(f"`type` must be a string, got {_shown(label)}")
    negate = label.startswith("not-")
    kind = label[4:] if negate else label
    if kind not in ASSERTION_TYPES:
        close = difflib.get_close_matches(kind, ASSERTION_TYPES, n=1)
        hint = f'did you mean "{"not-" if negate else ""}{close[0]}"? ' if close else ""
        raise at("type").error(
            f"unknown assertion type {_shown(label)}; {hint}known types: "
            f"{', '.join(ASSERTION_TYPES)} (each may take a not- prefix)"
        )
    known_options = ASSERTION_OPTIONS.get(kind, ())
    options: dict[str, Any] = {}
    for key in m:
        if key in ASSERTION_KEYS:
            continue
        close = difflib.get_close_matches(str(key), ASSERTION_KEYS, n=1, cutoff=0.8)
        if close and key not in known_options:
            raise Where(path, _key_line(m, key)).error(
                f"unknown key `{key}` in a {label} assertion; did you mean `{close[0]}`?"
            )
        options[str(key)] = _plain(m[key])

    value = _plain(m.get("value"))
    threshold: float | None = None
    if kind in ("latency", "cost"):
        unit = "milliseconds" if kind == "latency" else "dollars"
        if "value" in m:
            raise at("value").error(
                f"a {label} assertion takes `threshold:` ({unit}), not `value:`; "
                f"write threshold: {_shown(m['value'])}"
            )
        if "threshold" not in m:
            raise where.error(
                f"a {label} assertion needs `threshold:` (the limit, in {unit}); "
                f"write e.g. threshold: {5000 if kind == 'latency' else 0.01}"
            )
        threshold = _number(m["threshold"], at("threshold"), "threshold", minimum=0)
    elif "threshold" in m:
        if kind not in ("llm-rubric", "python"):
            raise at("threshold").error(
                f"`threshold` has no meaning for a {label} assertion; remove it (a test's "
                "own `threshold:` sets the score it must reach)"
            )
        threshold = _number(m["threshold"], at("threshold"), "threshold", minimum=0, maximum=1)

    if kind in ("contains", "icontains", "starts-with"):
        if _is_number(value):
            value = str(value)
        value = _str(value, at("value"), "value", f'{{type: {label}, value: "hello"}}')
    elif kind == "equals":
        if "value" not in m:
            raise where.error(f'a {label} assertion needs `value:`; write e.g. value: "Paris"')
    elif kind == "regex":
        value = _str(value, at("value"), "value", "value: '\\d+'")
        try:
            re.compile(value)
        except re.error as exc:
            raise at("value").error(
                f"the pattern {_shown(value)} does not compile: {exc}; fix it (in YAML, "
                "single-quote a pattern so that its backslashes stay as written)"
            ) from exc
    elif kind in ("contains-any", "contains-all"):
        if (
            not isinstance(value, list)
            or not value
            or not all(isinstance(v, str) and v for v in value)
        ):
            raise at("value").error(
                f"a {label} assertion's `value` must be a non-empty list of strings, got "
                f'{_shown(value)}; write e.g. value: ["yes", "correct"]'
            )
    elif kind == "numeric":
        if not _is_number(value):
            raise at("value").error(
                f"a {label} assertion's `value` must be a number, got {_shown(value)}; "
                "write e.g. value: 42"
            )
        for tol in ("abs_tol", "rel_tol"):
            if tol in m:
                options[tol] = _number(m[tol], at(tol), tol, minimum=0)
    elif kind == "python":
        value = _ref(value, at("value"), "value")
    elif kind == "llm-rubric":
        value = _str(value, at("value"), "value", 'value: "The answer is polite and correct"')
    elif kind == "is-json":
        value = _json_schema(m, value, options, at, label)

    weight = 1.0
    if "weight" in m:
        weight = _number(m["weight"], at("weight"), "weight", minimum=0)
    required = False
    if "required" in m:
        if not isinstance(m["required"], bool):
            raise at("required").error(
                f"`required` must be true or false, got {_shown(m['required'])}"
            )
        required = m["required"]
    metric = None
    if "metric" in m:
        metric = _str(m["metric"], at("metric"), "metric", "metric: tone")
    return AssertionSpec(
        type=kind,
        value=value,
        negate=negate,
        threshold=threshold,
        weight=weight,
        required=required,
        metric=metric,
        options=options,
        where=where,
    )


def _json_schema(
    m: Mapping[Any, Any],
    value: Any,
    options: dict[str, Any],
    at: Any,
    label: str,
) -> Any:
    """The JSON Schema of an ``is-json`` assertion (its ``value`` or ``schema``), checked."""
    if value is not None and not isinstance(value, (Mapping, bool)):
        raise at("value").error(
            f"the `value` of a {label} assertion is a JSON Schema (a mapping), or nothing; "
            f"got {_shown(value)}"
        )
    if value is not None and "schema" in options:
        raise at("schema").error(
            f"a {label} assertion gives its schema twice (`value` and `schema`); keep one"
        )
    key = "schema" if "schema" in options else "value"
    schema = options.get("schema", value)
    if schema is None:
        return None
    if not isinstance(schema, (Mapping, bool)):
        raise at(key).error(
            f"the schema of a {label} assertion must be a mapping, got {_shown(schema)}"
        )
    from jsonschema.exceptions import SchemaError
    from jsonschema.validators import validator_for

    checked: Any = _plain(schema)
    try:
        with warnings.catch_warnings():
            # an unknown $schema draws a DeprecationWarning; the check below still runs
            warnings.simplefilter("ignore", DeprecationWarning)
            validator_for(checked).check_schema(checked)
    except SchemaError as exc:
        place = exc.json_path
        raise at(key).error(
            f"the schema of this {label} assertion is not a valid JSON Schema: "
            f"{exc.message} (at {place}); fix it, see https://json-schema.org"
        ) from exc
    options["schema"] = schema
    return schema


def _name_metrics(assertions: Sequence[AssertionSpec], path: str) -> tuple[AssertionSpec, ...]:
    """Each assertion with its ``metric``: the suite's, else its label, numbered when a
    test repeats a label (``contains``, ``contains-2``)."""
    taken: dict[str, AssertionSpec] = {}
    for a in assertions:
        if a.metric is not None:
            if a.metric in taken:
                raise a.where.error(
                    f'metric "{a.metric}" is used twice in this test (first at '
                    f"{taken[a.metric].where}); give each assertion its own metric"
                )
            taken[a.metric] = a
    named: list[AssertionSpec] = []
    for a in assertions:
        if a.metric is None:
            n, metric = 1, a.label
            while metric in taken:
                n += 1
                metric = f"{a.label}-{n}"
            taken[metric] = a
            a = replace(a, metric=metric)
        named.append(a)
    return tuple(named)


# -- tests -----------------------------------------------------------------------------


def _test(m: Any, path: str, line: int | None, shared: Sequence[AssertionSpec]) -> TestCase:
    where, at = _places(
        m,
        path,
        line,
        "test is a mapping with `id:` and `input:`",
        '{id: greeting, input: "Say hello"}',
    )

    _check_keys(m, TEST_KEYS, path, "a test")
    if "id" not in m:
        raise where.error(
            "a test needs `id:` (a name unique in the suite); write e.g. id: greeting"
        )
    test_id = m["id"]
    if isinstance(test_id, int) and not isinstance(test_id, bool):
        test_id = str(test_id)
    test_id = _str(test_id, at("id"), "id", "id: greeting")
    if "input" not in m:
        raise where.error(
            f'test "{test_id}" needs `input:` (what the target is asked); write e.g. '
            'input: "Say hello"'
        )
    question = _input(m["input"], path, at("input").line, test_id)
    if "expected_output" in m and "expected" in m:
        raise at("expected").error(
            f'test "{test_id}" gives both `expected_output` and `expected`; keep one'
        )
    expected = _plain(m.get("expected_output", m.get("expected")))
    category = None
    if "category" in m and m["category"] is not None:
        category = _str(m["category"], at("category"), "category", "category: math")
    metadata: dict[str, Any] = {}
    if "metadata" in m and m["metadata"] is not None:
        metadata = _plain(_mapping(m["metadata"], at("metadata"), "metadata", "{source: faq}"))
    threshold = None
    if "threshold" in m:
        threshold = _number(m["threshold"], at("threshold"), "threshold", minimum=0, maximum=1)
    own: list[AssertionSpec] = []
    if "assert" in m:
        own = _assertions(m["assert"], path, at("assert").line, "assert")
    if "criteria" in m:
        rubric = _str(
            m["criteria"], at("criteria"), "criteria", '"The response contains a greeting"'
        )
        own.append(AssertionSpec(type="llm-rubric", value=rubric, where=at("criteria")))
    return TestCase(
        id=test_id,
        input=question,
        expected_output=expected,
        category=category,
        metadata=metadata,
        threshold=threshold,
        assertions=_name_metrics([*own, *shared], path),
        where=where,
    )


def _input(value: Any, path: str, line: int | None, test_id: str) -> str | list[dict[str, Any]]:
    where = Where(path, line)
    mend = 'write a string, or chat messages: [{role: user, content: "Say hello"}]'
    if isinstance(value, str):
        if not value.strip():
            raise where.error(f'`input` of test "{test_id}" is empty; {mend}')
        return value
    if not isinstance(value, list) or not value:
        raise where.error(
            f'`input` of test "{test_id}" must be a string or a non-empty list of chat '
            f"messages, got {_shown(value)}; {mend}"
        )
    messages: list[dict[str, Any]] = []
    for i, message in enumerate(value):
        at = Where(path, _item_line(value, i, line))
        if not isinstance(message, Mapping):
            raise at.error(
                f'each message of test "{test_id}" is a mapping with `role` and `content`, '
                f"got {_shown(message)}; {mend}"
            )
        _check_keys(message, MESSAGE_KEYS, path, "a chat message")
        role = message.get("role")
        if role not in MESSAGE_ROLES:
            raise Where(path, _value_line(message, "role") or at.line).error(
                f"a message's `role` must be one of {', '.join(MESSAGE_ROLES)}, got {_shown(role)}"
            )
        content = message.get("content")
        if not isinstance(content, (str, list)):
            raise Where(path, _value_line(message, "content") or at.line).error(
                f"a message's `content` must be a string (or a list of content parts), got "
                f"{_shown(content)}"
            )
        messages.append(_plain(message))
    return messages


def _tests_file(file: Path, shown: str, line_in_suite: Where) -> tuple[Any, str]:
    """The test mappings of a ``tests:`` file (YAML, or JSONL: one test a line)."""
    suffix = file.suffix.lower()
    if suffix not in (".yaml", ".yml", ".jsonl"):
        raise line_in_suite.error(
            f"`tests` names {shown}, which is not .yaml, .yml or .jsonl; give the tests "
            "inline as a list, or in a file of one of those kinds"
        )
    if not file.is_file():
        raise line_in_suite.error(
            f"`tests` names {shown}, which does not exist; the path is relative to the suite"
        )
    text = _read(file, shown, "tests file", "check the `tests:` path")
    if suffix == ".jsonl":
        tests = _Seq(1)
        for number, row in enumerate(text.splitlines(), start=1):
            if not row.strip():
                continue
            try:
                item = json.loads(row)
            except json.JSONDecodeError as exc:
                raise ParseError(
                    shown,
                    number,
                    f"invalid JSON: {exc.msg} (column {exc.colno}); each line is one test "
                    'object, e.g. {"id": "greeting", "input": "Say hello"}',
                ) from exc
            tests.append(_located(item, number))
            tests.item_lines.append(number)
        return tests, shown
    data = _parse_yaml(text, shown)
    if isinstance(data, Mapping):
        _check_keys(data, ("tests",), shown, "a tests file", ignore=True)
        if "tests" not in data:
            raise Where(shown, _line_of(data)).error(
                "a tests file holds a list of tests, or `tests:` with one"
            )
        return data["tests"], shown
    return data, shown


# -- the suite -------------------------------------------------------------------------


class _Reader:
    """Reads one suite: its own keys, its tests, the targets it names and its judge."""

    def __init__(
        self,
        *,
        path: str,
        shown_dir: Path,
        base_dir: Path,
        env: Mapping[str, str],
        targets_file: str | os.PathLike[str] | None,
        only: Sequence[str] = (),
    ) -> None:
        self.only = tuple(dict.fromkeys(only))
        self.path = path
        self.shown_dir = shown_dir
        self.base_dir = base_dir
        self.env = env
        self.targets_file = targets_file
        self._file: tuple[str | None, dict[str, _TargetDef]] | None = None

    def at(self, m: Mapping[Any, Any], key: str) -> Where:
        return Where(self.path, _value_line(m, key))

    def fail(self, m: Mapping[Any, Any], key: str, message: str) -> NoReturn:
        raise self.at(m, key).error(message)

    def suite(self, data: Any, *, name: str | None, default_name: str | None) -> Suite:
        if data is None:
            raise Where(self.path).error(
                "the suite is empty; write at least `targets:` and `tests:`"
            )
        if not isinstance(data, Mapping):
            raise Where(self.path, _line_of(data)).error(
                f"a suite is a mapping of keys (name:, targets:, tests: ...), got {_shown(data)}"
            )
        _check_keys(data, SUITE_KEYS, self.path, "the suite", ignore=True)
        execution: Mapping[Any, Any] = {}
        if "execution" in data:
            execution = _mapping(
                data["execution"], self.at(data, "execution"), "execution", "{targets: [gpt-4.1]}"
            )
            _check_keys(execution, EXECUTION_KEYS, self.path, "`execution`")

        suite_name = default_name
        if "name" in data:
            suite_name = _str(data["name"], self.at(data, "name"), "name", "name: smoke")
        if name is not None:
            suite_name = name
        if not suite_name:
            raise Where(self.path, _line_of(data)).error(
                "the suite has no name; add e.g. name: smoke"
            )
        description = None
        if data.get("description") is not None:
            description = _str(
                data["description"], self.at(data, "description"), "description", '"..."'
            )

        attempts = self._attempts(data, execution)
        concurrency = 4
        if "concurrency" in data:
            concurrency = _int(data["concurrency"], self.at(data, "concurrency"), "concurrency", 1)
        timeout_s = 120.0
        if "timeout_s" in data:
            timeout_s = _number(
                data["timeout_s"], self.at(data, "timeout_s"), "timeout_s", positive=True
            )
        retries = self._retries(data)
        seed = 0
        if "seed" in data:
            seed = _int(data["seed"], self.at(data, "seed"), "seed", None)

        shared: list[AssertionSpec] = []
        if "assert" in data:
            shared = _assertions(data["assert"], self.path, self.at(data, "assert").line, "assert")
        tests = self._tests(data, shared)
        targets, defined = self._targets(data, execution)
        judge_name, judge_target = self._judge(data, targets, defined)

        suite = Suite(
            name=suite_name,
            tests=tests,
            targets=targets,
            description=description,
            attempts=attempts,
            concurrency=concurrency,
            timeout_s=timeout_s,
            retries=retries,
            seed=seed,
            judge=judge_name,
            judge_target=judge_target,
            base_dir=self.base_dir,
            where=Where(self.path),
        )
        return replace(suite, hash=suite_hash(suite))

    def _attempts(self, data: Mapping[Any, Any], execution: Mapping[Any, Any]) -> int:
        given: list[tuple[str, Any, Where]] = []
        for key in ("attempts", "repeat"):
            if key in data:
                given.append((key, data[key], self.at(data, key)))
        if "trials" in execution:
            trials = execution["trials"]
            where = Where(self.path, _value_line(execution, "trials"))
            trials = _mapping(trials, where, "execution.trials", "{count: 3}")
            _check_keys(trials, ("count",), self.path, "`execution.trials` (evaldelta reads count)")
            if "count" not in trials:
                raise where.error(
                    "`execution.trials` needs `count:`; write e.g. trials: {count: 3}"
                )
            given.append(
                (
                    "execution.trials.count",
                    trials["count"],
                    Where(self.path, _value_line(trials, "count")),
                )
            )
        if len(given) > 1:
            raise given[1][2].error(
                f"the number of attempts is given twice (`{given[0][0]}` and `{given[1][0]}`); "
                "keep one"
            )
        if not given:
            return 1
        key, value, where = given[0]
        return _int(value, where, key, 1)

    def _retries(self, data: Mapping[Any, Any]) -> RetryPolicy:
        if "retries" not in data:
            return RetryPolicy()
        value = data["retries"]
        where = self.at(data, "retries")
        if isinstance(value, int) and not isinstance(value, bool):
            return RetryPolicy(max=_int(value, where, "retries", 0))
        m = _mapping(value, where, "retries", "{max: 3, initial_delay_s: 1, max_delay_s: 30}")
        _check_keys(m, RETRY_KEYS, self.path, "`retries`")
        default = RetryPolicy()

        def at(key: str) -> Where:
            return Where(self.path, _value_line(m, key))

        policy = RetryPolicy(
            max=_int(m["max"], at("max"), "max", 0) if "max" in m else default.max,
            initial_delay_s=(
                _number(m["initial_delay_s"], at("initial_delay_s"), "initial_delay_s", minimum=0)
                if "initial_delay_s" in m
                else default.initial_delay_s
            ),
            max_delay_s=(
                _number(m["max_delay_s"], at("max_delay_s"), "max_delay_s", minimum=0)
                if "max_delay_s" in m
                else default.max_delay_s
            ),
            retry_after_cap_s=(
                _number(
                    m["retry_after_cap_s"], at("retry_after_cap_s"), "retry_after_cap_s", minimum=0
                )
                if "retry_after_cap_s" in m
                else default.retry_after_cap_s
            ),
        )
        if policy.max_delay_s < policy.initial_delay_s:
            raise (at("max_delay_s") if "max_delay_s" in m else at("initial_delay_s")).error(
                f"`max_delay_s` ({policy.max_delay_s:g}) is less than `initial_delay_s` "
                f"({policy.initial_delay_s:g}); raise max_delay_s or lower initial_delay_s"
            )
        return policy

    def _tests(
        self, data: Mapping[Any, Any], shared: Sequence[AssertionSpec]
    ) -> tuple[TestCase, ...]:
        if "tests" not in data:
            raise Where(self.path, _line_of(data)).error(
                'the suite has no `tests:`; add e.g. tests: [{id: greeting, input: "Say hello"}]'
            )
        items = data["tests"]
        where = self.at(data, "tests")
        path = self.path
        if isinstance(items, str):
            shown = os.path.normpath(self.shown_dir / items)
            items, path = _tests_file(self.base_dir / items, shown, where)
            where = Where(path, _line_of(items))
        if not isinstance(items, list):
            raise where.error(
                f"`tests` must be a list of tests (or the path of a .yaml or .jsonl file of "
                f'them), got {_shown(items)}; write e.g. tests: [{{id: greeting, input: "Hi"}}]'
            )
        if not items:
            raise where.error("`tests` is empty; add at least one test")
        tests: list[TestCase] = []
        seen: dict[str, TestCase] = {}
        for i, item in enumerate(items):
            test = _test(item, path, _item_line(items, i, where.line), shared)
            if test.id in seen:
                id_line = _value_line(item, "id") or test.where.line
                raise Where(path, id_line).error(
                    f'duplicate test id "{test.id}" (first at {seen[test.id].where}); give '
                    "each test its own id"
                )
            seen[test.id] = test
            tests.append(test)
        return tuple(tests)

    # targets

    def _named(
        self, data: Mapping[Any, Any], execution: Mapping[Any, Any]
    ) -> tuple[list[tuple[str, Where]], dict[str, _TargetDef], Where]:
        """The targets the suite names (with where), its inline definitions, and the
        place to blame when it names none."""
        given = [
            (label, m, key)
            for label, m, key in (
                ("targets", data, "targets"),
                ("execution.targets", execution, "targets"),
                ("execution.target", execution, "target"),
            )
            if key in m
        ]
        if len(given) > 1:
            raise Where(self.path, _value_line(given[1][1], given[1][2])).error(
                f"the targets are given twice (`{given[0][0]}` and `{given[1][0]}`); keep one"
            )
        if not given:
            return [], {}, Where(self.path, _line_of(data))
        label, m, key = given[0]
        value = m[key]
        where = Where(self.path, _value_line(m, key))
        if isinstance(value, str):
            value = _Seq(where.line)
            value.append(m[key])
            value.item_lines.append(where.line)
        elif label == "execution.target" or not isinstance(value, list):
            raise where.error(
                f"`{label}` must be "
                + ("a target's name" if label == "execution.target" else "a list of targets")
                + f", got {_shown(value)}; write e.g. {label}: "
                + ("gpt-4.1" if label == "execution.target" else "[gpt-4.1, local]")
            )
        named: list[tuple[str, Where]] = []
        inline_entries = _Seq(_line_of(value))
        for i, item in enumerate(value):
            item_where = Where(self.path, _item_line(value, i, where.line))
            if isinstance(item, Mapping):
                inline_entries.append(item)
                inline_entries.item_lines.append(item_where.line)
                item = item.get("name")
            if not isinstance(item, str) or not item:
                if item is None:
                    continue  # an inline target without a name: _target_defs says so
                raise item_where.error(
                    f"each of `{label}` is a target's name (or a target mapping), got "
                    f"{_shown(item)}"
                )
            if any(n == item for n, _ in named):
                raise item_where.error(f'target "{item}" is named twice in `{label}`; keep one')
            named.append((item, item_where))
        inline = _target_defs(inline_entries, self.path, self.base_dir, "the suite")
        return named, inline, where

    def _file_defs(self) -> tuple[str | None, dict[str, _TargetDef]]:
        """The targets file's path and definitions (read once, when first needed)."""
        if self._file is not None:
            return self._file
        found: tuple[Path, str] | None = None
        if self.targets_file is not None:
            shown = os.fspath(self.targets_file)
            found = (Path(shown), shown)
            if not found[0].is_file():
                raise ParseError(shown, None, "no such targets file; check the --targets path")
        else:
            for file_name in TARGETS_FILE_NAMES:
                if (self.base_dir / file_name).is_file():
                    found = (self.base_dir / file_name, str(self.shown_dir / file_name))
                    break
            else:
                for folder in [self.base_dir, *list(self.base_dir.parents)[:AGENTV_LEVELS]]:
                    for file_name in TARGETS_FILE_NAMES:
                        candidate = folder / ".agentv" / file_name
                        if candidate.is_file():
                            found = (candidate, str(candidate))
                            break
                    if found:
                        break
        if found is None:
            self._file = (None, {})
            return self._file
        file, shown = found
        text = _read(file, shown, "targets file", "check the --targets path")
        data = _parse_yaml(text, shown)
        entries = data
        if isinstance(data, Mapping):
            _check_keys(data, ("targets",), shown, "a targets file", ignore=True)
            entries = data.get("targets")
        if not isinstance(entries, list):
            raise Where(shown, _line_of(data)).error(
                "a targets file holds `targets:`, a list of target mappings; write e.g. "
                'targets: [{name: local, type: openai, base_url: "http://localhost:8000/v1", '
                "model: m}]"
            )
        folder = file.resolve().parent
        if folder.name == ".agentv":
            folder = folder.parent  # agentv's paths are relative to the project, not .agentv
        self._file = (shown, _target_defs(entries, shown, folder, "the targets file"))
        return self._file

    def _unknown(
        self, name: str, where: Where, role: str, inline: Mapping[str, _TargetDef]
    ) -> ParseError:
        file, defs = self._file_defs()
        defined = [*inline, *(n for n in defs if n not in inline)]
        close = difflib.get_close_matches(name, defined, n=1)
        hint = f' (did you mean "{close[0]}"?)' if close else ""
        if file is None:
            place = (
                "no targets file found: looked for targets.yaml and targets.yml beside the "
                f"suite, and .agentv/targets.yaml up to {AGENTV_LEVELS} folders above"
            )
        else:
            place = f"targets file {file}"
        into = (
            file
            if self.targets_file is not None and file
            else "targets.yaml beside the suite (or --targets FILE)"
        )
        example = (
            f'{{name: {name}, type: openai, base_url: "https://api.openai.com/v1", '
            f"model: {name}, api_key_env: OPENAI_API_KEY}}"
        )
        return where.error(
            f'unknown {role} "{name}"{hint}: define it in {into}, e.g. targets: [{example}]; '
            f"defined: {', '.join(defined) or 'none'} ({place})"
        )

    def _definition(self, name: str, inline: Mapping[str, _TargetDef]) -> _TargetDef | None:
        if name in inline:
            return inline[name]
        return self._file_defs()[1].get(name)

    def _targets(
        self, data: Mapping[Any, Any], execution: Mapping[Any, Any]
    ) -> tuple[tuple[TargetSpec, ...], dict[str, _TargetDef]]:
        named, inline, where = self._named(data, execution)
        if not named:
            raise where.error(
                "the suite names no targets; add targets: [NAME, ...] (or execution.targets:), "
                "each defined in targets.yaml beside the suite"
            )
        if self.only:
            names = [n for n, _ in named]
            unknown = [n for n in self.only if n not in names]
            if unknown:
                raise UsageError(
                    f"--target {unknown[0]}: the suite has no such target (its targets: "
                    f"{', '.join(names)})"
                )
            # Only the targets asked for are built: another's key need not be set.
            named = [(n, w) for n, w in named if n in self.only]
            named.sort(key=lambda item: list(self.only).index(item[0]))
        specs: list[TargetSpec] = []
        for name, name_where in named:
            d = self._definition(name, inline)
            if d is None:
                raise self._unknown(name, name_where, "target", inline)
            specs.append(_build_target(d, self.env))
        return tuple(specs), dict(inline)

    def _judge(
        self,
        data: Mapping[Any, Any],
        targets: Sequence[TargetSpec],
        inline: Mapping[str, _TargetDef],
    ) -> tuple[str | None, TargetSpec | None]:
        if data.get("judge") is None:
            # agentv's way: the targets name their judge (judge_target); one for all.
            named = {t.settings["judge_target"]: t for t in targets if "judge_target" in t.settings}
            if not named:
                return None, None
            if len(named) > 1:
                first, second = list(named.values())[:2]
                raise first.where.error(
                    f'targets "{first.name}" and "{second.name}" name different judges '
                    f"({', '.join(map(repr, named))}); set one for the suite with "
                    "judge: {target: NAME}"
                )
            value, spec_with = next(iter(named.items()))
            where = spec_with.where
        else:
            value = data["judge"]
            where = self.at(data, "judge")
        if isinstance(value, Mapping):
            _check_keys(value, ("target",), self.path, "`judge`")
            if "target" not in value:
                raise where.error("`judge` needs `target:`; write e.g. judge: {target: gpt-4.1}")
            where = Where(self.path, _value_line(value, "target"))
            value = value["target"]
        name = _str(value, where, "judge", "judge: {target: gpt-4.1}")
        spec = next((t for t in targets if t.name == name), None)
        if spec is None:
            d = self._definition(name, inline)
            if d is None:
                raise self._unknown(name, where, "judge target", inline)
            spec = _build_target(d, self.env)
        if spec.type != "openai":
            raise where.error(
                f'the judge "{name}" is a {spec.type} target; a judge must be an openai '
                "target (an OpenAI-compatible endpoint): name one, or define one"
            )
        return name, spec


def suite_hash(suite: Suite) -> str:
    """sha256 of what decides what a run measures: the tests and their assertions, the
    targets' public settings, the attempts and the judge (not concurrency, timeouts or
    retries, which change how a run goes, not what it measures)."""
    canon = {
        "tests": [
            {
                "id": t.id,
                "input": t.input,
                "expected_output": t.expected_output,
                "threshold": t.threshold,
                "assertions": [
                    {
                        "type": a.type,
                        "value": a.value,
                        "negate": a.negate,
                        "threshold": a.threshold,
                        "weight": a.weight,
                        "required": a.required,
                        "metric": a.metric,
                        "options": dict(a.options),
                    }
                    for a in t.assertions
                ],
            }
            for t in suite.tests
        ],
        "targets": [{"name": t.name, **t.public_settings()} for t in suite.targets],
        "attempts": suite.attempts,
        "judge": (
            {"name": suite.judge_target.name, **suite.judge_target.public_settings()}
            if suite.judge_target is not None
            else suite.judge
        ),
    }
    text = json.dumps(canon, sort_keys=True, default=str, ensure_ascii=False)
    return hashlib.sha256(text.encode()).hexdigest()


def _stem(file: Path) -> str:
    name = file.name
    for suffix in (".yaml", ".yml"):
        name = name.removesuffix(suffix)
    return name.removesuffix(".eval")


def load_suite(
    path: str | os.PathLike[str],
    *,
    env: Mapping[str, str],
    targets_file: str | os.PathLike[str] | None = None,
    name: str | None = None,
    only: Sequence[str] = (),
    check_env: bool = True,
) -> Suite:
    """The suite in the YAML file ``path``, with its targets defined inline, in
    ``targets_file``, or in a targets file found beside it.

    Args:
        env: the environment for ``${VAR}`` and ``api_key_env`` (the caller's copy).
        only: build only these of the suite's targets (``--target``), in this order.
        check_env: ``False`` for a plan that calls nothing (``--dry-run``): a variable
            or key that is not set is left as written rather than refused.
        name: the suite's name, over its ``name:`` (default: the file's stem,
            ``benchmark`` for ``benchmark.eval.yaml``).

    Raises:
        ParseError: at the offending ``path:line``, saying what is wrong and how to
            mend it (never showing a key's value).
    """
    shown = os.fspath(path)
    file = Path(shown)
    text = _read(file, shown, "suite file", "check the path")
    data = _parse_yaml(text, shown)
    if targets_file is not None and not Path(targets_file).is_file():
        # Checked even when every target is defined inline: a path given is meant.
        raise Where(os.fspath(targets_file)).error("no such targets file; check the --targets path")
    reader = _Reader(
        path=shown,
        shown_dir=file.parent,
        base_dir=file.resolve().parent,
        env=env if check_env else Unchecked(env),
        targets_file=targets_file,
        only=only,
    )
    return reader.suite(data, name=name, default_name=_stem(file))


def suite_from_mapping(
    data: Mapping[str, Any],
    *,
    base_dir: Path,
    env: Mapping[str, str],
    source: str = "<python>",
    targets_file: str | os.PathLike[str] | None = None,
    name: str | None = None,
) -> Suite:
    """The suite a mapping of the suite file's shape describes (``evaluate()`` given a
    dict); relative paths (``tests:``, targets files) are from ``base_dir``, and errors
    are placed at ``source``."""
    base = Path(base_dir).resolve()
    reader = _Reader(path=source, shown_dir=base, base_dir=base, env=env, targets_file=targets_file)
    return reader.suite(data, name=name, default_name=None)
