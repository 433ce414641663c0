"""What today's atrex-kernel-agent supervisor writes beyond the seed's record fields.

Formats as upstream writes them (alibaba/atrex-kernel-agent, Aug 2026; reproduced in
tests/field_workspaces.py from the upstream writers):
- `memory/v<N>.json` gains `experience{experiment_count, experiments[{index, name, hypothesis,
  change, evidence, result, decision, timestamp}]}`, `open_directions[{direction, rationale}]`,
  `long_horizon{status, mode, ...}` and `performance.{latency_us_by_shape, speedup_vs_ref_geomean,
  measurement_subject, measurement_source, carried_from_version}`. A pivot, blocked, rejected or
  interrupted episode still gets a record (gate FAIL, no commit), whose latency may be the
  incumbent's carried forward: that is not a measurement of the version.
- `memory/live.json`: the running episode (`phase`, `experiment_count`, `latest_experiment`),
  not a version record (`canonical: false`).
- `.atrex_long_horizon/`: `state.json`, `active_episode.json` while an episode is in flight,
  `episodes/eNNNN/episode_runtime/journal.json` (`{state, experiments[], outcome{summary,
  next_directions}}`); `.orchestrator_state.json` / `.orchestrator_mode.json`.

The supervisor owns the branch and the version numbers, stashes or hard-resets tracked changes
on resume, and refuses to record when HEAD moved: kernelscope only observes such a workspace
unless the user forces a write.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kernelscope.daemon.engine.errors import DataError
from kernelscope.protocol.memory import MemoryRecord, as_float
from kernelscope.protocol.workspace import Supervisor

RUNTIME_DIR = ".atrex_long_horizon"
LIVE_FILE = "live.json"
ORCHESTRATOR_FILES = (".orchestrator_state.json", ".orchestrator_mode.json")
# long_horizon.status values of records that did not promote a new kernel
NOT_PROMOTED = {"pivot", "blocked", "rejected", "interrupted", "invalid_handoff", "failed"}
# measurement_subject values that mean the numbers were measured on this version's kernel
MEASURED_SUBJECTS = {"candidate", "episode_head", None}


def _section(record: MemoryRecord | dict[str, Any], name: str) -> Any:
    if isinstance(record, dict):
        return record.get(name)
    value = getattr(record, name, None)
    if value is None and record.model_extra:
        value = record.model_extra.get(name)
    return value


def as_dict(value: Any) -> dict[str, Any]:
    """`value` if it is a JSON object, else an empty one (memory files are free-form JSON)."""
    return value if isinstance(value, dict) else {}


def _get(section: Any, key: str) -> Any:
    if isinstance(section, dict):
        return section.get(key)
    return getattr(section, key, None) if section is not None else None


def _text(value: Any, limit: int = 160) -> str:
    text = value if isinstance(value, str) else json.dumps(value) if value is not None else ""
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


@dataclass(frozen=True)
class RecordOutcome:
    """How to show one record: measured or not, and what happened to it."""

    label: str | None  # "pivot", "blocked"... (None for an ordinary record)
    carried_from: str | None  # the version whose numbers a record carries forward
    measured: bool  # its performance numbers were measured on its own kernel

    def describe(self) -> str:
        if self.label and self.carried_from:
            return f"{self.label} (numbers carried from {self.carried_from}, not measured)"
        if self.carried_from:
            return f"numbers carried from {self.carried_from}, not measured"
        return self.label or ""


def record_outcome(record: MemoryRecord | dict[str, Any]) -> RecordOutcome:
    """A pivot/blocked episode's record is labelled; carried-forward numbers are not measurements."""
    performance = _section(record, "performance")
    long_horizon = _section(record, "long_horizon")
    status = _get(long_horizon, "status")
    label = str(status) if isinstance(status, str) and status in NOT_PROMOTED else None
    carried = _get(performance, "carried_from_version")
    subject = _get(performance, "measurement_subject")
    carried_from = str(carried) if isinstance(carried, str) and carried else None
    measured = carried_from is None and subject in MEASURED_SUBJECTS
    if subject == "unavailable":
        measured = False
    return RecordOutcome(label=label, carried_from=carried_from, measured=measured)


@dataclass(frozen=True)
class ExperimentNote:
    index: int | None
    name: str
    decision: str
    result: str
    hypothesis: str = ""

    def line(self) -> str:
        head = f"{self.index}. " if self.index is not None else ""
        decision = f" [{self.decision}]" if self.decision else ""
        result = f": {self.result}" if self.result else ""
        return f"{head}{self.name}{decision}{result}"


def experiments(record: MemoryRecord | dict[str, Any]) -> list[ExperimentNote]:
    """`experience.experiments[]`, one note each (name, decision, result)."""
    items = _get(_section(record, "experience"), "experiments")
    notes = []
    for item in items if isinstance(items, list) else []:
        if not isinstance(item, dict):
            continue
        index = item.get("index")
        notes.append(
            ExperimentNote(
                index=index if isinstance(index, int) and not isinstance(index, bool) else None,
                name=_text(item.get("name") or item.get("change") or "?", 80),
                decision=_text(item.get("decision"), 24),
                result=_text(item.get("result"), 120),
                hypothesis=_text(item.get("hypothesis"), 120),
            )
        )
    return notes


def open_directions(record: MemoryRecord | dict[str, Any]) -> list[str]:
    """`open_directions[]`: strings, or `{direction, rationale}` objects."""
    items = _section(record, "open_directions")
    found = []
    for item in items if isinstance(items, list) else []:
        if isinstance(item, dict):
            text = item.get("direction") or item.get("description") or json.dumps(item)
        else:
            text = item
        if text:
            found.append(_text(text, 160))
    return found


def latency_by_shape(record: MemoryRecord | dict[str, Any]) -> dict[str, float]:
    """`performance.latency_us_by_shape` as floats (workload uuid or shape id -> us)."""
    value = _get(_section(record, "performance"), "latency_us_by_shape")
    if not isinstance(value, dict):
        return {}
    found = {str(k): as_float(v) for k, v in value.items()}
    return {k: v for k, v in found.items() if v is not None}


def speedup_vs_reference(record: MemoryRecord | dict[str, Any]) -> float | None:
    return as_float(_get(_section(record, "performance"), "speedup_vs_ref_geomean"))


@dataclass(frozen=True)
class LiveEpisode:
    """`memory/live.json`: the episode running now (not a version record)."""

    version: str | None
    episode: int | None
    phase: str
    experiment_count: int | None
    latest_experiment: str | None
    updated_at: str | None

    def describe(self) -> str:
        head = f"episode {self.episode}" if self.episode is not None else "episode"
        target = f" -> {self.version}" if self.version else ""
        count = f", {self.experiment_count} experiments" if self.experiment_count is not None else ""
        latest = f", latest: {self.latest_experiment}" if self.latest_experiment else ""
        return f"{head}{target} {self.phase}{count}{latest}"


def live_episode(memory_dir: Path) -> LiveEpisode | None:
    """The running episode from memory/live.json; None when absent, unreadable or recorded."""
    path = memory_dir / LIVE_FILE
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(data, dict) or data.get("canonical") is True:
        return None
    phase = data.get("phase")
    if not isinstance(phase, str) or phase == "recorded":
        return None
    latest = data.get("latest_experiment")
    latest_name = latest.get("name") if isinstance(latest, dict) else latest
    count = data.get("experiment_count")
    episode = data.get("episode")
    version = data.get("version")
    return LiveEpisode(
        version=version if isinstance(version, str) else None,
        episode=episode if isinstance(episode, int) and not isinstance(episode, bool) else None,
        phase=phase,
        experiment_count=count if isinstance(count, int) and not isinstance(count, bool) else None,
        latest_experiment=_text(latest_name, 80) if latest_name else None,
        updated_at=data.get("updated_at") if isinstance(data.get("updated_at"), str) else None,
    )


@dataclass
class EpisodeJournal:
    """One finished episode's journal: its state, experiments and outcome."""

    episode: int | None
    memory_version: str | None
    state: str
    experiment_count: int
    summary: str | None
    next_directions: list[str] = field(default_factory=list)


def episode_journals(root: Path) -> list[EpisodeJournal]:
    """`.atrex_long_horizon/episodes/eNNNN/episode_runtime/journal.json`, in episode order."""
    episodes = root / RUNTIME_DIR / "episodes"
    journals = []
    for path in sorted(episodes.glob("e*/episode_runtime/journal.json")) if episodes.is_dir() else []:
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        if not isinstance(data, dict):
            continue
        outcome = as_dict(data.get("outcome"))
        version = data.get("memory_version")
        directions = outcome.get("next_directions")
        journals.append(
            EpisodeJournal(
                episode=data.get("episode") if isinstance(data.get("episode"), int) else None,
                memory_version=f"v{version}"
                if isinstance(version, int)
                else version
                if isinstance(version, str)
                else None,
                state=str(data.get("state") or "?"),
                experiment_count=len(data.get("experiments") or [])
                if isinstance(data.get("experiments"), list)
                else 0,
                summary=_text(outcome.get("summary"), 200) if outcome.get("summary") else None,
                next_directions=[_text(d, 160) for d in directions] if isinstance(directions, list) else [],
            )
        )
    return journals


def journal_of(root: Path, version: str) -> EpisodeJournal | None:
    return next((j for j in episode_journals(root) if j.memory_version == version), None)


def supervisor(root: Path) -> Supervisor | None:
    """The atrex supervisor, when its files show it drives this workspace."""
    evidence = []
    runtime = root / RUNTIME_DIR
    if runtime.is_dir():
        evidence.append(f"{RUNTIME_DIR}/")
    evidence += [name for name in ORCHESTRATOR_FILES if (root / name).is_file()]
    live = live_episode(root / "memory")
    if live is not None:
        evidence.append(f"memory/{LIVE_FILE} ({live.describe()})")
    active = (runtime / "active_episode.json").is_file()
    if active:
        evidence.append(f"{RUNTIME_DIR}/active_episode.json")
    if not evidence:
        return None
    return Supervisor(
        name="atrex long-horizon supervisor", evidence=evidence, running=active or live is not None
    )


class SupervisedWorkspace(DataError):
    """A write refused because an orchestrator drives the workspace (nothing was changed)."""


def refuse_if_supervised(root: Path, action: str, force: bool) -> Supervisor | None:
    """Raise SupervisedWorkspace before `action` writes into a workspace a supervisor drives,
    unless the user forces it. Returns the supervisor (None when there is none)."""
    owner = supervisor(root)
    if owner is not None and not force:
        raise SupervisedWorkspace(
            f"refusing to {action}: {root} is driven by the {owner.name} "
            f"({', '.join(owner.evidence)}). It owns the branch and the version numbers and stashes "
            "or resets uncommitted tracked changes when it resumes, so kernelscope only observes "
            "this workspace (lenses, hover, probes and `kernelscope bench` still work). Stop the "
            "supervisor and pass --force to write anyway; nothing was changed"
        )
    return owner


def reserved_versions(root: Path) -> set[int]:
    """Version numbers the supervisor will write next: the running episode's."""
    reserved: set[int] = set()
    live = live_episode(root / "memory")
    if live is not None and live.version and live.version[1:].isdigit():
        reserved.add(int(live.version[1:]))
    try:
        active = json.loads((root / RUNTIME_DIR / "active_episode.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        active = None
    version = active.get("memory_version") if isinstance(active, dict) else None
    if isinstance(version, int) and not isinstance(version, bool):
        reserved.add(version)
    return reserved
