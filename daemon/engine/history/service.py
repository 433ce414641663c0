"""The cache the daemon (and the CLI) query: one `History` per workspace, rebuilt only when
the history changes, never per keystroke.

The key (`gitdata.history_key`) is read from git's files and `stat` of memory/ (no process),
plus the store's experiment count for the workspace; a request whose key matches the cached
one is answered from memory. A daemon that already watches these files can skip the key
check (`check=False`) and call `invalidate()` from its watcher instead.
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

from kernelscope.daemon.engine.history import gitdata
from kernelscope.daemon.engine.history.blame import blame_line, blame_lines
from kernelscope.daemon.engine.history.compare import compare_versions
from kernelscope.daemon.engine.history.fingerprint import check_fingerprint
from kernelscope.daemon.engine.history.timeline import History, build_history, store_watermark
from kernelscope.daemon.engine.history.tried import tried_hints
from kernelscope.daemon.engine.memory import MEMORY_DIR
from kernelscope.protocol.history import BlameLine, FingerprintCheck, TriedHint, VersionComparison


class HistoryService:
    """Blame, tried values, fingerprint and compare for one workspace, cached per history state."""

    def __init__(
        self, root: Path | str, db_url: str | None = None, store: Any = None, use_store: bool = True
    ) -> None:
        self.root = Path(root).expanduser().resolve()
        self._store = store
        self._db_url = db_url
        self._use_store = use_store
        self._history: History | None = None
        self._lock = threading.Lock()

    @property
    def store(self) -> Any:
        if self._store is None and self._use_store:
            from kernelscope.daemon.engine.store import ExperimentStore

            self._store = ExperimentStore(self._db_url)
        return self._store

    def key(self) -> gitdata.HistoryKey:
        return gitdata.history_key(
            self.root, self.root / MEMORY_DIR, (store_watermark(self.store, self.root),)
        )

    def history(self, check: bool = True) -> History:
        """The current history: the cached one while the key is unchanged."""
        with self._lock:
            if self._history is not None and not check:
                return self._history
            key = self.key()
            if self._history is None or self._history.key != key:
                self._history = build_history(self.root, self.store, key)
            return self._history

    def invalidate(self) -> None:
        with self._lock:
            self._history = None

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


_SERVICES: dict[tuple[Path, str | None], HistoryService] = {}
_SERVICES_LOCK = threading.Lock()


def history_service(root: Path | str, db_url: str | None = None) -> HistoryService:
    """The process-wide service of a workspace (one cache per workspace and store)."""
    key = (Path(root).expanduser().resolve(), db_url)
    with _SERVICES_LOCK:
        service = _SERVICES.get(key)
        if service is None:
            service = _SERVICES[key] = HistoryService(key[0], db_url)
        return service
