"""The kernel-name hover tables: every kernel's from one read of memory and one store query,
the same tables as one kernel's history alone, kept through job-progress refreshes; for a
client that draws no Markdown tables (Helix), the same rows as aligned text."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from kernelscope.daemon.engine.memory import scores
from kernelscope.daemon.engine.store import ExperimentStore
from kernelscope.daemon.engine.views import history_table as hover
from kernelscope.daemon.engine.workspace.cache import WorkspaceCache
from kernelscope.protocol.experiment import KernelExperiment
from kernelscope.protocol.lsp import HistoryEntry
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

    def refreshed_meanwhile(state_: WorkspaceCache, kernels: list[str], *rest: bool) -> dict:
        calls.append(kernels)
        built = build(state_, kernels, *rest)
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


def test_rows_for_a_client_without_tables_are_aligned_text() -> None:
    """Helix shows a Markdown table as typed (`| v3 |`, `|---|---:|`): the same rows come as
    columns in a ```text block, the score right-aligned, the summary on one line; the fence
    outlasts backticks in a summary; the title and the agents' notes stay Markdown."""
    entries = [
        HistoryEntry(version="v0", score=1.0, status="done", summary="baseline | x\tsplit\nline"),
        HistoryEntry(version="v12", score=11.08, status="FAIL", summary="uses ``` fences", masked=True),
        HistoryEntry(version=None, score=None, status="new", summary=""),
    ]
    text = hover.history_markdown("**k**: 3 experiments", entries, ["**v12** FAIL"], draws_tables=False)
    assert text.splitlines() == [
        "**k**: 3 experiments",
        "",
        "````text",
        "version   score  status         summary",
        "-------  ------  -------------  -----------------------",
        "v0        1.00x  done           baseline | x split line",
        "v12      11.08x  FAIL (masked)  uses ``` fences",
        "-             -  new",
        "````",
        "",
        "**Recorded by the agents** (newest first)",
        "",
        "**v12** FAIL",
    ]
    drawn = hover.history_markdown("**k**: 3 experiments", entries, [], draws_tables=True)
    assert drawn.splitlines()[2:] == [
        "| version | score | status | summary |",
        "|---|---:|---|---|",
        "| v0 | 1.00x | done | baseline \\| x split line |",
        "| v12 | 11.08x | FAIL (masked) | uses ``` fences |",
        "| - | - | new |  |",
    ]


def test_the_table_and_the_aligned_text_clean_a_summary_alike() -> None:
    """One rule cleans a summary for both forms (every whitespace run as one space, cut at
    SUMMARY_WIDTH characters of the summary; the table then escapes its pipes). The table's
    own rule kept a carriage return, which ends a Markdown line mid-row, and cut after
    escaping, so a pipe at the cut left a stray backslash where the text showed the pipe."""
    entries = [
        HistoryEntry(version="v0", score=1.0, status="done", summary="first line\r\nsecond line"),
        HistoryEntry(version="v1", score=1.0, status="done", summary="a" * 79 + "|b"),
    ]
    drawn = hover.history_markdown("t", entries, [], draws_tables=True).split("\n")[4:]
    text = hover.history_markdown("t", entries, [], draws_tables=False).split("\n")[5:7]
    cleaned = ["first line second line", "a" * 79 + "|"]
    escaped = [summary.replace("|", "\\|") for summary in cleaned]
    assert drawn == [f"| v{i} | 1.00x | done | {summary} |" for i, summary in enumerate(escaped)]
    assert [line.split(maxsplit=3)[3] for line in text] == cleaned


def test_a_kernels_hover_without_tables_has_the_tables_rows(state: WorkspaceCache) -> None:
    """The hover of a client without tables shows the rows the table shows, and each kind is
    kept apart (a Helix hover does not hand VS Code aligned text, nor the reverse)."""
    kernels = ["add_kernel", "scale_kernel"]
    drawn = hover.kernel_history(state, "add_kernel", kernels)
    text = hover.kernel_history(state, "add_kernel", kernels, draws_tables=False)
    assert drawn == hover.history(state, "add_kernel") and "|---|" in drawn.markdown
    assert text.entries == drawn.entries and "|" not in text.markdown
    block = text.markdown.split("```text\n")[1].split("\n```")[0]
    assert block.splitlines() == [
        "version  score  status  summary",
        "-------  -----  ------  ---------",
        "v0       1.00x  done    attempt 0",
        "v1       1.10x  done    attempt 1",
    ]
    assert text.markdown.split("\n")[0] == drawn.markdown.split("\n")[0]  # the same title
    assert hover.kernel_history(state, "add_kernel", kernels) == drawn
