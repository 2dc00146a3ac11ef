"""The package's version, in one place: the package root re-exports it, the build reads it
(``[tool.hatch.version]``), and the reports name it without importing the package root."""

from __future__ import annotations

__version__ = "0.1.0"
