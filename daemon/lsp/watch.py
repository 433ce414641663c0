"""Watches each workspace's kernel.py, memory/, README.md and the files that show an
orchestrator on disk (agents, `git checkout`, atrex's supervisor) with watchfiles, debounced,
and tells the server which of them changed (paths relative to the workspace), and once, when
its watches are in place, that from then on every change is seen (`on_armed`: the daemon logs
it; a write before it may be missed)."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from pathlib import Path

from watchfiles import watch

log = logging.getLogger("kernelscope.lsp")


def _relevant(root: Path, changed: Path) -> str | None:
    """`changed` relative to `root`, when a source of the workspace is made of it (the
    engine's rule, imported on the first change: not at start-up)."""
    from kernelscope.daemon.engine.workspace.cache import sources_of_paths

    try:
        relative = changed.relative_to(root)
    except ValueError:
        return None
    if relative == Path("."):
        return "."  # the workspace itself was moved or deleted (all a rename reports)
    return str(relative) if sources_of_paths([relative]) else None


class Watcher:
    """One background thread watching all workspace roots; restarted when the set changes."""

    def __init__(
        self,
        on_change: Callable[[Path, set[str]], None],
        on_armed: Callable[[list[Path]], None] = lambda roots: None,
        debounce_ms: int = 150,
    ) -> None:
        self.on_change = on_change
        self.on_armed = on_armed
        self.debounce_ms = debounce_ms
        self.stop = threading.Event()
        self.thread: threading.Thread | None = None
        self.roots: list[Path] = []

    def watch(self, roots: list[Path]) -> None:
        if sorted(roots) == sorted(self.roots) and self.thread is not None:
            return
        self.close()
        self.roots = list(roots)
        if not roots:
            return
        self.stop = threading.Event()
        self.thread = threading.Thread(
            target=self._run, args=(list(roots), self.stop), daemon=True, name="kernelscope-watch"
        )
        self.thread.start()

    def _run(self, roots: list[Path], stop: threading.Event) -> None:
        armed = False
        try:
            for changes in watch(
                *roots,
                stop_event=stop,
                debounce=self.debounce_ms,
                step=10,  # how soon a batch of changes is handed over once quiet (refresh_bench.py)
                rust_timeout=500,
                # the first hand-over (a quiet rust_timeout, or changes) comes once the OS
                # watches are in place: watchfiles has no other sign of it
                yield_on_timeout=True,
                raise_interrupt=False,
            ):
                if not armed:
                    armed = True
                    self.on_armed(roots)
                by_root: dict[Path, set[str]] = {}
                for _change, name in changes:
                    path = Path(name)
                    for root in roots:
                        relative = _relevant(root, path)
                        if relative is not None:
                            by_root.setdefault(root, set()).add(relative)
                for root, names in by_root.items():
                    self.on_change(root, names)
        except Exception:  # a vanished directory must not kill the daemon
            log.exception("file watcher stopped")

    def close(self) -> None:
        self.stop.set()
        if self.thread is not None:
            self.thread.join(timeout=2)
        self.thread = None
