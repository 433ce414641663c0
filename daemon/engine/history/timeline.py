"""A workspace's history as one object: every memory version with its kernel.py (from git),
its measured effect, and every other kernel that was tried (failed side refs, atrex episode
branches, experiments that carry code).

Built once per history state (`HistoryKey`) with a handful of git processes, then queried by
blame, tried values, fingerprint and compare without touching disk. Version kernels come from:
- the version's commit (history/version_code.py, the rule iterate reads v0's kernel by too):
  `git_commit_hash` of the record (kernelscope iterate, atrex promoted episodes: the candidate
  commit on the episode branch, whose kernel.py is the one squash-merged on the main line),
  else a `V3: ...` commit subject, else (v0) the commit that added v0.json and no other record;
- `refs/kernelscope/failed/v<N>` for a version whose gate failed (its kernel is not on HEAD);
- the atrex episode branch (`refs/heads/atrex/long-eNNNN-*`, or `refs/remotes/<remote>/atrex/...`
  in a clone) of a version recorded without a commit (a pivot: its last checkpoint is what was
  tried).
"""

from __future__ import annotations

import hashlib
import re
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from kernelscope.daemon.engine import load_json
from kernelscope.daemon.engine.history import gitdata
from kernelscope.daemon.engine.history.source import FACTS, SourceFacts, content_key, no_gc_pauses
from kernelscope.daemon.engine.history.unified_diff import apply_unified_diff
from kernelscope.daemon.engine.history.version_code import (
    VERSION_SUBJECT,
    cited_commit,
    commit_object,
    subject_version,
    version_commits,
)
from kernelscope.daemon.engine.memory import atrex_fields
from kernelscope.daemon.engine.memory.core import measured_latency
from kernelscope.daemon.engine.memory.git_place import FAILED_REF_PREFIX
from kernelscope.daemon.engine.memory.records import MemoryEntry, MemoryManager
from kernelscope.daemon.engine.memory.scores import (
    failure_text,
    kernelscope_block,
    parent_effect,
    previous_version,
    version_score,
)
from kernelscope.daemon.engine.workspace import atrex
from kernelscope.daemon.engine.workspace.workspace import KERNEL_NAME, Workspace
from kernelscope.protocol import workspace_files
from kernelscope.protocol.experiment import KernelExperiment
from kernelscope.protocol.history import ScoreValue, VersionEffect
from kernelscope.protocol.memory import MemoryRecord, as_float
from kernelscope.protocol.record_rules import format_score
from kernelscope.protocol.workspace import MetricKind

Built = TypeVar("Built")
BUFFER_MEMO_SIZE = 8  # buffer texts whose per-buffer results are kept

_EPISODE_BRANCH = re.compile(r"^refs/(?:heads|remotes/[^/]+)/atrex/long-e(\d+)-")
_PROMOTION_SUBJECT = re.compile(r"^episode (\d+): promote")
_TRIAL_SUBJECT = re.compile(r"^(v\d+ trial \d+)")
_ACTION_LIMIT = 60


def short(commit: str | None) -> str:
    return (commit or "")[:8]


def _branch_name(ref: str) -> str:
    """`atrex/long-e0003-...` of a local branch, `origin/atrex/long-e0003-...` of a remote one."""
    for prefix in ("refs/heads/", "refs/remotes/"):
        if ref.startswith(prefix):
            return ref[len(prefix) :]
    return ref


def _first_clause(text: str | None) -> str | None:
    """The action as a blame hint shows it: the first line, cut to the change it names when
    it starts with one ("BLOCK_SIZE 1024 -> 4096: one program per..." -> "BLOCK_SIZE 1024 ->
    4096"), else its first 60 characters."""
    if not text or not text.strip() or text.strip() == "no description given":
        return None
    line = " ".join(text.strip().splitlines()[0].split())
    head, separator, _ = line.partition(": ")
    if separator and 0 < len(head) <= 48 and any(arrow in head for arrow in ("->", "→", "=>")):
        line = head
    return line if len(line) <= _ACTION_LIMIT else line[: _ACTION_LIMIT - 1] + "…"


def _optimization(record: MemoryRecord, key: str) -> str | None:
    section = record.optimization
    value = section.get(key) if isinstance(section, dict) else getattr(section, key, None)
    return None if value is None else str(value)


@dataclass
class VersionFacts:
    """One memory version: its record, kernel and measured effect."""

    entry: MemoryEntry
    record: MemoryRecord
    effect: VersionEffect
    commit: str | None = None  # the record's commit, resolved to a full hash
    kernel_blob: str | None = None
    kernel_origin: str | None = None  # "commit 1a2b3c4d", "refs/kernelscope/failed/v4", "branch ..."
    parent_commit_blob: str | None = None  # kernel.py of the commit a failed side ref was made on
    experiments: list[KernelExperiment] = field(default_factory=list)

    @property
    def version(self) -> str:
        return self.entry.version

    @property
    def number(self) -> int:
        return self.entry.number

    @property
    def masked(self) -> bool:
        return self.entry.masked

    @property
    def passed(self) -> bool:
        return self.effect.passed


@dataclass
class TriedKernel:
    """A kernel.py text that was measured or judged: a version's, or one found beside them."""

    label: str
    source: str
    blob: str
    version: str | None = None
    commit: str | None = None
    passed: bool | None = None
    masked: bool = False
    detail: str = ""  # "FAILED wrong_result rel_err 0.67", "3.20x vs v0, already measured"
    effect: VersionEffect | None = None
    order: int = 0  # larger = newer
    short_label: str = ""  # for a table cell: "v3", "v1 trial 5", "be295850"
    score: ScoreValue | None = None  # what a trial's evaluator measured, as a score vs v0


@dataclass
class History:
    """Everything the history features read, for one state of one workspace."""

    root: Path
    key: gitdata.HistoryKey
    paths: gitdata.Repository | None
    versions: dict[str, VersionFacts]
    head: str | None = None  # set from git once the versions are read (None: no git history)
    head_blob: str | None = None
    tried_kernels: list[TriedKernel] = field(default_factory=list)
    episode_versions: dict[int, str] = field(default_factory=dict)
    facts: dict[str, SourceFacts] = field(default_factory=dict)  # blob -> analysis
    unversioned_experiments: list[KernelExperiment] = field(default_factory=list)
    messages: list[str] = field(default_factory=list)
    unreadable: list[str] = field(default_factory=list)  # memory files left out: cannot be read
    memo: dict[Any, Any] = field(default_factory=dict)  # per-feature results for this state
    pending_blobs: list[str] = field(default_factory=list)
    _analysis_lock: threading.Lock = field(default_factory=threading.Lock, repr=False)
    _analyzed: bool = False

    def memoized(self, key: Any, build: Callable[[], Built]) -> Built:
        """A feature's result for this history state, built once."""
        found = self.memo.get(key)
        if found is None:
            found = self.memo[key] = build()
        return found

    def per_buffer(self, feature: str, buffer: str | None, compute: Callable[[], Built]) -> Built:
        """A per-buffer result, kept for the last few buffer texts of this history state (the
        editor asks for hints at every cursor move; the text changes far less often)."""
        table: dict[Any, Any] = self.memo.setdefault(("buffers", feature), {})
        key = buffer if buffer is None else hash(buffer)
        found = table.get(key)
        if found is not None and found[0] == buffer:
            table[key] = table.pop(key)  # most recently used last
            return found[1]
        with no_gc_pauses():
            value = compute()
        table[key] = (buffer, value)
        while len(table) > BUFFER_MEMO_SIZE:
            table.pop(next(iter(table)))
        return value

    def head_text(self) -> str | None:
        """HEAD's committed kernel.py ('' when HEAD has none, None without git)."""
        if self.paths is None or self.head is None:
            return None
        if self.head_blob is None:
            return ""
        return self.source_of(self.head_blob) or ""

    def analyzed(self, build: Callable[[History], Built]) -> Built:
        """A table built from the analysed versions (`ensure_analyzed`), once per history
        state: the fingerprint index, the tried-values table."""
        return self.memoized(build, lambda: self._analyzed_then(build))

    def _analyzed_then(self, build: Callable[[History], Built]) -> Built:
        self.ensure_analyzed()
        return build(self)

    def ensure_analyzed(self) -> None:
        """Analyse every kernel version (fingerprints, spots) and add the experiments that
        carry code: once per history state, on the first tried-values or fingerprint request."""
        if self._analyzed:
            return
        with self._analysis_lock:
            if self._analyzed:
                return
            if self.paths is not None:
                _analyze_blobs(self, self.pending_blobs)
            self.tried_kernels = self.tried_kernels + _experiment_kernels(self)
            self._analyzed = True

    @property
    def kernel_rel(self) -> str:
        return self.paths.rel(KERNEL_NAME) if self.paths else KERNEL_NAME

    def version_of_commit(self, commit: str) -> str | None:
        table: dict[str, str] = self.memoized("commit_versions", self._commit_versions)
        return table.get(commit)

    def _commit_versions(self) -> dict[str, str]:
        found: dict[str, str] = {}
        for facts in self.versions.values():
            if facts.commit:
                found.setdefault(facts.commit, facts.version)
        return found

    def version_of_blob(self, blob: str) -> str | None:
        """The earliest passing version whose kernel.py is this blob (else the earliest)."""
        table: dict[str, str] = self.memoized("blob_versions", self._blob_versions)
        return table.get(blob)

    def _blob_versions(self) -> dict[str, str]:
        table: dict[str, str] = {}
        for facts in sorted(self.versions.values(), key=lambda f: (not f.passed, f.number)):
            if facts.kernel_blob and facts.kernel_origin and facts.kernel_origin.startswith("commit"):
                table.setdefault(facts.kernel_blob, facts.version)
        return table

    def version_of_subject(self, subject: str) -> str | None:
        """`V3: ...`, `v2: kernel candidate`, `episode 2: promote verified ...` -> the version."""
        version = subject_version(subject)
        if version in self.versions:
            return version
        match = _PROMOTION_SUBJECT.match(subject)
        if match:
            episode = int(match.group(1))
            version = self.episode_versions.get(episode, f"v{episode}")
            return version if version in self.versions else None
        return None

    def source_of(self, blob: str) -> str | None:
        """A blob's text (read on demand: only compare needs whole files)."""
        if self.paths is None:
            return None
        cache = self.memo.setdefault("texts", {})
        if blob not in cache:
            cache[blob] = gitdata.read_blobs(self.root, [blob]).get(blob)
        return cache[blob]

    def passing_versions(self) -> list[VersionFacts]:
        return [f for f in self.versions.values() if f.passed]


# -- building --------------------------------------------------------------------------


def _experiment_facts(experiments: list[KernelExperiment]) -> dict[str, list[KernelExperiment]]:
    grouped: dict[str, list[KernelExperiment]] = {}
    for experiment in experiments:
        if experiment.memory_version:
            grouped.setdefault(experiment.memory_version, []).append(experiment)
    return grouped


def _effect(
    entry: MemoryEntry,
    record: MemoryRecord,
    baseline: MemoryRecord | None,
    parent: tuple[str, MemoryRecord] | None,
    kind: MetricKind | None,
    experiments: list[KernelExperiment],
) -> VersionEffect:
    outcome = atrex_fields.record_outcome(record)
    block = kernelscope_block(record)
    metrics = experiments[-1].metrics if experiments else None
    v0 = atrex_fields.BaseWorkloads(baseline) if baseline is not None else None
    score = version_score(record, baseline, kind, v0)
    if score is None and outcome.measured and experiments:
        # A record with no numbers of its own: the store's experiment carries the score.
        latest = experiments[-1]
        if latest.score is not None and not latest.is_buggy:
            ci = metrics.get("score_ci") if isinstance(metrics, dict) else None
            interval = (
                (float(ci[0]), float(ci[1])) if isinstance(ci, (list, tuple)) and len(ci) == 2 else None
            )
            score = ScoreValue.model_construct(
                value=latest.score, kind="speedup", versus="baseline", ci=interval, source="experiment.score"
            )
    vs_parent = (
        parent_effect(record, parent[1] if parent else None, parent[0] if parent else None, metrics, kind)
        if entry.number > 0
        else None
    )
    passed = record.gate_passed
    mode = block.get("mode") if isinstance(block.get("mode"), str) else None
    verdict = block.get("verdict") if isinstance(block.get("verdict"), str) else None
    reference = atrex_fields.speedup_vs_reference(record, v0) if outcome.measured else None
    effect = VersionEffect.model_construct(
        version=entry.version,
        commit=None,
        masked=entry.masked,
        gate=record.gate_result,
        passed=passed,
        outcome=outcome.label,
        carried_from=outcome.carried_from,
        measured=outcome.measured,
        mode=mode,
        verdict=verdict,
        score=score,
        vs_parent=vs_parent,
        vs_reference=None if reference is None else reference.value,
        vs_reference_aggregate=None if reference is None else reference.aggregate,
        latency_us=measured_latency(record) if outcome.measured else None,
        latency_coverage=None
        if v0 is None
        else atrex_fields.workloads_note(record, v0, None if score is None else score.source),
        failure=None if passed or outcome.label else failure_text(record),
        action=_first_clause(_optimization(record, "action_description")),
        category=_optimization(record, "action_category"),
        experiment_ids=[e.id for e in experiments],
        text="",
    )
    effect.text = effect_text(effect)
    return effect


def effect_text(effect: VersionEffect) -> str:
    """`1.75x vs v2 · 3.20x vs v0 [3.10-3.30], PASS` (the numbers a blame hint shows)."""
    if effect.outcome:
        carried = (
            f" (numbers carried from {effect.carried_from}, not measured)" if effect.carried_from else ""
        )
        return f"{effect.outcome}{carried}"
    if not effect.passed:
        gate = effect.gate or "FAIL"
        return f"{'FAILED' if gate == 'FAIL' else gate} {effect.failure or ''}".rstrip()
    parts: list[str] = []
    if effect.vs_parent is not None:
        parts.append(effect.vs_parent.text())
    score = effect.score
    if score is not None and (score.kind == "speedup" or effect.vs_reference is None):
        if effect.version == "v0" and score.value == 1.0:
            parts.append("baseline")
        elif not (effect.vs_parent is not None and effect.vs_parent.versus == score.versus):
            parts.append(score.text())
    if effect.vs_reference is not None:
        parts.append(
            format_score(effect.vs_reference, versus="reference", aggregate=effect.vs_reference_aggregate)
        )
    if not parts and effect.version == "v0":
        parts.append("baseline")
    text = " · ".join(parts) if parts else "no measurement recorded"
    if effect.verdict == "no measurable change":
        text += " (no measurable change)"
    if effect.mode == "interpreter":
        text += " (interpreter)"
    return f"{text}, {effect.gate or 'PASS'}"


def _parents(pairs: list[tuple[MemoryEntry, MemoryRecord]]) -> list[tuple[str, MemoryRecord] | None]:
    """Each version's parent: the one its record names (`comparison_with_previous.
    previous_version`), else the latest earlier version that passed with its own numbers."""
    by_version = {entry.version: record for entry, record in pairs}
    parents: list[tuple[str, MemoryRecord] | None] = []
    last_passing: tuple[str, MemoryRecord] | None = None
    for entry, record in pairs:
        named = previous_version(record)
        if named and named in by_version:
            parents.append((named, by_version[named]))
        else:
            parents.append(last_passing)
        if record.gate_passed and atrex_fields.record_outcome(record).measured:
            last_passing = (entry.version, record)
    return parents


def _load_experiments(store: Any, root: Path) -> list[KernelExperiment]:
    if store is None:
        return []
    from kernelscope.daemon.engine.store import StoreError

    try:
        return list(store.list_experiments(workspace=str(root)))
    except (StoreError, OSError, ValueError):
        return []


def store_watermark(store: Any, root: Path) -> object:
    """What changes when the store gains an experiment for this workspace (cheap: an index count)."""
    if store is None:
        return None
    from kernelscope.daemon.engine.store import StoreError

    try:
        return store.count(workspace=str(root))
    except (StoreError, OSError, ValueError):
        return "unavailable"


def build_history(
    root: Path, store: Any = None, key: gitdata.HistoryKey | None = None, memory: MemoryManager | None = None
) -> History:
    """Read memory/ (through `memory`, whose kept reads a daemon shares with its lenses), git
    and the store once and assemble the workspace's history."""
    ws = Workspace(root)
    root = ws.root
    if key is None:
        key = gitdata.history_key(root, ws.memory_dir, (store_watermark(store, root),))
    scanned = (memory or ws.memory).scan()
    entries = [e for e in scanned if e.record is not None]  # (which file is a version's: core.record_files)
    readme = None
    if ws.readme_path.is_file():
        try:
            readme = ws.readme()
        except Exception:
            readme = None
    kind = readme.primary_kind if readme else None
    experiments = _load_experiments(store, root)
    by_version = _experiment_facts(experiments)
    known = {e.version for e in entries}
    pairs = [(e, e.record) for e in entries if e.record is not None]
    baseline = next((r for e, r in pairs if e.number == 0), None)

    versions: dict[str, VersionFacts] = {}
    for (entry, record), parent in zip(pairs, _parents(pairs), strict=True):
        own = by_version.get(entry.version, [])
        effect = _effect(entry, record, baseline, parent, kind, own)
        versions[entry.version] = VersionFacts(entry=entry, record=record, effect=effect, experiments=own)

    paths = gitdata.repo_paths(root)
    unversioned = [e for e in experiments if e.memory_version not in known]
    history = History(root, key, paths, versions, unversioned_experiments=unversioned)
    history.unreadable = [e.path.name for e in scanned if e.error]
    for journal in atrex.episode_journals(root):
        if journal.episode is not None and journal.memory_version in versions:
            history.episode_versions[journal.episode] = journal.memory_version
    if paths is None:
        history.messages.append(f"{root} is not in a git work tree: no per-line history")
        return history
    try:
        _attach_git(history)
    except gitdata.GitUnavailable as exc:
        # git found the repository but read nothing (it refuses one owned by another user, or
        # cannot start): this state has no git history, not a HEAD whose every line is unsaved
        history.paths, history.head, history.head_blob = None, None, None
        history.messages.append(str(exc))
    return history


def _attach_git(history: History) -> None:
    root, rel = history.root, history.kernel_rel
    history.head = gitdata.resolve_head(history.paths) if history.paths else None
    refs = gitdata.refs_with_prefix(
        root, FAILED_REF_PREFIX, gitdata.EPISODE_BRANCH_PREFIX, gitdata.REMOTE_EPISODE_BRANCH_PATTERN
    )
    failed = {
        name[len(FAILED_REF_PREFIX) :]: sha
        for name, sha in refs.items()
        if name.startswith(FAILED_REF_PREFIX)
    }
    branches: dict[int, tuple[str, str]] = {}
    for name, sha in refs.items():
        match = _EPISODE_BRANCH.match(name)
        local = name.startswith(gitdata.EPISODE_BRANCH_PREFIX)
        if match and (local or int(match.group(1)) not in branches):
            branches[int(match.group(1))] = (name, sha)  # a local branch before a remote one

    names: list[str] = []
    if history.head:
        names.append(f"{history.head}:{rel}")
    for facts in history.versions.values():
        commit = cited_commit(facts.entry)
        if commit:
            names += [commit_object(commit), f"{commit}:{rel}"]
    for sha in failed.values():
        names += [f"{sha}:{rel}", f"{sha}^:{rel}"]
    for _, sha in branches.values():
        names.append(f"{sha}:{rel}")
    objects = gitdata.batch_check(root, names)
    history.head_blob = objects.get(f"{history.head}:{rel}") if history.head else None

    version_of_episode = {v: e for e, v in history.episode_versions.items()}
    for facts in history.versions.values():
        commit = cited_commit(facts.entry)
        ref = failed.get(facts.version)
        if ref:
            # A failed version's commit holds only its record (kernel.py there is its parent's):
            # the kernel that failed is on its side ref.
            blob = objects.get(f"{ref}:{rel}")
            if blob:
                facts.kernel_blob, facts.kernel_origin = blob, FAILED_REF_PREFIX + facts.version
                facts.parent_commit_blob = objects.get(f"{ref}^:{rel}")
        if commit:
            facts.commit = objects.get(commit_object(commit))
            blob = objects.get(f"{commit}:{rel}")
            if facts.commit and blob and not facts.kernel_blob and (facts.passed or facts.effect.outcome):
                facts.kernel_blob, facts.kernel_origin = blob, f"commit {short(facts.commit)}"
        facts.effect.commit = facts.commit
        episode = version_of_episode.get(facts.version)
        if not facts.kernel_blob and episode in branches:
            name, sha = branches[episode]
            blob = objects.get(f"{sha}:{rel}")
            if blob:
                facts.kernel_blob = blob
                facts.kernel_origin = f"branch {_branch_name(name)} ({short(sha)})"
    _attach_uncited_commits(history, objects)

    blobs = [f.kernel_blob for f in history.versions.values() if f.kernel_blob]
    if history.head_blob:
        blobs.append(history.head_blob)
    trials = _episode_trials(history, branches)
    blobs += [t.blob for t in trials]
    history.pending_blobs = blobs  # analysed on first use (blame needs none of it)
    versions = _tried_kernels(history)
    evaluated = {t.blob: t for t in trials if t.passed is not None}
    for kernel in versions:
        trial = evaluated.get(kernel.blob)
        if trial is not None and kernel.effect is not None and kernel.effect.outcome:
            # a pivot's kernel: the evaluator's numbers on its branch are real measurements
            kernel.detail = f"{kernel.effect.outcome}, not promoted; its branch evaluation: {trial.detail}"
    history.tried_kernels = versions + trials


def _attach_uncited_commits(history: History, resolved: dict[str, str | None]) -> None:
    """Versions whose record cites no commit (or one git does not know): their commit by the
    one rule (version_code.py: a `V3: ...` subject, v0's record added alone), so its kernel.py
    counts for tried values and compare just as a cited commit's does (a failed version's
    commit holds its parent's kernel.py: only its commit is taken, and so does an outcome-only
    version's, a pivot's `v3: ... pivot` commit of its records)."""
    unresolved = [f for f in history.versions.values() if not f.commit]
    if not unresolved or not history.head or history.paths is None:
        return
    found = version_commits(history.root, [f.entry for f in unresolved], history.head, resolved)
    if not found:
        return
    rel = history.kernel_rel
    objects = gitdata.batch_check(history.root, [f"{c.commit}:{rel}" for c in found.values()])
    for facts in unresolved:
        if facts.version not in found:
            continue
        sha = found[facts.version].commit
        facts.commit = facts.effect.commit = sha
        blob = objects.get(f"{sha}:{rel}")
        if blob and not facts.kernel_blob and facts.passed and not facts.effect.outcome:
            facts.kernel_blob, facts.kernel_origin = blob, f"commit {short(sha)}"


def _analyze_blobs(history: History, blobs: list[str]) -> None:
    """Facts of every blob: from the process-wide cache, then the on-disk cache, the rest
    read from git in one batch and analysed (and stored for the next process)."""
    missing = []
    for blob in dict.fromkeys(blobs):
        known = FACTS.known("blob:" + blob) or FACTS.load_blob(blob)
        if known is not None:
            history.facts[blob] = known
        else:
            missing.append(blob)
    for blob, text in gitdata.read_blobs(history.root, missing).items():
        history.facts[blob] = FACTS.analyze_blob(blob, text)


def _verdict_detail(effect: VersionEffect) -> str:
    if effect.outcome:
        return effect_text(effect)
    if not effect.passed:
        return effect_text(effect)
    measured = effect.score.text() if effect.score is not None else effect_text(effect).rsplit(",", 1)[0]
    return f"{measured}, already measured"


def _tried_kernels(history: History) -> list[TriedKernel]:
    found = []
    for facts in history.versions.values():
        if not facts.kernel_blob:
            continue
        source = facts.kernel_origin or "commit"
        found.append(
            TriedKernel(
                label=facts.version,
                source=source,
                blob=facts.kernel_blob,
                version=facts.version,
                commit=facts.commit,
                passed=facts.passed and not facts.effect.outcome,
                masked=facts.masked,
                detail=_verdict_detail(facts.effect),
                effect=facts.effect,
                order=facts.number * 1000 + 999,
                short_label=facts.version,
                score=facts.effect.score,
            )
        )
    return found


def _episode_trials(history: History, branches: dict[int, tuple[str, str]]) -> list[TriedKernel]:
    """Kernels an atrex episode evaluated on its branch (fast trials, checkpoints), matched to
    the evaluator's verdicts in `episodes/eNNNN/episode_runtime/evaluations.jsonl` by the
    sha256 of kernel.py, which the supervisor records with each run."""
    if not branches or history.paths is None:
        return []
    root, rel = history.root, history.kernel_rel
    revisions = [sha for _, sha in branches.values()]
    exclude = [f"^{history.head}"] if history.head else []
    commits = gitdata.log_commits(history.paths.toplevel, revisions + exclude, rel)
    if not commits:
        return []
    objects = gitdata.batch_check(root, [f"{c.commit}:{rel}" for c in commits])
    verdicts = _evaluations(root)
    texts = gitdata.read_blobs(root, [b for b in objects.values() if b]) if verdicts else {}
    base = history.versions.get("v0")
    trials = []
    for position, commit in enumerate(reversed(commits)):  # oldest first
        blob = objects.get(f"{commit.commit}:{rel}")
        if not blob:
            continue
        result = None
        text = texts.get(blob)
        if text is not None:
            result = verdicts.get(hashlib.sha256(text.encode("utf-8")).hexdigest())
        passed, detail, score = None, "evaluated on an episode branch", None
        if result is not None:
            passed = bool(result.get("all_pass"))
            if passed:
                geomean = as_float(result.get("latency_us_geomean"))
                score = _trial_score(result, base.record if base is not None else None)
                reference = atrex_fields.reference_speedup(result)
                figures = [
                    f"{geomean:.3g} us geomean" if geomean else "",
                    format_score(reference.value, versus="reference", aggregate=reference.aggregate)
                    if reference is not None and reference.value
                    else "",
                ]
                detail = "PASS " + ", ".join(f for f in figures if f) + ", already measured"
            else:
                failures = result.get("failures") or []
                first = str(failures[0]).split(" ")[0] if failures else ""
                detail = (
                    f"FAILED {result.get('passed', 0)}/{result.get('total', '?')} workloads {first}".rstrip()
                )
        trial = _TRIAL_SUBJECT.match(commit.subject)
        trials.append(
            TriedKernel(
                label=f'"{commit.subject}" ({short(commit.commit)})',
                source=f"episode branch commit {short(commit.commit)}",
                blob=blob,
                commit=commit.commit,
                passed=passed,
                detail=detail,
                order=position,
                short_label=trial.group(1) if trial else _short_subject(commit.subject, commit.commit),
                score=score,
            )
        )
    return trials


def _trial_score(result: dict[str, Any], baseline: MemoryRecord | None) -> ScoreValue | None:
    """The one score (memory/core.py score_parts) of an evaluator's RESULT_JSON row, read as a
    record whose performance section is the row, its geomean latency as the record's latency."""
    row = {"performance": {**result, "latency_us": result.get("latency_us_geomean")}}
    score = version_score(row, baseline)
    if score is None:
        return None
    field = score.source.removeprefix("performance.")
    named = "latency_us_geomean" if field == "latency_us" else field  # the row's own field names
    return score.model_copy(update={"source": f"evaluations.jsonl {named}"})


def _short_subject(subject: str, commit: str) -> str:
    """A table cell's name for an episode commit: `v2: checkpoint 8 rows...` -> `v2 checkpoint`."""
    head, separator, rest = subject.partition(": ")
    words = rest.split()
    if separator and VERSION_SUBJECT.match(subject) and words:
        return f"{head} {words[0]}"
    return short(commit)


def _evaluations(root: Path) -> dict[str, dict[str, Any]]:
    """sha256 of kernel.py -> the evaluator's result, from every episode's evaluations.jsonl."""
    found: dict[str, dict[str, Any]] = {}
    episodes = root / atrex.RUNTIME_DIR / "episodes"
    if not episodes.is_dir():
        return found
    for path in sorted(episodes.glob("e*/episode_runtime/evaluations.jsonl")):
        try:
            lines = workspace_files.read_text(path).splitlines()
        except OSError:
            continue
        for line in lines:
            try:
                row = load_json(line)
            except ValueError:
                continue
            if (
                isinstance(row, dict)
                and isinstance(row.get("kernel_sha256"), str)
                and isinstance(row.get("result"), dict)
            ):
                found[row["kernel_sha256"]] = row["result"]
    return found


_APPLIED: dict[tuple[str, int], str | None] = {}  # (base blob, hash of the diff) -> content key


def _experiment_kernels(history: History) -> list[TriedKernel]:
    """Experiments in the store that carry code but no memory version: their kernel.py is
    `metrics.kernel_source` when recorded, else `code_change` applied to the base commit's
    (base blobs found in one git call; each patch applied once per process)."""
    candidates = [
        e for e in history.unversioned_experiments if e.code_change.strip() or e.metrics.get("kernel_source")
    ]
    if not candidates:
        return []
    bases: dict[str, str | None] = {}
    if history.paths is not None:
        commits = sorted(
            {e.base_commit for e in candidates if e.base_commit and not e.metrics.get("kernel_source")}
        )
        names = [f"{commit}:{history.kernel_rel}" for commit in commits]
        found_blobs = gitdata.batch_check(history.root, names) if names else {}
        bases = {commit: found_blobs.get(name) for commit, name in zip(commits, names, strict=True)}
    found = []
    for position, experiment in enumerate(candidates):
        text = experiment.metrics.get("kernel_source")
        key: str | None = None
        if isinstance(text, str):
            key = content_key(text)
            history.facts[key] = FACTS.get(text, key)
        else:
            blob = bases.get(experiment.base_commit)
            if blob is None:
                continue
            memo_key = (blob, hash(experiment.code_change))
            if memo_key not in _APPLIED or FACTS.known(_APPLIED[memo_key] or "") is None:
                base = history.source_of(blob)
                patched = apply_unified_diff(base, experiment.code_change) if base is not None else None
                _APPLIED[memo_key] = None
                if patched is not None:
                    _APPLIED[memo_key] = content_key(patched)
                    FACTS.get(patched, _APPLIED[memo_key])
            key = _APPLIED[memo_key]
            if key is None:
                continue
            history.facts[key] = FACTS.known(key)  # type: ignore[assignment]
        failed = experiment.is_buggy or experiment.status in ("failed", "timeout")
        detail = (
            f"FAILED {experiment.status}: {experiment.error_message[:60]}".rstrip(": ")
            if failed
            else (
                f"{experiment.score:.2f}x (experiment score), already measured"
                if experiment.score
                else "recorded"
            )
        )
        score = (
            ScoreValue.model_construct(
                value=experiment.score, kind="speedup", versus="baseline", ci=None, source="experiment.score"
            )
            if experiment.score and not failed
            else None
        )
        found.append(
            TriedKernel(
                label=f"experiment {experiment.id[:8]}",
                source=f"experiment {experiment.id}",
                blob=key,
                passed=not failed,
                detail=detail,
                order=position,
                short_label=f"exp {experiment.id[:8]}",
                score=score,
            )
        )
    return found
