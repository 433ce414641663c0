"""`kernelscope iterate`: measure kernel.py, record memory/v<N>.json and an experiment, commit.

Exit statuses, `kernelscope bench`'s for the run: 0 the iteration passed the gate, 3 it failed,
4 a resource cap stopped it (both recorded all the same); 2 a setup error (no git repository,
no kernel.py) or a run that judged nothing (unsupported, not run, a dead worker, a harness
error before the problem's files were read: nothing recorded), 130 interrupted; 1 bad arguments.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from kernelscope.daemon.cli import output
from kernelscope.daemon.cli.options import ForceIterateOpt, JsonOpt, OptInt, OptStr
from kernelscope.protocol.record_rules import format_score

if TYPE_CHECKING:
    from kernelscope.protocol.commands import IterationResult


def iterate_command(
    workspace: Annotated[Path, typer.Option("--workspace", "-w", help="Workspace directory.")] = Path("."),
    action_category: Annotated[
        OptStr, typer.Option("--action-category", "-a", help="e.g. tiling, vectorization.")
    ] = None,
    action_description: Annotated[
        OptStr, typer.Option("--action-description", "-d", help="What changed and why.")
    ] = None,
    expected_impact: Annotated[OptStr, typer.Option("--expected-impact")] = None,
    revert_on_fail: Annotated[
        bool,
        typer.Option(
            "--revert-on-fail", help="Restore kernel.py to the last passing version on a failed gate."
        ),
    ] = False,
    mode: Annotated[str, typer.Option("--mode", help="auto, gpu or interpreter.")] = "auto",
    seeds: Annotated[OptInt, typer.Option("--seeds", min=1, help="Default: the evaluator's count.")] = None,
    timeout: Annotated[float, typer.Option("--timeout", min=1)] = 900.0,
    python: Annotated[OptStr, typer.Option("--python", help="Interpreter with torch/triton.")] = None,
    db: Annotated[OptStr, typer.Option("--db", help="Experiment database URL or SQLite path.")] = None,
    restart_id: Annotated[
        OptStr,
        typer.Option(
            "--restart-id",
            help="The partial restart whose agent runs this (its brief names it; default: "
            "$KERNELSCOPE_RESTART_ID, which the restart sets).",
        ),
    ] = None,
    force: ForceIterateOpt = False,
    json_out: JsonOpt = False,
) -> None:
    """Run one iteration: gate + benchmark vs v0 and the parent, record, commit."""
    from kernelscope.daemon.engine.workflows.iterate import IterateOptions, run_iteration

    if mode not in ("auto", "gpu", "interpreter"):
        raise typer.BadParameter("must be auto, gpu or interpreter", param_hint="--mode")
    from kernelscope.daemon.engine.workflows.iterate import refuse_recorded_code
    from kernelscope.daemon.engine.workspace.atrex import refuse_if_supervised
    from kernelscope.daemon.engine.workspace.discovery import require_workspace

    # what stops the iteration first (a supervisor's workspace, code already recorded), then
    # what it needs said about itself
    root = require_workspace(workspace)
    refuse_if_supervised(root, "run an iteration (record a version and commit it)", force)
    if (root / "memory").is_dir() and (root / "kernel.py").is_file():
        from kernelscope.daemon.engine.store import ExperimentStore
        from kernelscope.daemon.engine.store.config import resolve_db_url
        from kernelscope.daemon.engine.workflows.iterate import finish_cut_short_iterations

        for message in finish_cut_short_iterations(root, ExperimentStore(resolve_db_url(db)), force):
            output.warn(message)
    if not force and (root / "kernel.py").is_file():
        refuse_recorded_code(root, db)
    action_category, action_description = _ask_action(root, action_category, action_description)
    if not json_out:  # (in --json: the result's warnings)
        _say_readme_warnings(root)
    result = run_iteration(
        root,
        IterateOptions(
            action_category=action_category,
            action_description=action_description,
            expected_impact=expected_impact,
            revert_on_fail=revert_on_fail,
            mode=mode,
            seeds=seeds,
            timeout_s=timeout,
            python=python,
            db_url=db,
            force=force,
            restart_id=restart_id,
        ),
    )
    if json_out:
        print(result.model_dump_json(indent=2))
    else:
        print_iteration(result)
    raise typer.Exit(result.exit_status)


def _say_readme_warnings(root: Path) -> None:
    """The README's warnings, before the iteration measures: a stop condition it cannot check
    (a decimal comma, no unit) is one this iteration and the next never check."""
    from kernelscope.daemon.engine.workspace.workspace import Workspace

    ws = Workspace(root)
    for message in ws.readme().warnings if ws.readme_path.is_file() else []:
        output.warn(message)


def _ask_action(root: Path, category: str | None, description: str | None) -> tuple[str | None, str | None]:
    """A record is permanent: what changed and why is asked for (at a terminal) unless given;
    elsewhere (scripts, agents) a missing one is a usage error. v0 is the baseline by default."""
    import sys

    from kernelscope.daemon.engine import UsageError
    from kernelscope.daemon.engine.memory.records import MemoryManager

    if category and description:
        return category, description
    if MemoryManager(root).next_version() == "v0":
        return category or "baseline", description or "the baseline kernel"
    if not sys.stdin.isatty():
        raise UsageError(
            "say what this iteration changed: --action-category (-a, e.g. tiling) and "
            "--action-description (-d, what changed and why); a recorded version is permanent"
        )
    category = category or typer.prompt("Action category (e.g. tiling, vectorization)")
    description = description or typer.prompt("What changed and why")
    return category, description


def print_iteration(result: IterationResult) -> None:
    from kernelscope.daemon.engine.views.command_answers import iteration_score, stop_condition_line

    verdict = result.verdict or ("PASS" if result.passed else "FAIL")  # (one built without it)
    score = iteration_score(result)
    parent = (
        f", {format_score(result.score_vs_parent, versus=result.parent_version)}"
        if result.score_vs_parent is not None
        else ""
    )
    output.info(f"{result.version}: {verdict}  {score}{parent}  ({result.mode})")
    output.info(
        f"memory: {result.memory_path}   experiment: {result.experiment_id}   commit: {result.commit}"
    )
    if result.failure:
        output.error(result.failure)
    if result.failed_ref:
        output.info(
            f"failed kernel kept at {result.failed_ref}"
            + (" (kernel.py reverted)" if result.reverted else "")
        )
    for status in result.stop_conditions:
        output.info(stop_condition_line(status))
    for message in result.messages:
        output.warn(message)
