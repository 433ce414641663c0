"""What today's atrex-kernel-agent supervisor writes beside the memory records (whose own new
fields memory/atrex_fields.py reads).

Formats as upstream writes them (alibaba/atrex-kernel-agent, Aug 2026; reproduced in
tests/support/field_workspaces.py from the upstream writers):
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

import fnmatch
from dataclasses import dataclass, field
from pathlib import Path

from kernelscope.daemon.engine import DataError, counted, load_json
from kernelscope.daemon.engine.memory.atrex_fields import as_dict, short_text
from kernelscope.protocol import workspace_files
from kernelscope.protocol.workspace import Supervisor

RUNTIME_DIR = ".atrex_long_horizon"
LIVE_FILE = "live.json"
ORCHESTRATOR_FILES = (".orchestrator_state.json", ".orchestrator_mode.json")
ACTIVE_EPISODE_FILE = "active_episode.json"  # in RUNTIME_DIR while an episode is in flight
# The paths (relative to the workspace) `supervisor` reads, besides memory/LIVE_FILE: the
# daemon's watcher follows them (engine/workspace/cache.py: sources_of_paths).
SUPERVISOR_PATHS = (
    (RUNTIME_DIR,),
    (RUNTIME_DIR, ACTIVE_EPISODE_FILE),
    *((name,) for name in ORCHESTRATOR_FILES),
)
# ... and each finished episode's journal (`episode_journals`), which hover's tables read.
EPISODE_JOURNAL = (RUNTIME_DIR, "episodes", "e*", "episode_runtime", "journal.json")


def is_supervisor_path(parts: tuple[str, ...]) -> bool:
    """A path (relative to the workspace, as parts) that the supervisor's readers read."""
    if parts in SUPERVISOR_PATHS:
        return True
    return len(parts) == len(EPISODE_JOURNAL) and all(
        fnmatch.fnmatchcase(part, pattern) for part, pattern in zip(parts, EPISODE_JOURNAL, strict=True)
    )


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
        count = (
            f", {counted(self.experiment_count, 'experiment')}" if self.experiment_count is not None else ""
        )
        latest = f", latest: {self.latest_experiment}" if self.latest_experiment else ""
        return f"{head}{target} {self.phase}{count}{latest}"


def live_episode(memory_dir: Path) -> LiveEpisode | None:
    """The running episode from memory/live.json; None when absent, unreadable or recorded."""
    path = memory_dir / LIVE_FILE
    try:
        data = load_json(workspace_files.read_text(path))
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
        latest_experiment=short_text(latest_name, 80) if latest_name else None,
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
    for path in sorted(episodes.glob("/".join(EPISODE_JOURNAL[2:]))) if episodes.is_dir() else []:
        try:
            data = load_json(workspace_files.read_text(path))
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
                summary=short_text(outcome.get("summary"), 200) if outcome.get("summary") else None,
                next_directions=[short_text(d, 160) for d in directions]
                if isinstance(directions, list)
                else [],
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
    active = (runtime / ACTIVE_EPISODE_FILE).is_file()
    if active:
        evidence.append(f"{RUNTIME_DIR}/{ACTIVE_EPISODE_FILE}")
    if not evidence:
        return None
    return Supervisor(
        name="atrex long-horizon supervisor", evidence=evidence, running=active or live is not None
    )


class SupervisedWorkspace(DataError):
    """A write refused because an orchestrator drives the workspace (nothing was changed)."""

    kind = "supervised"


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
        active = load_json(workspace_files.read_text(root / RUNTIME_DIR / ACTIVE_EPISODE_FILE))
    except (OSError, ValueError):
        active = None
    version = active.get("memory_version") if isinstance(active, dict) else None
    if isinstance(version, int) and not isinstance(version, bool):
        reserved.add(version)
    return reserved
