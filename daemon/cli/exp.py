"""`kernelscope exp ...`: the experiment history from the shell.

Every command takes `--db URL` (else KERNELSCOPE_DB_URL, the config file, or the per-user
SQLite default) and `--json`.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Optional

import typer

from kernelscope.daemon.cli import output
from kernelscope.daemon.cli.options import DbOpt, JsonOpt, OptBool, OptFloat, OptStr
from kernelscope.daemon.engine import UsageError, counted, load_json

if TYPE_CHECKING:  # the store (SQLAlchemy) and the models (pydantic) load when a command runs
    from kernelscope.daemon.engine.store import ExperimentStore
    from kernelscope.protocol.experiment import KernelExperiment

app = typer.Typer(help="Kernel experiment history (the seed's kernel-exp-history API).", no_args_is_help=True)


def _store(db: str | None, create: bool = False) -> ExperimentStore:
    """The store; only `record` and `import` create one (`create`): a read or an update
    through a mistyped --db is refused instead of creating an empty store."""
    from kernelscope.daemon.engine.store import ExperimentStore

    return ExperimentStore(db, must_exist=not create)


# The filter options' parameter names, each as the store's keyword (`--buggy` is `is_buggy`).
_FILTER_KEYWORDS = {
    "operator_sig": "operator_sig",
    "dtype_sig": "dtype_sig",
    "env": "env",
    "base_commit": "base_commit",
    "status": "status",
    "kernel": "kernel",
    "workspace": "workspace",
    "buggy": "is_buggy",
    "min_score": "min_score",
    "max_score": "max_score",
    "text": "text",
    "tag": "tag",
}


def _filters(options: dict[str, Any], store: ExperimentStore) -> dict[str, Any]:
    """The store's filter keywords from a command's options (its `locals()` on entry, so that a
    command declares each filter option once, as a parameter): the ones given, a workspace as
    an absolute path (checked by _workspace)."""
    filters = {
        keyword: options[name] for name, keyword in _FILTER_KEYWORDS.items() if options.get(name) is not None
    }
    if "workspace" in filters:
        filters["workspace"] = _workspace(filters["workspace"], store, bool(options.get("json_out")))
    return filters


def _workspace(path: str, store: ExperimentStore, json_out: bool) -> str:
    """A `-w` of a read: a workspace, or a path the store still holds experiments of (the
    workspace was moved or deleted), said in a note (engine: discovery.history_workspace)."""
    from kernelscope.daemon.engine.workspace.discovery import history_workspace

    root, note = history_workspace(Path(path), lambda recorded: store.count(workspace=recorded) > 0)
    if note is not None:
        (output.warn if json_out else output.info)(note)
    return str(root)


FOperator = Annotated[OptStr, typer.Option("--operator-sig", help="Exact operator signature.")]
FDtype = Annotated[OptStr, typer.Option("--dtype-sig")]
FEnv = Annotated[OptStr, typer.Option("--env")]
FCommit = Annotated[OptStr, typer.Option("--base-commit")]
FStatus = Annotated[OptStr, typer.Option("--status", help="new, running, done, failed or timeout.")]
FKernel = Annotated[OptStr, typer.Option("--kernel", help="Kernel function name.")]
FWorkspace = Annotated[OptStr, typer.Option("--workspace", "-w", help="Workspace directory.")]
FBuggy = Annotated[OptBool, typer.Option("--buggy/--not-buggy", help="Only buggy / non-buggy runs.")]
FMin = Annotated[OptFloat, typer.Option("--min-score")]
FMax = Annotated[OptFloat, typer.Option("--max-score")]
FText = Annotated[OptStr, typer.Option("--text", help="Substring of summary or description.")]
FTag = Annotated[OptStr, typer.Option("--tag")]
IncludeInterpreter = Annotated[
    bool,
    typer.Option(
        "--include-interpreter",
        help="Also rank Triton-interpreter (CPU) runs, whose timings are no GPU figures.",
    ),
]


IncludeMasked = Annotated[
    bool,
    typer.Option(
        "--include-masked",
        help="Also show experiments of masked memory versions (hidden after a partial restart).",
    ),
]


def _cli_option(name: str) -> str:
    return "--" + name.replace("_", "-")


def _say_left_out(json_out: bool, interpreter: int = 0, masked: int = 0) -> None:
    """Say what a read left out (interpreter runs: on a machine without a GPU, every run;
    experiments of masked memory versions), so an empty answer is not read as "nothing was
    tried" (engine/views/left_out.py's words). Under --json on stderr: stdout stays the
    document, and an agent's shell shows it both."""
    from kernelscope.daemon.engine.views.left_out import left_out_notes

    for note in left_out_notes(_cli_option, interpreter, masked):
        (output.warn if json_out else output.info)(note)


def _score(value: float | None) -> str:
    from kernelscope.protocol.record_rules import format_score

    return "-" if value is None else format_score(value)


def _listing(records: list[KernelExperiment], title: str, nothing: str) -> None:
    """A listing of experiments: its table, or when nothing matched one line saying so (never
    an empty table, nor no output at all); the lines saying what was left out follow either."""
    if records:
        _table(records, title)
    else:
        output.info(nothing)


def _table(records: list[KernelExperiment], title: str | None = None) -> None:
    from kernelscope.protocol.experiment import failure_category

    output.print_table(
        title,
        ["id", "score", "category", "status", "version", "kernels", "summary"],
        [
            [
                r.id,
                _score(r.score),
                failure_category(r.score, r.is_buggy),
                r.status,
                r.memory_version or "-",
                ",".join(r.kernels),
                r.change_summary,
            ]
            for r in records
        ],
    )


@app.command()
def top(
    max_results: Annotated[int, typer.Option("--max-results", "-n", min=0)] = 20,
    include_buggy: Annotated[bool, typer.Option("--include-buggy")] = False,
    include_interpreter: IncludeInterpreter = False,
    include_masked: IncludeMasked = False,
    operator_sig: FOperator = None,
    dtype_sig: FDtype = None,
    env: FEnv = None,
    base_commit: FCommit = None,
    status: FStatus = None,
    kernel: FKernel = None,
    workspace: FWorkspace = None,
    min_score: FMin = None,
    max_score: FMax = None,
    text: FText = None,
    tag: FTag = None,
    db: DbOpt = None,
    json_out: JsonOpt = False,
) -> None:
    """Best experiments first (buggy and interpreter runs excluded unless --include-buggy /
    --include-interpreter; those of masked memory versions, with or without --workspace, unless
    --include-masked)."""
    from kernelscope.daemon.engine.workspace.masked import ranking

    store = _store(db)
    filters = _filters(locals(), store)
    found = ranking(
        store, store.top, max_results, include_buggy, include_interpreter, include_masked, **filters
    )
    if json_out:
        output.print_json([r.to_dict() for r in found.rows])
    else:
        _listing(found.rows, f"top {len(found.rows)}", "no experiments to rank")
    _say_left_out(json_out, found.interpreter_left_out, found.masked_left_out)


@app.command("list")
def list_command(
    operator_sig: FOperator = None,
    dtype_sig: FDtype = None,
    env: FEnv = None,
    base_commit: FCommit = None,
    status: FStatus = None,
    kernel: FKernel = None,
    workspace: FWorkspace = None,
    buggy: FBuggy = None,
    min_score: FMin = None,
    max_score: FMax = None,
    text: FText = None,
    tag: FTag = None,
    limit: Annotated[Optional[int], typer.Option("--limit", min=0)] = None,  # noqa: UP045
    include_masked: IncludeMasked = False,
    db: DbOpt = None,
    json_out: JsonOpt = False,
) -> None:
    """Experiments matching the filters, in the order they were recorded (those of masked
    memory versions, with or without --workspace, only with --include-masked)."""
    from kernelscope.daemon.engine.workspace.masked import hidden_count, hidden_experiments

    store = _store(db)
    filters = _filters(locals(), store)
    hidden = hidden_experiments(store, include_masked, **filters)
    records = store.list_experiments(limit=limit, hidden_versions=hidden, **filters)
    if json_out:
        output.print_json([r.to_dict() for r in records])
    else:
        _listing(records, counted(len(records), "experiment"), "no experiments")
    _say_left_out(json_out, masked=hidden_count(hidden, lambda h: store.count(h, **filters)))


@app.command()
def show(
    exp_id: Annotated[str, typer.Argument(help="Experiment id.")],
    include_masked: IncludeMasked = False,
    db: DbOpt = None,
    json_out: JsonOpt = False,
) -> None:
    """One experiment in full (one of a masked memory version only with --include-masked)."""
    from kernelscope.daemon.engine import DataError
    from kernelscope.daemon.engine.workspace.masked import hidden_experiments

    store = _store(db)
    record = store.require(exp_id)
    hidden = hidden_experiments(store, include_masked, workspace=record.workspace) if record.workspace else {}
    if record.memory_version in hidden.get(record.workspace, set()):
        raise DataError(
            f"{exp_id} is the experiment of {record.memory_version}, which is masked in "
            f"{record.workspace}: its experience is hidden (pass --include-masked to show it anyway)"
        )
    if json_out:
        output.print_json(record.to_dict())
        return
    for key, value in record.to_dict().items():
        shown = json.dumps(value, ensure_ascii=False) if isinstance(value, (list, dict)) else value
        output.info(f"{key}: {shown}")


def _read_text_option(value: str | None) -> str | None:
    """`@FILE` reads the text from a file (handy for diffs and long descriptions)."""
    if value is not None and value.startswith("@"):
        path = Path(value[1:])
        try:
            return path.read_text(encoding="utf-8")
        except OSError as exc:
            raise UsageError(f"cannot read {path}: {exc.strerror or exc}") from None
    return value


@app.command()
def record(
    change_summary: Annotated[str, typer.Option("--summary", "-m", help="One line, <= 80 chars.")],
    score: Annotated[OptFloat, typer.Option("--score", help="Speedup vs baseline.")] = None,
    detailed_description: Annotated[OptStr, typer.Option("--description", help="Text or @FILE.")] = None,
    code_change: Annotated[OptStr, typer.Option("--code-change", help="Diff text or @FILE.")] = None,
    raw_result: Annotated[OptStr, typer.Option("--raw-result", help="Text or @FILE.")] = None,
    profiling_info: Annotated[OptStr, typer.Option("--profiling-info", help="Text or @FILE.")] = None,
    operator_sig: FOperator = None,
    dtype_sig: FDtype = None,
    env: FEnv = None,
    base_commit: FCommit = None,
    status: Annotated[str, typer.Option("--status")] = "done",
    buggy: Annotated[bool, typer.Option("--buggy", help="The run crashed or was incorrect.")] = False,
    error_message: Annotated[OptStr, typer.Option("--error")] = None,
    pid: Annotated[OptStr, typer.Option("--pid", help="Parent experiment id.")] = None,
    exp_id: Annotated[OptStr, typer.Option("--id", help="Explicit id (default: random).")] = None,
    kernels: Annotated[Optional[list[str]], typer.Option("--kernel", help="Repeatable.")] = None,  # noqa: UP045
    workspace: FWorkspace = None,
    memory_version: Annotated[OptStr, typer.Option("--memory-version")] = None,
    tags: Annotated[Optional[list[str]], typer.Option("--tag", help="Repeatable.")] = None,  # noqa: UP045
    metrics: Annotated[OptStr, typer.Option("--metrics", help="JSON object or @FILE.")] = None,
    db: DbOpt = None,
    json_out: JsonOpt = False,
) -> None:
    """Record one experiment (failures too: use --buggy and --error). --workspace must be a
    workspace on this machine (one of another machine's is imported: exp import)."""
    from kernelscope.daemon.engine.memory.core import normalize_version

    if workspace:  # (the one rule of a workspace an experiment is filed under, as update's)
        from kernelscope.daemon.engine.store.recorded_workspace import recorded_workspace

        workspace = recorded_workspace(workspace)
    if score is not None and not math.isfinite(score):
        raise UsageError(f"--score must be a finite number, got {score}")
    metrics_text = _read_text_option(metrics)
    try:
        metrics_value = load_json(metrics_text) if metrics_text else {}
    except json.JSONDecodeError as exc:
        raise UsageError(f"--metrics is not valid JSON: {exc}") from None
    fields: dict[str, object] = {
        "change_summary": change_summary,
        "score": score,
        "detailed_description": _read_text_option(detailed_description) or "",
        "code_change": _read_text_option(code_change) or "",
        "raw_result": _read_text_option(raw_result) or "",
        "profiling_info": _read_text_option(profiling_info) or "",
        "operator_sig": operator_sig or "",
        "dtype_sig": dtype_sig or "",
        "env": env or "",
        "base_commit": base_commit or "",
        "status": status,
        "is_buggy": buggy,
        "error_message": error_message or "",
        "pid": pid or "",
        "kernels": kernels or [],
        "workspace": workspace or "",
        "memory_version": normalize_version(memory_version) if memory_version is not None else None,
        "tags": tags or [],
        "metrics": metrics_value,
    }
    if exp_id:
        fields["id"] = exp_id
    created = _store(db, create=True).create_experiment(fields)
    output.report(
        json_out, created.to_dict(), f"Recorded {created.id} ({_score(created.score)}, {created.category})"
    )


@app.command("update")
def update_command(
    exp_id: Annotated[str, typer.Argument(help="Experiment id.")],
    assignments: Annotated[
        list[str], typer.Option("--set", "-s", help="FIELD=VALUE (JSON-typed); repeatable.")
    ],
    db: DbOpt = None,
    json_out: JsonOpt = False,
) -> None:
    """Change fields of an experiment; validated, nothing written on error (a workspace is
    checked as record -w checks it, by the store, once the id is known to exist)."""
    from kernelscope.daemon.engine.memory.records import parse_cli_value

    changes: dict[str, object] = {}
    for item in assignments:
        if "=" not in item:
            raise UsageError(f"invalid --set {item!r}: expected FIELD=VALUE")
        key, raw = item.split("=", 1)
        value = parse_cli_value(raw)
        if key.strip() in {
            "change_summary",
            "detailed_description",
            "code_change",
            "raw_result",
            "profiling_info",
            "operator_sig",
            "dtype_sig",
            "env",
            "base_commit",
            "error_message",
            "pid",
            "workspace",
            "memory_version",
            "created_at",
        }:
            value = raw if value is not None else None
        changes[key.strip()] = value
    updated = _store(db).update_experiment(exp_id, **changes)
    output.report(json_out, updated.to_dict(), f"Updated {updated.id}")


@app.command()
def lineage(exp_id: Annotated[str, typer.Argument()], db: DbOpt = None, json_out: JsonOpt = False) -> None:
    """Ancestors and descendants of an experiment through pid."""
    result = _store(db).lineage(exp_id)
    if json_out:
        output.print_json(result)
        return
    chain = [*reversed(result.ancestors), result.experiment]
    output.info(" -> ".join(f"{e.id} ({_score(e.score)})" for e in chain))
    if result.missing_parent:
        output.warn(f"parent {result.missing_parent} is not in the database")
    if result.descendants:
        _table(result.descendants, "descendants")


@app.command()
def failures(
    operator_sig: FOperator = None,
    kernel: FKernel = None,
    workspace: FWorkspace = None,
    include_interpreter: IncludeInterpreter = False,
    include_masked: IncludeMasked = False,
    db: DbOpt = None,
    json_out: JsonOpt = False,
) -> None:
    """What not to do: buggy, regressive, slightly regressive and marginal experiments
    (interpreter runs, whose timings are no GPU figures, only with --include-interpreter; those
    of masked memory versions, with or without --workspace, only with --include-masked)."""
    from kernelscope.daemon.engine.workspace.masked import failures as listed

    store = _store(db)
    found = listed(store, include_interpreter, include_masked, **_filters(locals(), store))
    groups = found.groups
    if json_out:
        output.print_json({k: [r.to_dict() for r in v] for k, v in groups.items()})
    else:
        for category, records in groups.items():
            if records:
                _table(records, f"{category} ({len(records)})")
        if not any(groups.values()):  # as _listing says it
            output.info("no failures")
    _say_left_out(json_out, found.interpreter_left_out, found.masked_left_out)


@app.command()
def summary(
    workspace: FWorkspace = ".",
    include_masked: IncludeMasked = False,
    db: DbOpt = None,
    json_out: JsonOpt = False,
) -> None:
    """Per-kernel best / latest / runs / failures for a workspace (what code lenses show;
    runs of its masked memory versions are counted apart, in every figure only with
    --include-masked)."""
    from kernelscope.daemon.engine.store.config import public_url
    from kernelscope.daemon.engine.views.lens_text import runs_text
    from kernelscope.daemon.engine.workspace.masked import kernel_summaries

    store = _store(db)
    path = _workspace(workspace or ".", store, json_out)
    rows = kernel_summaries(store, path, include_masked=include_masked)
    if json_out:
        output.print_json(rows)
        return
    if not rows:  # as the other listings: a line, naming the store read (another --db?)
        output.info(f"no experiments of {path} in {public_url(store.url)}")
        return
    output.print_table(
        path,
        ["kernel", "best", "latest", "runs", "failed"],
        [
            [
                s.kernel,
                f"{_score(s.best_score)} {s.best_version or ''}".strip(),
                f"{_score(s.latest_score)} {s.latest_version or ''}".strip(),
                runs_text(s.runs, s.masked_runs, ""),
                str(s.failures),
            ]
            for s in rows
        ],
    )


@app.command("import")
def import_command(
    path: Annotated[Path, typer.Argument(help="Seed JSON database or JSON-lines file.")],
    replace: Annotated[bool, typer.Option("--replace", help="Overwrite records with the same id.")] = False,
    db: DbOpt = None,
    json_out: JsonOpt = False,
) -> None:
    """Import records; all are validated first and nothing is written if any is invalid."""
    from kernelscope.daemon.engine.store.transfer import read_records

    counts = _store(db, create=True).import_experiments(read_records(path), replace=replace)
    output.report(json_out, counts, ", ".join(f"{v} {k}" for k, v in counts.items()))


@app.command("export")
def export_command(
    path: Annotated[Path, typer.Argument(help="Output file ('-' for stdout).")],
    fmt: Annotated[str, typer.Option("--format", help="jsonl or csv (default: from the suffix).")] = "",
    db: DbOpt = None,
) -> None:
    """Export every experiment as JSON lines or CSV."""
    from kernelscope.daemon.engine.memory.atomic_io import atomic_write_text
    from kernelscope.daemon.engine.store.transfer import to_csv, to_json_lines

    chosen = fmt or ("csv" if path.suffix.lower() == ".csv" else "jsonl")
    if chosen not in ("jsonl", "csv"):
        raise UsageError(f"--format must be jsonl or csv, got {chosen!r}")
    records = _store(db).list_experiments()
    content = to_csv(records) if chosen == "csv" else to_json_lines(records)
    if str(path) == "-":
        print(content, end="")
    else:
        atomic_write_text(path, content)
        output.stderr.print(f"exported {counted(len(records), 'experiment')} to {path}")


@app.command()
def shim(
    directory: Annotated[Path, typer.Argument(help="Where to write kernel_exp_dataclass.py.")],
    db: DbOpt = None,
) -> None:
    """Write a kernel_exp_dataclass.py that forwards the seed's API to kernelscope."""
    from kernelscope.daemon.engine.store.config import normalize_url
    from kernelscope.daemon.engine.store.shim import write_shim

    # The URL as the store reads it (absolute path, ~ expanded): the skill that imports the shim
    # runs from other directories, where a relative path would name another file.
    target = write_shim(directory, normalize_url(db) if db else None)
    output.info(f"Wrote {target}")
