"""One run's figures on its own, per target: what ``evaldelta runs show`` prints and the
dashboard lists, figured as ``compare`` figures them (means over cases, infrastructure
failures left out)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from evaldelta.pairing._cases import DEFAULT_PASS_THRESHOLD

if TYPE_CHECKING:
    from evaldelta.model import BoolArray, FloatArray, Run

__all__ = ["over_targets", "summarise"]


def summarise(run: Run, pass_threshold: float = DEFAULT_PASS_THRESHOLD) -> list[dict[str, Any]]:
    """Per target: cases, attempts, pass rate, mean score, latency, cost, errors.

    Pass rate and mean score are means over cases (each case the mean of its attempts
    that ran), latency the mean per case excluding waits, cost the total over the
    attempts that ran; ``None`` where no record says.
    """
    import numpy as np

    from evaldelta.pairing._cases import case_matrix, infra_mask

    # Which records ran (read once: a Python pass over the error kinds); a grouped
    # run's totals count only those already.
    ran = ~infra_mask(run) if run.totals is None else None
    out = []
    for code, target in enumerate(run.targets):
        c = case_matrix(run, [code], pass_threshold=pass_threshold).column(0, label=str(target))
        with np.errstate(invalid="ignore"):
            out.append(
                {
                    "target": target,
                    "cases": len(c),
                    "attempts": c.records,
                    "attempts_per_case": sorted({int(a) for a in np.unique(c.attempts)}),
                    "errors": int(c.errors.sum()),
                    "infrastructure_failures": int(c.infra.sum()),
                    "pass_rate": _nanmean(c.pass_rate),
                    "mean_score": _nanmean(c.score),
                    "latency_ms": _nanmean(c.latency_ms),
                    "cost_usd": _total_cost(run, run.target_index == code, ran),
                    "safety_failures": int(c.safety.sum()),
                }
            )
    return out


def over_targets(figures: list[dict[str, Any]], key: str) -> float | None:
    """A run's figure ``key`` (``pass_rate``, ``mean_score``...) over all its targets,
    from :func:`summarise`'s rows: their means weighted by their cases."""
    pairs = [(f[key], f["cases"]) for f in figures if f[key] is not None and f["cases"]]
    cases = sum(n for _, n in pairs)
    return sum(v * n for v, n in pairs) / cases if cases else None


def _total_cost(run: Run, own: BoolArray, ran: BoolArray | None) -> float | None:
    """The cost of the attempts of ``own`` that ran (``ran``: as every other figure,
    attempts lost to infrastructure failures left out), from the records, or from a
    grouped run's totals (``ran`` is then ``None``)."""
    import numpy as np

    if ran is None:
        assert run.totals is not None
        counts = run.totals.counts.get("cost_usd")
        if counts is None or not counts[own].any():
            return None
        return float(run.totals.sums["cost_usd"][own].sum())
    cost = run.cost_usd[own & ran]
    return None if np.isnan(cost).all() else float(np.nansum(cost))


def _nanmean(values: FloatArray) -> float | None:
    import numpy as np

    ok = values[~np.isnan(values)]
    return float(ok.mean()) if len(ok) else None
