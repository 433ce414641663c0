"""`kernelscope memory ...`: the memory manager from the shell.

Same commands and flags as the seed's `tools/memory_manager.py` (`--workspace`,
`--version v2 v4 v5`, `--set a.b=VALUE`, `--field`, `--unmasked-only`), so an agent can
switch by changing the program name; plus `--json` everywhere, `next-version` and
`mask-half`.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Optional

import typer

from kernelscope.daemon.cli import output
from kernelscope.daemon.cli.options import ForceMaskOpt, ForceOpt, JsonOpt, WorkspaceOpt
from kernelscope.daemon.engine import DataError, UsageError

if TYPE_CHECKING:
    from kernelscope.daemon.engine.memory.records import MemoryManager

app = typer.Typer(
    help="Read and change memory/v<N>.json records (a superset of the seed's memory_manager.py).",
    no_args_is_help=True,
)

VersionsOpt = Annotated[
    Optional[list[str]],  # noqa: UP045 - typer inspects the annotation at runtime
    typer.Option("--version", "-v", help="Version(s), e.g. --version v2 v4 v5."),
]
IncludeBaselineOpt = Annotated[
    bool, typer.Option("--include-baseline", help="Allow setting masked=true on v0 (normally refused).")
]
# one text per command: only masking v0 is refused, so unmask accepts the flag and needs it never
MaskBaselineOpt = Annotated[
    bool, typer.Option("--include-baseline", help="Allow masking v0 (normally refused).")
]
UnmaskBaselineOpt = Annotated[
    bool,
    typer.Option(
        "--include-baseline", help="No effect: v0 can always be unmasked (accepted, as mask takes it)."
    ),
]
MoreVersionsArg = Annotated[
    Optional[list[str]],  # noqa: UP045
    typer.Argument(help="More versions (so '--version v2 v4 v5' works as in the seed).", show_default=False),
]


def _manager(workspace: Path, require: bool = True) -> MemoryManager:
    """The workspace's memory manager; a folder that is no workspace is the one error every
    command gives (`memory init`, which makes one, asks for none)."""
    from kernelscope.daemon.engine.memory.records import MemoryManager
    from kernelscope.daemon.engine.workspace.discovery import require_workspace

    return MemoryManager(require_workspace(workspace, need="memory") if require else workspace)


def _versions(option: list[str] | None, extra: list[str] | None) -> list[str]:
    versions = [*(option or []), *(extra or [])]
    if not versions:
        raise UsageError("give at least one version, e.g. --version v2 v4")
    return versions


def _report_errors(errors: list[str]) -> None:
    for message in errors:
        output.warn(f"skipped unreadable memory file {message}")


@app.command()
def init(workspace: WorkspaceOpt = Path("."), json_out: JsonOpt = False) -> None:
    """Create the memory/ directory (an existing one: finish a mask-half cut short there)."""
    path = _manager(workspace, require=False).init()
    output.report(json_out, {"memory_dir": str(path)}, f"Initialized memory directory: {path}")


@app.command()
def create(
    version: Annotated[str, typer.Option("--version", "-v", help="Version to create, e.g. v3.")],
    workspace: WorkspaceOpt = Path("."),
    force: Annotated[
        bool,
        typer.Option(
            "--force",
            help="Overwrite an existing file; also write when an orchestrator drives the workspace "
            "(never its running episode's version).",
        ),
    ] = False,
    json_out: JsonOpt = False,
) -> None:
    """Create memory/<version>.json from the schema template."""
    path = _manager(workspace).create(version, force=force)
    output.report(json_out, {"created": str(path)}, f"Created: {path}")


@app.command()
def read(
    workspace: WorkspaceOpt = Path("."),
    version: Annotated[Optional[str], typer.Option("--version", "-v", help="One version.")] = None,  # noqa: UP045
    field: Annotated[
        Optional[str],  # noqa: UP045
        typer.Option("--field", "-f", help="Dotted field, e.g. performance.tflops."),
    ] = None,
    unmasked_only: Annotated[
        bool, typer.Option("--unmasked-only", help="Only unmasked versions (the default).")
    ] = False,
    include_masked: Annotated[
        bool, typer.Option("--include-masked", help="Also read masked versions.")
    ] = False,
    json_out: JsonOpt = False,
) -> None:
    """Print one version (or all unmasked ones) as JSON; a masked one needs --include-masked."""
    if unmasked_only and include_masked:
        raise UsageError("--unmasked-only and --include-masked contradict each other")
    manager = _manager(workspace)
    if version is not None:
        output.print_json(manager.read(version, field, include_masked=include_masked))
        return
    results, errors = manager.read_all(field, include_masked=include_masked)
    _report_errors(errors)
    if not results and not errors:
        from kernelscope.daemon.engine.memory.core import nothing_to_read

        masked = sum(1 for entry in manager.scan() if entry.masked)
        raise DataError(nothing_to_read(manager.memory_dir, masked))
    output.print_json(results)


@app.command()
def update(
    version: Annotated[str, typer.Option("--version", "-v", help="Version to update.")],
    assignments: Annotated[
        list[str], typer.Option("--set", "-s", help="KEY=VALUE (dotted key, JSON-typed value); repeatable.")
    ],
    workspace: WorkspaceOpt = Path("."),
    include_baseline: IncludeBaselineOpt = False,
    force: ForceOpt = False,
    json_out: JsonOpt = False,
) -> None:
    """Set fields: all assignments are applied in one atomic write, or none."""
    manager = _manager(workspace)
    data = manager.update(version, assignments, allow_baseline=include_baseline, allow_supervised=force)
    output.report(json_out, data, f"Updated: {manager.path_of(version)}")


def _mask_command(masked: bool) -> Callable[..., None]:
    verb = "Masked" if masked else "Unmasked"

    def command(
        version: VersionsOpt = None,
        more: MoreVersionsArg = None,
        workspace: WorkspaceOpt = Path("."),
        include_baseline: MaskBaselineOpt = False,  # (unmask: its own text, set below)
        force: ForceOpt = False,
        json_out: JsonOpt = False,
    ) -> None:
        manager = _manager(workspace)
        versions = _versions(version, more)
        changed = manager.set_masked(
            versions, masked, allow_baseline=include_baseline, allow_supervised=force
        )
        if json_out:
            output.print_json({"changed": changed, "requested": versions, "masked": masked})
            return
        for item in versions:
            state = verb if item in changed else f"Already {verb.lower()}"
            output.info(f"{state}: {manager.path_of(item)}")

    command.__doc__ = f"Set masked={str(masked).lower()} on versions (only that key changes)."
    if not masked:
        command.__annotations__["include_baseline"] = UnmaskBaselineOpt
    return command


app.command("mask")(_mask_command(True))
app.command("unmask")(_mask_command(False))


@app.command("list")
def list_versions(workspace: WorkspaceOpt = Path("."), json_out: JsonOpt = False) -> None:
    """List versions: masked, gate result, the one score vs v0, the recorded latency."""
    from kernelscope.daemon.engine.memory.core import LIST_COLUMNS, latency_cell, listed, no_versions
    from kernelscope.daemon.engine.memory.scores import score_cell
    from kernelscope.daemon.engine.workspace.workspace import Workspace

    rows = Workspace(_manager(workspace).workspace).version_summaries()
    if json_out:  # the fast path prints the same
        output.print_json([listed(row.model_dump(mode="json")) for row in rows])
        return
    if not rows:
        output.info(no_versions(_manager(workspace).memory_dir))
        return
    output.print_table(
        None,
        list(LIST_COLUMNS),
        [
            [
                row.version,
                "yes" if row.masked else "",
                row.gate or "-",
                score_cell(row.score),
                latency_cell(row.latency_us, row.coverage),
            ]
            if row.error is None
            else [row.version, "?", "CORRUPT", "-", row.error]
            for row in rows
        ],
    )


@app.command()
def summary(workspace: WorkspaceOpt = Path("."), json_out: JsonOpt = False) -> None:
    """A table of every version with its metrics, plus the README's targets."""
    from kernelscope.daemon.engine.memory.core import latency_cell, no_versions
    from kernelscope.daemon.engine.memory.scores import score_cell
    from kernelscope.daemon.engine.views.command_answers import masked_counts
    from kernelscope.daemon.engine.workspace.workspace import Workspace
    from kernelscope.protocol.record_rules import format_score

    ws = Workspace(_manager(workspace).workspace)
    info = ws.summary()
    if json_out:
        output.print_json(info)
        return
    if info.readme and info.readme.stop_conditions:
        from kernelscope.daemon.engine.views.lens_text import condition_label  # (as the lens names it)

        targets = ", ".join(condition_label(c) for c in info.readme.stop_conditions)
        output.info(f"Targets: {targets}")
    for message in info.warnings:
        output.warn(message)
    if not info.versions:
        output.info(f"{ws.root.name}: next version {info.next_version}; {no_versions(ws.memory_dir)}")
        return
    output.print_table(
        f"{ws.root.name}: next version {info.next_version}, {masked_counts(info)}",
        [
            "version",
            "masked",
            "latency (us)",
            "TFLOPS",
            "GB/s",
            "score vs v0",
            "vs ref",
            "gate",
            "outcome",
            "experiments",
            "open dirs",
            "action",
        ],
        [
            [
                row.version,
                "yes" if row.masked else "",
                latency_cell(row.latency_us, row.coverage)
                if row.carried_from is None
                else f"(from {row.carried_from})",
                output.fmt(row.tflops, ".1f"),
                output.fmt(row.bandwidth_gbps, ".1f"),
                score_cell(row.score),
                "-"
                if row.speedup_vs_reference is None
                else format_score(row.speedup_vs_reference, aggregate=row.reference_aggregate),
                row.gate or "-",
                row.outcome or "",
                str(row.experiments or ""),
                str(row.open_directions or ""),
                row.action or "",
            ]
            if row.error is None
            else [row.version, "?", "-", "-", "-", "-", "-", "CORRUPT", "", "", "", row.error]
            for row in info.versions
        ],
    )


@app.command()
def latest(workspace: WorkspaceOpt = Path("."), json_out: JsonOpt = False) -> None:
    """Print the latest unmasked version."""
    version = _manager(workspace).latest_unmasked()
    if version is None:
        raise DataError("no unmasked iterations found")
    if json_out:
        output.print_json({"latest": version})
    else:
        print(version)


@app.command("next-version")
def next_version(workspace: WorkspaceOpt = Path("."), json_out: JsonOpt = False) -> None:
    """Print the next version: highest on disk (masked, unmasked or corrupt) + 1."""
    version = _manager(workspace).next_version()
    if json_out:
        output.print_json({"next_version": version})
    else:
        print(version)


@app.command("mask-half")
def mask_half(
    workspace: WorkspaceOpt = Path("."),
    seed: Annotated[
        Optional[int],  # noqa: UP045
        typer.Option("--seed", help="Random seed (reported; pass it back to repeat a choice)."),
    ] = None,
    dry_run: Annotated[bool, typer.Option("--dry-run", help="Show the choice, write nothing.")] = False,
    force: ForceMaskOpt = False,
    json_out: JsonOpt = False,
) -> None:
    """Mask half of the unmasked versions other than v0 and the current best."""
    from kernelscope.daemon.engine.workspace.discovery import require_workspace
    from kernelscope.daemon.engine.workspace.workspace import Workspace

    ws = Workspace(require_workspace(workspace, need="memory"))
    readme = ws.readme() if ws.readme_path.is_file() else None
    result = ws.memory.mask_half_command(readme, seed=seed, dry_run=dry_run, force=force)
    if json_out:
        output.print_json(result)
        return
    prefix = "Would mask" if dry_run else "Masked"
    output.info(f"{prefix}: {', '.join(result.masked) or 'nothing'} (seed {result.seed})")
    output.info(f"Candidates: {', '.join(result.candidates) or 'none'}")
    output.info(f"Kept as best: {result.best_version or '-'} ({result.best_rule})")
    if result.latest_passing_version not in (None, result.best_version):
        output.info(f"Kept as the latest successful iteration: {result.latest_passing_version}")
    if result.pitfall_recorded_in and not dry_run:
        output.info(f"Recorded in {result.pitfall_recorded_in}.pitfalls_and_fixes")
    for version in result.skipped_corrupt:
        output.warn(f"skipped unreadable {version}")
    output.info(f"Next version: {result.next_version}")
    if not dry_run:  # it commits nothing: say so where git would otherwise undo it unseen
        from kernelscope.daemon.engine.views.command_answers import uncommitted_files_sentence
        from kernelscope.daemon.engine.workflows.restart import mask_commit_message, mask_paths

        paths = mask_paths(ws, result)
        if paths:
            output.info(uncommitted_files_sentence(ws.root, paths, mask_commit_message(result)))
