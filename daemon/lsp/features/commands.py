"""workspace/executeCommand handlers: the server validates the one parameter object with its
protocol model (InvalidParams naming the field, nothing changed) and hands the parsed model to
the method of the same name (protocol/vocabulary.COMMANDS), which calls the engine.

Commands that start a job at once run on the loop (starting one changes the live state and
returns at once); the others run on the command pool (they may wait on the workspace lock or
SQLite's busy timeout, or, as a restart's preflight, ask git and the restart lock) and tell the
loop what they changed (`state.on_loop`), or have it start their job (`state.on_loop_and_wait`).
`RUNS_ON_LOOP` names the first."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from pygls.exceptions import JsonRpcInternalError, JsonRpcInvalidParams

from kernelscope.daemon.engine import KernelscopeError, WriteFailed
from kernelscope.daemon.engine.workspace.discovery import missing_parts, not_a_workspace
from kernelscope.daemon.lsp import notify
from kernelscope.daemon.lsp.jobs import Jobs
from kernelscope.daemon.lsp.state import ServerState, WorkspaceState, uri_to_path

if TYPE_CHECKING:
    from kernelscope.daemon.engine.workspace.cache import Source
    from kernelscope.daemon.lsp.language_server import KernelscopeServer


class _LazyProtocol:
    """`kernelscope.protocol.lsp`, imported on the first command (not at server start-up)."""

    def __getattr__(self, name: str) -> Any:
        from kernelscope.protocol import lsp

        return getattr(lsp, name)


p = _LazyProtocol()
log = logging.getLogger("kernelscope.lsp")


def parse(model: Any, args: tuple[Any, ...]) -> Any:
    """Validate the single parameter object with its pydantic model (imported lazily)."""
    from pydantic import ValidationError

    if len(args) != 1 or not isinstance(args[0], dict):
        raise JsonRpcInvalidParams(
            message=f"expected one object argument ({model.__name__}), got {len(args)} arguments"
        )
    try:
        return model.model_validate(args[0])
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(str(part) for part in err['loc']) or '(object)'}: {err['msg']}"
            for err in exc.errors()
        )
        raise JsonRpcInvalidParams(message=f"invalid {model.__name__}: {problems}") from None


RUNS_ON_LOOP = frozenset({"run_iteration", "benchmark", "cancel"})


class Commands:
    """One method per command of protocol/vocabulary.COMMANDS, taking its parsed params model.
    They run on a worker thread (they may wait on the workspace lock or SQLite's busy
    timeout): anything that talks to the client goes through `state.on_loop`."""

    def __init__(self, server: KernelscopeServer, state: ServerState, jobs: Jobs) -> None:
        self.server = server
        self.state = state
        self.jobs = jobs

    def _changed(self, ws: WorkspaceState, *sources: Source) -> None:
        """From the pool: the command changed these sources of the workspace (told on the loop)."""
        self.state.on_loop(lambda: notify.workspace_changed(self.server, ws, *sources))

    def _workspace(self, value: str) -> WorkspaceState:
        path = uri_to_path(value)
        if not self.state.inside_folders(path):
            raise JsonRpcInvalidParams(message=f"workspace: {path} is outside the editor's workspace folders")
        ws = self.state.workspace_of(path)
        if ws is None:  # made since the last scan, or nested deeper: the loop finds it (it owns the list)
            resolved = path.resolve()
            ws = self.state.on_loop_and_wait(lambda: self.state.discover(resolved))
        if ws is None:  # (a link made since the last scan: only a scan follows it)
            self.state.on_loop_and_wait(self.state.rescan)
            ws = self.state.workspace_of(path)
        if ws is None:
            resolved = path.resolve()
            missing = missing_parts(resolved) or ["not in the editor's folders"]
            raise JsonRpcInvalidParams(message=f"workspace: {not_a_workspace(resolved, missing, 'editor')}")
        return ws

    def _refuse_if_busy(self, ws: WorkspaceState) -> None:
        """InvalidParams, nothing started, while a write the user started runs in the workspace
        (WorkspaceState.refuse_if_busy): before a question is asked. Starting the write checks
        again in the step that registers it (Jobs.start, WorkspaceState.begin_write)."""
        self._engine(ws.refuse_if_busy)

    def _observer_guard(self, ws: WorkspaceState, action: str, force: bool) -> None:
        """Refuse (InvalidParams, nothing started) a write into a workspace an orchestrator drives."""
        from kernelscope.daemon.engine.workspace.atrex import refuse_if_supervised

        self._engine(lambda: refuse_if_supervised(ws.root, action, force))

    @staticmethod
    def _engine(call: Any) -> Any:
        try:
            return call()
        except WriteFailed as exc:  # disk full and the like: not the caller's fault
            raise JsonRpcInternalError(message=str(exc)) from None
        except KernelscopeError as exc:  # refused by the engine: nothing changed
            raise JsonRpcInvalidParams(message=str(exc)) from None

    def _store(self, db_url: str | None) -> Any:
        """The daemon's store of `db_url`; one that cannot be opened is InvalidParams naming why."""
        from kernelscope.daemon.engine.store import ExperimentStore

        return self.state.store_for(db_url) or self._engine(lambda: ExperimentStore(db_url))

    def mask_half(self, params: Any) -> Any:
        ws = self._workspace(params.workspace)

        def mask() -> Any:
            return self._engine(
                lambda: ws.cache.memory_manager.mask_half_command(
                    ws.cache.readme(),
                    seed=params.seed,
                    dry_run=params.dry_run,
                    force=params.force,
                )
            )

        if params.dry_run:  # (writes nothing: no write to register)
            return mask().model_dump(mode="json")
        self._engine(lambda: ws.begin_write("maskHalf"))  # (refused while a write of the user's runs)
        try:
            result = mask()
        finally:
            ws.end_write()
        self._changed(ws, "memory")
        return result.model_dump(mode="json")

    def unmask(self, params: Any) -> Any:
        ws = self._workspace(params.workspace)
        changed = self._engine(
            lambda: ws.cache.memory_manager.set_masked(
                params.versions, masked=False, allow_supervised=params.force
            )
        )
        self._changed(ws, "memory")
        return p.UnmaskResult(changed=changed).model_dump(mode="json")

    def record_experiment(self, params: Any) -> Any:
        ws = self._workspace(params.workspace)
        fields = params.model_dump(exclude={"workspace"})
        fields["workspace"] = str(ws.root)
        store = self._store(ws.settings.db_url)
        created = self._engine(lambda: store.create_experiment(fields))
        self._changed(ws, "store")
        return created.model_dump(mode="json")

    def run_iteration(self, params: Any) -> Any:
        ws = self._workspace(params.workspace)
        self._observer_guard(ws, "run an iteration", params.force)
        job = self._engine(
            lambda: self.jobs.iterate(
                ws, params.action_category, params.action_description, params.revert_on_fail, params.force
            )
        )
        return p.JobStarted(job_id=job.job_id, workspace=str(ws.root), kind="runIteration").model_dump()

    def question(self, params: Any) -> Any:
        """What a `confirm` call of maskHalf or restart asks before it writes (views/confirm.py),
        or None when it would write nothing. What would refuse the command refuses first
        (a job of the user's under way here, then the engine's rules: workflows/restart.py's
        preflight, MemoryManager.mask_half's): nobody is asked a question whose yes then fails."""
        from kernelscope.daemon.engine.workflows import restart

        ws = self._workspace(params.workspace)
        if isinstance(params, p.MaskHalfParams) and params.dry_run:
            return None
        self._refuse_if_busy(ws)
        memory = ws.cache.memory_manager
        if isinstance(params, p.MaskHalfParams):
            return self._engine(
                lambda: restart.mask_half_question(memory, ws.cache.readme(), params.seed, params.force)
            )
        return self._engine(
            lambda: restart.restart_question(
                memory,
                ws.cache.readme(),
                self.state.user.agent,
                restart.RestartOptions(
                    seed=params.seed, timeout_s=params.timeout_s, force=params.force, warn=log.warning
                ),
            )
        )

    def restart(self, params: Any) -> Any:
        """The engine's preflight (the refusals the question made too, in its order), then the
        job, started on the loop (the live state), where a job under way here refuses it."""
        from kernelscope.daemon.engine.workflows.restart import preflight

        ws = self._workspace(params.workspace)
        self._refuse_if_busy(ws)
        agent, _ = self._engine(lambda: preflight(ws.root, self.state.user.agent, params.force, log.warning))
        job = self.state.on_loop_and_wait(
            lambda: self._engine(
                lambda: self.jobs.restart(ws, agent, params.seed, params.timeout_s, params.force)
            )
        )
        return p.JobStarted(job_id=job.job_id, workspace=str(ws.root), kind="restart").model_dump()

    def benchmark(self, params: Any) -> Any:
        ws = self._workspace(params.workspace)
        candidate = None
        if params.candidate:
            candidate = uri_to_path(params.candidate)
            if not self.state.inside_folders(candidate) or not candidate.is_file():
                raise JsonRpcInvalidParams(
                    message=f"candidate: {candidate} is not a file inside the workspace folders"
                )
        job = self._engine(lambda: self.jobs.benchmark(ws, candidate=candidate, probe=candidate is None))
        return p.JobStarted(job_id=job.job_id, workspace=str(ws.root), kind="benchmark").model_dump()

    def show_history(self, params: Any) -> Any:
        ws = self._workspace(params.workspace)
        from kernelscope.daemon.engine.views.history_table import history

        return history(ws.cache, params.kernel).model_dump(mode="json")

    def top_experiments(self, params: Any) -> Any:
        from kernelscope.daemon.engine.workspace.masked import ranking

        filters: dict[str, Any] = {}
        settings = self.state.default_settings
        if params.workspace:
            ws = self._workspace(params.workspace)
            filters["workspace"] = str(ws.root)
            settings = ws.settings
        if params.operator_sig:
            filters["operator_sig"] = params.operator_sig
        if params.kernel:
            filters["kernel"] = params.kernel
        store = self._store(settings.db_url)
        records = self._engine(
            lambda: (
                ranking(
                    store,
                    store.top,
                    params.max_results,
                    include_buggy=params.include_buggy,
                    include_interpreter=params.include_interpreter,
                    include_masked=params.include_masked,
                    **filters,
                ).rows
            )
        )
        return [r.model_dump(mode="json") for r in records]

    def compare(self, params: Any) -> Any:
        """Two versions side by side: code diff, per-configuration deltas, gates, actions, and
        the markdown every client can show."""
        ws = self._workspace(params.workspace)
        history = ws.cache.history()
        return self._engine(lambda: history.compare(params.version_a, params.version_b)).model_dump(
            mode="json"
        )

    def cancel(self, params: Any) -> Any:
        workspace = self._workspace(params.workspace).root if params.workspace else None
        return p.CancelResult(cancelled=self.jobs.cancel(workspace)).model_dump()
