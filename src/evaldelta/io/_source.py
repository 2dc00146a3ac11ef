"""Finding and reading the bytes of a results file: plain, gzip, or a run directory."""

from __future__ import annotations

import gc
import gzip
import os
import zlib
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

from evaldelta.errors import InputError, ParseError

if TYPE_CHECKING:
    from evaldelta.model import IntArray

#: Where a run directory keeps its records, looked for in this order.
RUN_DIR_INDEXES = ("index.jsonl", os.path.join(".internal", "index.jsonl"))


def resolve(path: str | os.PathLike[str]) -> Path:
    """The file to read for ``path``: the path itself, or a run directory's index."""
    p = Path(path)
    try:
        return _resolve(p)
    except OSError as exc:
        raise unreadable(p, exc, "cannot open") from exc


def unreadable(path: Path, exc: OSError, what: str = "cannot read") -> InputError:
    """The error for a file the system will not let us read: what, and how to mend it."""
    if isinstance(exc, PermissionError):
        return InputError(
            f"{path}: permission denied; check the file's permissions ({exc.strerror})"
        )
    return InputError(f"{path}: {what} ({exc.strerror or exc})")


@dataclass
class Limits:
    """How much a results file may unpack to, and how long one line (or one member of
    an archive) may be: generous bounds that no real results file meets, so that a
    small hostile file (1 MB of gzip holding a 1 GiB line) is refused by name before
    it takes the machine's memory. Raise them for a file that truly is that large:
    ``evaldelta.io.LIMITS.line_bytes = ...`` (on the command line,
    ``EVALDELTA_MAX_LINE_MB`` and ``EVALDELTA_MAX_UNPACKED_MB``)."""

    line_bytes: int = 256 * 2**20
    unpacked_bytes: int = 64 * 2**30


#: The limits every reader keeps to.
LIMITS = Limits()


#: The size from which the DuckDB engine reads a file, on a machine with cores to spare.
ENGINE_BYTES = 16 * 2**20
#: The fewest processor cores this process may use on which the engine reads large
#: files by default. Measured on 2 (1,000,000 records): 6% faster than the plain reader,
#: for 1.34x its processor time and 1.65x its memory; DuckDB's share of the reading
#: scales with cores (6.3 s on one thread, 4.2 s on two), the plain reader's does not.
ENGINE_MIN_CORES = 4


def usable_cores() -> int:
    """The processor cores this process may run on (its affinity, where the system
    tells it: a container's share, not the machine's)."""
    getaffinity = getattr(os, "sched_getaffinity", None)
    if getaffinity is not None:
        return len(getaffinity(0))
    return os.cpu_count() or 1


def _default_engine_bytes() -> int | None:
    return ENGINE_BYTES if usable_cores() >= ENGINE_MIN_CORES else None


@dataclass
class Engine:
    """When the DuckDB engine (:mod:`evaldelta.io._duckdb`) reads a file: from
    ``duckdb_bytes`` bytes on (``None``: never; ``0``: every file). By default, files of
    :data:`ENGINE_BYTES` and more on a machine of :data:`ENGINE_MIN_CORES` cores or more,
    none on a smaller one. On the command line, ``EVALDELTA_DUCKDB_MB`` (a number of MiB,
    or ``off``)."""

    duckdb_bytes: int | None = field(default_factory=_default_engine_bytes)


#: When the engine reads a file (``evaldelta.io.ENGINE``).
ENGINE = Engine()

#: The longest line the engine reads (its buffers are this large, per thread): a longer
#: one is an error there, and the plain path reads the file (up to ``LIMITS.line_bytes``).
ENGINE_MAX_LINE = 16 * 2**20


def engine_takes(path: Path) -> bool:
    """Whether ``path`` is for the DuckDB engine: large enough (see :class:`Engine`), and
    read with the default limit on lines (a lowered one only the plain path enforces)."""
    if ENGINE.duckdb_bytes is None or LIMITS.line_bytes < ENGINE_MAX_LINE:
        return False
    try:
        return path.stat().st_size >= ENGINE.duckdb_bytes
    except OSError:
        return False


def _mb(n: int) -> str:
    return f"{n / 2**20:,.0f} MiB"


def line_too_long(src: str, line: int | None, what: str = "a line") -> ParseError:
    return ParseError(
        src,
        line,
        f"{what} longer than {_mb(LIMITS.line_bytes)}: no results record is that long; if "
        "this one is, raise the limit (EVALDELTA_MAX_LINE_MB)",
    )


def unpacked_too_large(src: str, what: str = "unpacks") -> ParseError:
    return ParseError(
        src,
        None,
        f"{what} to more than {_mb(LIMITS.unpacked_bytes)}: refused before it fills the "
        "memory; if the file truly is that large, raise the limit (EVALDELTA_MAX_UNPACKED_MB)",
    )


def read_bounded(fh: Any, limit: int, too_large: Callable[[], ParseError]) -> bytes:
    """All of ``fh`` (an unpacking stream), refused past ``limit`` bytes."""
    pieces: list[bytes] = []
    total = 0
    while piece := fh.read(min(CHUNK_SIZE, limit + 1 - total) or 1):
        pieces.append(piece)
        total += len(piece)
        if total > limit:
            raise too_large()
    return b"".join(pieces)


def _resolve(p: Path) -> Path:
    if p.is_dir():
        for name in RUN_DIR_INDEXES:
            candidate = p / name
            if candidate.is_file():
                return candidate
        looked = " or ".join(str(p / n) for n in RUN_DIR_INDEXES)
        raise InputError(
            f"{p}: is a directory without a results index (looked for {looked}); "
            "pass the results file itself"
        )
    if not p.exists():
        if p.is_symlink():
            import errno
            import os

            try:
                os.stat(p)
            except OSError as exc:
                if exc.errno == errno.ELOOP:
                    raise InputError(
                        f"{p}: a symbolic link that leads back to itself; point it at the "
                        "results file"
                    ) from None
            raise InputError(
                f"{p}: a symbolic link to {os.readlink(p)}, which does not exist; point it at "
                "the results file"
            )
        raise InputError(f"{p}: no such file; check the path (run from the right folder?)")
    if not p.is_file():
        raise InputError(f"{p}: not a regular file")
    return p


#: Bytes read at a time by readers that stream: big enough to amortise decoding calls,
#: small enough that the piece and the records decoded from it stay in the processor's
#: cache and a 500 MB file never sits in memory whole. (A longer line grows the piece.)
CHUNK_SIZE = 4 * 1024 * 1024


class LineChunk(NamedTuple):
    """Whole lines of a file: the bytes, the number of the first line, and where the
    line breaks are (offsets into ``data``)."""

    data: memoryview
    first_line: int
    breaks: IntArray


def iter_line_chunks(path: Path, size: int | None = None) -> Iterator[LineChunk]:
    """The file's content in pieces that end at a line break (the last piece may not),
    gunzipped when gzip, without a UTF-8 byte-order mark.

    One buffer is read into again and again: each piece is valid only until the next
    is asked for, so nothing decoded from it (``msgspec.Raw``) may be kept.
    """
    import numpy as np

    size = max(size or CHUNK_SIZE, 64)
    try:
        with open(path, "rb") as probe:
            magic = probe.read(2)
        with gzip.open(path, "rb") if magic == b"\x1f\x8b" else open(path, "rb", buffering=0) as fh:
            if magic != b"\x1f\x8b":  # a small file needs no big buffer
                size = max(min(size, os.fstat(fh.fileno()).st_size + 1), 64)
            buf = bytearray(size)
            # Reused for every piece: a fresh array each time costs its page faults.
            is_break = np.empty(size, dtype=np.bool_)
            filled = 0  # bytes of buf holding content not yet handed out
            start = 0  # where content starts in buf (after a byte-order mark)
            first_line = 1
            unpacked = 0
            at_start = eof = False
            while True:
                while not eof and filled < len(buf):
                    with memoryview(buf) as free:
                        got = fh.readinto(free[filled:])
                    eof = not got
                    filled += got or 0
                    unpacked += got or 0
                if unpacked > LIMITS.unpacked_bytes:
                    raise unpacked_too_large(str(path))
                if not at_start:
                    at_start = True
                    if buf.startswith(b"\xef\xbb\xbf"):
                        start = 3
                end = filled if eof else buf.rfind(b"\n", start, filled) + 1
                if end <= start:
                    if eof:
                        return
                    if filled - start >= LIMITS.line_bytes:
                        raise line_too_long(str(path), first_line)
                    grown = bytearray(2 * len(buf))  # a line longer than the buffer
                    grown[:filled] = buf[:filled]
                    buf = grown
                    continue
                data = memoryview(buf)[start:end]
                if is_break.shape[0] < len(data):
                    is_break = np.empty(len(buf), dtype=np.bool_)
                mask = np.equal(np.frombuffer(data, dtype=np.uint8), 10, out=is_break[: len(data)])
                breaks = np.flatnonzero(mask)
                _check_line_lengths(str(path), breaks, len(data), first_line)
                check_utf8(str(path), data, first_line)
                yield LineChunk(data, first_line, breaks)
                first_line += int(breaks.shape[0])
                rest = filled - end
                buf[:rest] = buf[end:filled]  # the same size: no resize while views live
                filled, start = rest, 0
    except (OSError, EOFError, zlib.error) as exc:
        if isinstance(exc, PermissionError) or (
            isinstance(exc, OSError) and not isinstance(exc, gzip.BadGzipFile) and exc.errno
        ):
            raise unreadable(path, exc) from exc
        raise ParseError(
            str(path), None, f"is not a readable gzip file ({exc}); re-create or gunzip it"
        ) from exc


def _check_line_lengths(src: str, breaks: IntArray, size: int, first_line: int) -> None:
    """Refuse a piece holding a line longer than the limit, naming the line."""
    import numpy as np

    ends = np.concatenate(([-1], breaks, [size - 1])) if size else np.zeros(1, dtype=np.int64)
    lengths = np.diff(ends)
    if lengths.shape[0] and int(lengths.max()) > LIMITS.line_bytes:
        raise line_too_long(src, first_line + int(np.argmax(lengths)))


def read_bytes(path: Path) -> bytes:
    """The file's content, gunzipped when it is gzip, without a UTF-8 byte-order mark
    (bytes as they are: a zip is no text; :func:`check_utf8` checks text)."""
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise unreadable(path, exc) from exc
    if data[:2] == b"\x1f\x8b":
        import io

        try:
            with gzip.GzipFile(fileobj=io.BytesIO(data)) as fh:
                data = read_bounded(
                    fh, LIMITS.unpacked_bytes, lambda: unpacked_too_large(str(path))
                )
        except (OSError, EOFError, zlib.error) as exc:
            raise ParseError(
                str(path), None, f"is not a readable gzip file ({exc}); re-create or gunzip it"
            ) from exc
    if data[:3] == b"\xef\xbb\xbf":
        data = data[3:]
    return data


def check_utf8(src: str, data: bytes | memoryview, first_line: int = 1) -> None:
    """Refuse bytes that are not UTF-8, naming the line and column: JSON is UTF-8 by
    definition, and text changed silently would be data lost. (ASCII, most files,
    is told apart at memory speed and not decoded at all.)"""
    import numpy as np

    raw = np.frombuffer(data, dtype=np.uint8)
    if not raw.shape[0] or int(raw.max()) < 0x80:
        return
    # A character of more than one byte is bytes of 0x80 and above only, so the text is
    # UTF-8 when each run of such bytes is: decode the runs alone, split by an ASCII NUL
    # (a piece of mostly ASCII text, as results are, decodes a hundred times faster).
    where = np.flatnonzero(raw >= 0x80)
    runs = np.insert(raw[where], np.flatnonzero(np.diff(where) > 1) + 1, 0)
    try:
        runs.tobytes().decode("utf-8")
    except UnicodeDecodeError:
        pass  # decoded whole below, to say where
    else:
        return
    whole = bytes(data)
    try:
        whole.decode("utf-8")
    except UnicodeDecodeError as err:
        line = first_line + whole.count(b"\n", 0, err.start)
        column = err.start - whole.rfind(b"\n", 0, err.start)
        raise ParseError(
            src,
            line,
            f"not valid UTF-8 (byte 0x{whole[err.start]:02x} at column {column}); "
            "save the file as UTF-8",
        ) from None


@contextmanager
def paused_gc() -> Iterator[None]:
    """Pause the cycle collector while a reader builds millions of acyclic objects.

    Each allocation burst otherwise triggers collections that scan every object made
    so far: quadratic-feeling slowness on big files. The previous state is restored.
    """
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def fingerprint_bytes(value: object) -> bytes:
    """The bytes a case's input is known by, the same whatever file it came from: a
    string's UTF-8 text, anything else as canonical JSON (keys sorted, no spacing);
    ``b""`` for no input."""
    import msgspec

    if value is None:
        return b""
    if isinstance(value, str):
        return value.encode("utf-8", "surrogatepass")
    return msgspec.json.encode(value, order="sorted")


def crc_of(key: bytes) -> int:
    """CRC-32 of an input's fingerprint bytes; 0 only for no input (a real 0 reads as 1)."""
    return (zlib.crc32(key) or 1) if key else 0


def raw_fingerprint_bytes(raw: Any) -> bytes:
    """:func:`fingerprint_bytes` of an undecoded ``msgspec.Raw`` value."""
    import msgspec

    return fingerprint_bytes(msgspec.json.decode(raw)) if len(raw) else b""


def fingerprint(value: object) -> int:
    """CRC-32 of a case's input: 0 for none (see :func:`fingerprint_bytes`)."""
    return crc_of(fingerprint_bytes(value))
