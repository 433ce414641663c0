"""The kernel-name hover tables: every kernel's from one read of memory and one store query,
the same tables as one kernel's history alone, kept through job-progress refreshes."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from kernelscope.daemon.engine.memory import scores
from kernelscope.daemon.engine.store import ExperimentStore
from kernelscope.daemon.engine.views import history_table as hover
from kernelscope.daemon.engine.workspace.cache import WorkspaceCache
from kernelscope.protocol.experiment import KernelExperiment
from tests.conftest import EXAMPLES


@pytest.fixture
def state(tmp_path: Path) -> WorkspaceCache:
    ws = tmp_path / "kernel_opt_vector_add"
    shutil.copytree(EXAMPLES / "vector_add", ws)
    db = str(tmp_path / "exp.sqlite")
    records = []
    for index, kernels in enumerate(
        [["add_kernel"], ["add_kernel", "scale_kernel"], ["scale_kernel"], ["other"]]
    ):
        records.append(
            KernelExperiment(
                id=f"{index:016x}",
                change_summary=f"attempt {index}",
                score=1.0 + index / 10,
                status="done",
                workspace=str(ws),
                kernels=kernels,
                memory_version=f"v{index}",
            )
        )
    store = ExperimentStore(db)
    store.import_experiments(records)
    return WorkspaceCache(ws, lambda: store)


def test_all_tables_from_one_query_equal_each_kernels_own(
    state: WorkspaceCache, monkeypatch: pytest.MonkeyPatch
) -> None:
    alone = {name: hover.history(state, name) for name in ("add_kernel", "scale_kernel", "absent")}
    queries: list[dict] = []
    original = ExperimentStore.list_experiments

    def counted(self: ExperimentStore, *args: object, **filters: object) -> list[KernelExperiment]:
        queries.append(filters)
        return original(self, *args, **filters)  # type: ignore[arg-type]

    monkeypatch.setattr(ExperimentStore, "list_experiments", counted)
    kernels = ["add_kernel", "scale_kernel", "absent"]
    for name in kernels:
        assert hover.kernel_history(state, name, kernels) == alone[name]
    assert len(queries) == 1 and "kernel" not in queries[0], queries  # one query, every kernel
    assert [e.version for e in alone["add_kernel"].entries] == ["v0", "v1"]
    assert [e.version for e in alone["scale_kernel"].entries] == ["v1", "v2"]

    state.changed()  # job progress, stale marks: the tables stay
    state.changed("kernel")
    hover.kernel_history(state, "add_kernel", kernels)
    assert len(queries) == 1
    state.changed("store")  # an experiment was recorded: built again, once
    hover.kernel_history(state, "scale_kernel", kernels)
    hover.kernel_history(state, "add_kernel", kernels)
    assert len(queries) == 2


def test_tables_built_across_a_refresh_are_dropped_with_it(
    state: WorkspaceCache, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Memory changes while the tables are being built: they were made from the old memory,
    so they must not land in the cache the refresh started afresh."""
    build = hover.histories

    calls = []

    def refreshed_meanwhile(state_: WorkspaceCache, kernels: list[str]) -> dict:
        calls.append(kernels)
        built = build(state_, kernels)
        if len(calls) == 1:
            state_.changed("memory")
        return built

    monkeypatch.setattr(hover, "histories", refreshed_meanwhile)
    assert hover.kernel_history(state, "add_kernel", ["add_kernel"]).kernel == "add_kernel"
    hover.kernel_history(state, "add_kernel", ["add_kernel"])  # built again: the first was not kept
    hover.kernel_history(state, "add_kernel", ["add_kernel"])  # kept this time
    assert len(calls) == 2


def test_kernels_without_experiments_share_one_reading_of_memory(
    state: WorkspaceCache, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every kernel without experiments shows the memory records: scored once, not per kernel."""
    calls = []
    original = scores.memory_scores

    def counted(*args: object) -> object:
        calls.append(args)
        return original(*args)  # type: ignore[arg-type]

    monkeypatch.setattr(scores, "memory_scores", counted)
    tables = hover.histories(state, ["absent", "also_absent", "add_kernel"])
    assert len(calls) == 1
    assert tables["absent"].entries == tables["also_absent"].entries
    assert tables["absent"].entries and tables["absent"].entries == hover.history(state, "absent").entries
    assert [e.version for e in tables["add_kernel"].entries] == ["v0", "v1"]
