"""``evaldelta eval SUITE`` (alias ``run``): run a suite's tests against its targets
into the store, then say how to compare the runs.

Exit codes: 0 the run finished (or stopped at ``--max-cost``, with a warning); 2 a
suite, target or option that cannot be used (one line naming it); 130 Ctrl-C (the
runs are kept, marked interrupted, and the command to resume them is printed).
"""

from __future__ import annotations

import argparse
import os
import shlex
import signal
import sys
from typing import TYPE_CHECKING, Any

from evaldelta.cli._options import add_command
from evaldelta.cli._output import EXIT_CANNOT_JUDGE, EXIT_OK
from evaldelta.errors import UsageError

if TYPE_CHECKING:
    from evaldelta.cli._options import Commands
    from evaldelta.runner._engine import EvalOutcome, Event, Plan, SequenceMoved
    from evaldelta.runner._sequential import Against
    from evaldelta.store import RunStore

EXIT_INTERRUPTED = 130

#: The one-line help and the description of ``evaldelta eval``.
ABOUT = (
    "run a suite (YAML): tests x targets x attempts, into the store",
    "Run an eval suite: every test against every target, `attempts` "
    "times, scored by its assertions (and an LLM judge), each attempt stored as "
    "it finishes.",
)

HELP = """\
examples:
  evaldelta eval evals/qa.yaml                      run every test x target x attempt
  evaldelta eval evals/qa.yaml --dry-run            show the plan, call nothing
  evaldelta eval evals/qa.yaml --name before --out before.jsonl
  evaldelta eval evals/qa.yaml --resume             finish an interrupted run
  evaldelta compare qa/gpt-4.1 qa/gpt-5-mini        then compare two targets' runs
  evaldelta eval evals/qa.yaml --target v2 --name pr-7 --against before/v1 --stop-when-settled
                                                    run the baseline's cases in its order,
                                                    stop once Better/Worse is settled

Targets are defined in the suite or in targets.yaml beside it (--targets FILE).
Each target's run is stored as NAME/TARGET (NAME: --name, else the suite's name).
"""


def add_parser(commands: Commands) -> None:
    for name, aliases in (("eval", ["run"]),):
        p = add_command(commands, name, ABOUT, HELP, aliases=aliases)
        p.add_argument("suite", metavar="SUITE", help="the suite file (.yaml)")
        p.add_argument(
            "--targets",
            metavar="FILE",
            help="the targets file (default: targets.yaml beside the suite)",
        )
        p.add_argument("--name", help="the runs' name: NAME/TARGET (default: the suite's name)")
        p.add_argument(
            "--out",
            metavar="FILE",
            help="also write the records as JSONL "
            "(agentv's shape, one line per attempt, every target)",
        )
        p.add_argument(
            "--store",
            metavar="PATH",
            help="the run store (default: $EVALDELTA_STORE, else .evaldelta/runs.db)",
        )
        p.add_argument(
            "--workers",
            "-j",
            type=int,
            metavar="N",
            help="calls at once, never more (default: the suite's concurrency)",
        )
        p.add_argument(
            "--limit", type=int, metavar="N", help="only the first N tests of the seeded order"
        )
        p.add_argument(
            "--test-id",
            metavar="GLOB",
            action="append",
            default=[],
            help="only tests whose id matches (repeatable)",
        )
        p.add_argument(
            "--target",
            metavar="NAME",
            action="append",
            default=[],
            help="only this target (repeatable)",
        )
        p.add_argument(
            "--judge",
            metavar="NAME",
            help="the openai target that judges llm-rubric assertions (default: the suite's judge)",
        )
        p.add_argument(
            "--max-cost",
            type=float,
            metavar="USD",
            help="stop scheduling once this many dollars are spent; the runs "
            "are kept, marked interrupted",
        )
        p.add_argument(
            "--resume",
            action="store_true",
            help="continue the latest runs of this suite: only attempts missing "
            "or lost to infrastructure failures",
        )
        p.add_argument(
            "--dry-run",
            action="store_true",
            help="print the plan (tests x targets x attempts) and call nothing",
        )
        p.add_argument(
            "--format",
            choices=("text", "json"),
            default="text",
            help="the closing summary as a table (default) or JSON",
        )
        p.add_argument(
            "--json",
            action="store_const",
            const="json",
            dest="format",
            help="same as --format json",
        )
        p.add_argument("--quiet", "-q", action="store_true", help="no progress bar")
        g = p.add_argument_group("against a baseline (stop paying once the answer is in)")
        g.add_argument(
            "--against",
            metavar="RUN",
            help="run the cases of this baseline run (a stored run's name or id, a run "
            "store file, or a results file), in the order it ran them",
        )
        g.add_argument(
            "--stop-when-settled",
            action="store_true",
            help="with --against: stop scheduling once the anytime-valid confidence "
            "sequence of the change settles (Better, Worse, or No change with --margin)",
        )
        g.add_argument(
            "--margin",
            type=float,
            metavar="POINTS",
            help="a change smaller than this many points does not matter: settle on No "
            "change once the sequence lies within +/-POINTS (default: no such stop)",
        )
        g.add_argument(
            "--min-cases",
            type=int,
            default=20,
            metavar="N",
            help="no stop before N cases are in (default: 20)",
        )
        g.add_argument(
            "--alpha",
            type=float,
            default=0.05,
            help="the sequence's error rate: a false Better/Worse at most this often, "
            "however early it stops (default: 0.05)",
        )
        p.set_defaults(run=run, input_format=None, map=None)


def run(args: argparse.Namespace) -> int:
    from evaldelta.cli._store import shown, store_path
    from evaldelta.runner._engine import EvalOptions, plan_suite
    from evaldelta.runner._suite import load_suite

    env = dict(os.environ)
    suite = load_suite(
        args.suite,
        env=env,
        targets_file=args.targets,
        only=tuple(args.target),
        check_env=not args.dry_run,
    )
    if args.max_cost is not None and not args.max_cost >= 0:
        raise UsageError(f"--max-cost must be a number of dollars >= 0, got {args.max_cost:g}")
    if args.against is None:
        for flag, given in (
            ("--stop-when-settled", args.stop_when_settled),
            ("--margin", args.margin is not None),
        ):
            if given:
                raise UsageError(f"{flag} needs --against RUN (the baseline to compare with)")
    against = _against(args, suite.seed) if args.against is not None else None
    options = EvalOptions(
        name=args.name,
        workers=args.workers,
        limit=args.limit,
        test_ids=tuple(args.test_id),
        targets=tuple(args.target),
        max_cost_usd=args.max_cost,
        resume=args.resume,
        judge=args.judge,
        order=None if against is None else against.order,
    )
    plan = plan_suite(suite, options)
    store_at = store_path(args)
    if args.dry_run:
        _print_plan(args, plan, shown(store_at))
        return EXIT_OK

    from evaldelta.store import RunStore

    with RunStore(store_at) as store:
        outcome = _run(args, plan, store, env, against)
        if args.out:
            _write_out(args.out, store, outcome)
    if args.format == "json":
        import msgspec

        sys.stdout.write(msgspec.json.encode(outcome.to_dict()).decode() + "\n")
    else:
        sys.stdout.write(_summary(args, outcome, shown(store_at)))
    sys.stdout.flush()
    if outcome.fatal:
        print(f"evaldelta: error: {outcome.fatal[0]}", file=sys.stderr)
        return EXIT_CANNOT_JUDGE
    if outcome.stop_reason and outcome.stop_reason.startswith("stopped by Ctrl-C"):
        print(
            f"evaldelta: interrupted; the runs are kept. Resume with: {_resume_command(args)}",
            file=sys.stderr,
        )
        return EXIT_INTERRUPTED
    for name, t in outcome.totals.items():
        ran = t.done
        if ran and t.infra_failures / ran > 0.10:
            print(
                f"evaldelta: warning: target {name}: {t.infra_failures} of {ran} attempts were "
                "lost to infrastructure failures (over 10%): the gate cannot judge its run. "
                f"Retry them with: {_resume_command(args)}",
                file=sys.stderr,
            )
    if outcome.status not in ("complete", "stopped early"):
        over_budget = (outcome.stop_reason or "").startswith("--max-cost")
        print(
            f"evaldelta: warning: {outcome.stop_reason}; the runs are marked interrupted. "
            + ("Resume with a larger budget: " if over_budget else "Resume with: ")
            + _resume_command(args, drop_budget=over_budget),
            file=sys.stderr,
        )
    return EXIT_OK


# -- running, with Ctrl-C and a progress bar ------------------------------------------


class _Stop:
    """Ctrl-C once: finish the calls in flight, start nothing new. Twice: abort."""

    def __init__(self) -> None:
        self.asked = False

    def __call__(self) -> bool:
        return self.asked

    def on_sigint(self, signum: int, frame: object) -> None:
        if self.asked:
            raise KeyboardInterrupt
        self.asked = True
        print(
            "\nevaldelta: stopping: the calls in flight finish, nothing new starts "
            "(Ctrl-C again to abort)",
            file=sys.stderr,
        )


def _against(args: argparse.Namespace, seed: int) -> Against:
    """The baseline ``--against`` names, read: its case scores and recorded order."""
    from evaldelta.cli._options import load_for
    from evaldelta.runner._sequential import Against

    run = load_for(args, args.against)
    margin = None if args.margin is None else args.margin / 100
    if margin is not None and not margin >= 0:
        raise UsageError(f"--margin must be a number of points >= 0, got {args.margin:g}")
    run_id = None
    if not os.path.lexists(args.against):
        from evaldelta.cli._store import open_store, store_path

        with open_store(store_path(args), reading=True) as store:
            run_id = store.find(args.against)
    return Against.of_run(
        run,
        label=run.source,
        run_id=run_id,
        seed=seed,
        stop_when_settled=args.stop_when_settled,
        alpha=args.alpha,
        margin=margin,
        min_cases=args.min_cases,
    )


def _run(
    args: argparse.Namespace,
    plan: Plan,
    store: RunStore,
    env: dict[str, str],
    against: Against | None = None,
) -> EvalOutcome:
    import asyncio

    from evaldelta.runner._engine import run_suite

    stop = _Stop()
    previous = signal.signal(signal.SIGINT, stop.on_sigint)
    bar = _Bar.maybe(args, plan)
    try:
        with bar:
            return asyncio.run(
                run_suite(
                    plan,
                    store,
                    env=env,
                    on_event=bar.update,
                    should_stop=stop,
                    max_cost_usd=args.max_cost,
                    resume=args.resume,
                    against=against,
                )
            )
    finally:
        signal.signal(signal.SIGINT, previous)


class _Bar:
    """A progress bar per target on stderr (a terminal only): done of total, failures,
    tokens and cost so far, time left."""

    def __init__(self, progress: Any) -> None:
        self.progress = progress
        self.tasks: dict[str, Any] = {}
        self.intervals: dict[str, str] = {}

    @classmethod
    def maybe(cls, args: argparse.Namespace, plan: Plan) -> _Bar:
        if args.quiet or not sys.stderr.isatty():
            return cls(None)
        from rich.console import Console
        from rich.progress import (
            BarColumn,
            MofNCompleteColumn,
            Progress,
            TextColumn,
            TimeRemainingColumn,
        )

        progress = Progress(
            TextColumn("{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TextColumn("{task.fields[extra]}"),
            TimeRemainingColumn(),
            console=Console(stderr=True),
            transient=False,
        )
        return cls(progress)

    def __enter__(self) -> _Bar:
        if self.progress is not None:
            self.progress.start()
        return self

    def __exit__(self, *exc: object) -> None:
        if self.progress is not None:
            self.progress.stop()

    def update(self, event: Event) -> None:
        if self.progress is None:
            return
        from evaldelta.runner._engine import (
            AttemptDone,
            RunStarted,
            SequenceMoved,
            TargetStopped,
        )

        if isinstance(event, RunStarted):
            for name, t in event.totals.items():
                self.tasks[name] = self.progress.add_task(
                    name, total=t.total, completed=t.done, extra=_extra(t)
                )
        elif isinstance(event, AttemptDone):
            t = event.totals
            extra = "  ".join(filter(None, [_extra(t), self.intervals.get(t.target)]))
            self.progress.update(self.tasks[t.target], completed=t.done, extra=extra)
        elif isinstance(event, SequenceMoved):
            self.intervals[event.target] = interval_text(event)
        elif isinstance(event, TargetStopped):
            self.progress.update(self.tasks[event.target], extra="stopped")


def interval_text(event: SequenceMoved) -> str:
    """The sequence beside the bar: ``[+2.1, +15.3] pts after 45 cases``, and what it
    settled on once it has."""
    low, high = event.low * 100, event.high * 100
    text = f"[{low:+.1f}, {high:+.1f}] pts after {event.cases}"
    return f"{text}: {event.settled}" if event.settled else text


def _extra(t: Any) -> str:
    parts = [f"{t.failures} failed" if t.failures else "ok"]
    tokens = t.input_tokens + t.output_tokens
    if tokens:
        parts.append(f"{_count(tokens)} tokens")
    if t.cost_known:
        parts.append(f"${t.cost_usd:.4f}")
    return "  ".join(parts)


# -- output -----------------------------------------------------------------------------


def _print_plan(args: argparse.Namespace, plan: Plan, store_at: str) -> None:
    if args.format == "json":
        import json

        print(json.dumps({**plan.to_dict(), "store": store_at}))
        return
    suite = plan.suite
    n_tests, n_targets, k = len(plan.tests), len(plan.targets), suite.attempts
    lines = [
        f"Plan: {suite.name} ({args.suite})",
        f"  {n_tests} {_plural(n_tests, 'test')} x {n_targets} {_plural(n_targets, 'target')} "
        f"x {k} {_plural(k, 'attempt')} = {plan.calls} {_plural(plan.calls, 'call')}, "
        f"at most {plan.workers} at once",
    ]
    for t in plan.targets:
        lines.append(f"  target {t.name}: {_describe(t.public_settings())}")
    if plan.judge is not None:
        lines.append(
            f"  judge {plan.judge.name}: {_describe(plan.judge.public_settings())}, "
            f"up to {plan.judge_calls} {_plural(plan.judge_calls, 'call')}"
        )
    order = ", ".join(t.id for t in plan.tests[:10])
    more = f", ... ({n_tests - 10} more)" if n_tests > 10 else ""
    lines.append(f"  order (seed {suite.seed}): {order}{more}")
    runs = ", ".join(plan.run_name(t.name) for t in plan.targets)
    lines.append(f"  runs: {runs}, in {store_at}")
    lines.append("Nothing was called (--dry-run).")
    print("\n".join(lines))


def _describe(settings: dict[str, Any]) -> str:
    kind = settings.get("type")
    if kind == "openai":
        return f"openai, {settings.get('model')} at {settings.get('base_url')}"
    if kind == "python":
        return f"python, {settings.get('function', 'a function')}"
    if kind == "command":
        command = settings.get("command")
        shown = shlex.join(command) if isinstance(command, list) else str(command)
        return f"command, {shown}"
    return str(kind)


def _summary(args: argparse.Namespace, outcome: EvalOutcome, store_at: str) -> str:
    from evaldelta.cli._store import shown

    plan = outcome.plan
    suite = plan.suite
    ran = f"{len(plan.tests)}"
    if outcome.status == "stopped early":
        cases_run = max((r.sequential or {}).get("cases_run", 0) for r in outcome.runs.values())
        ran = f"{cases_run} of {len(plan.tests)}"
    lines = [
        f"Ran {suite.name}: {ran} {_plural(len(plan.tests), 'test')} x "
        f"{len(plan.targets)} {_plural(len(plan.targets), 'target')} x {suite.attempts} "
        f"{_plural(suite.attempts, 'attempt')} in {outcome.elapsed_s:.1f} s"
        + ("" if outcome.status == "complete" else f" ({outcome.stop_reason})"),
        "",
    ]
    header = (
        "Target",
        "Run",
        "Status",
        "Attempts",
        "Pass rate",
        "Mean score",
        "Failures",
        "Tokens",
        "Cost",
    )
    rows = []
    for name, t in outcome.totals.items():
        stored = outcome.runs[name]
        done = t.done - t.infra_failures
        rows.append(
            (
                name,
                str(stored.id),
                stored.status,
                f"{t.done}/{t.total}",
                f"{100 * t.passed / done:.1f}%" if done > 0 else "-",
                f"{t.mean_score:.3f}" if t.mean_score is not None else "-",
                _failures(t),
                _count(t.input_tokens + t.output_tokens)
                if t.input_tokens + t.output_tokens
                else "-",
                f"${t.cost_usd:.4f}" if t.cost_known else "-",
            )
        )
    widths = [max(len(h), *(len(r[i]) for r in rows)) for i, h in enumerate(header)]

    def line(cells: tuple[str, ...]) -> str:
        out = [
            c.ljust(w) if i < 3 else c.rjust(w)
            for i, (c, w) in enumerate(zip(cells, widths, strict=True))
        ]
        return "  " + "  ".join(out).rstrip()

    lines.append(line(header))
    lines.append(line(tuple("-" * w for w in widths)))
    lines.extend(line(r) for r in rows)
    if outcome.judge_tokens:
        cost = f", ${outcome.judge_cost_usd:.4f}" if outcome.judge_cost_usd else ""
        lines.append(f"\nJudge: {_count(outcome.judge_tokens)} tokens{cost}")
    lines.append("")
    names = [outcome.runs[t.name].name for t in plan.targets]
    lines.append(f"Stored in {store_at} as {', '.join(names)}.")
    store_opt = "" if not args.store else f" --store {shlex.quote(shown(args.store))}"
    # Only runs with attempts to show are worth comparing.
    names = [outcome.runs[t.name].name for t in plan.targets if outcome.totals[t.name].done]
    sequential = [r.sequential for r in outcome.runs.values() if r.sequential]
    if sequential:
        record = sequential[0]
        against = record["against"]["name"]
        head = "Stopped early" if outcome.status == "stopped early" else "Ran to the end"
        lines.insert(
            -1,
            f"{head} against {against}: {record['reason']} "
            f"({level_text(1 - record['alpha'])} confidence sequence, {record['order']}).",
        )
        if names:
            ref = args.against
            lines.append(
                f"Next: evaldelta compare {shlex.quote(str(ref))} {shlex.quote(names[0])}"
                f"{store_opt}"
            )
    elif not names:
        pass
    elif len(names) >= 2:
        lines.append(
            f"Next: evaldelta compare {shlex.quote(names[0])} {shlex.quote(names[1])}{store_opt}"
        )
    else:
        target = names[0].rsplit("/", 1)[-1]
        lines.append(
            "Next: change the agent, run again with another --name, then "
            f"evaldelta compare {shlex.quote(names[0])} NEW-NAME/{target}{store_opt}"
        )
    if args.out:
        lines.append(f"Records written to {args.out}.")
    return "\n".join(lines) + "\n"


def level_text(level: float) -> str:
    from evaldelta.analysis._verdict import level_text as text

    return text(level)


def _failures(t: Any) -> str:
    if not t.failures:
        return "0"
    parts = []
    if t.task_failures:
        parts.append(f"{t.task_failures} task")
    if t.infra_failures:
        parts.append(f"{t.infra_failures} infra")
    return ", ".join(parts)


def _write_out(path: str, store: RunStore, outcome: EvalOutcome) -> None:
    import msgspec

    from evaldelta.errors import InputError
    from evaldelta.runner._engine import latest_attempts

    records: list[dict[str, Any]] = []
    for stored in outcome.runs.values():
        part = latest_attempts(store.attempts(stored.id))
        if part and stored.status != "complete":
            part[0] = {**part[0], "run_status": stored.status}
        records.extend(part)
    if records:
        suite = outcome.plan.suite
        records[0] = {
            **records[0],
            "config": {
                "suite": suite.name,
                "suite_hash": suite.hash,
                "seed": suite.seed,
                "attempts": suite.attempts,
            },
        }
    try:
        with open(path, "wb") as fh:
            fh.write(msgspec.json.Encoder().encode_lines(records))
    except OSError as exc:
        raise InputError(f"{path}: cannot write the records ({exc.strerror or exc})") from exc


def _resume_command(args: argparse.Namespace, *, drop_budget: bool = False) -> str:
    """The command line that was run, with ``--resume`` (and, when the budget ran out,
    without ``--max-cost``: the budget counts what the runs spent before)."""
    given = list(getattr(args, "argv", sys.argv[1:]))
    argv: list[str] = []
    skip = False
    for arg in given:
        if skip:
            skip = False
            continue
        if arg == "--resume":
            continue
        if drop_budget and arg == "--max-cost":
            skip = True
            continue
        if drop_budget and arg.startswith("--max-cost="):
            continue
        argv.append(arg)
    from evaldelta.cli._store import shown

    # A store's URL without its password: the password comes from PGPASSWORD or ~/.pgpass.
    argv = [f"--store={shown(a[8:])}" if a.startswith("--store=") else shown(a) for a in argv]
    command = shlex.join(["evaldelta", *argv, "--resume"])
    if drop_budget:
        command += " --max-cost USD"
    return command


def _plural(n: int, word: str) -> str:
    return word if n == 1 else word + "s"


def _count(n: float) -> str:
    if n >= 1e7:
        return f"{n / 1e6:.1f}M"
    return f"{n:,.0f}"
