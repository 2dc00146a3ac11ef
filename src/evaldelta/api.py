"""The public entry points: load, pair, compute the statistics, decide.

``evaldelta.compare`` and ``evaldelta.compare_matrix`` return a
:class:`~evaldelta.analysis._comparison.Comparison` and a
:class:`~evaldelta.analysis._comparison.MatrixComparison`: the pairing and its
analysis (every figure and the verdict); ``to_dict()`` of each is exactly
what the command line prints with ``--json``. ``evaldelta.compare_runs`` is the plain
per-scorer regression check of two stored runs (no intervals, no verdict).
``evaldelta.evaluate`` runs a suite (a YAML file, or a dataset and a task function)
into the store, as ``evaldelta eval`` does.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Sequence
from typing import TYPE_CHECKING

from evaldelta.analysis import Settings, analyze
from evaldelta.analysis._comparison import Comparison, MatrixComparison
from evaldelta.analysis._settings import DEFAULT_REGRESSION_THRESHOLD, DEFAULT_TOLERANCE
from evaldelta.errors import UsageError
from evaldelta.model import Run
from evaldelta.pairing._cases import Cases, cases
from evaldelta.pairing._matrix import build_matrix_and_cases
from evaldelta.pairing._pairwise import DEFAULT_THRESHOLD, compare_cases, label_for

if TYPE_CHECKING:
    from collections.abc import Callable, Iterable, Mapping
    from typing import Any

    from evaldelta.analysis._scorers import RunComparison
    from evaldelta.runner._engine import EvalOutcome, Event
    from evaldelta.store import RunStore

__all__ = ["compare", "compare_matrix", "compare_runs", "evaluate", "sample_ids"]

RunLike = Run | str | os.PathLike[str]
#: A stored run: its id, or its name (the latest run of that name).
RunRef = int | str


def _settings(settings: Settings | None, threshold: float | None) -> Settings:
    base = settings or Settings()
    if threshold is not None and threshold != base.threshold:
        from dataclasses import replace

        base = replace(base, threshold=threshold)
    return base


def _extra(settings: Settings) -> tuple[str, ...]:
    field = settings.cluster_by
    return (field,) if field and field != "category" else ()


def _as_run(value: RunLike, settings: Settings) -> Run:
    """``value`` itself when it is a run, else the run loaded from that path (with the
    field to cluster by, when it is not the category). Pairing takes runs only: files
    are read here, at the entry points."""
    if isinstance(value, Run):
        return value
    from evaldelta.io import load

    return load(value, keep_text=False, extra_fields=_extra(settings))


def sample_ids(test_ids: Sequence[str], size: int, seed: int) -> set[str]:
    """A fixed sample of ``size`` test ids: the same ids for the same seed in any run.

    Ids are ranked by a hash of (seed, id), so the choice depends on nothing else:
    the baseline sampled on main and the candidate sampled on a pull request agree.
    """
    if size < 1:
        raise UsageError(f"sample must be at least 1, got {size}", option="sample")

    def rank(tid: str) -> bytes:
        return hashlib.blake2b(f"{seed}\x00{tid}".encode(), digest_size=8).digest()

    return set(sorted(test_ids, key=rank)[:size])


def _restrict(c: Cases, keep: set[str]) -> Cases:
    import numpy as np

    rows = np.asarray([i for i, t in enumerate(c.test_ids) if t in keep], dtype=np.int64)
    return c.take(rows)


def compare(
    baseline: RunLike,
    candidate: RunLike,
    threshold: float | None = None,
    *,
    baseline_target: str | None = None,
    candidate_target: str | None = None,
    settings: Settings | None = None,
    allow_dataset_change: bool = False,
    sample: int | None = None,
    scorer: str | None = None,
) -> Comparison:
    """Compare a candidate run with a baseline run: cases, statistics, verdict.

    Args:
        baseline, candidate: runs, or paths of results files to load (the same
            combined run twice, with two targets, works too).
        threshold: smallest delta that counts as a win or a loss (default 0.1).
        baseline_target, candidate_target: which target of a run holding several.
        settings: statistics settings (pass threshold, alpha, resamples, seed, ...).
        allow_dataset_change: compare the common cases of runs on different datasets
            (a warning instead of a refusal).
        sample: judge a fixed, seeded sample of this many common cases.
        scorer: compare on this scorer instead of the overall score.
    """
    st = _settings(settings, threshold)
    base_run = _as_run(baseline, st)
    cand_run = base_run if candidate is baseline else _as_run(candidate, st)
    if scorer is not None:
        same_run = base_run is cand_run
        base_run = base_run.score_by(scorer)
        cand_run = base_run if same_run else cand_run.score_by(scorer)
    same = base_run is cand_run
    base = cases(
        base_run,
        baseline_target,
        label=label_for(base_run, baseline_target, same),
        pass_threshold=st.pass_threshold,
    )
    cand = cases(
        cand_run,
        candidate_target,
        label=label_for(cand_run, candidate_target, same),
        pass_threshold=st.pass_threshold,
    )
    full = (base, cand)
    if sample is not None:
        # Drawn from the baseline's ids: a candidate missing some of them is still caught.
        keep = sample_ids(base.test_ids, sample, st.seed)
        base, cand = _restrict(base, keep), _restrict(cand, keep)
    if allow_dataset_change:
        # Only truly common cases: the same test id *and* the same question.
        hashes = dict(zip(base.test_ids, base.input_hash.tolist(), strict=True))
        edited = {
            t
            for t, h in zip(cand.test_ids, cand.input_hash.tolist(), strict=True)
            if h and hashes.get(t) and hashes[t] != h
        }
        if edited:
            keep_ids = set(base.test_ids) - edited
            base = _restrict(base, keep_ids)
            cand = _restrict(cand, set(cand.test_ids) - edited)
    else:
        edited = set()
    paired = compare_cases(base, cand, st.threshold)
    analysis = analyze(
        paired,
        base,
        cand,
        base_run,
        cand_run,
        st,
        allow_dataset_change=allow_dataset_change,
        sample=sample,
        all_cases=full,
        edited=len(edited),
    )
    return Comparison.of(paired, analysis)


def compare_matrix(
    run: RunLike,
    targets: Sequence[str] | None = None,
    baseline: str | None = None,
    threshold: float | None = None,
    *,
    settings: Settings | None = None,
    scorer: str | None = None,
) -> MatrixComparison:
    """Compare every target of a combined run (or those listed), with statistics.

    With a baseline, each other target is compared with it under Holm's step-down
    procedure (Holm 1979), so that the chance of any false Better or Worse stays at
    most alpha, with more power than Bonferroni: all k intervals at level 1 - alpha/k;
    those that exclude zero are decided, the rest are computed again at 1 - alpha/j
    for the j left, until a round decides none. Without a baseline, every pair is
    compared at level 1 - alpha.
    """
    st = _settings(settings, threshold)
    r = _as_run(run, st)
    if scorer is not None:
        r = r.score_by(scorer)
    m, columns = build_matrix_and_cases(
        r, targets, baseline, st.threshold, pass_threshold=st.pass_threshold
    )
    k = len(m.pairwise)

    def at(i: int, level: float | None, left: int) -> Comparison:
        p = m.pairwise[i]
        a = analyze(
            p,
            columns[p.baseline],
            columns[p.candidate],
            r,
            r,
            st,
            level=level,
            comparisons=k if level is not None else 1,
            step=left,
        )
        return Comparison.of(p, a)

    if baseline is None or k < 2:
        analysed = [at(i, None, 1) for i in range(k)]
        return MatrixComparison.of(m, analysed)
    done: dict[int, Comparison] = {}
    left = list(range(k))
    while left:
        j = len(left)
        round_ = {i: at(i, 1 - st.alpha / j, j) for i in left}
        decided = [i for i in left if _decided(round_[i])]
        done.update(round_ if not decided else {i: round_[i] for i in decided})
        if not decided:
            break
        left = [i for i in left if i not in done]
    analysed = [done[i] for i in range(k)]
    return MatrixComparison.of(m, analysed)


def _decided(c: Comparison) -> bool:
    """Holm's "rejected": the verdict rests on an interval that excludes zero."""
    return c.verdict.kind in ("Better", "Worse", "Trade-off") and c.figures.score.excludes_zero()


def compare_runs(
    store: RunStore | str | os.PathLike[str] | None,
    baseline_ref: RunRef | Run,
    candidate_ref: RunRef | Run,
    tolerance: float = DEFAULT_TOLERANCE,
    regression_threshold: float = DEFAULT_REGRESSION_THRESHOLD,
    *,
    baseline_target: str | None = None,
    candidate_target: str | None = None,
) -> RunComparison:
    """Compare two stored runs scorer by scorer: the quick regression check for CI.

    Cases are paired by test id. On each scorer both runs have (the overall score,
    named ``score``, for runs without named scorers), a case whose delta is within
    ``tolerance`` is unchanged; a scorer regresses when its mean delta is below
    ``-regression_threshold``, and ``result.regression.regressed`` says whether any did.
    See :mod:`evaldelta.analysis._scorers`; for intervals and a verdict, use
    :func:`compare`.

    Args:
        store: a :class:`~evaldelta.store.RunStore`, or the path of one (opened for
            the call, never created); ``None`` when both runs are given as runs.
        baseline_ref, candidate_ref: run ids or names (a name is the latest run of
            that name), or :class:`~evaldelta.model.Run` objects.
        tolerance: largest absolute delta of a case that counts as unchanged.
        regression_threshold: largest drop of a scorer's mean that is no regression.
        baseline_target, candidate_target: which target of a run holding several.

    Raises:
        StoreError: no such run, or no store at the path.
        PairingError: no case or no scorer in common.
        UsageError: a negative tolerance or threshold, or a reference without a store.
    """
    from evaldelta.analysis._scorers import check_options, compare_scorers

    check_options(tolerance, regression_threshold)
    base_run, cand_run = _stored_runs(store, baseline_ref, candidate_ref)
    same = base_run is cand_run
    base = cases(base_run, baseline_target, label=label_for(base_run, baseline_target, same))
    cand = cases(cand_run, candidate_target, label=label_for(cand_run, candidate_target, same))
    warnings = [
        f"the {side} run ({run.source}) was interrupted: its missing cases are not compared"
        for side, run in (("baseline", base_run), ("candidate", cand_run))
        if run.status != "complete" and not (same and side == "candidate")
    ]
    # compare_cases' own threshold (for wins and losses) plays no part here.
    paired = compare_cases(base, cand, 0.0)
    return compare_scorers(paired, tolerance, regression_threshold, warnings=warnings)


def _stored_runs(
    store: RunStore | str | os.PathLike[str] | None,
    baseline: RunRef | Run,
    candidate: RunRef | Run,
) -> tuple[Run, Run]:
    if isinstance(baseline, Run) and isinstance(candidate, Run):
        return baseline, candidate
    refs = [r for r in (baseline, candidate) if not isinstance(r, Run)]
    if store is None:
        raise UsageError(
            f"run {refs[0]!r} is a reference to a stored run, but no store was given; "
            "pass a RunStore (or its path) as the first argument, or pass Run objects"
        )
    from evaldelta.store import RunStore

    opened = store if isinstance(store, RunStore) else RunStore(store, create=False)
    try:
        # By id: 3 and "3" (or a name and its run's id) are one run, read once.
        ids = {ref: opened.resolve(ref) for ref in refs}
        loaded = {rid: opened.get_run(rid, keep_text=False) for rid in set(ids.values())}

        def run_of(value: RunRef | Run) -> Run:
            return value if isinstance(value, Run) else loaded[ids[value]]

        return run_of(baseline), run_of(candidate)
    finally:
        if opened is not store:
            opened.close()


def evaluate(
    suite: str | os.PathLike[str] | None = None,
    *,
    name: str | None = None,
    model: str | None = None,
    dataset: Iterable[Mapping[str, Any]] | None = None,
    task: Callable[..., Any] | None = None,
    scorers: Mapping[str, Callable[..., Any]] | None = None,
    store: RunStore | str | os.PathLike[str] | None = None,
    trials: int | None = None,
    max_concurrency: int | None = None,
    timeout: float | None = None,
    threshold: float | None = None,
    seed: int = 0,
    targets_file: str | os.PathLike[str] | None = None,
    target: Sequence[str] = (),
    test_ids: Sequence[str] = (),
    limit: int | None = None,
    judge: str | None = None,
    max_cost_usd: float | None = None,
    resume: bool = False,
    env: Mapping[str, str] | None = None,
    on_event: Callable[[Event], None] | None = None,
) -> EvalOutcome:
    """Run an eval into the store and return what it did (its stored runs, totals).

    Two shapes, one engine (the one ``evaldelta eval`` uses):

    - spec 004's: ``evaluate(name="qa-eval", model="gpt-4o", dataset=[{"input": ...,
      "expected": ...}], task=answer, scorers={"exact": exact_match}, store=store)``:
      ``task`` is the agent (a function of the input, sync or async), stored as the
      run ``qa-eval/gpt-4o`` of the suite ``qa-eval``; ``result.id`` is its id.
    - a suite file: ``evaluate("evals/qa.yaml", store=store)``, every target of it,
      ``result.runs[target]`` each stored run.

    Args:
        store: a :class:`~evaldelta.store.RunStore` or its path (default: the
            command line's, ``.evaldelta/runs.db``).
        trials: attempts per test (default: the suite's, else 1).
        max_concurrency: calls at once (default: the suite's, else 4).
        timeout: one attempt's budget, in seconds (default: the suite's, else 120).
        threshold: the score at which an attempt passes (dataset shape only).
        env: the environment for ``${VAR}``, ``api_key_env`` and commands (default:
            this process's).
        on_event: told of each finished attempt (see :mod:`evaldelta.runner._engine`).

    Raises:
        UsageError: neither a suite nor a task, or both.
        ParseError: a suite file that cannot be used (its line says where).
        TargetError: a target that refused (401, 403, 404): the runs are kept, interrupted.
    """
    import asyncio
    import threading

    from evaldelta.runner._engine import EvalOptions, plan_suite, run_suite
    from evaldelta.store import DEFAULT_STORE, RunStore

    if env is None:
        env = dict(os.environ)  # the library's entry point: see test_architecture
    if suite is not None and task is not None:
        raise UsageError("evaluate(): give a suite file or a task with a dataset, not both")
    if suite is not None:
        from evaldelta.runner._suite import load_suite

        loaded = load_suite(suite, env=env, targets_file=targets_file, name=name, only=target)
        overrides: dict[str, Any] = {}
        if trials is not None:
            overrides["attempts"] = trials
        if timeout is not None:
            overrides["timeout_s"] = float(timeout)
        if overrides:
            from dataclasses import replace

            loaded = replace(loaded, **overrides)
    elif task is not None:
        from evaldelta.runner._dataset import suite_from_task

        if dataset is None or name is None or model is None:
            raise UsageError(
                "evaluate(): with a task, give name=, model= and dataset= too "
                "(spec 004's evaluate({name, model, dataset, task, scorers, store}))"
            )
        loaded = suite_from_task(
            name=name,
            model=model,
            dataset=dataset,
            task=task,
            scorers=scorers,
            trials=trials or 1,
            max_concurrency=max_concurrency or 4,
            timeout_s=float(timeout) if timeout is not None else 120.0,
            threshold=threshold,
            seed=seed,
        )
    else:
        raise UsageError(
            "evaluate(): give a suite file (evaluate('evals/qa.yaml')) or a task with a "
            "dataset (evaluate(name=..., model=..., dataset=..., task=..., scorers=...))"
        )
    plan = plan_suite(
        loaded,
        EvalOptions(
            name=name if suite is not None else None,
            workers=max_concurrency,
            limit=limit,
            test_ids=tuple(test_ids),
            targets=tuple(target),
            max_cost_usd=max_cost_usd,
            resume=resume,
            judge=judge,
        ),
    )
    opened = store if isinstance(store, RunStore) else RunStore(store or DEFAULT_STORE)
    try:
        work = run_suite(
            plan,
            opened,
            env=env,
            on_event=on_event,
            max_cost_usd=max_cost_usd,
            resume=resume,
        )
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            outcome = asyncio.run(work)
        else:
            # Called from a running event loop (Jupyter): run in a thread of its own.
            box: dict[str, Any] = {}

            def in_thread() -> None:
                try:
                    box["outcome"] = asyncio.run(work)
                except BaseException as exc:
                    box["error"] = exc

            thread = threading.Thread(target=in_thread, name="evaldelta-evaluate")
            thread.start()
            thread.join()
            if "error" in box:
                raise box["error"]
            outcome = box["outcome"]
    finally:
        if opened is not store:
            opened.close()
    if outcome.fatal:
        raise outcome.fatal[0]
    return outcome


__all__ += ["DEFAULT_THRESHOLD", "Settings"]
