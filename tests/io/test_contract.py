"""Every registered reader meets the reader contract (``io/_reader.py::ReaderModule``):
``NAME``, ``sniff(path, head)`` and ``read(path, *, keep_text, extra_fields, mapping)``."""

from __future__ import annotations

import dataclasses
import inspect
from pathlib import Path

import pytest

from evaldelta.io import READERS, Reader, formats
from evaldelta.io._mapped import DEFAULT_NAMES, FIELDS
from evaldelta.io._reader import ReaderModule
from evaldelta.model import Record

#: Every module that reads: each registered reader, and the one it hands ``--map`` to.
MODULES = [(r, False) for r in READERS] + [(r, True) for r in READERS if r.mapped]


def _id(case: tuple[Reader, bool]) -> str:
    reader, mapped = case
    return f"{reader.name} (--map)" if mapped else reader.name


@pytest.mark.parametrize("case", MODULES, ids=[_id(c) for c in MODULES])
def test_every_reader_meets_the_contract(case: tuple[Reader, bool]) -> None:
    reader, mapped = case
    module = reader.load_module(mapping=mapped)
    assert isinstance(module, ReaderModule)
    assert reader.name == module.NAME

    sniff = inspect.signature(module.sniff)
    assert list(sniff.parameters) == ["path", "head"]

    read = inspect.signature(module.read)
    path, *options = read.parameters.values()
    assert path.name == "path"
    assert path.kind is inspect.Parameter.POSITIONAL_OR_KEYWORD
    wanted = {"keep_text": True, "extra_fields": (), "mapping": None}
    found = {p.name: p.default for p in options if p.name in wanted}
    assert found == wanted
    assert all(p.kind is inspect.Parameter.KEYWORD_ONLY for p in options)
    assert module.read.__doc__, "a reader's read says what it reads"


@pytest.mark.parametrize("reader", READERS, ids=[r.name for r in READERS])
def test_sniffing_a_folder_answers_yes_or_no(reader: Reader, tmp_path: Path) -> None:
    assert isinstance(reader.load_module().sniff(tmp_path, b""), bool)


def test_names_are_unique_and_are_the_formats() -> None:
    assert len(set(formats())) == len(READERS)
    assert formats() == [r.name for r in READERS]


def test_the_mappable_fields_are_the_models_and_defined_once() -> None:
    # FIELDS is derived from DEFAULT_NAMES: one definition, in the order messages list them.
    assert tuple(DEFAULT_NAMES) == FIELDS
    record_fields = {f.name for f in dataclasses.fields(Record)}
    assert set(FIELDS) <= record_fields
