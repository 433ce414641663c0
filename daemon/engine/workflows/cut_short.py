"""Finishing an iteration that was killed in its write phase (SIGKILL, power loss, a closed
laptop), before it wrote its commit's hash into its record.

run-iteration commits `memory/v<N>.json` (with kernel.py, or alone for a failed gate) as
`V<N>: ...`, then writes that commit's hash into the record and commits the record once more.
Killed in between, the version stays with `git_commit_hash: null`: it can never be a parent
or the best version (probe.py asks for the hash), and nothing would ever fill it in. The next
iteration, under the iteration lock, fills in the hash of the commit that added the record,
and commits that record again, so HEAD's copy carries it too. Only a record kernelscope
wrote (its `kernelscope` block) and committed under its own `V<N>: ` subject is touched, and
only when the committed copy is the record in the working tree (same timestamp, same
`kernelscope` block): a pivot of a supervisor, recorded without a commit on purpose, and a
person's own record are left as they are.
"""

from __future__ import annotations

import json
from typing import Any

from kernelscope.daemon.engine import KernelscopeError, load_json
from kernelscope.daemon.engine.memory.atomic_io import dump_json
from kernelscope.daemon.engine.memory.records import MemoryEntry, MemoryManager
from kernelscope.daemon.engine.workflows.git import Git


def _same_record(a: dict[str, Any], b: dict[str, Any]) -> bool:
    return a.get("timestamp") == b.get("timestamp") and a.get("kernelscope") == b.get("kernelscope")


def _committed(git: Git, revision: str, entry: MemoryEntry) -> dict[str, Any] | None:
    text = git.show_file(revision, entry.path)
    try:
        found = load_json(text) if text is not None else None
    except json.JSONDecodeError:
        return None
    return found if isinstance(found, dict) else None


def _adding_commit(git: Git, entry: MemoryEntry) -> str | None:
    """The commit that added the version's record as an iteration of kernelscope's, or None."""
    line = git.run(
        "log",
        "-1",
        "--diff-filter=A",
        "--format=%H%x00%s",
        "--",
        ":(top)" + git.relative(entry.path),
        check=False,
    )
    commit, _, subject = line.partition("\x00")
    return commit if commit and subject.startswith(f"{entry.version.upper()}: ") else None


def finish_cut_short(memory: MemoryManager, git: Git, allow_supervised: bool = False) -> dict[str, str]:
    """Fill in the commit hash of every version whose iteration was killed before it did, and
    commit it; what was done, per version. Call it under the iteration lock."""
    if git.head() is None:
        return {}
    # the records whose working-tree copy differs from HEAD's (killed after the hash was written)
    changed = set(
        git.run("diff", "--name-only", "-z", "HEAD", "--", ":(top)" + git.relative(memory.memory_dir)).split(
            "\0"
        )
    )
    messages: dict[str, str] = {}
    for entry in memory.scan():
        raw = entry.raw
        if raw is None or entry.record is None or not isinstance(raw.get("kernelscope"), dict):
            continue
        unfilled = not raw.get("git_commit_hash")
        if not unfilled and git.relative(entry.path) not in changed:
            continue
        commit = _adding_commit(git, entry)
        added = _committed(git, commit, entry) if commit else None
        head = _committed(git, "HEAD", entry)
        if commit is None or added is None or head is None or head.get("git_commit_hash"):
            continue
        if not (_same_record(added, raw) and _same_record(head, raw)):
            continue
        if unfilled:
            memory.update(entry.version, [f'git_commit_hash="{commit}"'], allow_supervised=allow_supervised)
        elif raw.get("git_commit_hash") != commit:
            continue
        # HEAD's copy with the hash: what else the working tree's copy holds (a mask, an
        # edit) stays a change of the working tree, not swept into this commit
        content = dump_json({**head, "git_commit_hash": commit}, entry.indent).encode()
        note = f"{entry.version} was recorded by an iteration cut short before it committed its commit hash"
        try:
            git.commit_files(
                [entry.path], f"{entry.version}: record commit hash {commit[:12]}", {entry.path: content}
            )
        except KernelscopeError as exc:
            messages[entry.version] = (
                f"{note}: {commit[:12]} is in {entry.path.name} now, not committed: {exc}"
            )
            continue
        messages[entry.version] = f"{note}: {commit[:12]} {'filled in and ' if unfilled else ''}committed"
    return messages
