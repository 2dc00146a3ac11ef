"""``_version.py``: the one place the version is written, and everyone who names it."""

from __future__ import annotations

import importlib.metadata
import re

import evaldelta
from evaldelta._version import __version__
from tests.conftest import run_evaldelta


def test_the_version_is_a_release_number() -> None:
    assert re.fullmatch(r"\d+\.\d+\.\d+", __version__)


def test_the_package_root_and_the_installed_metadata_say_the_same() -> None:
    assert evaldelta.__version__ == __version__
    # the build reads the version from _version.py ([tool.hatch.version])
    assert importlib.metadata.version("evaldelta") == __version__


def test_the_command_says_it() -> None:
    result = run_evaldelta("--version")
    assert (result.code, result.out) == (0, f"evaldelta {__version__}\n")
