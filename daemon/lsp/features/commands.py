"""workspace/executeCommand handlers: the server validates the one parameter object with its
protocol model (InvalidParams naming the field, nothing changed) and hands the parsed model to
the method of the same name (protocol/vocabulary.COMMANDS), which calls the engine.

Commands that start a job run on the loop (starting one changes the live state and returns at
once); the others run on the command pool (they may wait on the workspace lock or SQLite's busy
timeout) and tell the loop what they changed (`state.on_loop`). `RUNS_ON_LOOP` names the first."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pygls.exceptions import JsonRpcInternalError, JsonRpcInvalidParams

from kernelscope.daemon.engine import KernelscopeError, WriteFailed
from kernelscope.daemon.engine.memory.atomic_io import refuse_if_restarting
from kernelscope.daemon.engine.workspace.discovery import missing_parts
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


RUNS_ON_LOOP = frozenset({"run_iteration", "restart", "benchmark", "cancel"})


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
            missing = "; ".join(missing_parts(path.resolve())) or "not in the editor's folders"
            raise JsonRpcInvalidParams(
                message=f"workspace: {path} is not an optimization workspace ({missing})"
            )
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
            readme = ws.cache.readme()
            return self._engine(
                lambda: ws.cache.memory_manager.mask_half(
                    readme.primary_kind if readme else None,
                    seed=params.seed,
                    dry_run=params.dry_run,
                    force=params.force,
                    allow_supervised=params.force,
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

    def _restart_checks(self, params: Any) -> tuple[WorkspaceState, str]:
        """The workspace and the agent of a restart, or InvalidParams saying why it cannot start."""
        ws = self._workspace(params.workspace)
        # Only the user's settings or config file name the agent: never the workspace.
        from kernelscope.daemon.engine.workspace.user_config import user_config

        # initializationOptions (the editor's user settings), never per-folder configuration,
        # which a cloned workspace can carry (.vscode/settings.json and the like).
        agent = self.state.user.agent or self._engine(user_config).get("agent")
        if not agent:
            raise JsonRpcInvalidParams(
                message="agent: no restart agent configured (set kernelscope.agent in your "
                "editor's user settings or agent in ~/.config/kernelscope/config.toml)"
            )
        self._refuse_if_busy(ws)
        self._observer_guard(ws, "restart", params.force)
        from kernelscope.daemon.engine.workflows.restart import agent_argv

        self._engine(lambda: agent_argv(ws.root, agent))  # an agent that cannot start: refused now
        return ws, agent

    def question(self, params: Any) -> Any:
        """What a `confirm` call of maskHalf or restart asks before it writes (views/confirm.py,
        from the mask-half dry run), or None when it would write nothing. What would refuse
        the command (no agent or one not installed, a job under way, an orchestrator's
        workspace, a partial restart running in the workspace from another process) refuses
        first: nobody is asked a question whose yes then fails. The command checks them again
        (the restart in its job, off the loop: a restart's lock is asked with a short wait)."""
        from kernelscope.daemon.engine.views.confirm import Restart, mask_question

        restart = None
        if isinstance(params, p.RestartParams):
            ws, agent = self._restart_checks(params)
            restart = Restart(agent=agent, timeout_s=params.timeout_s)
        else:
            ws = self._workspace(params.workspace)
            if params.dry_run:
                return None
            self._refuse_if_busy(ws)
            self._observer_guard(ws, "mask half of the memory", params.force)
        action = "restart" if restart else "mask half of the memory"
        self._engine(lambda: refuse_if_restarting(ws.root, action))  # (another process's restart)
        readme = ws.cache.readme()
        kind = readme.primary_kind if readme else None
        return self._engine(
            lambda: mask_question(ws.cache.memory_manager, kind, params.seed, params.force, restart)
        )

    def restart(self, params: Any) -> Any:
        ws, agent = self._restart_checks(params)
        job = self._engine(lambda: self.jobs.restart(ws, agent, params.seed, params.timeout_s, params.force))
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
