"""run-iteration: measure the current kernel.py, record it as the next memory version, create
the matching experiment, and commit, exactly as the optimizer workflow asks an agent to.

One engine call for the CLI (`kernelscope iterate`) and the daemon. The gate and the
benchmark run once, against the baseline (v0's kernel, from git) and the parent version
(the latest passing version), interleaved in one run. A failed gate is recorded too
(pitfalls_and_fixes, quality_gate, a FAIL experiment); the failed kernel is kept on a side
ref, and kernel.py is restored to the last passing version only when asked
(`revert_on_fail`: an agent wants that, a person editing in an editor does not). So is a run
a resource cap stopped (judged, no verdict on its answer: STOPPED). A run that judged nothing
(protocol/bench.py NO_VERDICT_KINDS: a setup error, an unsupported kernel, a dead worker, a harness error) is
no attempt: it records nothing and raises `NothingJudged`, with `kernelscope bench`'s status.
"""

from __future__ import annotations

import math
import os
import shlex
import tempfile
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kernelscope.daemon.engine import Cancelled, DataError, KernelscopeError
from kernelscope.daemon.engine.memory import atrex_fields
from kernelscope.daemon.engine.memory.atomic_io import iteration_lock, restart_in_flight
from kernelscope.daemon.engine.memory.core import kernelscope_block
from kernelscope.daemon.engine.memory.git_place import FAILED_REF_PREFIX
from kernelscope.daemon.engine.memory.records import RESTART_ID_ENV, MemoryEntry, MemoryManager, utc_now_iso
from kernelscope.daemon.engine.memory.stop_rule import readme_verdict
from kernelscope.daemon.engine.run.bench import BenchRequest, run_benchmark
from kernelscope.daemon.engine.store import ExperimentStore
from kernelscope.daemon.engine.store.config import has_password, public_url, read_without_db
from kernelscope.daemon.engine.store.errors import StoreError
from kernelscope.daemon.engine.workflows.cut_short import finish_cut_short
from kernelscope.daemon.engine.workflows.git import Git
from kernelscope.daemon.engine.workflows.probe import kernel_at, last_passing, v0_kernel_at
from kernelscope.daemon.engine.workspace.atrex import refuse_if_supervised, reserved_versions
from kernelscope.daemon.engine.workspace.kernel_scan import scan_kernel_source
from kernelscope.daemon.engine.workspace.kinds import detect_kind
from kernelscope.daemon.engine.workspace.workspace import Workspace
from kernelscope.protocol import kinds, stats, workspace_files
from kernelscope.protocol.bench import (
    BenchResult,
    ConfigResult,
    exit_status,
    judged_nothing,
    verdict_headline,
    verdict_label,
    verdict_why,
)
from kernelscope.protocol.commands import IterationResult, StopConditionStatus
from kernelscope.protocol.experiment import KernelExperiment
from kernelscope.protocol.memory import format_version, memory_schema_template, parse_version
from kernelscope.protocol.record_rules import REFERENCE_NAMES, format_score, gate_result, section_get
from kernelscope.protocol.workspace import ReadmeInfo


class NothingJudged(DataError):
    """The run judged nothing (protocol/bench.py judged_nothing): no version, experiment,
    commit or side ref was written. Its exit status and kind are `kernelscope bench`'s for the
    run (2, or 130 for an interruption)."""

    def __init__(self, message: str, bench: BenchResult) -> None:
        super().__init__(message)
        self.exit_code = exit_status(bench)
        self.kind = "interrupted" if self.exit_code == Cancelled.exit_code else DataError.kind


@dataclass
class IterateOptions:
    action_category: str | None = None
    action_description: str | None = None
    expected_impact: str | None = None
    revert_on_fail: bool = False
    mode: str = "auto"
    seeds: int | None = None  # None: the evaluator's own count (the runner's --seeds)
    timeout_s: float = 900.0
    memory_limit_mb: int | None = None  # None: half of RAM, 0: none
    python: str | None = None
    db_url: str | None = None
    extra_args: tuple[str, ...] = ()
    on_progress: Callable[[int, int], None] | None = None
    force: bool = False  # write even when an orchestrator drives the workspace
    # the partial restart whose agent runs this iteration (its mark's id: refuse_if_promised);
    # None: the environment's RESTART_ID_ENV, which the restart sets for its agent
    restart_id: str | None = None


def _headline(configs: list[ConfigResult]) -> ConfigResult | None:
    """The configuration a one-number summary reports: the largest workload (slowest)."""
    timed = [c for c in configs if c.candidate_ms is not None]
    return max(timed, key=lambda c: c.candidate_ms or 0.0) if timed else None


def _no_measure_note(kind: str) -> str:
    """Why a passing GPU run evaluated no condition of `kind`, and what to do: a GB/s or TFLOP/s
    target needs the reference's bytes_moved(config) or flops(config) (the harness's Contract);
    without it the condition stays not evaluated on every iteration, and stop_conditions_met
    at most null (unknown is never met). A utilization target needs one of them and the peak it
    is a percentage of, which the README cites (run/bench.py `_peaks`)."""
    if kind == "utilization":
        return (
            "no peak utilization: it needs the README's hardware peak (`HBM bandwidth: 8 TB/s <- "
            "source`, or a TFLOP/s figure) and the reference module's bytes_moved(config) or "
            "flops(config); without them no iteration evaluates this condition"
        )
    measure = {"bandwidth": ("bytes_moved", "GB/s"), "tflops": ("flops", "TFLOP/s")}.get(kind)
    if measure is None:
        return "no configuration was timed"
    function, unit = measure
    return (
        f"no {unit}: the reference module defines no {function}(config), or it gave 0; define it in "
        "the reference module, or no iteration evaluates this condition"
    )


def latency_is_geomean(root: Path, readme: ReadmeInfo | None) -> bool:
    """Whether the workspace's one latency figure is the geomean over its workloads, as atrex
    writes it there (SOL-ExecBench, Atrex-Bench: protocol/kinds.py `latency_geomean`), so that
    records of both writers state one figure; else it is the slowest configuration's."""
    return kinds.spec_of(detect_kind(root, readme)).latency_geomean


def headline_performance(bench: BenchResult, geomean: bool = False) -> dict[str, Any]:
    """The figures a record states for the version (`performance`'s latency_us, tflops,
    bandwidth_gbps and their peak fractions, per-workload latency), on a passing run: the
    latency over the workloads as the workspace's objective takes it (`geomean`: their geomean,
    with atrex's marker `latency_us_geomean` beside it; else the slowest configuration's, the
    largest workload), the throughput figures the slowest configuration's. Interpreter
    throughput is no GPU figure and is left out. Each stop condition is judged on these
    (memory/stop_rule.py)."""
    headline = _headline(bench.configs) if bench.passed else None
    if headline is None or headline.candidate_ms is None:
        return {}
    perf: dict[str, Any] = {"latency_us": round(headline.candidate_ms * 1000.0, 4)}
    if geomean:
        timed = [c.candidate_ms for c in bench.configs if c.candidate_ms]
        perf["latency_us"] = perf["latency_us_geomean"] = round(stats.geomean(timed) * 1000.0, 4)
    if bench.mode == "gpu":
        perf["tflops"] = headline.tflops
        perf["bandwidth_gbps"] = headline.gbps
        if headline.tflops_fraction is not None:
            perf["tflops_peak_utilization_pct"] = round(100 * headline.tflops_fraction, 2)
        if headline.bandwidth_fraction is not None:
            perf["bandwidth_peak_utilization_pct"] = round(100 * headline.bandwidth_fraction, 2)
    perf["latency_us_by_shape"] = {
        c.name: round(c.candidate_ms * 1000.0, 4) for c in bench.configs if c.candidate_ms is not None
    }
    return perf


def evaluate_stop_conditions(
    readme: ReadmeInfo | None, bench: BenchResult, geomean: bool = False
) -> tuple[list[StopConditionStatus], bool | None]:
    """Each README stop condition judged by the one rule (memory/stop_rule.py) on the figures
    this run's record states (`headline_performance`, `geomean` as there), not on its best
    configuration: the answer recorded is the one the file lens, compare and the restart's
    report give of the same record (stop_rule.readme_verdict). One that cannot be evaluated
    (interpreter timings, a failed gate, no metric) is `met: None`, and all of them together
    `stop_conditions_met`, at most null where the README states one kernelscope cannot read."""
    measured = {
        "performance": headline_performance(bench, geomean),
        "quality_gate": {"result": "PASS" if bench.passed else "FAIL"},
        "kernelscope": {"mode": bench.mode},
    }
    return readme_verdict(readme, measured, _no_measure_note)


def refuse_recorded_code(root: Path, db_url: str | None = None, measured: bytes | None = None) -> None:
    """Nothing is ever deleted, so a version recorded twice stays twice: kernel.py identical to
    a recorded version is refused, naming it, before any GPU time (`force` records anyway).
    `measured`: the text an iteration measured, checked again under the iteration lock, where
    another iteration of the same text may have recorded it in the meantime."""
    from kernelscope.daemon.engine.history.service import HistoryService

    data = workspace_files.read_bytes(root / "kernel.py") if measured is None else measured
    check = HistoryService(root, db_url=db_url).fingerprint(data.decode("utf-8", errors="replace"))
    lead = check.matches[0] if check.matches else None
    if lead is not None and lead.kind == "identical" and lead.version is not None:
        raise DataError(
            f"kernel.py is {check.verdict}: nothing new to record"
            + (" (another iteration recorded it while this one measured)" if measured is not None else "")
            + " (change kernel.py, or pass --force to record it again)"
        )


def refuse_if_promised(
    memory: MemoryManager, mark: dict[str, Any] | None, restart_id: str | None, measured: bool
) -> None:
    """While a partial restart runs, the version it promised its agent (the mark's next
    version, "first iteration: v<N>" in the brief) is the agent's until it is recorded: any
    other iteration (a person's iterate, the editor's) is refused, naming the restart. One
    started after the mask, before the agent, found the mark already there and recorded v<N>;
    the agent's own iteration became v<N+1> and the restart's report credited the wrong
    measurement. The agent's iterations carry the mark's id (RESTART_ID_ENV, in the
    environment the restart starts it with, or `--restart-id`, which its brief names). Once
    v<N>'s name is taken (MemoryManager.taken, as next-version counts: a dangling link or a
    folder there holds it too, and nobody can record it), or the restart has ended (its
    agent may have written nothing), iterations record as usual. Checked when an iteration
    starts (no GPU time spent) and under the iteration lock before it records."""
    if mark is None or mark.get("by") != "restart" or mark.get("id") == restart_id:
        return
    promised = mark.get("next_version")
    if not isinstance(promised, str) or memory.taken(promised):
        return
    if not restart_in_flight(memory.workspace):
        return
    raise DataError(
        f"a partial restart (kernelscope restart, started at {mark.get('at')}, seed {mark.get('seed')}) "
        f"is running in this workspace and gave {promised} to the agent it started: only that agent "
        f"records {promised} while the restart runs, so nothing was recorded"
        + ("" if measured else " (nothing was measured)")
        + f" (run the iteration again once the agent has recorded {promised}, or the restart has ended;"
        + f" the agent's iterations carry {RESTART_ID_ENV}={mark.get('id')}, which the restart sets in its"
        + " environment: an agent whose shell does not pass it on gives it as --restart-id, as its brief"
        + " says; this iteration carried "
        + (f"{restart_id}" if restart_id else "none")
        + ")"
    )


def refuse_if_restarted(
    memory: MemoryManager, mask_half: dict[str, Any] | None, restart_id: str | None = None
) -> None:
    """An iteration that measured while a partial restart (a mask-half: the restart's, the
    memory command's or the editor's) masked the memory records nothing: the restart gave its next version to
    the fresh run it starts (its agent's brief: "first iteration: v<N>"), and this measurement
    belongs to the run before it. Recorded, it took v<N>, the agent's own iteration became
    v<N+1>, and the restart's report gave the old measurement as the agent's result.
    `mask_half`: the mark the iteration read when it started (MemoryManager.mask_half_mark);
    `restart_id`: the restart whose agent runs the iteration, if any (refuse_if_promised)."""
    now = memory.mask_half_mark()
    if now == mask_half or now is None:
        refuse_if_promised(memory, now, restart_id, measured=True)
        return
    masked = ", ".join(str(v) for v in now.get("masked") or []) or "nothing"
    what = (
        f"a partial restart (kernelscope restart) masked {masked} and gave {now.get('next_version')} "
        "to the agent it starts"
        if now.get("by") == "restart"
        else f"a mask-half masked {masked} (next version {now.get('next_version')}, for a fresh run)"
    )
    raise DataError(
        f"{what} while this iteration measured (at {now.get('at')}, seed {now.get('seed')}): this "
        "measurement belongs to the run before it, so nothing was recorded (run the iteration "
        "again to record kernel.py in the new run)"
    )


def exp_record_command(root: Path, store_url: str, record: dict[str, Any], kernel_text: str | None) -> str:
    """The `kernelscope exp record` command line that adds a recorded version's experiment by
    hand (a store that refused its row, an iteration cut short before it), from its record and
    kernel.py: one that runs as printed. `--db` only for a store commands do not read without
    it, and never with a password, masked or not (`store_note` says what to export)."""
    action = [section_get(record.get("optimization"), k) for k in ("action_category", "action_description")]
    summary = f"{action[0]}: {action[1]}"
    passed = gate_result(record.get("quality_gate"), record.get("correctness")) == "PASS"
    score = kernelscope_block(record).get("score_vs_v0") if passed else None
    kernels = (
        [k.name for k in scan_kernel_source(kernel_text, "kernel.py", whole=True).kernels]
        if kernel_text
        else []
    )
    parts = ["kernelscope", "exp", "record", "-m", summary[:80].split("\n")[0], "-w", str(root)]
    parts += ["--memory-version", str(record.get("version")), *(a for k in kernels for a in ("--kernel", k))]
    parts += ["--score", str(score)] if isinstance(score, (int, float)) and score > 0 else []
    parts += [] if passed else ["--buggy"]
    command = shlex.join(parts)
    if read_without_db(store_url):  # (the store every command reads: no --db to give)
        return command
    if has_password(store_url):  # its URL with the password is the user's to give, never printed
        return command + ' --db "$KERNELSCOPE_DB_URL"'
    return command + " " + shlex.join(["--db", public_url(store_url)])


def store_note(store_url: str) -> str:
    """What an `exp_record_command` of a store with a password needs before it runs as printed."""
    if read_without_db(store_url) or not has_password(store_url):
        return ""
    return " (with KERNELSCOPE_DB_URL exported as the store's URL: its password is not printed)"


def finish_cut_short_iterations(root: Path, store: ExperimentStore, force: bool = False) -> list[str]:
    """An earlier iteration killed before it recorded its commit hash is finished
    (workflows/cut_short.py) before anything asks which versions were recorded: that version
    can then be a parent, and kernel.py unchanged since is known as recorded. Its experiment,
    which came last, is named when the store lacks it."""
    memory, git = MemoryManager(root), Git(root)
    if not memory.memory_dir.is_dir():
        return []
    with iteration_lock(root):
        finished = finish_cut_short(memory, git, allow_supervised=force)
    messages = []
    for version, message in finished.items():
        if not store.list_experiments(workspace=str(root), memory_version=version):
            record = memory.entry(version).raw or {}
            failed = gate_result(record.get("quality_gate"), record.get("correctness")) != "PASS"
            revision = FAILED_REF_PREFIX + version if failed else str(record.get("git_commit_hash"))
            command = exp_record_command(root, store.url, record, git.show_file(revision, root / "kernel.py"))
            message += (
                f"; the experiment store has no row for it: `{command}` adds one{store_note(store.url)}"
            )
        messages.append(message)
    return messages


class Iteration:
    """One run-iteration on a workspace."""

    def __init__(self, workspace: Path, options: IterateOptions) -> None:
        from kernelscope.daemon.engine.store.config import resolve_db_url

        self.ws = Workspace(workspace)
        self.store_url = resolve_db_url(options.db_url)
        self.options = options
        self.git = Git(self.ws.root)
        self.memory = self.ws.memory
        self.restart_id = options.restart_id or os.environ.get(RESTART_ID_ENV) or None

    def _kernel_at(self, entry: MemoryEntry | None, tmp: Path, name: str) -> Path | None:
        return kernel_at(self.git, self.ws.kernel_path, entry, tmp, name)

    def run(self, cancel: threading.Event | None = None) -> IterationResult:
        if not self.ws.kernel_path.is_file():
            raise DataError(f"no kernel.py in {self.ws.root}")
        if not self.git.is_repository():
            raise DataError(f"{self.ws.root} is not a git repository: run `git init` there first")
        self.git.require()  # (git refuses a repository owned by another user: said before measuring)
        refuse_if_supervised(
            self.ws.root, "run an iteration (record a version and commit it)", self.options.force
        )
        # The store is opened (created, its schema checked) before anything is measured: one
        # that fails only after the record was written and committed would leave the version
        # without its experiment and its commit hash, and a retry refused as already recorded.
        store = ExperimentStore(self.store_url)
        store.engine  # noqa: B018 - the property opens it
        if store.read_only:
            raise StoreError(
                f"cannot record into {public_url(self.store_url)}: this process may not write it"
            )
        messages = finish_cut_short_iterations(self.ws.root, store, self.options.force)
        if not self.options.force:
            try:
                refuse_recorded_code(self.ws.root, self.options.db_url)
            except DataError as exc:  # (a version finished above is the one it matches)
                raise DataError("; ".join([*messages, str(exc)])) from None
        readme = self.ws.readme() if self.ws.readme_path.is_file() else None
        mask_half = self.memory.mask_half_mark()  # (before the memory this iteration builds on)
        refuse_if_promised(self.memory, mask_half, self.restart_id, measured=False)
        entries = self.memory.scan()
        baseline_entry = next((e for e in entries if e.record is not None and e.number == 0), None)
        parent_entry = last_passing(entries)
        with tempfile.TemporaryDirectory(prefix="kernelscope-iterate-") as tmp_name:
            tmp = Path(tmp_name)
            baseline_kernel = v0_kernel_at(self.git, self.ws.kernel_path, baseline_entry, tmp)
            parent_kernel = self._kernel_at(parent_entry, tmp, "parent")
            # The text the measurement starts from (the benchmark copies the workspace first):
            # what is committed and recorded, even if kernel.py is edited while it runs.
            measured = workspace_files.read_bytes(self.ws.kernel_path)
            bench = run_benchmark(
                BenchRequest(
                    workspace=self.ws.root,
                    baseline=str(baseline_kernel) if baseline_kernel else "reference",
                    parent=parent_kernel,
                    mode=self.options.mode,
                    seeds=self.options.seeds,
                    timeout_s=self.options.timeout_s,
                    memory_limit_mb=self.options.memory_limit_mb,
                    python=self.options.python,
                    extra_args=list(self.options.extra_args),
                    on_progress=self.options.on_progress,
                ),
                cancel=cancel,
            )
            # (a gate's evaluator times against its own reference, whatever baseline it was given)
            timed_vs_v0 = (
                baseline_kernel is not None and Path(bench.baseline).resolve() == baseline_kernel.resolve()
            )
        if cancel is not None and cancel.is_set():
            # The user asked to stop: a cancelled run measured nothing, so nothing is recorded.
            raise Cancelled("the iteration was cancelled before it recorded anything; nothing was written")
        if judged_nothing(bench):
            raise NothingJudged(self._nothing_judged(bench, messages), bench)
        # The write phase runs under the workspace's iteration lock and takes its version
        # there: an iteration started by the daemon and one started by the CLI or an agent
        # at the same time record v<N> and v<N+1> and never commit over each other.
        with iteration_lock(self.ws.root):
            refuse_if_restarted(self.memory, mask_half, self.restart_id)
            v0_code = baseline_entry if baseline_kernel is not None else None
            return self._record(store, bench, readme, parent_entry, messages, measured, timed_vs_v0, v0_code)

    def _record(
        self,
        store: ExperimentStore,
        bench: BenchResult,
        readme: ReadmeInfo | None,
        parent_entry: MemoryEntry | None,
        messages: list[str],
        measured: bytes,
        timed_vs_v0: bool,
        v0_code: MemoryEntry | None,
    ) -> IterationResult:
        if not self.options.force:  # (an iteration of the same text may have finished meanwhile)
            refuse_recorded_code(self.ws.root, self.options.db_url, measured)
        edited = self._edited_since(measured)
        if edited:
            messages.append(
                "kernel.py was edited while it was measured: the commit holds the measured text; "
                "the newer edit stays in the working tree, not recorded"
            )
        version = self._free_version()
        # A score vs v0 is against v0's kernel and nothing else (v0's own is 1.0 by definition);
        # timed against the reference, the number is a speedup vs the reference, named so.
        versus = "v0" if timed_vs_v0 or version == "v0" else REFERENCE_NAMES[0]
        if versus != "v0" and v0_code is None:  # (else a gate timed against its own reference)
            messages.append(_no_v0_code(version, self.memory))
        if version == "v0" and bench.passed:
            # exactly 1.0, the reference point of every later score, with no interval: the run
            # measured v0 against the problem's reference, and that interval beside the 1.0
            # (a demo's said [7.8e-05, 1.07e-04]) did not hold its own score
            bench.score, bench.score_ci = 1.0, None
        geomean = latency_is_geomean(self.ws.root, readme)
        stops, stops_met = evaluate_stop_conditions(readme, bench, geomean)
        record = self._memory_record(version, bench, parent_entry, stops, versus, geomean)
        head_before = self.git.head()
        memory_path = self.memory.write_record(version, record)
        summary = self._summary_line(version, bench, record, versus)
        failed_ref = None if bench.passed else FAILED_REF_PREFIX + version
        try:
            if failed_ref is None:
                commit = self.git.commit_files(
                    [self.ws.kernel_path, memory_path], summary, {self.ws.kernel_path: measured}
                )
                kernel_commit = commit
            else:
                kernel_commit = self.git.store_on_side_ref(
                    self.ws.kernel_path, failed_ref, f"{summary} (failed kernel)", measured
                )
                commit = self.git.commit_paths([memory_path], summary)
        except KernelscopeError as exc:
            # Nothing half-done stays: not the record, not the failed kernel's ref.
            memory_path.unlink(missing_ok=True)
            if failed_ref is not None:
                self.git.delete_ref(failed_ref)
            raise DataError(
                f"{version} was measured but could not be committed, so nothing was recorded: {exc}"
            ) from None
        result = IterationResult(
            workspace=str(self.ws.root),
            version=version,
            parent_version=parent_entry.version if parent_entry else None,
            passed=bench.passed,
            verdict=verdict_label(bench),
            mode=bench.mode,
            score=bench.score if bench.passed and versus == "v0" else None,
            speedup_vs_reference=bench.score if bench.passed and versus != "v0" else None,
            score_vs_parent=bench.score_vs_parent,
            latency_us=record["performance"]["latency_us"],
            memory_path=str(memory_path),
            stop_conditions=stops,
            stop_conditions_met=stops_met,
            exit_status=exit_status(bench),
            failure=_failure_reason(bench),
            messages=messages + bench.messages,
            warnings=readme.warnings if readme is not None else [],
        )
        if failed_ref is not None:
            result.failed_ref = failed_ref
            if self.options.revert_on_fail and parent_entry is not None and parent_entry.record is not None:
                if self._edited_since(measured):  # (asked again: hooks and the store took time)
                    result.messages.append(
                        "kernel.py was not reverted: it holds an edit newer than the failed text"
                    )
                else:
                    self.git.restore_file(str(parent_entry.record.git_commit_hash), self.ws.kernel_path)
                    result.reverted = True
        # Record the hash in the memory record, then commit the memory file once more so
        # HEAD's copy carries it too (the store's row was made with it).
        self.memory.update(version, [f'git_commit_hash="{commit}"'], allow_supervised=self.options.force)
        result.commit = commit
        try:
            self.git.commit_paths([memory_path], f"{version}: record commit hash {commit[:12]}")
        except KernelscopeError as exc:  # the iteration is recorded and committed: say, do not fail
            result.messages.append(
                f"{version} is recorded (commit {commit[:12]}), but committing its record once more "
                f"with that hash was refused, so HEAD's {memory_path.name} lacks it: {exc}"
            )
        # The store's row comes last: the version is complete in memory and git (its hash
        # recorded) whatever happens to the store, a team server gone during a long measurement
        # or its disk full, and the error says what was recorded instead of "nothing was".
        try:
            experiment = self._experiment(
                store,
                version,
                bench,
                parent_entry,
                readme,
                measured,
                head_before,
                kernel_commit,
                commit,
                versus,
            )
            store.create_experiment(experiment)
        except StoreError as exc:
            command = exp_record_command(
                self.ws.root, self.store_url, record, measured.decode(errors="replace")
            )
            raise StoreError(
                f"{version} is recorded in {memory_path.name} and committed ({commit[:12]}), but the "
                f"experiment store did not take its row: {exc}. Once it takes writes, `{command}` adds "
                f"the experiment{store_note(self.store_url)}"
            ) from None
        result.experiment_id = experiment.id
        return result

    def _nothing_judged(self, bench: BenchResult, messages: list[str]) -> str:
        """What happened to a run that judged nothing, and how to go on: it is no attempt on
        the kernel (no FAIL to learn from), so it takes no version."""
        said = bench.error.message if bench.error else "no verdict"
        return "; ".join(
            [
                *messages,
                f"{verdict_headline(bench)}: {said}. Nothing was recorded: no memory record, "
                f"experiment or commit, and {self._free_version()} is still the next version "
                "(run the iteration again once the run can judge kernel.py)",
            ]
        )

    def _edited_since(self, measured: bytes) -> bool:
        try:
            return workspace_files.read_bytes(self.ws.kernel_path) != measured
        except OSError:
            return True  # deleted or unreadable now: the measured text is what is committed

    def _free_version(self) -> str:
        """The next version, never one a supervisor's running episode will write (when the
        user forced an iteration into a supervised workspace)."""
        number = parse_version(self.memory.next_version())
        reserved = reserved_versions(self.ws.root)
        while number in reserved:
            number += 1
        return format_version(number)

    # -- records ----------------------------------------------------------------------

    def _action(self, version: str) -> tuple[str, str]:
        """The action category and description; an unnamed first iteration is the baseline."""
        category = self.options.action_category or ("baseline" if version == "v0" else "unspecified")
        description = self.options.action_description or "no description given"
        return category, description

    @staticmethod
    def _summary_line(version: str, bench: BenchResult, record: dict[str, Any], versus: str) -> str:
        category = record["optimization"]["action_category"]
        if not bench.passed:
            return f"{version.upper()}: {verdict_label(bench)} | {category}"
        latency = record["performance"]["latency_us"]
        perf = format_score(bench.score, versus=versus) if bench.score else "measured"
        if latency is not None:
            perf += f", {latency:.1f}us"
        if bench.mode != "gpu":
            perf += " (interpreter)"
        return f"{version.upper()}: {perf} | {category}"

    def _memory_record(
        self,
        version: str,
        bench: BenchResult,
        parent: MemoryEntry | None,
        stops: list[StopConditionStatus],
        versus: str,
        geomean: bool,
    ) -> dict[str, Any]:
        record = memory_schema_template(version, utc_now_iso())
        category, description = self._action(version)
        perf = record["performance"]
        headline = headline_performance(bench, geomean)
        if headline:
            perf.update(headline)
            previous = parent.record if parent else None
            if previous is not None:
                deltas = perf["comparison_with_previous"]
                # the parent's latency as the same figure (its slowest workload's, written
                # before iterate wrote the geomean here, is recomputed or left null, saying why)
                latencies = atrex_fields.comparable_latencies(
                    previous, {"performance": perf}, (parent.version if parent else "the parent", version)
                )
                if latencies.a is not None and latencies.b is not None:
                    deltas["latency_delta"] = round(latencies.b - latencies.a, 4)
                    deltas["latency_delta_figure"] = latencies.figure
                elif latencies.why:
                    deltas["latency_delta_note"] = latencies.why
                for key, metric in (
                    ("tflops_delta", "tflops"),
                    ("bandwidth_delta", "bandwidth_gbps"),
                ):
                    before, now = previous.metric(metric), perf[metric]
                    deltas[key] = None if before is None or now is None else round(now - before, 4)
                deltas["previous_version"] = parent.version if parent else None
                deltas["speedup_vs_previous"] = bench.score_vs_parent
        report = bench.gate if bench.passed else None
        if report is not None and report.performance_objective:
            # the gate scores by an objective (atrex v0.3's evaluators): recorded as atrex's
            # session_io.py records it, so kernelscope's records and atrex's rank alike
            perf.update(
                performance_objective=report.performance_objective,
                performance_score=report.performance_score,
                speedup_vs_ref_mean=report.speedup_vs_ref_mean,
                speedup_vs_ref_geomean=report.speedup_vs_ref_geomean,
            )
        elif versus != "v0" and bench.passed and bench.score:
            # timed against the reference (no v0 code, or a gate's own reference): the speedup
            # over it, in the field every reader shows as one ("vs ref"), never as a score vs v0
            perf["speedup_vs_ref_geomean"] = bench.score
        record["optimization"].update(
            action_category=category,
            action_description=description,
            expected_impact=self.options.expected_impact,
        )
        worst_rel = max((c.rel_err for c in bench.configs if c.rel_err is not None), default=None)
        status = (
            "PASS"
            if bench.passed
            else ("TIMEOUT_FAIL" if bench.error and bench.error.kind == "timeout" else "FAIL")
        )
        record["correctness"] = {"rel_err": worst_rel, "status": status}
        reason = _failure_reason(bench)
        record["quality_gate"] = {"result": "PASS" if bench.passed else "FAIL", "failure_reason": reason}
        if not bench.passed:
            record["pitfalls_and_fixes"].append(
                {
                    "error_type": bench.error.kind if bench.error else "gate",
                    "error_message": reason,
                    "root_cause": f"the run was stopped ({verdict_why(bench)})"
                    if verdict_why(bench)
                    else "quality gate failed on the candidate kernel.py",
                    "fix_applied": "reverted kernel.py to the last passing version"
                    if self.options.revert_on_fail
                    else "none yet (kernel.py left as it was)",
                    "lesson": None,
                    "failed_kernel_ref": FAILED_REF_PREFIX + version,
                }
            )
        record["kernelscope"] = {
            "store": public_url(self.store_url),  # where its experiment is (store/adopt.py)
            "mode": bench.mode,
            "baseline": versus,  # what the in-run score (and score_ci) is against
            "score_vs_v0": bench.score if versus == "v0" else None,
            "score_ci": bench.score_ci,
            "score_vs_parent": bench.score_vs_parent,
            "noisy": bench.noisy,
            "noise_band": bench.noise_band,
            "verdict": bench.verdict,
            "comparable": bench.comparable,
            "stop_conditions": [s.model_dump() for s in stops],
            "env": bench.env,
        }
        return record

    def _experiment(
        self,
        store: ExperimentStore,
        version: str,
        bench: BenchResult,
        parent: MemoryEntry | None,
        readme: ReadmeInfo | None,
        measured: bytes,
        head_before: str | None,
        kernel_commit: str,
        commit: str,
        versus: str,
    ) -> KernelExperiment:
        """The store's row of the recorded version: the measured text's kernels and its change
        since the parent (read from the commits, not from a kernel.py edited since)."""
        workspace = str(self.ws.root)
        parent_id = ""
        if parent is not None:
            found = store.list_experiments(workspace=workspace, memory_version=parent.version)
            if not found and parent.record is not None:
                # The workspace may have moved: the parent's commit identifies its experiment.
                parents_commit = parent.record.git_commit_hash
                found = [
                    e
                    for e in store.list_experiments(memory_version=parent.version)
                    if parents_commit and e.metrics.get("git_commit_hash") == parents_commit
                ]
            parent_id = found[-1].id if found else ""
        scan = scan_kernel_source(
            measured.decode("utf-8", errors="replace"), str(self.ws.kernel_path), whole=True
        )
        kernels = [k.name for k in scan.kernels]
        category, description = self._action(version)
        parent_commit = parent.record.git_commit_hash if parent and parent.record else None
        # the store's score is a speedup vs v0 (failures, top, the lenses rank by it)
        score = bench.score if bench.passed and versus == "v0" else None
        if score is not None and (not math.isfinite(score) or score <= 0):
            score = None
        env = bench.env
        env_text = ", ".join(
            str(v)
            for v in (
                env.get("gpu") or env.get("mode"),
                f"CUDA {env.get('cuda')}" if env.get("cuda") else None,
                f"torch {env.get('torch')}",
                f"triton {env.get('triton')}",
            )
            if v
        )
        raw_lines = [f"Iteration {version} - {'SUCCESS' if bench.passed else 'FAIL'} ({bench.mode})"]
        for config in bench.configs:
            raw_lines.append(
                f"- {config.name}: "
                + (format_score(config.speedup, versus=versus) if config.speedup else "not timed")
                + (
                    f", {format_score(config.speedup_vs_parent, versus='parent')}"
                    if config.speedup_vs_parent
                    else ""
                )
                + ("" if config.passed else f" FAIL: {config.error.message if config.error else ''}")
            )
        return KernelExperiment(
            score=score,
            raw_result="\n".join(raw_lines),
            dtype_sig=(readme.target.dtype if readme and readme.target.dtype else ""),
            env=env_text[:2000],
            is_buggy=not bench.passed,
            error_message=(bench.error.message[:4000] if bench.error else ""),
            change_summary=f"{category}: {description}"[:80].split("\n")[0],
            detailed_description=description,
            code_change=self.git.diff_file(
                str(parent_commit) if parent_commit else None, self.ws.kernel_path, to=kernel_commit
            ),
            base_commit=str(parent_commit or head_before or ""),
            operator_sig=f"kernel.py: {', '.join(kernels)}"[:1000],
            profiling_info="not profiled: kernelscope iterate measures latency, GB/s and TFLOP/s only",
            status="done"
            if bench.passed
            else ("timeout" if bench.error and bench.error.kind == "timeout" else "failed"),
            pid=parent_id,
            workspace=workspace,
            kernels=kernels,
            memory_version=version,
            metrics={
                "mode": bench.mode,
                "score_ci": bench.score_ci,
                "score_vs_parent": bench.score_vs_parent,
                "speedup_vs_reference": bench.score if bench.passed and versus != "v0" else None,
                "configs": {c.name: c.model_dump(exclude={"error"}) for c in bench.configs},
                "git_commit_hash": commit,
            },
            tags=[bench.mode, category],
        )


def _failure_reason(bench: BenchResult) -> str | None:
    """Why a recorded run did not pass, for its record and result: a run a resource cap
    stopped says so first (`STOPPED (resource cap: no verdict on the answer): ...`), a
    failed gate is its error's message."""
    if bench.passed:
        return None
    said = bench.error.message if bench.error else "the gate failed"
    return f"{verdict_headline(bench)}: {said}" if verdict_why(bench) else said


def _no_v0_code(version: str, memory: MemoryManager) -> str:
    """Said once, when there is no v0 code to time against (probe.v0_kernel_at)."""
    try:
        named = memory.entry("v0").raw.get("git_commit_hash")  # type: ignore[union-attr]
    except (DataError, AttributeError):
        named = None
    if not memory.path_of("v0").exists():
        where = "there is no memory/v0.json"
    elif isinstance(named, str) and named:
        where = f"v0's record names commit {named}, which holds no kernel.py"
    else:
        where = (
            "v0's record names no commit, no commit subject names v0, and no commit added "
            "memory/v0.json, without other records, together with kernel.py"
        )
    return (
        f"no v0 kernel.py to time against ({where}): {version} was timed against the reference, "
        "so its speedup is recorded and shown as a speedup vs the reference, not a score vs v0"
    )


def run_iteration(
    workspace: Path, options: IterateOptions, cancel: threading.Event | None = None
) -> IterationResult:
    return Iteration(workspace, options).run(cancel)
