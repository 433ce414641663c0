"""The kernel experiment history API, with the seed's names.

    from kernelscope.daemon.expdb import (
        KernelExperiment, create_experiment, get_experiment, list_experiments,
        top_experiments, update_experiment, delete_experiment, lineage,
        failure_category, kernel_summaries,
    )

Calls match the public original (the Apex kernel-exp-history `kernel_exp_dataclass.py`)
call for call: `create_experiment(exp)`, `get_experiment(id)` (None when missing),
`list_experiments()`, `top_experiments(max_results=20)` (dicts of the key fields),
`update_experiment(id, **changes)` (returns the updated record; KeyError when missing),
`delete_experiment(id)`. Filters, `include_buggy`, `include_interpreter`, `include_masked`
(as `kernelscope exp top`'s options, and `failures`'s as `exp failures`'s, with the note of what
was left out: a LeftOutWarning),
`lineage` and per-kernel summaries are kernelscope's additions. The database is chosen as
`resolve_db_url` documents (`KERNELSCOPE_DB_URL`, config file, per-user SQLite);
`use_database(url)` switches it.
Safe from several processes at once, including processes forked after the first call.
"""

from __future__ import annotations

import os
import warnings
from typing import Any

from kernelscope.daemon.engine.store import ExperimentStore
from kernelscope.daemon.engine.store.recorded_workspace import recorded_workspace
from kernelscope.protocol.experiment import (
    FailureCategory,
    KernelExperiment,
    KernelSummary,
    Lineage,
    failure_category,
)

__all__ = [
    "ExperimentStore",
    "FailureCategory",
    "KernelExperiment",
    "KernelSummary",
    "LeftOutWarning",
    "Lineage",
    "create_experiment",
    "current_store",
    "delete_experiment",
    "failure_category",
    "failures",
    "get_experiment",
    "kernel_summaries",
    "lineage",
    "list_experiments",
    "top_experiments",
    "update_experiment",
    "use_database",
]

_store: ExperimentStore | None = None
_store_key: tuple[str | None, str | None] | None = None
_explicit_url: str | None = None


def use_database(url: str | None) -> ExperimentStore:
    """Point the module-level API at a database (None: back to the default resolution)."""
    global _explicit_url, _store
    _explicit_url = url
    _store = None
    return current_store()


def current_store() -> ExperimentStore:
    """The store the module-level functions use; re-resolved if KERNELSCOPE_DB_URL changes."""
    global _store, _store_key
    key = (_explicit_url, os.environ.get("KERNELSCOPE_DB_URL"))
    if _store is None or _store_key != key:
        _store = ExperimentStore(_explicit_url)
        _store_key = key
    return _store


def create_experiment(exp: KernelExperiment) -> None:
    """Store a new experiment. A duplicate id raises ValueError, like the original; so does a
    `workspace` that is not an optimization workspace (NotAWorkspace, as `exp record -w`; a
    workspace is stored resolved)."""
    if exp.workspace:
        exp = exp.model_copy(update={"workspace": recorded_workspace(exp.workspace)})
    current_store().create_experiment(exp)


def get_experiment(exp_id: str) -> KernelExperiment | None:
    return current_store().get_experiment(exp_id)


def list_experiments(**filters: Any) -> list[KernelExperiment]:
    """All experiments (oldest first), optionally filtered: operator_sig, dtype_sig, env,
    base_commit, status, kernel, workspace, is_buggy, min_score, max_score, text, tag."""
    return current_store().list_experiments(**filters)


class LeftOutWarning(UserWarning):
    """`top_experiments` or `failures` left experiments out (Triton-interpreter runs, those of
    masked memory versions) and names the option that shows them: on a machine without a GPU
    every run is an interpreter run, and the seed's `top_experiments(max_results=20)` is []
    without a word.
    Python prints a warning to stderr, once per message and calling line;
    `warnings.simplefilter("ignore", LeftOutWarning)` silences it."""


def _python_option(name: str) -> str:
    return f"{name}=True"


def top_experiments(
    max_results: int = 20,
    include_buggy: bool = False,
    include_masked: bool = False,
    include_interpreter: bool = False,
    **filters: Any,
) -> list[dict[str, object]]:
    """Best-scoring experiments as dicts of the key fields, ranked as `kernelscope exp top`
    ranks them (engine/workspace/masked.py's `ranking`): buggy runs excluded unless
    `include_buggy`, Triton-interpreter runs (CPU timings) unless `include_interpreter`, those
    of masked memory versions (each workspace's own, read from its memory/) unless
    `include_masked`. What it left out is said as the CLI says it, in a LeftOutWarning."""
    from kernelscope.daemon.engine.views.left_out import left_out_notes
    from kernelscope.daemon.engine.workspace.masked import ranking

    store = current_store()
    found = ranking(
        store,
        store.top_experiments,
        max_results,
        include_buggy,
        include_interpreter,
        include_masked,
        **filters,
    )
    for note in left_out_notes(_python_option, found.interpreter_left_out, found.masked_left_out):
        warnings.warn(note, LeftOutWarning, stacklevel=2)
    return found.rows


def update_experiment(exp_id: str, **changes: Any) -> KernelExperiment:
    """Validated update; unknown fields or bad values raise and write nothing (a new
    `workspace` is checked by the store as `exp update --set workspace=` is)."""
    return current_store().update_experiment(exp_id, **changes)


def delete_experiment(exp_id: str) -> None:
    current_store().delete_experiment(exp_id)


def lineage(exp_id: str) -> Lineage:
    return current_store().lineage(exp_id)


def failures(
    include_interpreter: bool = False, include_masked: bool = False, **filters: Any
) -> dict[FailureCategory, list[KernelExperiment]]:
    """Experiments by the seed's failure categories, as `kernelscope exp failures` lists them
    (engine/workspace/masked.py's `failures`): Triton-interpreter runs (CPU timings are no
    regression) left out unless `include_interpreter`, those of masked memory versions unless
    `include_masked`; what it left out is said as the CLI says it, in a LeftOutWarning."""
    from kernelscope.daemon.engine.views.left_out import left_out_notes
    from kernelscope.daemon.engine.workspace.masked import failures as listed

    found = listed(current_store(), include_interpreter, include_masked, **filters)
    for note in left_out_notes(_python_option, found.interpreter_left_out, found.masked_left_out):
        warnings.warn(note, LeftOutWarning, stacklevel=2)
    return found.groups


def kernel_summaries(workspace: str, include_masked: bool = False) -> list[KernelSummary]:
    """Per kernel: best, latest, runs, failures, the runs of masked memory versions counted
    apart (`masked_runs`) unless `include_masked` (engine/workspace/masked.py)."""
    from kernelscope.daemon.engine.workspace.masked import kernel_summaries as through_masks

    return through_masks(current_store(), workspace, include_masked=include_masked)
