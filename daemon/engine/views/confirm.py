"""The question a person answers before a click masks half of the memory (the editors' lens
"Mask half & restart", their palette's mask-half and restart): what the mask-half dry run
would mask, what stays unmasked and why, and, for a restart, the agent it launches. One text
for every editor: the LSP server asks it (`window/showMessageRequest`), no client builds its own.

The seed of the dry run travels with the question: the write that follows a yes repeats that
seed, so what is masked is what was asked about (`choice` tells whether memory changed since)."""

from __future__ import annotations

from dataclasses import dataclass

from kernelscope.protocol.commands import MaskHalfResult
from kernelscope.protocol.vocabulary import DECLINE


@dataclass(frozen=True)
class Restart:
    """The agent a restart launches after the mask, and for how long at most."""

    agent: str
    timeout_s: float


@dataclass(frozen=True)
class MaskQuestion:
    workspace: str
    text: str
    yes: str  # the title of the action that goes ahead; any other answer writes nothing
    seed: int  # the dry run's: the write repeats it
    choice: tuple[tuple[str, ...], str | None, str | None]  # masked, best, latest passing
    no: str = DECLINE

    def changed(self, again: MaskQuestion | None) -> str | None:
        """Why the yes no longer holds, or None: the same seed, asked again after the yes,
        masks other versions or keeps others (memory/ changed while the question was open)."""
        if again is not None and again.choice == self.choice:
            return None
        now = ", ".join(again.choice[0]) if again is not None and again.choice[0] else "nothing"
        return (
            f"memory/ changed while the question was open (it would now mask {now}): nothing was "
            "masked; run it again"
        )


def _and(items: list[str]) -> str:
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " and " + items[-1]


def _kept(dry: MaskHalfResult) -> str:
    """Which versions stay unmasked, and why each."""
    best, latest = dry.best_version, dry.latest_passing_version
    kept = []
    if best is not None and best == latest:
        kept.append(f"{best} as the best and the latest passing version ({dry.best_rule})")
    else:
        kept.append(f"{best} as the best ({dry.best_rule})" if best else f"no best version ({dry.best_rule})")
        if latest is not None:
            kept.append(f"{latest} as the latest passing version (kernel.py's record)")
    undrawn = [v for v in dry.candidates if v not in dry.masked]
    if undrawn:
        kept.append(f"{_and(undrawn)} (not drawn)")
    return "Kept: " + "; ".join(kept) + "; v0, the baseline, is never masked."


def question_of(dry: MaskHalfResult, restart: Restart | None = None) -> MaskQuestion | None:
    """The question for this dry run; None for a plain mask-half that would write nothing
    (fewer than two candidates: nothing is asked, nothing is written)."""
    if not dry.masked and restart is None:
        return None
    count = f"{len(dry.masked)} of {len(dry.candidates)} candidate versions"
    what = (
        f"Mask {_and(dry.masked)} ({count})"
        if dry.masked
        else (f"Mask nothing (0 of {len(dry.candidates)} candidate versions: fewer than two)")
    )
    if restart is not None:
        minutes = f"{restart.timeout_s / 60:g} min"
        what += f" and launch a fresh agent ({restart.agent}) for up to {minutes}, from {dry.next_version}"
    skipped = f" Unreadable, skipped: {_and(dry.skipped_corrupt)}." if dry.skipped_corrupt else ""
    text = f"{what} in {dry.workspace}? {_kept(dry)}{skipped} Seed {dry.seed}."
    yes = "Mask & restart" if restart is not None else "Mask"
    choice = (tuple(dry.masked), dry.best_version, dry.latest_passing_version)
    return MaskQuestion(workspace=dry.workspace, text=text, yes=yes, seed=dry.seed, choice=choice)
