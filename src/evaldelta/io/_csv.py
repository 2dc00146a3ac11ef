"""Reader for CSV and TSV results: a header row naming the columns, then one row per attempt.

Columns read (names compared without regard to case), unless ``--map`` names others
(``--map test_id=question_id,score=correct,target=model``):

- test id: ``test_id``, ``eval_id``, ``testId``, ``id``
- ``target``, ``score``, ``passed``, ``attempt``, ``latency_ms`` (or ``duration_ms``),
  ``wait_ms``, ``input_tokens``, ``output_tokens``, ``cost_usd``, ``error``,
  ``error_kind``, ``category``
- scorers: every ``score_<name>`` or ``scores.<name>`` column; when a row has no
  score, its score is the mean of these
- text, only when asked for: ``input``, ``output`` (or ``answer``), ``expected``
  (or ``expected_output``)

A column that ``--map`` gives to one field is not also read as another. Cells:
numbers are parsed strictly (no "yes", "85%", "1,000", nan or inf); ``passed`` takes
true/false, 1/0, yes/no and pass/fail; an empty cell is absent, never 0. Ids and
labels lose surrounding spaces, text cells are kept as they are. The delimiter is a
tab for ``.tsv``, else whichever of comma, tab and semicolon the header row holds most.

A row with an error and no score scores 0 (and is counted as an error). Repeated
test ids (per target) are attempts, numbered in order unless an ``attempt`` column
says otherwise.
"""

from __future__ import annotations

import csv
import io
import math
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from operator import itemgetter
from pathlib import Path
from typing import Any, cast

from evaldelta.errors import ParseError
from evaldelta.io._agentv import ATTEMPT_MAX, WHOLE_ATTEMPT
from evaldelta.io._errors import listed, shown
from evaldelta.io._mapped import BOOLEAN_WORDS, DEFAULT_NAMES, SCORER_PREFIX, check_mapping
from evaldelta.io._reader import NO_RECORDS, ReadOptions, fill_scores, read_content, reader
from evaldelta.io._source import check_utf8, fingerprint, paused_gc
from evaldelta.model import NUMBER_FIELDS, Run

NAME = "csv"

#: Column-name prefixes that mark a scorer (compared lower-cased).
SCORER_PREFIXES = ("score_", SCORER_PREFIX)

_DELIMITERS = (",", "\t", ";")
_DELIMITER_WORDS = {",": "a comma", "\t": "a tab", ";": "a semicolon"}
_ID_NAMES = frozenset(name.lower() for name in DEFAULT_NAMES["test_id"])
#: How a cell cut short in a message ends: inside its quotes.
_CUT = '..."'
#: Long model outputs overflow the csv module's default cell limit of 128 KiB.
_CELL_LIMIT = 2**31 - 1


def _is_tsv(path: Path) -> bool:
    return path.name.lower().removesuffix(".gz").endswith(".tsv")


def _guess_delimiter(header: str) -> str:
    """Whichever of comma, tab and semicolon the header row holds most (comma on a tie)."""
    return max(_DELIMITERS, key=header.count)


#: What can follow the "[" that opens a JSON array (as byte values).
_ARRAY_ITEM_STARTS = frozenset(b'{["]-0123456789')


def _is_json(start: bytes) -> bool:
    """Whether text beginning with ``start`` (blanks stripped) is JSON. A header whose
    first column is named "[provider] prompt" is not."""
    if start[:1] == b"{":
        return True
    if start[:1] != b"[":
        return False
    rest = start[1:64].lstrip()
    return not rest or rest[0] in _ARRAY_ITEM_STARTS


def sniff(path: Path, head: bytes) -> bool:
    """True for a ``.csv`` or ``.tsv`` file, or one whose first row is a delimited header
    with a test id column. Never for JSON."""
    start = head.lstrip()
    if not start or _is_json(start):
        return False
    if path.name.lower().removesuffix(".gz").endswith((".csv", ".tsv")):
        return True
    if b"\x00" in head:
        return False
    first = start.split(b"\n", 1)[0].decode("utf-8", errors="replace").rstrip("\r")
    try:
        cells = next(csv.reader([first], delimiter=_guess_delimiter(first)))
    except (csv.Error, StopIteration):
        return False
    return len(cells) >= 2 and any(c.strip().lower() in _ID_NAMES for c in cells)


@reader
def read(path: Path, options: ReadOptions) -> Run:
    """Read a CSV or TSV results file into a :class:`Run`.

    ``extra_fields``: further columns to keep, in ``run.extra`` (``None`` for an empty
    cell, or for every row when there is no such column).

    Raises:
        ParseError: a row that does not fit the header, a cell of the wrong kind, a
            row without a test id or score, or no column for them (or for a ``--map``).
        UsageError: a mapping with a field the common model lacks.
    """
    check_mapping(options.mapping)
    src, data = read_content(path)
    if _is_json(data[:4096].lstrip()):
        raise ParseError(
            src, None, "is JSON, not CSV; read it with --input-format jsonl (with --map if need be)"
        )
    text = _decode(src, data)
    delimiter = "\t" if _is_tsv(path) else _guess_delimiter(_first_line(text))
    with paused_gc():
        table = _Table(src, options.mapping, *_rows(src, text, delimiter))
        return table.run(options.keep_text, options.extra)


def _first_line(text: str) -> str:
    body = text.lstrip()  # no copy when nothing leads the header
    end = body.find("\n")
    return body if end < 0 else body[:end]


def _decode(src: str, data: bytes) -> str:
    check_utf8(src, data)
    return data.decode("utf-8")


@contextmanager
def _long_cells() -> Iterator[None]:
    old = csv.field_size_limit(_CELL_LIMIT)
    try:
        yield
    finally:
        csv.field_size_limit(old)


def _rows(src: str, text: str, delimiter: str) -> tuple[list[str], int, list[list[str]], list[int]]:
    """The header (names stripped), its line, the rows, and the line each row starts on.

    Blank rows (Excel's trailing ``,,,`` too) are skipped; a row with more or fewer
    cells than the header has columns is named."""
    # strict: a broken quote is named, rather than swallowing the rows after it.
    reader = csv.reader(io.StringIO(text, newline=""), delimiter=delimiter, strict=True)
    try:
        with _long_cells():
            every = list(reader)
    except csv.Error:
        every = []  # the row-by-row reading below names the bad row
    if every and reader.line_num == len(every):
        # No cell spans lines: row k is on line k + 1, and one pass over the rows checks them.
        h = next((k for k, row in enumerate(every) if any(c.strip() for c in row)), None)
        if h is not None:
            width = len(every[h])
            rows = every[h + 1 :]
            if not [row for row in rows if len(row) != width or not any(row)]:
                if not rows:
                    raise _no_rows(src)
                return (
                    [c.strip() for c in every[h]],
                    h + 1,
                    rows,
                    list(range(h + 2, len(every) + 1)),
                )
    return _rows_by_line(src, text, delimiter)


def _no_rows(src: str) -> ParseError:
    return ParseError(
        src,
        None,
        "has a header row but no rows: no records to compare; check the eval wrote its results",
    )


def _rows_by_line(
    src: str, text: str, delimiter: str
) -> tuple[list[str], int, list[list[str]], list[int]]:
    """The careful reading: each row's first line followed, blank rows skipped, a ragged
    row or a broken quote named."""
    reader = csv.reader(io.StringIO(text, newline=""), delimiter=delimiter, strict=True)
    header: list[str] | None = None
    header_line = width = 0
    rows: list[list[str]] = []
    lines: list[int] = []
    start = end = 0
    try:
        with _long_cells():
            for row in reader:
                start, end = end + 1, reader.line_num
                if header is None:
                    if any(cell.strip() for cell in row):
                        header, header_line, width = [c.strip() for c in row], start, len(row)
                    continue
                if (len(row) != width or not any(row)) and not "".join(row).strip():
                    continue
                if len(row) != width:
                    raise ParseError(src, start, _ragged(len(row), width, delimiter))
                rows.append(row)
                lines.append(start)
    except csv.Error as err:
        reason = str(err)
        if reason == "unexpected end of data":
            reason = 'a quoted cell is never closed: a cell that starts with " must end with "'
        elif reason.endswith("expected after '\"'"):
            reason = 'a quoted cell goes on after its closing quote: write a " inside one as ""'
        # The row being read starts just after the last one read.
        raise ParseError(src, end + 1, f"not valid CSV ({reason})") from None
    if header is None:
        raise ParseError(src, None, f"is empty: {NO_RECORDS}")
    if not rows:
        raise _no_rows(src)
    return header, header_line, rows, lines


def _ragged(cells: int, width: int, delimiter: str) -> str:
    said = f"row has {cells} cells, but the header has {width} columns"
    if cells > width:
        return f'{said}; put a cell that contains {_DELIMITER_WORDS[delimiter]} in "quotes"'
    return f"{said}; every row needs a cell for each column (an empty cell is fine)"


class _Table:
    """Columns of the common model from the rows, one field at a time."""

    def __init__(
        self,
        src: str,
        fields: dict[str, str],
        header: list[str],
        header_line: int,
        rows: list[list[str]],
        lines: list[int],
    ) -> None:
        self.src = src
        self.fields = fields
        self.header = header
        self.header_line = header_line
        self.rows = rows
        self.lines = lines
        self.n = len(rows)
        self.exact: dict[str, int] = {}
        self.folded: dict[str, int] = {}
        for i, name in enumerate(header):
            self.exact.setdefault(name, i)
            self.folded.setdefault(name.lower(), i)
        self.counts = Counter(header)
        # A column the mapping gives to one field is not also read as another.
        self.taken = set(fields.values())

    # -- finding columns -------------------------------------------------------------

    def _columns_found(self) -> str:
        shown = ", ".join(f'"{name}"' for name in self.header[:30])
        more = f" and {len(self.header) - 30} more" if len(self.header) > 30 else ""
        return f"{shown}{more}"

    def _used(self, i: int) -> int:
        name = self.header[i]
        if self.counts[name] > 1:
            raise ParseError(
                self.src,
                self.header_line,
                f'column "{name}" appears {self.counts[name]} times in the header; '
                "rename all but one",
            )
        return i

    def mapped(self, key: str) -> int:
        name = self.fields[key]
        if name not in self.exact:
            raise ParseError(
                self.src,
                self.header_line,
                f'no column "{name}" (from --map {key}={name}); columns found: '
                f"{self._columns_found()}; check the name",
            )
        return self._used(self.exact[name])

    def find(self, field: str) -> int | None:
        """The column of ``field``: the mapped one, else the first of its usual names."""
        if field in self.fields:
            return self.mapped(field)
        for name in DEFAULT_NAMES[field]:
            i = self.folded.get(name.lower())
            if i is not None and self.header[i] not in self.taken:
                return self._used(i)
        return None

    def cells(self, i: int) -> list[str]:
        return list(map(itemgetter(i), self.rows))

    # -- converting cells ------------------------------------------------------------

    def _bad(self, k: int, i: int, wanted: str, cell: str) -> ParseError:
        return ParseError(
            self.src,
            self.lines[k],
            f'column "{self.header[i]}" must be {wanted}, got {shown(cell, cut=_CUT)}',
        )

    def labels(self, i: int | None) -> list[str | None] | None:
        if i is None:
            return None
        return [c.strip() or None for c in self.cells(i)]

    def texts(self, i: int | None) -> list[str | None]:
        return [None] * self.n if i is None else [c or None for c in self.cells(i)]

    def numbers(self, i: int | None) -> list[float | None] | None:
        """Finite floats, ``None`` for an empty cell."""
        if i is None:
            return None
        cells = self.cells(i)
        try:
            parsed = list(map(float, cells))
        except ValueError:
            pass  # an empty or a bad cell: the careful loop below
        else:
            # float() also takes "nan", "inf", "1_000" and other scripts' digits ("０.5",
            # "٠.٥"): not numbers in a results file.
            joined = "".join(cells)
            if all(map(math.isfinite, parsed)) and "_" not in joined and joined.isascii():
                return cast("list[float | None]", parsed)
        values: list[float | None] = []
        for k, cell in enumerate(cells):
            text = cell.strip()
            if not text:
                values.append(None)
                continue
            try:
                value = float(text)
            except ValueError:
                raise self._bad(k, i, "a number", cell) from None
            if "_" in text:
                raise self._bad(k, i, "a number", cell)
            if not text.isascii():
                raise self._bad(k, i, "a number (in ASCII digits)", cell)
            if not math.isfinite(value):
                raise self._bad(k, i, "a finite number", cell)
            values.append(value)
        return values

    def booleans(self, i: int | None) -> list[bool | None] | None:
        if i is None:
            return None
        cells = self.cells(i)
        fast = list(map(BOOLEAN_WORDS.get, cells))
        if None not in fast:
            return fast
        out: list[bool | None] = []
        for k, cell in enumerate(cells):
            word = cell.strip().lower()
            if not word:
                out.append(None)
            elif word in BOOLEAN_WORDS:
                out.append(BOOLEAN_WORDS[word])
            else:
                raise self._bad(k, i, "true or false (or 1/0, yes/no, pass/fail)", cell)
        return out

    def attempts(self, i: int | None) -> list[int | None] | None:
        numbers = self.numbers(i)
        if numbers is None or i is None:
            return None
        out: list[int | None] = []
        for k, value in enumerate(numbers):
            if value is None:
                out.append(None)
                continue
            whole = value.is_integer() and value >= 1
            number = int(value) if whole else 0
            if whole and value >= 2**53:  # beyond a float's exact integers: read the digits
                text = self.rows[k][i].strip()
                number = int(text) if text.isdigit() else 0
            if not 1 <= number <= ATTEMPT_MAX:
                raise self._bad(k, i, WHOLE_ATTEMPT, self.rows[k][i])
            out.append(number)
        return out

    # -- the record's parts ----------------------------------------------------------

    def test_ids(self) -> list[str]:
        i = self.find("test_id")
        if i is None:
            raise ParseError(
                self.src,
                self.header_line,
                f"no test id column ({listed(DEFAULT_NAMES['test_id'])}); columns found: "
                f"{self._columns_found()}; name it with --map test_id=COLUMN",
            )
        ids = self.labels(i)
        assert ids is not None
        if None in ids:
            raise ParseError(
                self.src,
                self.lines[ids.index(None)],
                f'row has no test id (column "{self.header[i]}" is empty); every row needs one',
            )
        return cast("list[str]", ids)

    def scorers(self) -> tuple[list[int], dict[str, list[float | None]]]:
        """The scorer columns, and scorer name -> score per row (mapped ones first, then
        by prefix; a scorer empty on every row is left out)."""
        where: dict[str, int] = {}
        for key in self.fields:
            if key.startswith(SCORER_PREFIX):
                where[key[len(SCORER_PREFIX) :]] = self.mapped(key)
        for i, column in enumerate(self.header):
            folded = column.lower()
            for prefix in SCORER_PREFIXES:
                name = column[len(prefix) :]
                if folded.startswith(prefix) and name and column not in self.taken:
                    where.setdefault(name, i)
        out: dict[str, list[float | None]] = {}
        for name, i in where.items():
            values = self.numbers(self._used(i))
            assert values is not None
            if values.count(None) != self.n:
                out[name] = values
        return list(where.values()), out

    def errors(self) -> dict[int, str]:
        i = self.find("error")
        if i is None:
            return {}
        return {k: text for k, cell in enumerate(self.cells(i)) if (text := cell.strip())}

    def scores(
        self,
        ids: list[str],
        scorer_columns: list[int],
        scorers: dict[str, list[float | None]],
        errors: dict[int, str],
    ) -> list[float]:
        i = self.find("score")
        if i is None and not scorers:
            raise ParseError(
                self.src,
                self.header_line,
                'no score column ("score", or scorer columns "score_<name>"); columns found: '
                f"{self._columns_found()}; name it with --map score=COLUMN",
            )
        found = self.numbers(i)
        scores: list[float | None] = found if found is not None else [None] * self.n
        columns = [self.header[j] for j in ([i] if i is not None else []) + scorer_columns]
        said, verb = ("column", "is") if len(columns) == 1 else ("columns", "are")
        return fill_scores(
            scores,
            scorers,
            errors,
            lambda k: ParseError(
                self.src,
                self.lines[k],
                f"row {ids[k]!r} has no score ({said} {listed(columns, 'and')} {verb} empty); "
                'every row needs a number (or an "error" for an attempt that did not run)',
            ),
        )

    def run(self, keep_text: bool, extra: tuple[str, ...]) -> Run:
        ids = self.test_ids()
        scorer_columns, scorers = self.scorers()
        errors = self.errors()
        scores = self.scores(ids, scorer_columns, scorers, errors)
        kinds = self.labels(self.find("error_kind"))
        inputs = self.texts(self.find("input"))
        texts: dict[str, list[str | None]] | None = None
        if keep_text:
            texts = {
                "input": inputs,
                "output": self.texts(self.find("output")),
                "expected": self.texts(self.find("expected")),
                "metadata": [None] * self.n,
            }
        measurements: dict[str, Any] = {f: self.numbers(self.find(f)) for f in NUMBER_FIELDS}
        return Run.from_columns(
            source=self.src,
            format=NAME,
            lines=self.lines,
            input_hash=list(map(fingerprint, inputs)),
            extra={
                name: (
                    [c.strip() or None for c in self.cells(self.exact[name])]
                    if name in self.exact
                    else [None] * self.n
                )
                for name in extra
            },
            test_id=ids,
            score=scores,
            target=self.labels(self.find("target")),
            passed=self.booleans(self.find("passed")),
            attempt=self.attempts(self.find("attempt")),
            **measurements,
            errors=errors,
            error_kinds={k: v for k, v in enumerate(kinds or ()) if v is not None},
            category=self.labels(self.find("category")),
            scorer_scores=scorers,
            texts=texts,
        )
