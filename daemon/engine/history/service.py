"""One workspace's history, rebuilt only when it changes, never per keystroke: the CLI makes
one per command, the daemon's workspace cache (workspace/cache.py) owns one per workspace.

The key (`gitdata.history_key`) is read from git's files and `stat` of memory/ (no process),
plus the store's experiment count for the workspace; a request whose key matches the cached
one is answered from memory. A daemon that already watches these files can skip the key
check (`check=False`) and call `invalidate()` from its watcher instead.
"""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Any

from kernelscope.daemon.engine.history import gitdata
from kernelscope.daemon.engine.history.blame import blame_line, blame_lines
from kernelscope.daemon.engine.history.compare import compare_versions
from kernelscope.daemon.engine.history.fingerprint import check_fingerprint
from kernelscope.daemon.engine.history.source import no_gc_pauses
from kernelscope.daemon.engine.history.timeline import History, build_history, store_watermark
from kernelscope.daemon.engine.history.tried import tried_hints
from kernelscope.daemon.engine.memory.core import MEMORY_DIR
from kernelscope.daemon.engine.memory.records import MemoryManager
from kernelscope.protocol.history import BlameLine, FingerprintCheck, TriedHint, VersionComparison

FILE_SCAN_INTERVAL_S = 2.0


class HistoryService:
    """Blame, tried values, fingerprint and compare for one workspace, cached per history state."""

    def __init__(
        self,
        root: Path | str,
        db_url: str | None = None,
        store: Any = None,
        use_store: bool = True,
        memory: MemoryManager | None = None,
    ) -> None:
        self.root = Path(root).expanduser().resolve()
        self._memory = memory  # the daemon's, with its kept reads of memory/
        self._store = store
        self._db_url = db_url
        self._use_store = use_store
        self._history: History | None = None
        # Two locks: `_build` lets one thread build at a time (git, the store: seconds for a
        # thousand versions); `_state` guards the cached value and is held only to read or
        # swap it, so `invalidate()` (the daemon's event loop, on every file event) never
        # waits for a build. A build that an invalidation overtook is returned to its caller
        # but not kept (`_generation`).
        self._build = threading.Lock()
        self._state = threading.Lock()
        self._generation = 0
        self._files: tuple[tuple[str, int, int], ...] | None = None
        self._files_at = 0.0

    @property
    def store(self) -> Any:
        if self._store is None and self._use_store:
            from kernelscope.daemon.engine.store import ExperimentStore

            self._store = ExperimentStore(self._db_url)
        return self._store

    def key(self) -> gitdata.HistoryKey:
        """The history key: HEAD, refs, memory/'s folder and the store's count on every call
        (well under a millisecond), plus a stat of every memory file at most every
        `FILE_SCAN_INTERVAL_S` (an in-place rewrite of a record shows within that time; a
        daemon that watches memory/ calls `invalidate()` at once)."""
        memory = self.root / MEMORY_DIR
        now = time.monotonic()
        files = self._files
        if files is None or now - self._files_at >= FILE_SCAN_INTERVAL_S:
            files = gitdata.tree_stats(memory)
            self._files, self._files_at = files, now
        fast = gitdata.history_key(
            self.root, memory, (store_watermark(self.store, self.root),), scan_files=False
        )
        return (fast, files)

    def history(self, check: bool = True) -> History:
        """The current history: the cached one while the key is unchanged."""
        with self._build:
            with self._state:
                cached, generation = self._history, self._generation
            if cached is not None and not check:
                return cached
            key = self.key()
            if cached is not None and cached.key == key:
                return cached
            with no_gc_pauses():
                built = build_history(self.root, self.store, key, self._memory)
            with self._state:
                if self._generation == generation:  # no invalidation while it was built
                    self._history = built
            return built

    def warm(self) -> History:
        """Build what the first requests need (the history, blame of HEAD's kernel.py, every
        version's analysis, the tried-values table, the fingerprint index). A cold workspace
        of a thousand versions takes seconds the first time on a machine (analyses are then
        kept on disk): run this off the editor's event loop when a workspace opens."""
        history = self.history()
        history.ensure_analyzed()
        blame_lines(history)
        tried_hints(history)
        check_fingerprint(history)
        return history

    def invalidate(self) -> None:
        """Forget the cached history (a watcher saw kernel history change); returns at once,
        also while a build is under way (that build is then not kept)."""
        with self._state:
            self._generation += 1
            self._history = None
            self._files = None

    def blame(
        self, buffer: str | None = None, include_masked: bool = False, check: bool = True
    ) -> list[BlameLine]:
        return blame_lines(self.history(check), buffer, include_masked)

    def blame_line(
        self, line: int, buffer: str | None = None, include_masked: bool = False, check: bool = True
    ) -> BlameLine | None:
        return blame_line(self.history(check), line, buffer, include_masked)

    def tried(
        self, buffer: str | None = None, include_masked: bool = False, check: bool = True
    ) -> list[TriedHint]:
        return tried_hints(self.history(check), buffer, include_masked)

    def fingerprint(
        self, buffer: str | None = None, include_masked: bool = False, check: bool = True
    ) -> FingerprintCheck:
        return check_fingerprint(self.history(check), buffer, include_masked)

    def compare(self, version_a: str, version_b: str, check: bool = True) -> VersionComparison:
        return compare_versions(self.history(check), version_a, version_b)
