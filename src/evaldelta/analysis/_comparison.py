"""The one result of a comparison: a pairing and its analysis, typed all the way.

:func:`evaldelta.compare` returns a :class:`Comparison` (the :class:`Pairing` of the
cases, and the :class:`~evaldelta.analysis.Analysis` of it: settings, figures,
problems, verdict); :func:`evaldelta.compare_matrix` a :class:`MatrixComparison`
(the :class:`MatrixPairing` and one :class:`Comparison` per pair of targets). Both
expose the pairing's attributes as their own, so a renderer reads
``c.test_ids`` and ``c.verdict`` alike.

Three things are called "regressed", and they differ: :attr:`Comparison.regressed`
is the plain mean-delta status (mean delta below 0); the verdict *Worse* is the
statistical decision (:attr:`Comparison.verdict`); and
``RunComparison.regression.regressed`` (from :func:`evaldelta.compare_runs`) is a
scorer's mean drop past ``regression_threshold``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, fields
from typing import TYPE_CHECKING, Any

from evaldelta.analysis._analyze import Analysis
from evaldelta.pairing._matrix import MatrixPairing
from evaldelta.pairing._pairwise import Pairing

if TYPE_CHECKING:
    from evaldelta.analysis._fairness import Problem
    from evaldelta.analysis._figures import Figures
    from evaldelta.analysis._settings import Settings
    from evaldelta.analysis._verdict import Verdict

__all__ = ["Comparison", "MatrixComparison"]


@dataclass(frozen=True, repr=False)
class Comparison(Pairing):
    """A candidate compared with a baseline: the cases paired (it is the
    :class:`Pairing`, every field of it its own) and their :class:`Analysis`
    (statistics, problems, verdict), never absent. ``to_dict()`` is exactly what
    ``--format json`` prints."""

    analysis: Analysis = field(kw_only=True)

    @classmethod
    def of(cls, pairing: Pairing, analysis: Analysis) -> Comparison:
        """The comparison of ``pairing``, with its analysis."""
        given = {f.name: getattr(pairing, f.name) for f in fields(Pairing) if f.init}
        return cls(**given, analysis=analysis)

    def __repr__(self) -> str:
        # One line: the generated repr printed every array (some 10 KB for 30 cases).
        summary = self.summary
        return (
            f"Comparison(baseline={self.baseline!r}, candidate={self.candidate!r}, "
            f"matched={summary.matched}, mean_delta={summary.mean_delta:+.3f}, "
            f"verdict={self.verdict.kind!r})"
        )

    @property
    def pairing(self) -> Pairing:
        """The pairing alone (this comparison is one)."""
        return self

    # -- the analysis -------------------------------------------------------------

    @property
    def settings(self) -> Settings:
        return self.analysis.settings

    @property
    def figures(self) -> Figures:
        return self.analysis.figures

    @property
    def problems(self) -> list[Problem]:
        return self.analysis.problems

    @property
    def verdict(self) -> Verdict:
        """Better / Worse / Trade-off / Inconclusive, and why."""
        return self.analysis.verdict

    @property
    def refusals(self) -> list[Problem]:
        """Problems that make the comparison impossible to judge."""
        return self.analysis.refusals

    def to_dict(self) -> dict[str, Any]:
        """The pairing's JSON with the statistics, problems and verdict before its
        ``summary`` (the documented order of ``--format json``)."""
        data = Pairing.to_dict(self)
        summary = data.pop("summary")
        return {**data, **self.analysis.to_dict(), "summary": summary}

    # -- conveniences that hand over to the renderers (imported when called) -------

    def to_pandas(self) -> Any:
        """The matched cases as a pandas ``DataFrame``, one row per case, in the
        baseline's order (needs pandas: ``pip install 'evaldelta[pandas]'``)."""
        from evaldelta.report._frames import comparison_frame

        return comparison_frame(self)

    def _repr_html_(self) -> str:
        """The summary as an HTML fragment, for Jupyter."""
        from evaldelta.report._html import render_html_summary

        return render_html_summary(self)


@dataclass(frozen=True, repr=False)
class MatrixComparison(MatrixPairing):
    """Every target of a combined run side by side (it is the :class:`MatrixPairing`),
    with one :class:`Comparison` per pair: statistics and a verdict each."""

    pairwise: Sequence[Comparison]

    @classmethod
    def of(cls, pairing: MatrixPairing, pairwise: Sequence[Comparison]) -> MatrixComparison:
        """The matrix of ``pairing``, its pairs compared."""
        given = {f.name: getattr(pairing, f.name) for f in fields(MatrixPairing)}
        return cls(**{**given, "pairwise": list(pairwise)})

    def __repr__(self) -> str:
        return (
            f"MatrixComparison(targets={self.targets!r}, baseline={self.baseline!r}, "
            f"comparisons={len(self.pairwise)})"
        )

    @property
    def pairing(self) -> MatrixPairing:
        """The matrix pairing alone (this comparison is one)."""
        return self

    @property
    def regressions(self) -> Sequence[Comparison]:
        """Comparisons against the baseline whose mean delta is negative."""
        if self.baseline is None:
            return []
        return [p for p in self.pairwise if p.baseline == self.baseline and p.regressed]
