"""The daemon's command and job vocabulary in one place, free of pydantic so the server can
register its commands at start-up without importing the models (initialize stays as fast as
a bare pygls server's).

- `COMMANDS`: every `workspace/executeCommand` name, the protocol model of its one parameter
  object (in `protocol/lsp.py`) and the `Commands` method that handles it.
- `JobKind`: the one name of a long job, shared by the command's start answer
  (`JobStarted.kind`), its progress title, `kernelscope/jobFinished` and `kernelscope schema`.

Clients read the names from the server (`executeCommandProvider`, `kernelscope/workspaces`)
or from `editor-clients/commands.json`, which `kernelscope schema --commands` writes from this
module (a test keeps it current); none hand-copies them.
"""

from __future__ import annotations

TYPE_CHECKING = False  # typing is 2-3 ms of the CLI fast path's start-up (it reads WORKSPACE_RULE)
if TYPE_CHECKING:
    from typing import Literal

# command name -> (params model in protocol/lsp.py, Commands method, job kind it starts or None)
COMMANDS: dict[str, tuple[str, str, str | None]] = {
    "kernelscope.maskHalf": ("MaskHalfParams", "mask_half", None),
    "kernelscope.unmask": ("UnmaskParams", "unmask", None),
    "kernelscope.recordExperiment": ("RecordExperimentParams", "record_experiment", None),
    "kernelscope.runIteration": ("RunIterationParams", "run_iteration", "runIteration"),
    "kernelscope.restart": ("RestartParams", "restart", "restart"),
    "kernelscope.benchmark": ("BenchmarkParams", "benchmark", "benchmark"),
    "kernelscope.showHistory": ("ShowHistoryParams", "show_history", None),
    "kernelscope.topExperiments": ("TopExperimentsParams", "top_experiments", None),
    "kernelscope.compare": ("CompareParams", "compare", None),
    "kernelscope.cancel": ("CancelParams", "cancel", None),
}

# The question's action that writes nothing (its other action, "Mask" or "Mask & restart",
# goes ahead): an editor that shows the question as a dialog makes it the dialog's own cancel.
DECLINE = "Cancel"

JOB_KINDS: tuple[str, ...] = ("benchmark", "runIteration", "restart")
if TYPE_CHECKING:
    JobKind = Literal["benchmark", "runIteration", "restart"]


def __getattr__(name: str) -> object:
    """`JobKind` at run time (the protocol models validate with it), made from JOB_KINDS when
    first asked for, so that importing the vocabulary does not import typing."""
    if name == "JobKind":
        from typing import Literal

        return Literal[JOB_KINDS]  # Literal[("a", "b")] is Literal["a", "b"]
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


JOB_FINISHED = "kernelscope/jobFinished"
WORKSPACES_REQUEST = "kernelscope/workspaces"

# The one rule that says a folder is an optimization workspace, as data: every file in
# `files`, and a folder in `dirs` or a `readme` line opening a fence tagged `fence` (a workspace
# before its first memory record). The engine applies it (engine/workspace/workspace.py); the
# editor clients read it from editor-clients/commands.json to know where to start the daemon.
# kernel.py is required: a repository whose README documents a ```kernelscope block (this one)
# is not a workspace.
KERNEL_FILE = "kernel.py"  # the file kernelscope measures and annotates
WORKSPACE_FILES: tuple[str, ...] = (KERNEL_FILE,)
WORKSPACE_DIRS: tuple[str, ...] = ("memory",)
WORKSPACE_README = "README.md"
WORKSPACE_FENCE = "kernelscope"
WORKSPACE_RULE = {
    "files": list(WORKSPACE_FILES),
    "dirs": list(WORKSPACE_DIRS),
    "readme": WORKSPACE_README,
    "fence": WORKSPACE_FENCE,
}
