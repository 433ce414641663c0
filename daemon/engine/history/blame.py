"""Performance blame: for each line of the editor's kernel.py, the version that introduced it
and what that version measured against its parent.

`git blame --porcelain` runs once per history state on HEAD's committed kernel.py; each
commit it names becomes a version through, in order: the records' `git_commit_hash`, the
commit subject (`V3: ...` as kernelscope iterate writes, `v2: kernel candidate`, atrex's
`episode 2: promote verified long-horizon candidate`), or the kernel.py blob the commit holds
(a squash-merged atrex candidate has the blob of the commit its record names). A commit none
of these explain is shown as plain git (short hash and subject). The editor's buffer is
mapped onto HEAD's lines with difflib, cached per buffer text: a line not in HEAD is
unsaved/unmeasured, and when a failed version introduced the same line, the hint says so.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass

from kernelscope.daemon.engine.history import gitdata
from kernelscope.daemon.engine.history.timeline import History, short
from kernelscope.protocol.history import BlameLine, VersionEffect
from kernelscope.protocol.text_positions import source_lines


@dataclass(frozen=True)
class CommittedLine:
    """Who introduced one line of HEAD's kernel.py."""

    origin: str  # "version", "commit" or "boundary" (older than a shallow clone's history)
    commit: str
    subject: str
    version: str | None


def committed_lines(history: History) -> list[CommittedLine]:
    """`git blame` of HEAD's kernel.py, each commit resolved to a version (once per state)."""
    lines: list[CommittedLine] = history.memoized("committed_lines", lambda: _blame_head(history))
    return lines


def _blame_head(history: History) -> list[CommittedLine]:
    lines: list[CommittedLine] = []
    if history.paths is not None and history.head_blob is not None:
        entries = gitdata.blame(history.paths.toplevel, history.kernel_rel, history.head or "HEAD")
        resolved: dict[str, str | None] = {}
        unresolved: list[str] = []
        shallow = gitdata.shallow_commits(history.paths) if any(e.boundary for e in entries) else frozenset()
        for entry in entries:
            if entry.commit in resolved:
                continue
            version = history.version_of_commit(entry.commit) or history.version_of_subject(entry.subject)
            resolved[entry.commit] = version
            if version is None:
                unresolved.append(entry.commit)
        if unresolved:
            names = [f"{commit}:{history.kernel_rel}" for commit in unresolved]
            blobs = gitdata.batch_check(history.root, names)
            for commit in unresolved:
                blob = blobs.get(f"{commit}:{history.kernel_rel}")
                resolved[commit] = history.version_of_blob(blob) if blob else None
        for entry in entries:
            if entry.boundary and entry.commit in shallow:
                lines.append(CommittedLine("boundary", entry.commit, entry.subject, None))
                continue
            version = resolved.get(entry.commit)
            lines.append(
                CommittedLine("version" if version else "commit", entry.commit, entry.subject, version)
            )
    return lines


def _meaningful(line: str) -> str | None:
    text = " ".join(line.split())
    return text if len(text) >= 4 and any(c.isalnum() for c in text) else None


def failed_lines(history: History) -> dict[str, tuple[str, str]]:
    """Lines a failed or unpromoted version introduced (normalised text -> (version, detail)):
    an unsaved line that equals one was tried there already."""
    found: dict[str, tuple[str, str]] = history.memoized("failed_lines", lambda: _lines_of_failures(history))
    return found


def _lines_of_failures(history: History) -> dict[str, tuple[str, str]]:
    table: dict[str, tuple[str, str]] = {}
    tried = [f for f in history.versions.values() if f.kernel_blob and (not f.passed or f.effect.outcome)]
    base = history.head_text() or ""
    needed = [f.kernel_blob for f in tried] + [f.parent_commit_blob for f in tried if f.parent_commit_blob]
    texts = history.memo.setdefault("texts", {})
    missing = [b for b in needed if b and b not in texts]
    if missing and history.paths is not None:
        texts.update(gitdata.read_blobs(history.root, missing))
    for facts in sorted(tried, key=lambda f: f.number):
        text = texts.get(facts.kernel_blob)
        if text is None:
            continue
        parent = texts.get(facts.parent_commit_blob) if facts.parent_commit_blob else base
        before = source_lines(parent or "")
        after = source_lines(text)
        matcher = difflib.SequenceMatcher(None, before, after, autojunk=False)
        for tag, _i1, _i2, j1, j2 in matcher.get_opcodes():
            if tag in ("insert", "replace"):
                for line in after[j1:j2]:
                    key = _meaningful(line)
                    if key:
                        table[key] = (facts.version, facts.effect.text)
    return table


def _version_hint(version: str, effect: VersionEffect, include_masked: bool) -> str:
    if effect.masked and not include_masked:
        return f"introduced in {version} (masked: hidden from the active memory)"
    label = f"{version} (masked)" if effect.masked else version
    action = f"{effect.action}, " if effect.action else ""
    return f"introduced in {label}: {action}{effect.text}"


def _buffer_map(head_lines: list[str], buffer_lines: list[str]) -> list[int | None]:
    """For each buffer line, the HEAD line it is (None: not in HEAD)."""
    if head_lines == buffer_lines:
        return list(range(len(buffer_lines)))
    mapping: list[int | None] = [None] * len(buffer_lines)
    # An edit touches a few lines: match the common head and tail directly and run difflib on
    # the middle only (linear instead of quadratic in the file's length).
    prefix = 0
    limit = min(len(head_lines), len(buffer_lines))
    while prefix < limit and head_lines[prefix] == buffer_lines[prefix]:
        mapping[prefix] = prefix
        prefix += 1
    suffix = 0
    while (
        suffix < limit - prefix
        and head_lines[len(head_lines) - 1 - suffix] == buffer_lines[len(buffer_lines) - 1 - suffix]
    ):
        mapping[len(buffer_lines) - 1 - suffix] = len(head_lines) - 1 - suffix
        suffix += 1
    middle_head = head_lines[prefix : len(head_lines) - suffix]
    middle_buffer = buffer_lines[prefix : len(buffer_lines) - suffix]
    if middle_head and middle_buffer:
        matcher = difflib.SequenceMatcher(None, middle_head, middle_buffer, autojunk=False)
        for block in matcher.get_matching_blocks():
            for offset in range(block.size):
                mapping[prefix + block.b + offset] = prefix + block.a + offset
    return mapping


def blame_lines(history: History, buffer: str | None = None, include_masked: bool = False) -> list[BlameLine]:
    """One BlameLine per line of `buffer` (the editor's text; None: HEAD's kernel.py)."""
    return history.per_buffer(
        f"blame:{include_masked}", buffer, lambda: _blame_lines(history, buffer, include_masked)
    )


def _blame_lines(history: History, buffer: str | None, include_masked: bool) -> list[BlameLine]:
    committed_text = history.head_text()
    text = buffer if buffer is not None else committed_text
    if text is None:
        return []
    buffer_lines = source_lines(text)
    if committed_text is None:
        return [
            BlameLine.model_construct(
                line=index,
                origin="unknown",
                hint="no git history for kernel.py",
            )
            for index in range(len(buffer_lines))
        ]
    committed = committed_lines(history)
    head_lines = source_lines(committed_text)
    mapping = _buffer_map(head_lines, buffer_lines)
    tried = failed_lines(history) if any(m is None for m in mapping) else {}
    result: list[BlameLine] = []
    for index, head_index in enumerate(mapping):
        origin = committed[head_index] if head_index is not None and head_index < len(committed) else None
        if origin is None:
            key = _meaningful(buffer_lines[index])
            seen = tried.get(key) if key else None
            hint = "unsaved/unmeasured"
            if seen is not None:
                hint += f"; tried in {seen[0]}: {seen[1]}"
            result.append(
                BlameLine.model_construct(
                    line=index,
                    origin="unsaved",
                    tried_in=seen[0] if seen else None,
                    hint=hint,
                )
            )
            continue
        if origin.origin == "boundary":
            result.append(
                BlameLine.model_construct(
                    line=index,
                    origin="unknown",
                    hint=f"before the shallow history (it starts at {short(origin.commit)} "
                    f'"{origin.subject}"): version unknown',
                )
            )
            continue
        facts = history.versions.get(origin.version) if origin.version else None
        result.append(
            BlameLine.model_construct(
                line=index,
                origin="commit" if facts is None else "version",
                version=None if facts is None else facts.version,
                commit=origin.commit,
                commit_subject=origin.subject,
                effect=None if facts is None or (facts.masked and not include_masked) else facts.effect,
                hint=f'last changed in {short(origin.commit)} "{origin.subject}" (no memory record)'
                if facts is None
                else _version_hint(facts.version, facts.effect, include_masked),
            )
        )
    return result


def blame_line(
    history: History, line: int, buffer: str | None = None, include_masked: bool = False
) -> BlameLine | None:
    """The hint for one 0-based line (served from the per-buffer cache)."""
    lines = blame_lines(history, buffer, include_masked)
    return lines[line] if 0 <= line < len(lines) else None
