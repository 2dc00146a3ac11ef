"""``evaldelta runs``: keep runs in a store, to list, show and compare them by id or name."""

from __future__ import annotations

import argparse
import os
import sys
from typing import TYPE_CHECKING, Any

from evaldelta.cli._options import add_command
from evaldelta.cli._output import EXIT_OK, write_output
from evaldelta.cli._progress import add_progress_option, progress_line
from evaldelta.cli._store import STORE_HELP, open_store, open_store_of, shown, store_path
from evaldelta.errors import InputError, StoreError, UsageError

if TYPE_CHECKING:
    from evaldelta.cli._options import Commands
    from evaldelta.store import StoredRun

#: The one-line help and the description of ``evaldelta runs``.
ABOUT = (
    "keep runs in a store: import, list, show, export, rename, rm, push, pull",
    "Keep evaluation runs in a store (an SQLite file, or a team's PostgreSQL database), to "
    "compare them later by id or by name.",
)

HELP = """\
a run is referred to by its id (3) or its name (the latest run of that name); compare,
gate and power take one wherever they take a results file:

  evaldelta runs import before.jsonl --name before --config prompt=v1
  evaldelta runs import after.jsonl --name after --config prompt=v2
  evaldelta runs list
  evaldelta compare before after        (or: evaldelta compare 1 2)
  evaldelta gate before after

the store is .evaldelta/runs.db in the current folder, or --store PATH, or $EVALDELTA_STORE;
a team's is a PostgreSQL URL (pip install 'evaldelta[postgres]'), and push and pull copy
runs between two stores:

  evaldelta runs push before --to postgresql://ci@db.internal/evals
  evaldelta runs pull main --from postgresql://ci@db.internal/evals
"""


def add_parser(commands: Commands) -> None:
    p = add_command(commands, "runs", ABOUT, HELP)
    sub = p.add_subparsers(dest="runs_command", metavar="COMMAND", parser_class=type(p))
    p.set_defaults(run=_no_command)

    imp = _sub(sub, "import", "store a results file: one run, or one per target")
    imp.add_argument("file", metavar="FILE", help="a results file in any supported format")
    imp.add_argument(
        "--name",
        help="the run's name (default: the file's name); NAME/TARGET "
        "for each target of a combined file",
    )
    imp.add_argument(
        "--config",
        metavar="KEY=VALUE",
        action="append",
        default=[],
        help="a setting of the run (model, prompt, temperature...), beside those the file "
        "declares; repeat for more (--config prompt=v2 --config temperature=0.2); a VALUE "
        "that is JSON (0.2, true) is kept as such",
    )
    imp.add_argument("--notes", metavar="TEXT", help="free text to keep with the run")
    imp.add_argument("--target", metavar="TARGET", help="store only this target of the file")
    imp.add_argument("--suite", metavar="NAME", help="file the runs under this suite")
    imp.add_argument("--input-format", metavar="NAME", help="force the input format")
    imp.add_argument(
        "--map",
        metavar="FIELD=COLUMN,...",
        action="append",
        help="map the model's fields onto a CSV's columns or a JSONL's JSON paths",
    )
    imp.add_argument(
        "--keep-field",
        metavar="FIELD",
        action="append",
        default=[],
        help="also keep this per-record field (e.g. to --cluster-by it later); repeatable",
    )
    imp.add_argument(
        "--no-text",
        action="store_true",
        help="leave out inputs, outputs and expected answers (a smaller, faster store)",
    )
    imp.add_argument("--json", action="store_true", help="print the new runs as JSON")
    add_progress_option(imp)
    imp.set_defaults(run=run_import)

    ls = _sub(sub, "list", "list the stored runs, newest first")
    ls.add_argument(
        "--name",
        metavar="NAME",
        help="only the runs of this name; a NAME with *, ? or [ that no run has is "
        "read as a pattern, e.g. 'main*'",
    )
    ls.add_argument(
        "--name-glob",
        metavar="GLOB",
        help="only runs whose name matches this pattern, e.g. 'main*' or 'qa-[12]'",
    )
    ls.add_argument("--suite", metavar="NAME", help="only the runs of this suite")
    ls.add_argument("--limit", type=int, metavar="N", help="only the N newest runs")
    ls.add_argument("--json", action="store_true", help="print JSON")
    add_progress_option(ls)
    ls.set_defaults(run=run_list)

    show = _sub(sub, "show", "a run's facts and summary figures")
    show.add_argument("ref", metavar="RUN", help="a run id, or a name (its latest run)")
    show.add_argument("--json", action="store_true", help="print JSON")
    show.add_argument("--pass-threshold", type=float, default=0.5, help=argparse.SUPPRESS)
    add_progress_option(show)
    show.set_defaults(run=run_show)

    rm = _sub(sub, "rm", "delete runs and their records")
    rm.add_argument("refs", nargs="+", metavar="RUN", help="run ids or names")
    rm.set_defaults(run=run_rm)

    export = _sub(sub, "export", "write a run as JSON Lines or Parquet, which every command reads")
    export.add_argument("ref", metavar="RUN", help="a run id, or a name (its latest run)")
    export.add_argument(
        "-o", "--output", metavar="FILE", help="write to FILE (default: stdout; Parquet needs one)"
    )
    export.add_argument(
        "--format",
        choices=("jsonl", "parquet"),
        default=None,
        help="jsonl (the default), or parquet: one row per record in the common model's "
        "columns (the default for an -o FILE ending in .parquet)",
    )
    add_progress_option(export)
    export.set_defaults(run=run_export)

    rename = _sub(sub, "rename", "give a run a new name")
    rename.add_argument("ref", metavar="RUN", help="a run id, or a name (its latest run)")
    rename.add_argument("name", metavar="NAME", help="the new name")
    rename.set_defaults(run=run_rename)

    push = _sub(sub, "push", "copy runs from this store into another one")
    push.add_argument("refs", nargs="+", metavar="RUN", help="run ids or names")
    push.add_argument(
        "--to",
        required=True,
        metavar="STORE",
        help="the store to copy them into: a file, or postgresql://user@host:port/db",
    )
    push.set_defaults(run=run_push)

    pull = _sub(sub, "pull", "copy runs from another store into this one")
    pull.add_argument("refs", nargs="+", metavar="RUN", help="run ids or names in that store")
    pull.add_argument(
        "--from",
        dest="source",
        required=True,
        metavar="STORE",
        help="the store to copy them from: a file, or postgresql://user@host:port/db",
    )
    pull.set_defaults(run=run_pull)


def _sub(sub: Any, name: str, help: str) -> argparse.ArgumentParser:
    p: argparse.ArgumentParser = sub.add_parser(
        name, help=help, description=help[0].upper() + help[1:] + "."
    )
    p.add_argument("--store", metavar="PATH", help=STORE_HELP)
    p.add_argument("--debug", action="store_true", help=argparse.SUPPRESS)
    return p


def _no_command(args: argparse.Namespace) -> int:
    raise UsageError("give a runs command: import, list, show, export, rename, rm, push or pull")


# -- commands -------------------------------------------------------------------------


def parse_config(items: list[str]) -> dict[str, Any]:
    """``KEY=VALUE`` settings; a VALUE that parses as JSON is kept as that value."""
    import msgspec

    config: dict[str, Any] = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise UsageError(f"--config takes KEY=VALUE, got {item!r} (e.g. --config prompt=v2)")
        try:
            config[key.strip()] = msgspec.json.decode(value)
        except msgspec.DecodeError:
            config[key.strip()] = value
    return config


def run_import(args: argparse.Namespace) -> int:
    from evaldelta.cli._options import mapping_from
    from evaldelta.io import load

    config = parse_config(args.config)
    with progress_line(args) as line:
        with line.ticking(f"reading {args.file}"):
            run = load(
                args.file,
                format=args.input_format,
                keep_text=not args.no_text,
                extra_fields=tuple(args.keep_field),
                mapping=mapping_from(args),
            )
        with open_store_of(args, create=True) as store:
            line.step("storing")
            ids = store.import_run(
                run,
                name=args.name,
                target=args.target,
                config=config,
                notes=args.notes,
                progress=line,
                suite=args.suite,
            )
            stored = [store.info(rid) for rid in ids]
    if args.json:
        _print_json([s.to_dict() for s in stored])
    else:
        lines = [
            f"Stored run {s.id}: {_show(s.name)} ({s.cases:,} cases, {s.records:,} records)"
            for s in stored
        ]
        write_output("\n".join(lines) + "\n", None)
    return EXIT_OK


def run_list(args: argparse.Namespace) -> int:
    from evaldelta.store import store_exists

    path = store_path(args)
    if not store_exists(path):
        if args.json:
            _print_json([])
        else:
            write_output(
                f"No runs stored in {shown(path)} yet; run a suite with `evaldelta eval SUITE`, or "
                "store a results file with `evaldelta runs import FILE`.\n",
                None,
            )
        return EXIT_OK
    if args.limit is not None and args.limit < 1:
        raise UsageError(f"--limit must be at least 1, got {args.limit}")
    with open_store_of(args, reading=True) as store:
        suite_id: int | None = None
        if args.suite is not None:
            suite = store.find_suite_by_name(args.suite)
            if suite is None:
                known = ", ".join(_show(s.name) for s in store.list_suites()) or "none yet"
                raise StoreError(
                    f"no suite named {args.suite!r} in {shown(path)} (suites: {known}); run one "
                    "with `evaldelta eval SUITE`, or leave out --suite"
                )
            suite_id = suite.id
        name, pattern = args.name, args.name_glob
        # A name is exact; one with a glob character that no run has stays a pattern,
        # as --name was before --name-glob.
        if (
            name is not None
            and pattern is None
            and any(c in name for c in "*?[")
            and not store.list_runs(suite_id, name=name, limit=1)
        ):
            name, pattern = None, name
        runs = store.list_runs(suite_id, name=name, pattern=pattern, limit=args.limit)
        if suite_id is not None:
            runs = runs[::-1]  # a suite's runs come oldest first; the table: newest first
        # Kept in the store: no record is read, except once for a run stored before.
        with progress_line(args, "summarising runs stored without figures") as line:
            figures = store.summaries([r.id for r in runs], progress=line)
    if args.json:
        _print_json([{**r.to_dict(), "summary": figures[r.id]} for r in runs])
        return EXIT_OK
    if not runs:
        which = f" named {args.name!r}" if args.name else ""
        which += f" matching {args.name_glob!r}" if args.name_glob else ""
        which += f" in suite {args.suite!r}" if args.suite is not None else ""
        write_output(f"No runs{which} in {shown(path)}.\n", None)
        return EXIT_OK
    write_output(_list_table(runs, figures), None)
    return EXIT_OK


def _list_table(runs: list[StoredRun], figures: dict[int, list[dict[str, Any]]]) -> str:
    from evaldelta.analysis._summary import over_targets
    from evaldelta.report._text import ljust, width

    def pct(x: float | None) -> str:
        return "n/a" if x is None else f"{x * 100:.1f}%"

    def score(x: float | None) -> str:
        return "n/a" if x is None else f"{x:.3f}"

    header: tuple[str, ...] = (
        "ID",
        "Name",
        "Created (UTC)",
        "Status",
        "Cases",
        "Records",
        "Pass rate",
        "Mean score",
        "Source",
    )
    rows: list[tuple[str, ...]] = [
        (
            str(r.id),
            _show(r.name),
            r.created_at.replace("T", " ").removesuffix("Z")[:16],
            r.status,
            f"{r.cases:,}",
            f"{r.records:,}",
            pct(over_targets(figures[r.id], "pass_rate")),
            score(over_targets(figures[r.id], "mean_score")),
            f"{_show(os.path.basename(r.source))} ({r.format})",
        )
        for r in runs
    ]
    header, rows = _with_suites(header, rows, runs)
    right = {0, 4, 5, 6, 7} if len(header) == 9 else {0, 5, 6, 7, 8}
    widths = [max(width(row[i]) for row in (header, *rows)) for i in range(len(header))]

    def line(cells: tuple[str, ...]) -> str:
        out = []
        for i, cell in enumerate(cells):
            pad = widths[i] - width(cell)
            last = i == len(cells) - 1
            out.append(
                " " * pad + cell if i in right else (cell if last else ljust(cell, widths[i]))
            )
        return "  " + "  ".join(out)

    rule = tuple("-" * w for w in widths)
    return "\n".join([line(header), line(rule), *(line(row) for row in rows)]) + "\n"


def _with_suites(
    header: tuple[str, ...], rows: list[tuple[str, ...]], runs: list[StoredRun]
) -> tuple[tuple[str, ...], list[tuple[str, ...]]]:
    """A Suite column after the name, when a run listed belongs to one."""
    if all(r.suite is None for r in runs):
        return header, rows
    return (
        (*header[:2], "Suite", *header[2:]),
        [(*row[:2], _show(r.suite or "-"), *row[2:]) for row, r in zip(rows, runs, strict=True)],
    )


def run_show(args: argparse.Namespace) -> int:
    with open_store_of(args, reading=True) as store:
        info = store.info(args.ref)
        # Kept in the store when the run was stored (for the default pass threshold).
        figures = store.summary(info.id, pass_threshold=args.pass_threshold)
    if args.json:
        _print_json({**info.to_dict(), "summary": figures})
        return EXIT_OK
    write_output(_show_text(info, figures), None)
    return EXIT_OK


def _show_text(info: StoredRun, figures: list[dict[str, Any]]) -> str:
    from evaldelta.report._text import ljust, ms, usd, width

    def fmt_config(config: dict[str, Any]) -> str:
        import msgspec

        if not config:
            return "(none)"
        return ", ".join(
            f"{k}={v if isinstance(v, str) else msgspec.json.encode(v).decode()}"
            for k, v in config.items()
        )

    facts = [
        ("Created", info.created_at.replace("T", " ").replace("Z", " UTC")),
        ("Ran", f"{info.started_at or '?'} -> {info.finished_at or '?'}")
        if info.started_at or info.finished_at
        else None,
        ("Status", info.status),
        ("Suite", _show(info.suite)) if info.suite is not None else None,
        ("Source", f"{_show(info.source)} ({info.format})"),
        ("Dataset", f"{info.dataset_hash[:12]} ({info.cases:,} cases, {info.records:,} records)"),
        ("Config", _show(fmt_config(info.config))),
        ("Notes", _show(info.notes)) if info.notes else None,
    ]
    lines = [f"Run {info.id}: {_show(info.name)}", ""]
    lines += [f"  {label + ':':<10}{value}" for label, value in filter(None, facts)]
    lines.append("")

    def pct(x: float | None) -> str:
        return "n/a" if x is None else f"{x * 100:.1f}%"

    def attempts(f: dict[str, Any]) -> str:
        per = f["attempts_per_case"]
        each = str(per[0]) if len(per) == 1 else f"{per[0]}-{per[-1]}"
        return f"{f['attempts']:,} ({each} per case)"

    header = ("Target", "Cases", "Attempts", "Pass rate", "Mean score", "Latency", "Cost", "Errors")
    rows = [
        (
            _show(f["target"] if f["target"] is not None else "(no target)"),
            f"{f['cases']:,}",
            attempts(f),
            pct(f["pass_rate"]),
            "n/a" if f["mean_score"] is None else f"{f['mean_score']:.3f}",
            "n/a" if f["latency_ms"] is None else ms(f["latency_ms"]),
            "n/a" if f["cost_usd"] is None else usd(f["cost_usd"]),
            f"{f['errors']:,}",
        )
        for f in figures
    ]
    widths = [max(width(r[i]) for r in (header, *rows)) for i in range(len(header))]

    def line(cells: tuple[str, ...]) -> str:
        parts = [ljust(cells[0], widths[0])]
        parts += [" " * (widths[i] - width(c)) + c for i, c in enumerate(cells) if i]
        return "  " + "  ".join(parts)

    lines += [line(header), line(tuple("-" * w for w in widths)), *(line(r) for r in rows)]
    lines.append("")
    lines.append(
        "Pass rate and mean score are means over cases; latency is per case, excluding "
        "waits; cost is the total."
    )
    return "\n".join(lines) + "\n"


def run_rm(args: argparse.Namespace) -> int:
    with open_store_of(args) as store:
        ids = [store.resolve(ref) for ref in args.refs]  # all found, or none deleted
        gone = [store.delete_run(rid) for rid in dict.fromkeys(ids)]
    write_output("".join(f"Deleted run {s.id}: {_show(s.name)}\n" for s in gone), None)
    return EXIT_OK


def run_rename(args: argparse.Namespace) -> int:
    with open_store_of(args) as store:
        before = store.info(args.ref)
        after = store.rename_run(before.id, args.name)
    write_output(f"Renamed run {after.id}: {_show(before.name)} -> {_show(after.name)}\n", None)
    return EXIT_OK


def run_export(args: argparse.Namespace) -> int:
    from evaldelta.store import export_jsonl

    parquet = args.format == "parquet" or (
        args.format is None and (args.output or "").lower().endswith(".parquet")
    )
    if parquet and args.output is None:
        raise UsageError("runs export --format parquet needs -o FILE (Parquet is no text)")
    with progress_line(args, "reading") as line:
        with open_store_of(args, reading=True) as store:
            run = store.get_run(args.ref, keep_text=True, progress=line)
        line.step("writing")
        if parquet:
            from evaldelta.io import write_parquet

            write_parquet(run, args.output)
            return EXIT_OK
        if args.output is None:
            sys.stdout.flush()
            export_jsonl(run, sys.stdout.buffer, progress=line)
            sys.stdout.buffer.flush()
            return EXIT_OK
        try:
            with open(args.output, "wb") as fh:
                export_jsonl(run, fh, progress=line)
        except OSError as exc:
            raise InputError(
                f"{args.output}: cannot write the export ({exc.strerror or exc})"
            ) from exc
    return EXIT_OK


def run_push(args: argparse.Namespace) -> int:
    return _copy(store_path(args), args.to, args.refs, "Pushed")


def run_pull(args: argparse.Namespace) -> int:
    return _copy(args.source, store_path(args), args.refs, "Pulled")


def _copy(source: str, target: str, refs: list[str], verb: str) -> int:
    """Copy the runs ``refs`` name from the store ``source`` into ``target`` (made when
    there is none): all of them found first, each in one transaction."""
    with open_store(source, reading=True) as origin:
        ids = list(dict.fromkeys(origin.resolve(ref) for ref in refs))
        with open_store(target, create=True) as into:
            lines = []
            for rid in ids:
                copy, copied = origin.copy_run(rid, into)
                name = _show(copy.name)
                if copied:
                    lines.append(f"{verb} run {rid} ({name}) into {into.location} as run {copy.id}")
                else:
                    lines.append(
                        f"Run {rid} ({name}) is already in {into.location}, as run {copy.id}; "
                        "not copied again"
                    )
    write_output("\n".join(lines) + "\n", None)
    return EXIT_OK


def _show(text: str | None) -> str:
    from evaldelta.report._text import printable

    return printable(text or "")


def _print_json(data: Any) -> None:
    import msgspec

    write_output(msgspec.json.format(msgspec.json.encode(data), indent=2).decode() + "\n", None)
