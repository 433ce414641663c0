"""The one owner of everything a long-running process (the daemon) keeps about a workspace
between requests, dropped by events rather than by names.

A workspace is read from five sources: `readme` (README.md), `kernel` (kernel.py), `memory`
(memory/*.json), `store` (the experiment store's rows for the workspace) and `supervisor` (the
files that show an orchestrator drives it). Whoever sees one change says so
(`changed("memory")`; the file watcher names them with `sources_of_paths`);
every value kept here names the sources it is made of (`get(name, sources, compute)`) and is
computed again only after one of them changed. Values are computed outside the lock, so a slow
store query never blocks a lens; a value computed while one of its sources changed is handed to
its caller but not kept. A value being computed is computed once: a second caller asking for it
with the same stamp waits for the first one's result (the lens request that arrives while the
warm-up begun by `didOpen` is still reading memory/ and the store waits for that read instead of
doing it again beside it, both slowed by the one interpreter lock).

Beside the derived values it owns the reads that make them cheap: the parsed memory files
(`FileReads`: a new record costs one file read), the incremental scores (a new version costs
one score), and the workspace's history (blame, tried values, fingerprints), built on first use,
never at start-up.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterable
from concurrent.futures import Future
from pathlib import Path, PurePath
from typing import TYPE_CHECKING, Any, Literal, TypeVar

from kernelscope.daemon.engine.memory.core import JOURNAL_NAME, MEMORY_DIR
from kernelscope.daemon.engine.memory.records import FileReads, MemoryEntry, MemoryManager
from kernelscope.daemon.engine.memory.scores import IncrementalScores, VersionScore
from kernelscope.daemon.engine.workspace.atrex import LIVE_FILE, is_supervisor_path
from kernelscope.daemon.engine.workspace.last_parse import LastParse
from kernelscope.daemon.engine.workspace.workspace import KERNEL_NAME, README_NAME, Workspace
from kernelscope.protocol import workspace_files
from kernelscope.protocol.workspace import KernelScan, ReadmeInfo

if TYPE_CHECKING:
    from kernelscope.daemon.engine.history.service import HistoryService
    from kernelscope.daemon.engine.store import ExperimentStore
    from kernelscope.protocol.experiment import KernelSummary

log = logging.getLogger("kernelscope.cache")
Source = Literal["readme", "kernel", "memory", "store", "supervisor"]
SOURCES: tuple[Source, ...] = ("readme", "kernel", "memory", "store", "supervisor")
T = TypeVar("T")


def sources_of_paths(paths: Iterable[PurePath | str]) -> set[Source]:
    """Which sources changed files touched, by their paths relative to the workspace (as the
    watcher reports them); a path no source is made of touches none (the watcher drops it)."""
    found: set[Source] = set()
    for path in paths:
        parts = PurePath(path).parts
        if parts == (README_NAME,):
            found.add("readme")
        elif parts == (KERNEL_NAME,):
            found.add("kernel")
        elif (
            len(parts) == 2
            and parts[0] == MEMORY_DIR
            and parts[1].endswith(".json")
            and (not parts[1].startswith(".") or parts[1] == JOURNAL_NAME)  # (a cut-short write)
        ):
            found |= {"memory", "store"}  # iterations write memory and experiments together
            if parts[1] == LIVE_FILE:
                found.add("supervisor")
        elif is_supervisor_path(parts):
            found.add("supervisor")
    return found


class WorkspaceCache:
    """One workspace's cached reads (module docstring). Thread-safe: the event loop and the
    worker pools share it."""

    def __init__(
        self, root: Path, store: Callable[[], ExperimentStore | None] | None = None, keep_reads: bool = True
    ) -> None:
        self.workspace = Workspace(root)
        self.root = self.workspace.root
        self._open_store = store or (lambda: None)
        self._versions: dict[Source, int] = dict.fromkeys(SOURCES, 0)
        self._values: dict[str, tuple[tuple[Any, ...], Any]] = {}
        self._computing: dict[str, tuple[tuple[Any, ...], Future[Any]]] = {}
        self._lock = threading.Lock()
        # keep_reads=False (KERNELSCOPE_FULL_RESCAN=1): every memory change rescans every file,
        # the comparison benchmarks/refresh_bench.py measures
        self.file_reads = FileReads() if keep_reads else None
        self.memory_manager = MemoryManager(self.root, reads=self.file_reads)
        self._scores = IncrementalScores()
        self._history: HistoryService | None = None
        # the last text that parsed, of the saved file and of the editor's buffer (last_parse.py)
        self.saved_parse = LastParse()
        self.buffer_parse = LastParse(fallback=self.saved_parse)

    # -- events -------------------------------------------------------------------------

    def changed(self, *sources: Source) -> None:
        """The named sources changed: every value made of one of them is computed again."""
        with self._lock:
            for source in sources:
                self._versions[source] += 1
            history = self._history
        if history is not None and set(sources) - {"kernel"}:
            # kernel.py's text is not history (git, memory/ and the store are): an edit keeps
            # the built history, so checking it takes milliseconds, not a rebuild
            history.invalidate()

    def version(self, *sources: Source) -> tuple[int, ...]:
        """The state of the named sources: equal tuples mean nothing of them changed."""
        with self._lock:
            return tuple(self._versions[s] for s in sources)

    # -- kept values ----------------------------------------------------------------------

    def get(self, name: str, sources: tuple[Source, ...], compute: Callable[[], T], live: Any = None) -> T:
        """The value `name`, made of `sources`: the kept one while none of them changed. `live`:
        what else it is made of that no source tracks (the daemon's job, probe, staleness),
        compared by equality; the value is kept while that is equal too."""
        with self._lock:
            stamp = self._stamp(sources, live)
            kept = self._values.get(name)
            if kept is not None and kept[0] == stamp:
                return kept[1]
            running = self._computing.get(name)
            if running is not None and running[0] == stamp:
                waiting: Future[Any] | None = running[1]
            else:
                waiting, mine = None, Future[Any]()
                self._computing[name] = (stamp, mine)
        if waiting is not None:
            result: T = waiting.result()  # the first caller's value (or its exception)
            return result
        try:
            value = compute()
        except BaseException as exc:
            with self._lock:
                self._done_computing(name, mine)
            mine.set_exception(exc)
            raise
        with self._lock:
            self._done_computing(name, mine)
            if self._stamp(sources, live) == stamp:  # else: made of old sources
                self._values[name] = (stamp, value)
        mine.set_result(value)
        return value

    def _done_computing(self, name: str, mine: Future[Any]) -> None:
        """(lock held) `name` is no longer being computed by this caller."""
        running = self._computing.get(name)
        if running is not None and running[1] is mine:
            del self._computing[name]

    def peek(self, name: str, sources: tuple[Source, ...], live: Any = None) -> Any | None:
        """The value `get` would hand out without computing anything; None if it would compute."""
        with self._lock:
            kept = self._values.get(name)
            if kept is not None and kept[0] == self._stamp(sources, live):
                return kept[1]
        return None

    def _stamp(self, sources: tuple[Source, ...], live: Any) -> tuple[Any, ...]:
        """(lock held) What a kept value is checked against: its sources' versions and `live`."""
        return (*(self._versions[s] for s in sources), live)

    # -- the reads every surface uses -------------------------------------------------------

    def readme(self) -> ReadmeInfo | None:
        path = self.workspace.readme_path
        return self.get("readme", ("readme",), lambda: self.workspace.readme() if path.is_file() else None)

    def kind(self) -> str:
        """The workspace's kind (protocol/kinds.py's rule, told what the README says)."""
        from kernelscope.daemon.engine.workspace.kinds import detect_kind

        return self.get("kind", ("readme",), lambda: detect_kind(self.root, self.readme()))

    def framework(self) -> str | None:
        """Why no Triton kernel is asked of kernel.py (protocol/kinds.py's `framework_solution`:
        a SOL-ExecBench solution.json declaring no Triton), or None. Read on every call, not
        kept: solution.json is not among the watched files, and an agent migrating `run()`
        updates its languages in the same step."""
        from kernelscope.daemon.engine.workspace.kinds import declared_framework

        return declared_framework(self.root, self.readme())

    def undeclared_triton(self, text: str) -> tuple[int | None, str] | None:
        """A declared framework while kernel.py's `text` or the README says Triton (kinds.py)."""
        from kernelscope.daemon.engine.workspace.kinds import undeclared_triton

        return undeclared_triton(self.root, self.readme(), text)

    def kernels(self) -> KernelScan:
        """kernel.py's kernels. While the saved file does not parse, the kernels of the last
        one that did where they are now (last_parse.py), beside its error: what was measured
        of each stays on screen, marked, instead of vanishing with no word why
        (lsp/features/lenses.py)."""
        return self.get("kernels", ("kernel",), self._scan_kernels)

    def _scan_kernels(self) -> KernelScan:
        path = self.workspace.kernel_path
        try:
            text = workspace_files.read_text(path, errors="replace")
        except OSError:
            return self.workspace.kernels()  # (its error says why)
        return self.saved_parse.scan(text, str(path))[0]

    def supervised(self) -> bool:
        """An orchestrator (atrex's supervisor) drives the workspace: it records the versions,
        kernelscope observes (no write offered, none advised)."""
        from kernelscope.daemon.engine.workspace.atrex import supervisor

        return self.get("supervised", ("supervisor",), lambda: supervisor(self.root) is not None)

    def memory(self) -> list[MemoryEntry]:
        return self.get("memory", ("memory",), self.memory_manager.scan)

    def scores(self) -> list[VersionScore]:
        """The one score of every readable version (memory/scores.py), a new version scored once."""
        return self.get(
            "scores", ("memory", "readme"), lambda: self._scores.scores(self.memory(), self.readme())
        )

    def store(self) -> ExperimentStore | None:
        return self._open_store()

    def kernel_summaries(self) -> dict[str, KernelSummary]:
        """The store's per-kernel digest of this workspace through its masks (masked.py: a
        masked version's runs counted apart), computed again when memory/ or the store changes."""

        def read() -> dict[str, KernelSummary]:
            from kernelscope.daemon.engine.store import StoreError
            from kernelscope.daemon.engine.workspace import masked

            store = self.store()
            if store is None:
                return {}
            try:
                found = masked.kernel_summaries(store, self.root, masked.masked_versions(self.memory()))
            except StoreError as exc:
                log.warning("experiment store unreadable for %s: %s", self.root, exc)
                return {}
            return {s.kernel: s for s in found}

        return self.get("kernel_summaries", ("store", "memory"), read)

    def history(self) -> HistoryService:
        """The workspace's history service (built on first use; dropped by every event)."""
        with self._lock:
            if self._history is None:
                from kernelscope.daemon.engine.history.service import HistoryService

                store = self.store()
                self._history = HistoryService(
                    self.root, store=store, use_store=store is not None, memory=self.memory_manager
                )
            return self._history

    @property
    def memory_dir(self) -> Path:
        return self.root / MEMORY_DIR
