"""Long work off the event loop: benchmarks (one at a time, across all workspaces: one GPU),
iterations and restarts, each cancellable (the `kernelscope.cancel` command, or Cancel on its
progress: `window/workDoneProgress/cancel` for its token), reporting `$/progress`, and
announcing its end with a typed `kernelscope/jobFinished` (protocol.lsp.JobFinished) whose
`kind` is the one the start answer gave (protocol/vocabulary.JobKind).

Everything that talks to the client runs on the event loop; tasks created there are kept
until done and their failures logged. The debounces are `call_later`s on the loop: a save's
probe (the workspace's `debounce_ms`), and a buffer being typed in (CHECK_DEBOUNCE_S, one
mechanism for every document kernelscope reads as it is typed: `after_typing`)."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Hashable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from lsprotocol import types

from kernelscope.daemon.engine import Cancelled, KernelscopeError, UsageError
from kernelscope.daemon.lsp import notify
from kernelscope.daemon.lsp.state import Job, ServerState, WorkspaceState
from kernelscope.protocol.vocabulary import JobKind

if TYPE_CHECKING:
    from kernelscope.daemon.engine.workspace.cache import Source
    from kernelscope.daemon.lsp.language_server import KernelscopeServer

log = logging.getLogger("kernelscope.lsp")
PROGRESS_CREATE_TIMEOUT_S = 3.0  # a client that never answers window/workDoneProgress/create
TOKEN_PREFIX = "kernelscope-"
# didChange while typing: the work on a buffer (kernel.py's check, a README's warnings) runs
# once its text rests this long; opening or saving it runs the work at once
CHECK_DEBOUNCE_S = 0.3


class Jobs:
    def __init__(self, server: KernelscopeServer, state: ServerState) -> None:
        self.server = server
        self.state = state
        self.pending_saves: dict[Path, asyncio.TimerHandle] = {}
        self.typing: dict[Hashable, asyncio.TimerHandle] = {}  # after_typing's, by document
        # a save's probe that waits for the user's own job in its workspace (an iteration, a
        # restart, a benchmark they asked for) to end: it never cancels theirs
        self.deferred_probes: set[Path] = set()
        self.ready: dict[str, asyncio.Event] = {}
        self.tasks: set[asyncio.Task[Any]] = set()  # kept until done: a dropped task can vanish
        self.stopped = False  # the session ended (stop_all): no save starts a probe any more

    def spawn(self, coroutine: Any) -> asyncio.Task[Any]:
        """A task on the loop, kept until done, its failure logged (never silent)."""
        assert self.state.loop is not None
        task = self.state.loop.create_task(coroutine)
        self.tasks.add(task)
        task.add_done_callback(self._task_done)
        return task

    def _task_done(self, task: asyncio.Task[Any]) -> None:
        self.tasks.discard(task)
        if not task.cancelled() and task.exception() is not None:
            log.error("a kernelscope task failed", exc_info=task.exception())

    # -- plumbing ---------------------------------------------------------------------

    def _progress(
        self, token: str, kind: str, title: str, message: str | None = None, percentage: int | None = None
    ) -> None:
        """`$/progress` for a server-created token: `window/workDoneProgress/create` is
        answered before begin, and reports/end wait for it, in order."""
        caps = self.server.client_capabilities.window if self.server.client_capabilities else None
        if not (caps and caps.work_done_progress):
            return

        async def send() -> None:
            progress = self.server.work_done_progress
            if kind == "begin":
                ready = self.ready.setdefault(token, asyncio.Event())
                try:
                    # Bounded: a client that never answers gets no progress, not a stuck job.
                    await asyncio.wait_for(progress.create_async(token), PROGRESS_CREATE_TIMEOUT_S)
                    progress.begin(
                        token, types.WorkDoneProgressBegin(title=title, cancellable=True, message=message)
                    )
                except Exception as exc:  # timeout or a malformed answer: the job runs without
                    log.warning("no progress for %s: window/workDoneProgress/create failed (%s)", token, exc)
                    self.ready.pop(token, None)
                    return
                finally:
                    ready.set()
                return
            waiting = self.ready.get(token)
            if waiting is None:
                return  # no progress for this token (never created, or already ended)
            await waiting.wait()
            if token not in self.ready:
                return
            if kind == "report":
                progress.report(token, types.WorkDoneProgressReport(message=message, percentage=percentage))
            else:
                progress.end(token, types.WorkDoneProgressEnd(message=message))
                self.ready.pop(token, None)

        def schedule() -> None:
            if kind == "begin":
                self.ready.setdefault(token, asyncio.Event())
            self.spawn(send())

        self.state.on_loop(schedule)

    def log_message(self, message: str, level: types.MessageType = types.MessageType.Info) -> None:
        """(any thread) `message` in the daemon's log and the client's (`window/logMessage`)."""
        log.info(message)
        self.state.on_loop(
            lambda: self.server.window_log_message(types.LogMessageParams(type=level, message=message))
        )

    def start(self, ws: WorkspaceState, kind: JobKind, work: Any, gpu: bool, background: bool = False) -> Job:
        """Run `work(job)` in the background; cancels the workspace's previous job first (a
        save's probe, cut short by the user's job, runs again when theirs ends). A job of the
        user's is refused (UsageError, nothing started) while another write of theirs runs
        in the workspace (WorkspaceState.take_job)."""
        job = self.state.new_job(ws, kind, background)
        try:
            previous = ws.take_job(job)  # (refused, UsageError, while the user's write runs here)
        except UsageError:
            self.state.finish_job(job)
            raise
        if previous is not None:
            if previous.background and not previous.cancel.is_set() and not background:
                self.deferred_probes.add(ws.root)
            previous.cancel.set()
        log.info("job started: %s %s in %s", kind, job.job_id, ws.root)
        ws.last_outcome = None
        token = TOKEN_PREFIX + job.job_id
        self._progress(token, "begin", f"kernelscope {kind}", message=str(ws.root.name))

        def run() -> None:
            # `background` probes (save -> re-benchmark) are not announced to the user by clients:
            # a kernel that fails on every save must not flood the editor with messages.
            outcome: dict[str, Any] = {
                "job_id": job.job_id,
                "workspace": str(ws.root),
                "kind": kind,
                "background": background,
            }
            try:
                if job.cancel.is_set():
                    outcome["cancelled"] = True
                else:
                    result = work(job, token)  # (on a session pool: nothing written once it ended)
                    outcome["result"] = (
                        result.model_dump(mode="json") if hasattr(result, "model_dump") else result
                    )
                    outcome["cancelled"] = job.cancel.is_set()
            except Cancelled:
                outcome["cancelled"] = True
            except KernelscopeError as exc:
                outcome["error"] = str(exc)
                self.log_message(f"{kind} failed: {exc}", types.MessageType.Error)
            except Exception as exc:  # the daemon stays up whatever the job does
                log.exception("%s job crashed", kind)
                outcome["error"] = f"{type(exc).__name__}: {exc}"
                self.log_message(f"{kind} crashed: {exc}", types.MessageType.Error)
            finally:
                ended = "cancelled" if job.cancel.is_set() else "error" if "error" in outcome else "done"
                self._progress(token, "end", kind, message="cancelled" if job.cancel.is_set() else "done")

                def finished() -> None:
                    self.state.finish_job(job)
                    if ws.root in self.deferred_probes and ws.user_job() is None:
                        self.deferred_probes.discard(ws.root)
                        self.schedule_probe(ws)  # the save's probe that waited for this job
                    ws.last_outcome = (kind, ended)
                    notify.job_finished(self.server, outcome)
                    # iterations and restarts write memory and experiments, and commit kernel.py;
                    # a benchmark (a save's probe, the benchmark command) writes none of them: its
                    # result is live state, and the history and the lens texts are kept
                    written: tuple[Source, ...] = () if kind == "benchmark" else ("memory", "store", "kernel")
                    notify.workspace_changed(self.server, ws, *written)

                self.state.on_loop(finished)

        executor = self.state.gpu_queue if gpu else self.state.workers
        job.future = executor.submit(run)
        self.state.on_loop(lambda: notify.workspace_changed(self.server, ws))
        return job

    def _on_configs(self, ws: WorkspaceState, job: Job, token: str) -> Callable[[int, int], None]:
        def report(done: int, total: int) -> None:
            from kernelscope.daemon.engine.views import lens_text  # (pydantic: not at start-up)

            percentage = int(100 * done / total) if total else None
            self._progress(
                token, "report", job.kind, message=lens_text.configs_text(done, total), percentage=percentage
            )

            def show() -> None:  # the job is live state: written on the loop, read there whole
                job.done_configs, job.total_configs = done, total
                notify.workspace_changed(self.server, ws)

            self.state.on_loop(show)

        return report

    # -- the jobs -----------------------------------------------------------------------

    def benchmark(
        self, ws: WorkspaceState, candidate: Path | None = None, probe: bool = True, background: bool = False
    ) -> Job:
        """Benchmark kernel.py against the last passing version (engine: workflows/probe.py)."""
        from kernelscope.daemon.engine.workflows.probe import ProbeOptions, run_probe

        settings = ws.settings
        options = ProbeOptions(
            mode=settings.mode,
            python=self.trusted_python(),
            timeout_s=settings.timeout_s,
            memory_limit_mb=settings.memory_limit_mb,
            seeds=settings.seeds,
            executor=settings.executor,
            ray_address=settings.ray_address,
        )

        measured = ws.kernel_digest  # the saved text this probe measures (the file on disk)

        def work(job: Job, token: str) -> Any:
            result = run_probe(
                ws.root,
                options,
                candidate,
                cancel=job.cancel,
                workers=self.state.warm_workers,
                on_progress=self._on_configs(ws, job, token),
            )
            if probe and not job.cancel.is_set():
                self.state.on_loop(lambda: ws.probe_finished(result, measured))  # before the job's end
            return result

        return self.start(ws, "benchmark", work, gpu=True, background=background)

    def trusted_python(self) -> str | None:
        """The benchmark interpreter from the user's settings (initializationOptions) only: a
        per-folder value could come from a cloned workspace's editor settings and would make
        the daemon run a program of the workspace's choosing."""
        return self.state.user.python

    def iterate(
        self,
        ws: WorkspaceState,
        category: str | None,
        description: str | None,
        revert: bool,
        force: bool = False,
    ) -> Job:
        from kernelscope.daemon.engine.workflows.iterate import IterateOptions, run_iteration

        def work(job: Job, token: str) -> Any:
            return run_iteration(
                ws.root,
                IterateOptions(
                    action_category=category,
                    action_description=description,
                    revert_on_fail=revert,
                    mode=ws.settings.mode,
                    # a recorded version is checked on the evaluator's own draws, as the CLI's
                    # `iterate` checks it; `seeds` is the probe's quick look
                    seeds=None,
                    timeout_s=ws.settings.timeout_s,
                    memory_limit_mb=ws.settings.memory_limit_mb,
                    python=self.trusted_python(),
                    db_url=ws.settings.db_url,
                    on_progress=self._on_configs(ws, job, token),
                    force=force,
                ),
                cancel=job.cancel,
            )

        return self.start(ws, "runIteration", work, gpu=True)

    def restart(
        self, ws: WorkspaceState, agent: str, seed: int | None, timeout_s: float, force: bool = False
    ) -> Job:
        from kernelscope.daemon.engine.workflows.restart import PartialRestart, RestartOptions

        def work(job: Job, token: str) -> Any:
            def stream(line: str) -> None:
                self.log_message(f"[agent] {line}")

            return PartialRestart(
                ws.root, RestartOptions(agent=agent, seed=seed, timeout_s=timeout_s, force=force)
            ).run(on_output=stream, cancel=job.cancel)

        return self.start(ws, "restart", work, gpu=False)

    # -- typing -> debounce ------------------------------------------------------------

    def after_typing(self, document: Hashable, fire: Callable[[], None]) -> None:
        """(loop) `fire` once the buffer of `document` (its path) has rested CHECK_DEBOUNCE_S:
        each edit restarts the delay, so a burst of keystrokes is one piece of pool work, of
        the last text, and a kernel.py request never queues behind a parse per key."""
        self.cancel_typing(document)
        if self.state.loop is None:
            return

        def run() -> None:
            self.typing.pop(document, None)
            fire()

        self.typing[document] = self.state.loop.call_later(CHECK_DEBOUNCE_S, run)

    def cancel_typing(self, document: Hashable) -> None:
        """(loop) Drop the typing work of `document` not yet run: its text was saved, opened
        again or closed, and that event's own work covers it."""
        pending = self.typing.pop(document, None)
        if pending is not None:
            pending.cancel()

    # -- save -> debounce -> probe --------------------------------------------------------

    def schedule_probe(self, ws: WorkspaceState) -> None:
        """Debounced on the event loop (call it there): each save restarts the delay; the
        probe it starts cancels a save's probe still running, and waits for a job the
        user started (an iteration, a restart, a benchmark they asked for) to end."""
        if not ws.settings.runs_on_save or self.state.loop is None or self.stopped:
            return
        previous = self.pending_saves.pop(ws.root, None)
        if previous is not None:
            previous.cancel()

        def fire() -> None:
            self.pending_saves.pop(ws.root, None)
            if ws.user_job() is not None:
                self.deferred_probes.add(ws.root)
                log.info("the save's probe of %s waits for the user's job under way", ws.root.name)
                return
            self.benchmark(ws, background=True)

        self.pending_saves[ws.root] = self.state.loop.call_later(ws.settings.debounce_ms / 1000.0, fire)

    def cancel_pending_probe(self, ws: WorkspaceState) -> None:
        """A save that needs no benchmark drops the one an earlier save scheduled (or that
        waits for the user's job)."""
        self.deferred_probes.discard(ws.root)
        pending = self.pending_saves.pop(ws.root, None)
        if pending is not None:
            pending.cancel()

    def probe_in_flight(self, ws: WorkspaceState) -> bool:
        """A save's probe is scheduled (debouncing, or waiting for the user's job) or running
        and not cancelled."""
        if ws.root in self.pending_saves or ws.root in self.deferred_probes:
            return True
        job = ws.job
        return (
            job is not None
            and job.kind == "benchmark"
            and not job.cancel.is_set()
            and (job.future is None or not job.future.done())
        )

    def cancel_running_probe(self, ws: WorkspaceState) -> None:
        """A save's background probe of code no longer there (a benchmark the user asked for,
        of any file, is theirs to cancel)."""
        job = ws.job
        if job is not None and job.kind == "benchmark" and job.background:
            job.cancel.set()

    def cancel_token(self, token: str | int) -> list[str]:
        """Cancel on a progress notification (`window/workDoneProgress/cancel`): the job that
        owns the token, killed with its whole process group by the engine's watchdog."""
        if not isinstance(token, str) or not token.startswith(TOKEN_PREFIX):
            return []
        with self.state.lock:
            job = self.state.jobs.get(token[len(TOKEN_PREFIX) :])
            if job is None:
                return []
            job.cancel.set()
            return [job.job_id]

    def stop_all(self) -> list[str]:
        """The session ends (shutdown, or exit without it): no save's probe starts any more,
        and every job is cancelled (its process group killed), so the daemon exits at once
        instead of waiting for a benchmark or a restart's agent, which would go on writing
        into the workspace after the editor has gone; the session's end is set, so a job or a
        command (maskHalf, unmask, recordExperiment on the command pool, whose futures pygls
        cancels but whose threads run on) still waiting for a workspace's lock or the store's
        gives up, and one that gets it writes nothing (engine.for_session)."""
        self.stopped = True
        self.state.session_end.set()  # a job or command waiting for a lock gives up, writing nothing
        for pending in self.pending_saves.values():
            pending.cancel()
        self.pending_saves.clear()
        for pending in self.typing.values():
            pending.cancel()
        self.typing.clear()
        self.deferred_probes.clear()
        return self.cancel(None)

    def cancel(self, workspace: Path | None) -> list[str]:
        cancelled = []
        with self.state.lock:
            for job in list(self.state.jobs.values()):
                if workspace is None or job.workspace == workspace:
                    job.cancel.set()
                    cancelled.append(job.job_id)
        return cancelled
