"""What the daemon knows between requests: the optimization workspaces among the editor's
folders, their settings, the latest background probe and the running jobs.

Worker threads change state and then ask the event loop (`ServerState.on_loop`) to talk to
the client: pygls must only be driven from its event loop.
"""

from __future__ import annotations

import asyncio
import os
import threading
import uuid
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import unquote, urlparse

from kernelscope.protocol.settings import FolderSettings, Settings, UserSettings

if TYPE_CHECKING:
    from kernelscope.daemon.engine.run.warm_worker import WarmWorkers
    from kernelscope.daemon.engine.workspace.workspace import Workspace
    from kernelscope.protocol.bench import BenchResult


def uri_to_path(uri_or_path: str) -> Path:
    if uri_or_path.startswith("file://"):
        return Path(unquote(urlparse(uri_or_path).path))
    return Path(uri_or_path)


@dataclass
class Job:
    job_id: str
    workspace: Path
    kind: str
    cancel: threading.Event = field(default_factory=threading.Event)
    future: Future[Any] | None = None
    done_configs: int = 0
    total_configs: int = 0


@dataclass
class WorkspaceState:
    root: Path
    # Effective settings: the user's (ServerState.user) composed with this folder's own.
    settings: Settings = field(default_factory=Settings)
    folder: FolderSettings = field(default_factory=FolderSettings)
    probe: BenchResult | None = None
    stale: bool = False
    job: Job | None = None
    last_outcome: tuple[str, str] | None = None  # (job kind, done|cancelled|error) of the last job
    # The kernel.py text last handled and the one whose check is still running (sha256s): a
    # save and the watcher report the same change twice (server.kernel_changed).
    kernel_digest: str | None = None
    checking_kernel: str | None = None
    # The 'already tried' verdict of the last save (daemon/lsp/history_hints.py).
    history_diagnostics: list[Any] = field(default_factory=list)
    # Lens and hint texts, computed once per change: a workspace with 1,000 memory files
    # must not be re-read on every keystroke. Invalidated by every refresh.
    cache: dict[str, Any] = field(default_factory=dict)

    def invalidate(self, *parts: str) -> None:
        """Drop the rendered lenses and texts, and the named sources ("memory", "store",
        "kernels", or "all"). With no parts only the rendering is redone (job progress,
        stale marks), which is cheap."""
        if "all" in parts:
            self.cache.clear()
            return
        # the kernel-name hover tables are made of memory and store only: job progress and
        # stale marks, refreshed many times a second during a job, keep them
        tables = ("histories",) if {"memory", "store"} & set(parts) else ()
        for key in ("lenses", "summaries", *tables, *parts):
            self.cache.pop(key, None)

    @property
    def workspace(self) -> Workspace:
        from kernelscope.daemon.engine.workspace.workspace import Workspace

        if _incremental_reads["wanted"] and not _incremental_reads["on"]:
            from kernelscope.daemon.engine.memory.records import enable_incremental_reads

            enable_incremental_reads()
            _incremental_reads["on"] = True
        return Workspace(self.root)


# A daemon lives for days over workspaces of 1,000 memory files: it re-reads only the files
# that changed (memory.py, incremental reads), switched on by the first workspace it reads
# (not at start-up: the engine's imports stay off the initialize path).
# KERNELSCOPE_FULL_RESCAN=1 keeps full scans (benchmarks/refresh_bench.py's comparison).
_incremental_reads = {"wanted": False, "on": False}


def _is_optimization_workspace(path: Path) -> bool:
    """kernel.py and memory/ (cheap file checks first; the README is parsed only if needed)."""
    if (path / "kernel.py").is_file() and (path / "memory").is_dir():
        return True
    readme = path / "README.md"
    if not readme.is_file() or "```kernelscope" not in readme.read_text(errors="replace"):
        return False
    from kernelscope.daemon.engine.workspace.workspace import Workspace

    return Workspace(path).is_optimization_workspace()


class ServerState:
    def __init__(self) -> None:
        self.folders: list[Path] = []
        self.workspaces: dict[Path, WorkspaceState] = {}
        self._warm_workers: WarmWorkers | None = None
        self._workers_lock = threading.Lock()
        # Who may set what (protocol/settings.py): the user through initializationOptions,
        # a folder through workspace/configuration (folder keys only).
        self.user = UserSettings()
        _incremental_reads["wanted"] = os.environ.get("KERNELSCOPE_FULL_RESCAN") != "1"
        self.folder_defaults = FolderSettings()
        self.ignored_keys_logged: set[tuple[str, str]] = set()
        self.loop: asyncio.AbstractEventLoop | None = None
        self.jobs: dict[str, Job] = {}
        # Commands and file work; a separate single worker serialises benchmarks (one GPU).
        self.workers = ThreadPoolExecutor(max_workers=4, thread_name_prefix="kernelscope-job")
        # Commands (mask-half, record, history...) run here, off the event loop.
        self.command_pool = ThreadPoolExecutor(max_workers=4, thread_name_prefix="kernelscope-command")
        self.gpu_queue = ThreadPoolExecutor(max_workers=1, thread_name_prefix="kernelscope-bench")
        self.lock = threading.RLock()

    @property
    def user(self) -> UserSettings:
        return self._user

    @user.setter
    def user(self, value: UserSettings) -> None:
        """A new interpreter or trust setting: no worker started under the old ones is reused."""
        old = getattr(self, "_user", None)
        self._user = value
        changed = old is not None and (old.python, old.trusted) != (value.python, value.trusted)
        if changed and self._warm_workers is not None:
            self._warm_workers.stop_all()

    @property
    def warm_workers(self) -> WarmWorkers:
        """The warm benchmark workers of background probes and benchmark commands (started
        on first use, stopped when the daemon exits: atexit here, stdin EOF and
        PR_SET_PDEATHSIG in the worker when it exits any other way)."""
        with self._workers_lock:
            if self._warm_workers is None:
                import atexit

                from kernelscope.daemon.engine.run.warm_worker import WarmWorkers

                self._warm_workers = WarmWorkers(max_idle=2)
                atexit.register(self._warm_workers.close)
            return self._warm_workers

    def close(self) -> None:
        """Stop the warm workers (the daemon is exiting)."""
        if self._warm_workers is not None:
            self._warm_workers.close()

    def on_loop(self, callback: Callable[[], None]) -> None:
        if self.loop is not None and not self.loop.is_closed():
            self.loop.call_soon_threadsafe(callback)

    def set_folders(self, folders: list[Path]) -> None:
        self.folders = [f.resolve() for f in folders]
        self.rescan()

    def rescan(self) -> None:
        """Every folder (or direct child) holding kernel.py and memory/ (or a README block)."""
        found: dict[Path, WorkspaceState] = {}
        for folder in self.folders:
            candidates = [folder, *(p for p in folder.iterdir() if p.is_dir())] if folder.is_dir() else []
            for candidate in candidates:
                if _is_optimization_workspace(candidate):
                    found[candidate] = self.workspaces.get(candidate) or WorkspaceState(
                        candidate, self.default_settings, self.folder_defaults
                    )
        self.workspaces = found

    @property
    def default_settings(self) -> Settings:
        """What a workspace gets before (or without) its folder's own answer."""
        return Settings.compose(self.user, self.folder_defaults)

    def set_folder_settings(self, ws: WorkspaceState, folder: FolderSettings) -> None:
        ws.folder = folder
        ws.settings = Settings.compose(self.user, folder)

    def workspace_of(self, path: Path) -> WorkspaceState | None:
        path = path.resolve()
        for root, state in self.workspaces.items():
            if path == root or root in path.parents:
                return state
        return None

    def inside_folders(self, path: Path) -> bool:
        """Whether a path (symlinks resolved) lies inside one of the editor's folders."""
        resolved = path.resolve()
        return any(resolved == f or f in resolved.parents for f in self.folders)

    def new_job(self, state: WorkspaceState, kind: str) -> Job:
        job = Job(job_id=uuid.uuid4().hex[:12], workspace=state.root, kind=kind)
        with self.lock:
            self.jobs[job.job_id] = job
        return job

    def finish_job(self, job: Job) -> None:
        with self.lock:
            self.jobs.pop(job.job_id, None)
            state = self.workspaces.get(job.workspace)
            if state is not None and state.job is job:
                state.job = None
