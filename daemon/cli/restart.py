"""`kernelscope restart`: the partial-restart workflow, verified.

The agent command comes from `--agent` or `agent` in the user's kernelscope config file
(never from a file inside the workspace, so opening a cloned workspace cannot make
kernelscope run its commands). Exit statuses: 0 completed with no violation, 3 violations
(named in the report), 2 setup errors, 1 bad arguments.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated, Optional

import typer

from kernelscope.daemon.cli import output
from kernelscope.daemon.cli.options import ForceMaskOpt, JsonOpt, OptStr


def restart_command(
    workspace: Annotated[Path, typer.Option("--workspace", "-w")] = Path("."),
    agent: Annotated[
        OptStr, typer.Option("--agent", help="Agent command line; {brief} is the brief's path.")
    ] = None,
    seed: Annotated[Optional[int], typer.Option("--seed", help="mask-half seed.")] = None,  # noqa: UP045
    timeout: Annotated[
        float, typer.Option("--timeout", min=1, help="Agent wall-clock limit, seconds.")
    ] = 3600.0,
    knowledge_base: Annotated[OptStr, typer.Option("--kb", help="Knowledge-base path for the brief.")] = None,
    force: ForceMaskOpt = False,
    json_out: JsonOpt = False,
) -> None:
    """Mask half of the memory, launch a fresh agent with a brief, verify what it did."""
    from kernelscope.daemon.engine.workflows.restart import PartialRestart, RestartOptions
    from kernelscope.daemon.engine.workspace.discovery import require_workspace
    from kernelscope.daemon.engine.workspace.user_config import user_config

    # what refuses a restart (the workspace's first, then the agent's: the agent from --agent,
    # else the config file) is the engine's one preflight, which `run` makes before it writes
    workspace = require_workspace(workspace)
    kb = knowledge_base or user_config().get("knowledge_base")

    def stream(line: str) -> None:
        # Agent output goes to stderr when --json owns stdout.
        print(line, file=sys.stderr if json_out else sys.stdout, flush=True)

    report = PartialRestart(
        workspace,
        RestartOptions(
            agent=agent, seed=seed, timeout_s=timeout, knowledge_base=kb, force=force, warn=output.warn
        ),
    ).run(on_output=stream)
    if json_out:
        print(report.model_dump_json(indent=2))
    else:
        output.info(
            f"masked {', '.join(report.mask.masked) or 'nothing'} (seed {report.mask.seed})"
            + (f", committed as {report.mask_commit[:12]}" if report.mask_commit else "")
            + "; "
            f"next version {report.next_version}; brief {report.brief_path}"
        )
        output.info(f"agent: exit {report.agent_exit_code}{' (timed out)' if report.agent_timed_out else ''}")
        for field in (
            "latest_memory_path",
            "performance_summary",
            "action_taken",
            "gate_result",
            "commit_hash",
            "stop_conditions_met",
        ):
            output.info(f"{field}: {getattr(report, field)}")
        for violation in report.violations:
            output.error(f"violation: {violation}")
        output.info("restart completed" if report.completed else "restart NOT completed")
    raise typer.Exit(0 if report.completed else 3)
