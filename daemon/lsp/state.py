"""What the daemon knows between requests: the optimization workspaces among the editor's
folders, their settings, the latest background probe and the running jobs.

Ownership: a `WorkspaceState`'s live fields (probe, stale mark, job, save check) change on the
event loop only, through its methods; everything read from disk or the store is kept by its
`WorkspaceCache` (engine/workspace/cache.py), dropped by events. Work on the pools gets a
`WorkspaceView`, a frozen copy of the live fields beside the (thread-safe) cache, never the
live state. Worker threads hand their results back with `ServerState.on_loop`.
"""

from __future__ import annotations

import asyncio
import os
import threading
import uuid
from collections.abc import Callable
from concurrent.futures import Future
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from pygls.uris import to_fs_path

from kernelscope.daemon.engine import UsageError
from kernelscope.daemon.engine.workspace.discovery import is_optimization_workspace, workspace_holding
from kernelscope.daemon.lsp.session_pool import SessionPool
from kernelscope.protocol.settings import FolderSettings, Settings, TrustSource, UserSettings
from kernelscope.protocol.vocabulary import KERNEL_FILE

if TYPE_CHECKING:
    from kernelscope.daemon.engine.run.warm_worker import WarmWorkers
    from kernelscope.daemon.engine.store import ExperimentStore
    from kernelscope.daemon.engine.views.diagnostics import Notice
    from kernelscope.daemon.engine.workspace.cache import Source, WorkspaceCache
    from kernelscope.protocol.bench import BenchResult


T = TypeVar("T")
LOOP_WAIT_S = 60.0  # the longest a pool thread waits for the loop to make a call for it


def uri_to_path(uri_or_path: str) -> Path:
    """A `file:` URI's path by pygls's rule (percent-decoding; a Windows drive, `file:///c%3A/...`;
    a UNC host, `file://server/share/...`, which urlparse's path alone dropped; `localhost` is
    this machine); a path as it is."""
    if uri_or_path.startswith("file:"):
        if uri_or_path.startswith("file://localhost/"):  # this machine, by name (RFC 8089)
            uri_or_path = "file:///" + uri_or_path[len("file://localhost/") :]
        path = to_fs_path(uri_or_path)
        if path is not None:
            return Path(path)
    return Path(uri_or_path)


@dataclass
class Job:
    job_id: str
    workspace: Path
    kind: str
    cancel: threading.Event = field(default_factory=threading.Event)
    future: Future[Any] | None = None
    background: bool = False  # a save's probe (not announced; cancelled by a newer save's verdict)
    done_configs: int = 0
    total_configs: int = 0


@dataclass(frozen=True)
class WorkspaceView:
    """A workspace as pool work sees it: the cache (thread-safe) and a copy of the live fields
    taken on the loop."""

    root: Path
    cache: WorkspaceCache
    settings: Settings
    probe: BenchResult | None
    stale: bool
    job: tuple[str, int, int] | None  # (kind, configs done, configs in all) of the running job
    last_outcome: tuple[str, str] | None
    notices: tuple[Notice, ...]  # the save check's (already tried, untrusted...)


@dataclass
class WorkspaceState:
    root: Path
    # The engine's cache of the folder, built on first use: a daemon serving a workspace nobody
    # has looked at yet holds no records, no models and no store (resident memory at start-up).
    make_cache: Callable[[], WorkspaceCache]
    # Effective settings: the user's (ServerState.user) composed with this folder's own.
    settings: Settings = field(default_factory=Settings)
    folder: FolderSettings = field(default_factory=FolderSettings)
    probe: BenchResult | None = None
    stale: bool = False
    job: Job | None = None
    last_outcome: tuple[str, str] | None = None  # (job kind, done|cancelled|error) of the last job
    # The kernel.py text last handled and the one whose check is still running (sha256s): a
    # save and the watcher report the same change twice (features/save.py).
    kernel_digest: str | None = None
    checking_kernel: str | None = None
    # The saved text (`kernel_digest`) whose handling ended with no probe to come for it (not
    # measured: untrusted, a recorded version's, does not parse): its second report is not
    # handled again. Not the last text checked (`checked`): a buffer's check moves that on.
    saved_handled: str | None = None
    # The check of the latest text (features/save.py): its digest, notices and verdict, and
    # what is shown as diagnostics (with the one-time "not trusted" notice).
    checked: str | None = None
    checked_text: str | None = None  # that text: checked again when a record changes the history
    checked_notices: tuple[Notice, ...] | None = None
    checked_identical: bool = False
    checked_static: tuple[Notice, ...] = ()  # the static rules' findings, published second
    checked_extra: tuple[Notice, ...] = ()  # the one-time "not trusted" notice, while none was published
    notices: tuple[Notice, ...] = ()
    notices_text: str | None = None  # the text `notices` are about (text_arrived)
    arrived: str | None = None  # the latest text that arrived: only its check settles `notices`
    untrusted_said: bool = False  # a publication carried it (notices_published)
    warm_started: bool = False  # lens texts and history read on the first open of kernel.py, not at start-up
    lint_uris: frozenset[str] = frozenset()  # problem files holding the last probe's lint diagnostics
    # memory files that cannot be read: the warning published on each (by URI), and how many
    # times they were asked for (features/records.py: the last one asked publishes)
    record_notices: dict[str, Notice] = field(default_factory=dict)
    records_asked: int = 0
    # The user's write under way here that is no job (a maskHalf, on the command pool): set
    # and cleared under `_busy_lock`, from any thread, as the user's job is (take_job).
    writing: str | None = None
    _busy_lock: threading.Lock = field(default_factory=threading.Lock, repr=False)
    _cache: WorkspaceCache | None = field(default=None, repr=False)
    _cache_lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    @cached_property
    def kernel_path(self) -> Path:
        """kernel.py (the engine's Workspace.kernel_path), known without building the cache."""
        return Path(self.root).expanduser().resolve() / KERNEL_FILE

    @property
    def cache_built(self) -> bool:
        """Whether anything has read the workspace yet (a lens, a check): until then it holds
        nothing read from disk."""
        return self._cache is not None

    @property
    def cache(self) -> WorkspaceCache:
        if self._cache is None:
            with self._cache_lock:  # the loop and pool threads may ask first at once: one cache
                if self._cache is None:
                    self._cache = self.make_cache()
        return self._cache

    # -- one write the user started at a time (any thread) -----------------------------------

    def user_job(self) -> Job | None:
        """The job the user started (not a save's probe) while it runs here."""
        job = self.job
        running = job is not None and not job.background and (job.future is None or not job.future.done())
        return job if running else None

    def refuse_if_busy(self) -> None:
        """One write the user started per workspace: a second (a double click on Restart, an
        iteration asked for during a benchmark) would cancel the first and, for a restart, mask
        half of the memory again; a mask-half would overtake an iteration, which then records
        nothing (workflows/iterate.refuse_if_restarted). UsageError naming the write to wait
        for or cancel; a save's background probe is not the user's and gives way. A check
        alone, for a question asked before the write (features/confirm.py): what starts the
        write checks again and registers it in the same step (take_job, begin_write)."""
        job = self.user_job()
        if job is not None:
            raise UsageError(
                f"workspace: a {job.kind} (job {job.job_id}) is already running in {self.root}: "
                "wait for its kernelscope/jobFinished, or cancel it (kernelscope.cancel)"
            )
        if self.writing is not None:
            raise UsageError(
                f"workspace: a {self.writing} is already running in {self.root}: wait for its answer"
            )

    def take_job(self, job: Job) -> Job | None:
        """(loop) `job` becomes the workspace's job, checked (refuse_if_busy, unless it is a
        save's probe) and registered in one step: two requests, or a job and a mask-half on
        the pool, both passed the check before either was registered, and both ran. Returns
        the job it replaces (a save's probe, or one ended), for the caller to cancel."""
        with self._busy_lock:
            if not job.background:
                self.refuse_if_busy()
            previous, self.job = self.job, job
            return previous

    def begin_write(self, kind: str) -> None:
        """(any thread) A write that is no job (`kind`: the command, maskHalf) starts here,
        checked and registered in one step as a job is (take_job); end_write when it ends."""
        with self._busy_lock:
            self.refuse_if_busy()
            self.writing = kind

    def end_write(self) -> None:
        with self._busy_lock:
            self.writing = None

    def sources_changed(self, *sources: Source) -> None:
        """Tell the cache, if there is one yet (a cache built later reads everything fresh)."""
        if self._cache is not None:
            self._cache.changed(*sources)

    # -- transitions (event loop only) ----------------------------------------------------

    def kernel_edited(self) -> None:
        """kernel.py changed: the numbers on screen are no longer this code's."""
        self.stale = True

    def text_arrived(self, text: str) -> None:
        """A kernel.py text arrived (a save, a rewrite on disk, a buffer's check starting):
        what the check said of another text is no longer said, also not by a publication made
        before this text's own check ends (a probe's progress, the save's refresh). Editors
        replace a publication with the next, but Claude Code delivers every publication since
        the agent's edit: the previous text's notices would reach it as this text's. An older
        text's check ending after this arrival settles nothing (features/save.py `_settle`)."""
        self.arrived = text
        if text != self.notices_text:
            self.notices, self.notices_text = (), None

    @property
    def check_pending(self) -> bool:
        """A text arrived (text_arrived dropped the previous text's notices) whose check has
        not settled what is said of it: kernel.py's diagnostics wait for that check, which
        publishes them. Published before, they were an empty list a moment ahead of the
        check's (a save's arrival, a probe's progress): editors flickered, and an agent is
        told nothing by it (Claude Code skips empty lists)."""
        return self.arrived is not None and self.notices_text != self.arrived

    def notices_published(self) -> None:
        """A publication carried `notices`: the one-time "not trusted" notice among them is
        said. Not before: a text that arrived first dropped it with that text's notices
        (text_arrived), and the next check says it (features/save.py)."""
        if self.checked_extra and self.checked_extra[0] in self.notices:
            self.untrusted_said = True

    def probe_finished(self, result: BenchResult, measured: str | None) -> None:
        """A probe ended; `measured` is `kernel_digest` when it started. A text saved since
        (its own check and probe decide what is shown) or one put back to a recorded version's
        (`already_measured`) makes the result one for code that is no longer there: dropped,
        so an older text's numbers are never shown as the current code's."""
        if measured != self.kernel_digest:
            return
        self.probe, self.stale = result, False

    def already_measured(self) -> None:
        """The text is a recorded version: the numbers on screen are this code's."""
        self.probe, self.stale = None, False

    def view(self) -> WorkspaceView:
        job = self.job
        return WorkspaceView(
            root=self.root,
            cache=self.cache,
            settings=self.settings,
            probe=self.probe,
            stale=self.stale,
            job=(job.kind, job.done_configs, job.total_configs) if job is not None else None,
            last_outcome=self.last_outcome,
            notices=self.notices,
        )


class ServerState:
    def __init__(self) -> None:
        self.folders: list[Path] = []
        self.workspaces: dict[Path, WorkspaceState] = {}
        # (loop) told the workspaces that came and went at each rescan (lifecycle.workspaces_changed)
        self.on_workspaces: Callable[[list[WorkspaceState], list[WorkspaceState]], None] | None = None
        self._warm_workers: WarmWorkers | None = None
        self._workers_lock = threading.Lock()
        self._stores: dict[str | None, ExperimentStore | None] = {}
        self._stores_lock = threading.Lock()
        # Who may set what (protocol/settings.py): the user through initializationOptions,
        # a folder through workspace/configuration (folder keys only).
        self.user = UserSettings()
        self.folder_defaults = FolderSettings()
        # initializationOptions' kernelscope section as sent: a folder answer repeating a key
        # of it asks for nothing (is not logged as ignored); nothing is read from it again.
        self.user_said: dict[str, Any] = {}
        # where the user's `trusted` came from, for the "not trusted" notice to name it
        self.trust_source: TrustSource = "config file"
        self.ignored_keys_logged: set[tuple[str, str]] = set()
        self.loop: asyncio.AbstractEventLoop | None = None
        self.jobs: dict[str, Job] = {}
        # Set when the session ends (shutdown, or exit without it): every pool's work is the
        # session's (lsp/session_pool.py), so a command or job still waiting for a workspace's
        # lock gives up and writes nothing once the editor has gone (engine.for_session).
        self.session_end = threading.Event()
        # Commands and file work; a separate single worker serialises benchmarks (one GPU).
        self.workers = SessionPool(self.session_end, 4, "kernelscope-job")
        # Commands (mask-half, record, history...) and read requests run here, off the loop.
        self.command_pool = SessionPool(self.session_end, 4, "kernelscope-command")
        self.gpu_queue = SessionPool(self.session_end, 1, "kernelscope-bench")
        self.lock = threading.RLock()

    @property
    def user(self) -> UserSettings:
        return self._user

    @user.setter
    def user(self, value: UserSettings) -> None:
        """A new interpreter or trust setting: no worker started under the old ones is reused;
        a new store: every workspace's store-made values are read again."""
        old = getattr(self, "_user", None)
        self._user = value
        changed = old is not None and (old.python, old.trusted, old.workspace_trusted) != (
            value.python,
            value.trusted,
            value.workspace_trusted,
        )
        if changed and self._warm_workers is not None:
            self._warm_workers.stop_all()
        if old is not None and old.db_url != value.db_url:
            for ws in self.workspaces.values():
                ws.cache.changed("store")

    def store_for(self, db_url: str | None) -> ExperimentStore | None:
        """One store object per database (its engine, pool and schema check are kept); None
        when the store cannot be opened (the lenses then show memory alone)."""
        with self._stores_lock:
            if db_url not in self._stores:
                from kernelscope.daemon.engine.store import ExperimentStore, StoreError

                try:
                    self._stores[db_url] = ExperimentStore(db_url)
                except StoreError:
                    return None  # tried again next time: the database may appear
            return self._stores[db_url]

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

    def on_loop_and_wait(self, call: Callable[[], T]) -> T:
        """(any thread) `call()` made on the event loop, its result handed back: pool work that
        must change the live state (a rescan replaces `workspaces`) waits for the loop to do it.
        Called on the loop, or while no loop runs (tests, start-up), it is made here."""
        loop = self.loop
        try:
            running: asyncio.AbstractEventLoop | None = asyncio.get_running_loop()
        except RuntimeError:
            running = None
        if loop is None or loop.is_closed() or not loop.is_running() or running is loop:
            return call()

        async def made() -> T:
            return call()

        # bounded: a loop that stops meanwhile (the daemon exiting) leaves no pool thread waiting
        future = asyncio.run_coroutine_threadsafe(made(), loop)
        try:
            return future.result(timeout=LOOP_WAIT_S)
        except TimeoutError:
            future.cancel()
            raise

    def set_folders(self, folders: list[Path]) -> None:
        self.folders = [f.resolve() for f in folders]
        self.rescan()

    def new_workspace(self, root: Path) -> WorkspaceState:
        state: WorkspaceState

        def store() -> ExperimentStore | None:
            return self.store_for(state.settings.db_url)

        def make_cache() -> WorkspaceCache:
            from kernelscope.daemon.engine.workspace.cache import WorkspaceCache  # on first use

            keep_reads = os.environ.get("KERNELSCOPE_FULL_RESCAN") != "1"  # benchmarks/refresh_bench.py
            return WorkspaceCache(root, store, keep_reads)

        settings = Settings.compose(self.user, self.folder_defaults, root)
        state = WorkspaceState(root, make_cache, settings, self.folder_defaults)
        return state

    def rescan(self) -> None:
        """Every folder (or direct child) holding kernel.py and memory/ (or a README block),
        by its resolved path: a child that is a symbolic link to a workspace elsewhere is that
        workspace (documents arrive by their resolved paths), found once; and the workspaces
        `discover` found deeper in a folder. A workspace stays one while its folder is there:
        kernel.py replaced by delete-and-create (an agent, a slow write) must not drop its
        state, its jobs or its probe."""
        found: dict[Path, WorkspaceState] = {}
        for folder in self.folders:
            candidates = [folder, *(p for p in folder.iterdir() if p.is_dir())] if folder.is_dir() else []
            for candidate in candidates:
                root = candidate.resolve()
                if root in found or root in self.workspaces or is_optimization_workspace(candidate):
                    found[root] = found.get(root) or self.workspaces.get(root) or self.new_workspace(root)
        for root, ws in self.workspaces.items():  # found deeper by discover
            if root not in found and root.is_dir() and self.folder_holding(root) is not None:
                found[root] = ws
        before, self.workspaces = self.workspaces, found
        added = [ws for root, ws in found.items() if root not in before]
        removed = [ws for root, ws in before.items() if root not in found]
        if (added or removed) and self.on_workspaces is not None:
            self.on_workspaces(added, removed)

    def folder_holding(self, path: Path) -> Path | None:
        """The editor's folder `path` (resolved) lies in, or None."""
        return next((f for f in self.folders if path == f or f in path.parents), None)

    def discover(self, path: Path) -> WorkspaceState | None:
        """(loop) The workspace holding `path` (resolved: a kernel.py, or a folder a command
        names) that no scan found: one made since the last scan (an agent creates a workspace
        and opens its kernel.py), or one nested deeper in an editor folder than a scan looks
        (a monorepo's root opened). Climbs from `path` up to its editor folder, by the one rule
        (engine/workspace/discovery.py); nothing outside the editor's folders."""
        folder = self.folder_holding(path)
        root = workspace_holding(path, within=folder) if folder is not None else None
        if root is None:
            return None
        ws = self.workspaces.get(root)
        if ws is None:
            ws = self.new_workspace(root)
            self.workspaces = {**self.workspaces, root: ws}  # a new dict: readers on the pool
            if self.on_workspaces is not None:
                self.on_workspaces([ws], [])
        return ws

    @property
    def default_settings(self) -> Settings:
        """What a workspace gets before (or without) its folder's own answer."""
        return Settings.compose(self.user, self.folder_defaults)

    def set_folder_settings(self, ws: WorkspaceState, folder: FolderSettings) -> None:
        ws.folder = folder
        ws.settings = Settings.compose(self.user, folder, ws.root)

    def workspace_of(self, path: Path, resolved: bool = False) -> WorkspaceState | None:
        """The workspace `path` lies in (`resolved`: symlinks already resolved by the caller)."""
        path = path if resolved else path.resolve()
        for root, state in self.workspaces.items():
            if path == root or root in path.parents:
                return state
        return None

    def inside_folders(self, path: Path) -> bool:
        """Whether a path (symlinks resolved) lies inside one of the editor's folders, or in a
        workspace found there (one a folder links to lies elsewhere)."""
        resolved = path.resolve()
        roots = [*self.folders, *self.workspaces]
        return any(resolved == f or f in resolved.parents for f in roots)

    def new_job(self, state: WorkspaceState, kind: str, background: bool = False) -> Job:
        job = Job(job_id=uuid.uuid4().hex[:12], workspace=state.root, kind=kind, background=background)
        with self.lock:
            self.jobs[job.job_id] = job
        return job

    def finish_job(self, job: Job) -> None:
        with self.lock:
            self.jobs.pop(job.job_id, None)
            state = self.workspaces.get(job.workspace)
            if state is not None and state.job is job:
                state.job = None
