"""The partial-restart workflow (seed: gpu-kernel-partial-restart) as one call.

Phase 1 reads the README and hashes its targets, reviews memory, masks half of it (seeded,
recorded; in git, the mask's files committed) and computes the next version. Phase 2
launches the configured agent in the workspace with a brief holding everything the seed
lists (also as environment variables), streaming its output, with a timeout and
cancellation. Phase 3 checks mechanically what the
seed only asks for: targets unchanged, no memory file deleted, v0 not masked, no new
workspace, kernel.py not reverted to the baseline, and v<N+1> written with a result. Nothing
the agent did is undone: violations are reported, by name.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kernelscope.daemon.engine import Cancelled, DataError, UsageError, WriteFailed
from kernelscope.daemon.engine.memory import atrex_fields
from kernelscope.daemon.engine.memory.atomic_io import (
    RestartRunning,
    iteration_lock,
    refuse_if_restarting,
    restart_lock,
)
from kernelscope.daemon.engine.memory.records import RESTART_ID_ENV, MemoryManager
from kernelscope.daemon.engine.memory.stop_rule import readme_verdict
from kernelscope.daemon.engine.views.confirm import MaskQuestion, Restart, question_of
from kernelscope.daemon.engine.workflows.git import Git
from kernelscope.daemon.engine.workspace.atrex import refuse_if_supervised
from kernelscope.daemon.engine.workspace.user_config import config_path, state_dir, user_settings
from kernelscope.daemon.engine.workspace.workspace import README_NAME, Workspace
from kernelscope.protocol import workspace_files
from kernelscope.protocol.commands import MaskHalfResult, RestartReport
from kernelscope.protocol.record_rules import section_get
from kernelscope.protocol.vocabulary import WORKSPACE_DIRS, WORKSPACE_FILES
from kernelscope.protocol.workspace import ReadmeInfo

# a restart waits this long for the restart lock: an iteration's look at it holds it an instant
RESTART_LOCK_WAIT_S = 5.0

FORBIDDEN_ACTIONS = [
    "Do not revert kernel.py to baseline or any earlier version.",
    "Do not create a new workspace; continue in this workspace.",
    "Do not read masked memory/v*.json files as active data.",
    "Do not modify README.md target thresholds or hardware specs.",
    "Do not re-run Stage 1 baseline implementation.",
    "Do not delete any memory/v*.json file.",
    "Do not set masked on memory/v0.json.",
]


# the words of a refusal: the same on every path (the CLI, the editor's question and command, the job)
RESTART_ACTION = "restart (mask half of the memory and launch an agent)"


def _quiet(_message: str) -> None:
    return None


@dataclass
class RestartOptions:
    # a command line; `{brief}` is replaced by the brief's path. None: the user's config file's
    agent: str | None = None
    seed: int | None = None
    timeout_s: float = 3600.0
    knowledge_base: str | None = None
    force: bool = False  # mask-half despite unreadable memory files, and in a supervised workspace
    brief_dir: Path | None = None
    warn: Callable[[str], object] = _quiet  # told of a config file's refused `trusted` pattern


def digest_experience(records: list[dict[str, Any]]) -> dict[str, list[str]]:
    """What was tried, what worked, what failed and why, lessons, open directions."""
    digest: dict[str, list[str]] = {
        "tried": [],
        "worked": [],
        "failed": [],
        "lessons": [],
        "open_directions": [],
        "experiments": [],
    }
    for record in records:
        version = record.get("version", "?")
        optimization = atrex_fields.as_dict(record.get("optimization"))
        action = optimization.get("action_category") or "?"
        description = optimization.get("action_description") or ""
        outcome = atrex_fields.record_outcome(record)
        label = f" [{outcome.describe()}]" if outcome.describe() else ""
        digest["tried"].append(f"{version}: {action} - {description}".strip(" -") + label)
        for note in atrex_fields.experiments(record):
            digest["experiments"].append(f"{version}: {note.line()}")
        gate = atrex_fields.as_dict(record.get("quality_gate"))
        if str(gate.get("result", "")).upper() == "PASS" and outcome.measured:
            perf = atrex_fields.as_dict(record.get("performance"))
            digest["worked"].append(f"{version}: {action} (latency_us={perf.get('latency_us')})")
        elif gate.get("result") is not None:
            digest["failed"].append(f"{version}: {action}: {gate.get('failure_reason')}")
        for item in record.get("pitfalls_and_fixes") or []:
            if isinstance(item, dict):
                lesson = item.get("lesson") or item.get("root_cause") or item.get("error_message")
                if lesson:
                    digest["lessons"].append(f"{version}: {lesson}")
        for direction in atrex_fields.open_directions(record):
            digest["open_directions"].append(f"{version}: {direction}")
    return digest


# What a fresh agent is told to do, per workspace kind (today's atrex removed the seed's
# single-agent stages for its own layouts; kernelscope describes the workflow that fits).
WORKFLOW_OF_KIND = {
    "sol-execbench": (
        "Continue optimizing this SOL-ExecBench op: edit only kernel.py's destination-passing "
        "`run(*inputs, *outputs)`; the ground truth (definition.json, reference.py, workload.jsonl) "
        "is immutable. Validate and benchmark every iteration with `python test_kernel.py "
        "--version v<N>` (every workload must pass under its own tolerance); the goal is the "
        "lowest geomean latency over the workloads."
    ),
    "atrex-bench": (
        "Continue optimizing this Atrex-Bench problem: edit kernel.py, validate and benchmark with "
        "the workspace's `python test_kernel.py`; the problem files are immutable."
    ),
    "kernelbench": (
        "Continue optimizing this KernelBench problem: `ModelNew` in kernel.py must match the "
        "reference `Model` on `get_inputs()`; measure with `kernelscope bench`."
    ),
}
DEFAULT_WORKFLOW = (
    "Continue the gpu-kernel-profile-optimizer workflow (Stage 1 Profile on the current kernel.py, "
    "then Stages 2-6) in this workspace."
)


def mask_paths(ws: Workspace, mask: MaskHalfResult) -> list[Path]:
    """The files `mask` wrote that git would commit (the masked records and the one that
    received the restart note): none outside git, when nothing was masked, or for files git
    ignores. What commit_mask commits, and what `memory mask-half` (which commits nothing)
    names as left uncommitted."""
    git = Git(ws.root)
    if not mask.masked or not git.is_repository():
        return []
    noted = [mask.pitfall_recorded_in] if mask.pitfall_recorded_in else []
    paths = [ws.memory.path_of(version) for version in [*mask.masked, *noted]]
    ignored = git.ignored(paths)  # memory/ kept out of git
    return [path for path in paths if path not in ignored]


def mask_commit_message(mask: MaskHalfResult) -> str:
    return f"partial restart: masked {', '.join(mask.masked)} (seed {mask.seed})"


def commit_mask(ws: Workspace, mask: MaskHalfResult) -> str | None:
    """Commit exactly the files `mask` wrote (the masked records and the one that received the
    restart note), as `partial restart: masked ... (seed N)`, and return the commit; None
    outside git, when nothing was masked, or when git ignores those files (no checkout undoes
    them there). Left uncommitted, the mask was undone by any `git checkout .` or `git stash`,
    and swept into the next `git commit -a`; other changes, in memory/ or elsewhere, stay
    uncommitted. A refused commit (a hook) raises DataError naming the mask, which stays in
    place, and how to undo it; nothing is left staged."""
    git = Git(ws.root)
    noted = [mask.pitfall_recorded_in] if mask.pitfall_recorded_in else []
    paths = mask_paths(ws, mask)
    if not paths:
        return None
    try:
        return git.commit_paths(paths, mask_commit_message(mask))
    except DataError as exc:
        raise DataError(
            f"the partial restart's mask could not be committed ({exc}): the agent was not started; "
            f"the mask stays in place, uncommitted (masked: {', '.join(mask.masked)}"
            + (f"; the restart noted in {noted[0]}'s pitfalls_and_fixes" if noted else "")
            + f"): `kernelscope memory unmask --version {' '.join(mask.masked)}` undoes it"
        ) from None


def _no_agent() -> str:
    return (
        "no agent command: pass --agent, or set agent in the kernelscope config file "
        f"({config_path()}), or kernelscope.agent in the editor's user settings"
    )


def agent_argv(root: Path, agent: str) -> list[str]:
    """The agent command's words, or UsageError when it cannot start: checked before anything
    is masked (a mistyped command used to mask half of the memory, then fail to launch; each
    retry masked another half), and by the server before it asks the person (a yes that then
    fails). A path is taken from the workspace, where the agent runs."""
    from kernelscope.daemon.engine.workspace.user_config import command_words

    argv = command_words(agent, "the agent command", _no_agent())
    program = argv[0]
    if shutil.which(str(root / program) if os.sep in program else program) is None:
        raise UsageError(
            f"cannot start the agent: {program!r} is not an executable program"
            + ("" if os.sep in program else " on PATH")
            + "; nothing was masked"
        )
    return argv


def preflight(
    root: Path, agent: str | None, force: bool, warn: Callable[[str], object] = _quiet
) -> tuple[str, list[str]]:
    """Every refusal of a partial restart known before anything is written, in one order (the
    workspace's first, then the agent's), and the agent with its words. The agent is `agent`
    (the CLI's --agent, the editor's user settings) or the user's config file's, validated as
    the daemon validates it; never a file in the workspace, which may be anyone's clone.

    One rule for every path: `kernelscope restart` and the editor's job (through `run`), the
    editor's command before it starts the job, and its question before the person is asked
    (nobody is asked a question whose yes then fails). The job asks again: time passed.
    Refused: no README.md (the targets), an orchestrator's workspace (unless `force`), no
    agent or one that cannot start, a restart running in the workspace (another process's),
    a repository git refuses (DataError or UsageError; nothing was written)."""
    if not (root / README_NAME).is_file():
        raise DataError(f"no {README_NAME} in {root}: the restart needs its targets")
    refuse_if_supervised(root, RESTART_ACTION, force)
    agent = agent or user_settings(warn)[0].agent
    if not agent:
        raise UsageError(_no_agent())
    argv = agent_argv(root, agent)
    refuse_if_restarting(root, "restart")  # (at once; `run` takes the lock, which decides it)
    git = Git(root)
    if git.is_repository():  # (memory/git_place.py: where locks and mark are)
        git.require()  # a mask git cannot commit (a repository git refuses) is not made
    return agent, argv


def mask_half_question(
    memory: MemoryManager, readme: ReadmeInfo | None, seed: int | None, force: bool
) -> MaskQuestion | None:
    """What the editor asks before a mask-half writes (views/confirm.py), refused first where the
    write would be (MemoryManager.mask_half's `asking`); None when it would mask nothing
    (nothing is asked, nothing written)."""
    return question_of(memory.mask_half_command(readme, seed=seed, dry_run=True, force=force, asking=True))


def restart_question(
    memory: MemoryManager,
    readme: ReadmeInfo | None,
    agent: str | None,
    options: RestartOptions,
) -> MaskQuestion:
    """What the editor asks before a restart, after its preflight (`agent` as there): the
    mask-half dry run of `options.seed`, and the agent it would launch for how long."""
    seed, force, warn = options.seed, options.force, options.warn
    agent, _ = preflight(memory.workspace, agent, force, warn)
    dry = memory.mask_half_command(readme, seed=seed, dry_run=True, force=force)
    question = question_of(dry, Restart(agent=agent, timeout_s=options.timeout_s))
    assert question is not None  # (a restart is always asked: its agent starts even with no mask)
    return question


class PartialRestart:
    def __init__(self, workspace: Path, options: RestartOptions) -> None:
        self.ws = Workspace(workspace)
        self.options = options

    # -- phase 1 ------------------------------------------------------------------------

    def _snapshot(self) -> dict[str, Any]:
        readme = self.ws.readme() if self.ws.readme_path.is_file() else None
        entries = self.ws.memory.scan()
        parent = self.ws.root.parent
        return {
            "readme": readme,
            "targets_digest": self.ws.profile(readme).targets_digest,
            "memory_files": sorted(e.path.name for e in entries),
            "v0_masked": next((e.masked for e in entries if e.number == 0), False),
            "siblings": sorted(p.name for p in parent.iterdir() if p.is_dir()) if parent.is_dir() else [],
            "kernel": workspace_files.read_text(self.ws.kernel_path, errors="replace")
            if self.ws.kernel_path.is_file()
            else None,
            "head": Git(self.ws.root).head() if Git(self.ws.root).is_repository() else None,
        }

    def _baseline_kernel(self) -> str | None:
        entries = self.ws.memory.scan()
        v0 = next((e for e in entries if e.number == 0 and e.record), None)
        commit = v0.record.git_commit_hash if v0 and v0.record else None
        git = Git(self.ws.root)
        if not isinstance(commit, str) or not commit or not git.is_repository():
            return None  # (a copy made without .git keeps its records' commit hashes)
        return git.show_file(commit, self.ws.kernel_path)

    def _brief(
        self, next_version: str, mask_seed: int, restart_id: str | None
    ) -> tuple[Path, dict[str, str]]:
        """The brief the fresh agent reads, and its environment. `restart_id` (the mark's id, in
        git): what its iterations carry to record the version promised to it while the
        restart runs (workflows/iterate.py refuse_if_promised): set in its environment, and
        named in the brief for an agent whose shell does not pass the environment on."""
        readme = self.ws.readme()
        records, _ = self.ws.memory.read_all()
        unmasked = [str(self.ws.memory.path_of(r["version"])) for r in records]
        digest = digest_experience(records)
        profile = self.ws.profile(readme)
        stop_conditions = [c.text for c in profile.stop_conditions]
        if profile.goal:
            stop_conditions.insert(0, f"goal: {profile.goal}")
        kb = self.options.knowledge_base or os.environ.get("KERNELSCOPE_KB", "")
        brief = {
            "workspace": str(self.ws.root),
            "readme": str(self.ws.readme_path),
            "kernel": str(self.ws.kernel_path),
            "unmasked_memory_files": unmasked,
            "experience": digest,
            "kind": profile.kind,
            "platform": profile.target_platform,
            "framework": profile.framework,
            "next_version": next_version,
            "knowledge_base": kb,
            "stop_conditions": stop_conditions,
            "forbidden": FORBIDDEN_ACTIONS,
            "mask_seed": mask_seed,
            "restart_id": restart_id,
        }
        directory = self.options.brief_dir or state_dir("briefs")
        directory.mkdir(parents=True, exist_ok=True)
        stamp = time.strftime("%Y%m%dT%H%M%S")
        path = directory / f"{self.ws.root.name}-{next_version}-{stamp}.md"
        lines = [
            f"# Partial restart brief: {self.ws.root.name}, starting at {next_version}",
            "",
            "You are a fresh optimization agent. " + WORKFLOW_OF_KIND.get(profile.kind, DEFAULT_WORKFLOW),
            "",
            f"- workspace: {self.ws.root}",
            f"- README (targets, hardware specs, stop conditions): {self.ws.readme_path}",
            f"- starting point: {self.ws.kernel_path} (the current kernel, not the baseline)",
            f"- workspace kind: {profile.kind}",
            f"- platform: {profile.target_platform or 'see README'}",
            f"- framework: {profile.framework or 'see README'}",
            f"- first iteration: {next_version} (record it with `kernelscope iterate`"
            + (
                f"; this restart is {restart_id}, in your environment as {RESTART_ID_ENV}: if your"
                f" shell does not pass the environment on, add `--restart-id {restart_id}`)"
                if restart_id
                else ")"
            ),
            f"- knowledge base: {kb or 'not configured'}",
            "",
            "## Goal and stop conditions",
            *[f"- {text}" for text in stop_conditions or ["(none found in README.md)"]],
            "",
            "## Unmasked memory (treat as historical hints, not proof)",
            *[f"- {p}" for p in unmasked],
            "",
            *[
                line
                for title, key in (
                    ("What was tried", "tried"),
                    ("Experiments the agents recorded", "experiments"),
                    ("What worked", "worked"),
                    ("What failed and why", "failed"),
                    ("Lessons", "lessons"),
                    ("Open directions", "open_directions"),
                )
                for line in [f"## {title}", *[f"- {item}" for item in digest[key] or ["(none recorded)"]], ""]
            ],
            "## Forbidden",
            *[f"- {rule}" for rule in FORBIDDEN_ACTIONS],
            "",
            "Return: latest memory/v<N>.json path, performance summary, optimization action taken, "
            "quality gate result, git commit hash, and whether the stop conditions are met.",
            "",
            "```json",
            json.dumps(brief, indent=2),
            "```",
        ]
        path.write_text("\n".join(lines) + "\n", encoding="utf-8")
        env = {
            "KERNELSCOPE_BRIEF": str(path),
            "KERNELSCOPE_WORKSPACE": str(self.ws.root),
            "KERNELSCOPE_README": str(self.ws.readme_path),
            "KERNELSCOPE_KERNEL": str(self.ws.kernel_path),
            "KERNELSCOPE_MEMORY_FILES": os.pathsep.join(unmasked),
            "KERNELSCOPE_NEXT_VERSION": next_version,
            "KERNELSCOPE_PLATFORM": profile.target_platform or "",
            "KERNELSCOPE_FRAMEWORK": profile.framework or "",
            "KERNELSCOPE_KB": kb,
            "KERNELSCOPE_STOP_CONDITIONS": json.dumps(stop_conditions),
            **({RESTART_ID_ENV: restart_id} if restart_id else {}),
        }
        return path, env

    # -- phase 2 ------------------------------------------------------------------------

    def _launch(
        self,
        argv: list[str],
        env: dict[str, str],
        on_output: Callable[[str], None] | None,
        cancel: threading.Event | None,
    ) -> tuple[int | None, bool, bool]:
        process = subprocess.Popen(
            argv,
            cwd=self.ws.root,
            env={**os.environ, **env},
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        timed_out = cancelled = False
        deadline = time.monotonic() + self.options.timeout_s
        stop = threading.Event()

        def pump() -> None:
            assert process.stdout is not None
            for raw in iter(process.stdout.readline, b""):
                if on_output is not None:
                    on_output(raw.decode("utf-8", errors="replace").rstrip("\n"))
            stop.set()

        reader = threading.Thread(target=pump, daemon=True)
        reader.start()
        try:
            while process.poll() is None:
                if cancel is not None and cancel.is_set():
                    cancelled = True
                elif time.monotonic() > deadline:
                    timed_out = True
                if cancelled or timed_out:
                    break
                time.sleep(0.05)
        except (KeyboardInterrupt, SystemExit):
            # Ctrl-C, or SIGTERM (the CLI's SystemExit: an agent's Bash tool timing out): the
            # agent, in its own session, would go on editing the workspace unwatched; it is
            # stopped and the report still says what it did and what was masked.
            cancelled = True
        if cancelled or timed_out:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGKILL)
            process.wait()
        reader.join(timeout=5)
        return (None if (timed_out or cancelled) else process.returncode), timed_out, cancelled

    # -- phase 3 ------------------------------------------------------------------------

    def _is_new_workspace(self, folder: Path) -> bool:
        """Whether a folder that appeared beside the workspace is the new workspace the seed
        forbids (`kernel_opt_<name>_iter<N>`, a copy): named after this one, or holding a kernel
        or a memory folder. The seed's workspaces live in /tmp, where caches and other programs
        make folders all the time: those are none of the agent's doing."""
        if folder.name.startswith(self.ws.root.name):
            return True
        return any((folder / name).is_file() for name in WORKSPACE_FILES) or any(
            (folder / name).is_dir() for name in WORKSPACE_DIRS
        )

    def _verify(
        self, before: dict[str, Any], baseline_kernel: str | None, next_version: str, masked: list[str]
    ) -> tuple[list[str], dict[str, Any]]:
        violations: list[str] = []
        after = self._snapshot()
        if before["targets_digest"] != after["targets_digest"]:
            violations.append(
                "targets changed (README target, goal, stop conditions or hardware specs, or a "
                "ground-truth file such as definition.json or workload.jsonl, was edited)"
            )
        deleted = sorted(set(before["memory_files"]) - set(after["memory_files"]))
        if deleted:
            violations.append(f"memory files deleted: {', '.join(deleted)}")
        if after["v0_masked"] and not before["v0_masked"]:
            violations.append("memory/v0.json (the baseline) was masked")
        new_dirs = [
            name
            for name in sorted(set(after["siblings"]) - set(before["siblings"]))
            if self._is_new_workspace(self.ws.root.parent / name)
        ]
        if new_dirs:
            violations.append(f"new workspace directories created next to this one: {', '.join(new_dirs)}")
        if (
            baseline_kernel is not None
            and after["kernel"] is not None
            and after["kernel"] == baseline_kernel
            and before["kernel"] != baseline_kernel
        ):
            violations.append("kernel.py was reverted to the baseline (v0) version")
        unmasked_again, unreadable = [], []
        for version in masked:
            if f"{version}.json" in deleted:
                continue  # said above
            try:
                if not self.ws.memory.entry(version).masked:
                    unmasked_again.append(version)
            except DataError:  # the agent broke the file: the report says so, it does not crash
                unreadable.append(version)
        if unmasked_again:
            violations.append(f"masked versions were unmasked: {', '.join(unmasked_again)}")
        if unreadable:
            violations.append(f"masked versions were made unreadable: {', '.join(unreadable)}")
        returned: dict[str, Any] = {}
        target = self.ws.memory.memory_dir / f"{next_version}.json"
        if not target.is_file():
            violations.append(f"{next_version} was not written: the agent returned no iteration")
        else:
            try:
                record = self.ws.memory.entry(next_version).record
            except DataError as exc:
                violations.append(f"{next_version} is unreadable: {exc}")
                record = None
            if record is not None:
                gate = record.gate_result
                if gate is None and record.metric("latency_us") is None:
                    violations.append(f"{next_version} holds no result (no quality gate, no performance)")
                action = section_get(record.optimization, "action_category")
                returned = {
                    "latest_memory_path": str(target),
                    "performance_summary": (
                        f"latency {record.metric('latency_us')} us, {record.metric('tflops')} TFLOPS, "
                        f"{record.metric('bandwidth_gbps')} GB/s"
                    ),
                    "action_taken": None if action is None else str(action),
                    "gate_result": gate,
                    "commit_hash": record.git_commit_hash
                    if isinstance(record.git_commit_hash, str)
                    else None,
                    # the README as it was at phase 1 judged on the record, whoever wrote it:
                    # not the statuses it stored (an older rule's), nor the README the agent
                    # may have edited (a relaxed target; the violation above says it changed)
                    "stop_conditions_met": readme_verdict(before["readme"], record)[1],
                }
        return violations, returned

    def run(
        self, on_output: Callable[[str], None] | None = None, cancel: threading.Event | None = None
    ) -> RestartReport:
        _, argv = preflight(self.ws.root, self.options.agent, self.options.force, self.options.warn)
        in_git = Git(self.ws.root).is_repository()
        before = self._snapshot()
        baseline_kernel = self._baseline_kernel()
        readme = self.ws.readme()
        with contextlib.ExitStack() as running:
            # Under the iteration lock, as an iteration's write phase: an agent's iterate recording
            # at this moment records before the mask or after its commit, and its version's record
            # (which may get the restart's note) is committed by one of them, not swept into the
            # other's commit. Released before the agent starts (its own iterate takes the lock).
            with iteration_lock(self.ws.root):
                # (the lock may have been waited for while an iteration committed: a Cancel
                # pressed meanwhile stops here, before anything is written)
                if cancel is not None and cancel.is_set():
                    raise Cancelled(
                        "restart cancelled while waiting for an iteration to finish: nothing masked"
                    )
                if in_git:
                    # Held from the mask to the report: meanwhile only this restart's agent
                    # records the version its brief names (iterate.refuse_if_promised). A second
                    # restart is refused (its mask would take that version from this agent).
                    try:
                        running.enter_context(restart_lock(self.ws.root, RESTART_LOCK_WAIT_S))
                    except WriteFailed:
                        raise
                    except DataError:  # (another restart took it since the check above)
                        raise RestartRunning("restart") from None
                mask = self.ws.memory.mask_half(
                    readme.primary_kind,
                    seed=self.options.seed,
                    force=self.options.force,
                    allow_supervised=self.options.force,
                    for_restart=True,  # (the iteration lock held here; its agent starts at the next version)
                )
                # committed before anything else can run in the workspace (a refusal stops here)
                mask_commit = commit_mask(self.ws, mask)
                next_version = self.ws.memory.next_version()
                mark = self.ws.memory.mask_half_mark() if in_git else None
            # the agent's iterations record next_version (iterate.refuse_if_promised)
            brief_path, env = self._brief(
                next_version, mask.seed, str(mark["id"]) if mark and mark.get("id") else None
            )
            argv = [part.replace("{brief}", str(brief_path)) for part in argv]
            # What the agent starts from: after the mask and the brief were written.
            started = self._snapshot()
            before.update(
                memory_files=started["memory_files"],
                siblings=started["siblings"],
                targets_digest=self.ws.profile(readme).targets_digest,
            )
            try:
                code, timed_out, cancelled = self._launch(argv, env, on_output, cancel)
                not_started = None
            except OSError as exc:  # found but not runnable (no #! line, say): the report says so
                code, timed_out, cancelled = None, False, False
                undo = f" (unmask {', '.join(mask.masked)} to undo the mask)" if mask.masked else ""
                not_started = f"the agent could not be started: {exc}{undo}"
            violations, returned = self._verify(before, baseline_kernel, next_version, mask.masked)
            if not_started:
                violations.insert(0, not_started)
            if timed_out:
                violations.insert(
                    0, f"the agent ran past its {self.options.timeout_s:g} s limit and was stopped"
                )
            if cancelled:
                violations.insert(0, "the agent was cancelled")
            if code not in (None, 0):
                violations.append(f"the agent exited with status {code}")
        return RestartReport(
            workspace=str(self.ws.root),
            mask=mask,
            mask_commit=mask_commit,
            next_version=next_version,
            brief_path=str(brief_path),
            agent_command=argv,
            agent_exit_code=code,
            agent_timed_out=timed_out,
            agent_cancelled=cancelled,
            violations=violations,
            completed=not violations,
            **returned,
        )
