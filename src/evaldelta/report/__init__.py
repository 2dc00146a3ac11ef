"""Renderers: each formats one result object and computes nothing of its own."""

from __future__ import annotations

from evaldelta.report._json import render_json
from evaldelta.report._table import render_matrix_table, render_table

__all__ = ["render_json", "render_matrix_table", "render_table"]
