"""Incremental reads of memory/ (the daemon's scans, daemon/engine/memory/records.py) and the lens
path built on them (the workspace cache, daemon/lsp/features/lenses.py): a new record costs one file read, an edited one is
read again, a deleted one is dropped, and the store's per-kernel digest is read, never
recomputed. Reads are counted, not timed (benchmarks/refresh_bench.py times them)."""

from __future__ import annotations

import json
import shutil
import time
from pathlib import Path
from typing import Any

import pytest

from kernelscope.daemon.engine.memory import records as memory
from kernelscope.daemon.engine.memory.records import MemoryManager
from kernelscope.daemon.engine.workspace.cache import sources_of_paths

VERSIONS = 1000


@pytest.fixture
def incremental() -> memory.FileReads:
    """The kept reads of one memory/ folder (the daemon's workspace cache owns one)."""
    return memory.FileReads()


@pytest.fixture
def reads(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Names of the memory files parsed, in order."""
    seen: list[str] = []
    original = MemoryManager._load

    def counting(self: MemoryManager, number: int, path: Path):  # type: ignore[no-untyped-def]
        seen.append(path.name)
        return original(self, number, path)

    monkeypatch.setattr(MemoryManager, "_load", counting)
    return seen


def record(number: int, latency: float = 50.0, **extra: object) -> str:
    return json.dumps(
        {
            "version": f"v{number}",
            "performance": {"latency_us": latency, "bandwidth_gbps": 1000.0 + number},
            "quality_gate": {"result": "PASS"},
            "optimization": {"action_category": "tuning", "action_description": f"attempt {number}"},
            **extra,
        },
        indent=2,
    )


def settle() -> None:
    """Let the racy window pass: a file whose timestamps are within `memory.RACY_NS` of its
    read is read again by the next scan (see the racy-rule test), as for files an agent wrote
    a moment before."""
    time.sleep(memory.RACY_NS / 1e9 + 0.05)


def big_workspace(root: Path, versions: int = VERSIONS) -> Path:
    ws = root / "kernel_opt_big"
    (ws / "memory").mkdir(parents=True)
    for number in range(versions):
        (ws / "memory" / f"v{number}.json").write_text(record(number, latency=50.0 + number % 7))
    settle()
    return ws


def test_a_new_record_costs_one_read(tmp_path: Path, incremental: memory.FileReads, reads: list[str]) -> None:
    ws = big_workspace(tmp_path)
    manager = MemoryManager(ws, reads=incremental)
    assert len(manager.scan()) == VERSIONS and len(reads) == VERSIONS
    reads.clear()
    assert (
        len(MemoryManager(ws, reads=incremental).scan()) == VERSIONS and reads == []
    )  # nothing changed: no read
    (ws / "memory" / f"v{VERSIONS}.json").write_text(record(VERSIONS))
    entries = MemoryManager(
        ws, reads=incremental
    ).scan()  # another manager object: the daemon makes one per use
    assert reads == [f"v{VERSIONS}.json"]
    assert entries[-1].version == f"v{VERSIONS}" and entries[-1].record is not None
    assert [e.number for e in entries] == list(range(VERSIONS + 1))  # still in numeric order


def test_an_edited_record_is_read_again(
    tmp_path: Path, incremental: memory.FileReads, reads: list[str]
) -> None:
    ws = big_workspace(tmp_path, 20)
    manager = MemoryManager(ws, reads=incremental)
    manager.scan()
    reads.clear()
    path = ws / "memory" / "v5.json"
    path.write_text(record(5, latency=12.5))  # in place, as an agent's editor writes
    entries = manager.scan()
    assert reads == ["v5.json"]
    assert entries[5].record is not None and entries[5].record.metric("latency_us") == 12.5
    settle()
    manager.scan()  # v5 was read inside its racy window: read once more, then trusted
    manager.set_masked(["v7"], True)  # kernelscope's own write: a new file replaces it
    reads.clear()
    entries = manager.scan()
    assert reads == ["v7.json"] and entries[7].masked
    settle()
    manager.scan()
    reads.clear()
    (ws / "memory" / "v8.json").write_text("{ not json")  # broken by hand: reported, by name
    entries = manager.scan()
    assert reads == ["v8.json"] and entries[8].error and "v8.json" in entries[8].error


def test_a_deleted_record_is_dropped(tmp_path: Path, incremental: memory.FileReads, reads: list[str]) -> None:
    ws = big_workspace(tmp_path, 20)
    manager = MemoryManager(ws, reads=incremental)
    manager.scan()
    reads.clear()
    (ws / "memory" / "v7.json").unlink()
    entries = manager.scan()
    assert reads == [] and "v7" not in [e.version for e in entries] and len(entries) == 19
    (ws / "memory" / "v7.json").write_text(record(7, latency=1.0))  # and back, with new content
    entries = manager.scan()
    assert reads == ["v7.json"] and entries[7].record.metric("latency_us") == 1.0  # type: ignore[union-attr]


def test_a_file_read_in_its_own_clock_tick_is_read_again(
    tmp_path: Path, incremental: memory.FileReads, reads: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Same size and timestamps can hide a second write in the same tick: such a file is
    not trusted until a scan reads it clearly after its timestamp (git's racy rule)."""
    ws = big_workspace(tmp_path, 3)
    path = ws / "memory" / "v1.json"
    stamp = max(path.stat().st_mtime_ns, path.stat().st_ctime_ns)
    monkeypatch.setattr(memory.time, "time_ns", lambda: stamp + 1)  # read "in the same tick"
    manager = MemoryManager(ws, reads=incremental)
    manager.scan()
    reads.clear()
    manager.scan()
    assert sorted(reads) == ["v0.json", "v1.json", "v2.json"]  # not trusted yet: read again
    monkeypatch.undo()
    reads.clear()
    manager.scan()
    assert reads == []


def test_shared_entries_are_not_handed_out_for_changes(tmp_path: Path, incremental: memory.FileReads) -> None:
    ws = big_workspace(tmp_path, 3)
    manager = MemoryManager(ws, reads=incremental)
    manager.scan()
    records, _ = manager.read_all()
    records[1]["performance"]["latency_us"] = -1.0  # a caller changing what it was given
    assert manager.scan()[1].raw["performance"]["latency_us"] != -1.0  # type: ignore[index]


def test_without_incremental_reads_every_scan_reads_everything(tmp_path: Path, reads: list[str]) -> None:
    ws = big_workspace(tmp_path, 5)
    MemoryManager(ws).scan()
    MemoryManager(ws).scan()
    assert len(reads) == 10  # the CLI: one scan per process, nothing kept


def test_the_lens_refresh_reads_one_file_and_never_recomputes_the_store_digest(
    tmp_path: Path, reads: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Through the daemon's own state and lens code: after a new memory file, the refreshed
    lens (file lens and per-kernel lenses) reads that one file, scores that one version, and
    reads the store's per-kernel digest without recomputing it."""
    from kernelscope.daemon.engine.memory import scores as scores_module
    from kernelscope.daemon.engine.store import ExperimentStore
    from kernelscope.daemon.engine.store import kernel_stats as digest
    from kernelscope.daemon.lsp.features import Document, lenses
    from kernelscope.daemon.lsp.state import ServerState
    from kernelscope.protocol.experiment import KernelExperiment
    from kernelscope.protocol.settings import Settings
    from tests.conftest import EXAMPLES

    state = ServerState()
    try:
        ws = big_workspace(tmp_path)
        (ws / "kernel.py").write_text((EXAMPLES / "vector_add" / "kernel.py").read_text())
        (ws / "README.md").write_text((EXAMPLES / "vector_add" / "README.md").read_text())
        db = str(tmp_path / "exp.sqlite")
        store = ExperimentStore(db)
        store.create_experiment(
            KernelExperiment(
                id="e1", change_summary="first", score=1.5, workspace=str(ws), kernels=["add_kernel"]
            )
        )
        ws_state = state.new_workspace(ws.resolve())
        ws_state.settings = Settings(db_url=db)

        def titles() -> list[str]:
            doc = Document(ws.as_uri(), None, ws_state.view())
            return [lens.command.title for lens in lenses.code_lens(doc, None) if lens.command]  # type: ignore[arg-type]

        before = titles()
        assert any("next v1000" in t for t in before) and any("1 run," in t for t in before), before
        scored: list[int] = []
        original = scores_module.memory_scores

        def counting(entries, readme):  # type: ignore[no-untyped-def]
            scored.append(len(entries))
            return original(entries, readme)

        def forbidden(*args: object, **kwargs: object) -> None:
            raise AssertionError("the lens path recomputed the store's digest")

        monkeypatch.setattr(scores_module, "memory_scores", counting)
        monkeypatch.setattr(digest, "compute_digest", forbidden)
        monkeypatch.setattr(digest, "recompute", forbidden)
        reads.clear()
        (ws / "memory" / f"v{VERSIONS}.json").write_text(record(VERSIONS, latency=25.0))
        store.create_experiment(  # an iteration writes the store too: its digest is folded in
            KernelExperiment(
                id="e2", change_summary="second", score=2.0, workspace=str(ws), kernels=["add_kernel"]
            )
        )
        ws_state.cache.changed(*sources_of_paths({f"memory/v{VERSIONS}.json"}))  # what the watcher reports
        after = titles()
        assert reads == [f"v{VERSIONS}.json"]
        assert scored == [2]  # v0 (the base) and the new version, not 1,001 versions
        assert any("next v1001" in t for t in after), after
        assert any("best 2.00x" in t and "2 runs" in t for t in after), after
        # the scores are the same as a full computation's
        full = original(MemoryManager(ws).scan(), ws_state.cache.readme())
        assert ws_state.cache.scores() == full
    finally:
        state.close()


def test_the_lens_list_is_kept_until_a_source_or_what_it_shows_of_the_daemon_changes(
    tmp_path: Path,
) -> None:
    """An editor asks for lenses after every refresh: the same answer is handed out until a
    source changes (the watcher's report) or a live field the lenses show does (staleness, a
    job, a probe)."""
    from kernelscope.daemon.lsp.features import Document, lenses
    from kernelscope.daemon.lsp.state import ServerState
    from tests.conftest import EXAMPLES

    state = ServerState()
    try:
        ws = tmp_path / "kernel_opt_vector_add"
        shutil.copytree(EXAMPLES / "vector_add", ws)
        ws_state = state.new_workspace(ws.resolve())

        def answer() -> list[Any]:
            return lenses.code_lens(Document(ws.as_uri(), None, ws_state.view()), None)  # type: ignore[arg-type]

        doc = Document(ws.as_uri(), None, ws_state.view())
        assert lenses.kept_lenses(doc) is None  # nothing kept: the pool computes it
        first = answer()
        assert answer() is first
        assert lenses.kept_lenses(doc) is first  # kept: handed out on the loop
        ws_state.stale = True
        assert lenses.kept_lenses(Document(ws.as_uri(), None, ws_state.view())) is None
        stale = answer()
        assert stale is not first
        assert any(lens.command.title.startswith("(stale)") for lens in stale), stale
        assert answer() is stale
        (ws / "kernel.py").write_text(
            (ws / "kernel.py").read_text() + "\n\n@triton.jit\ndef extra(x):\n    pass\n"
        )
        ws_state.cache.changed(*sources_of_paths({"kernel.py"}))
        grown = answer()
        assert len(grown) == len(stale) + 1, grown
    finally:
        state.close()


def test_a_cut_short_writes_journal_is_a_change_of_the_memory() -> None:
    """Reads show a cut-short mask-half finished (they never finish it on disk), so a journal
    that appears is a change of what the memory shows: the watcher dropped it as a dot file,
    and a lens kept showing the versions the restart meant to hide while the CLI showed them
    masked (the third review). Other dot files in memory/ (temp files, locks) are not."""
    from kernelscope.daemon.engine.memory.core import JOURNAL_NAME

    assert "memory" in sources_of_paths({f"memory/{JOURNAL_NAME}"})
    assert not sources_of_paths({"memory/.kernelscope.lock", "memory/.kernelscope-tmp-v3.json.x"})
