"""The one rule that says a folder is an optimization workspace (protocol/vocabulary.py's
WORKSPACE_RULE: kernel.py, and memory/ or a README line opening a ```kernelscope fence).

Light on purpose: the daemon asks it for every folder the editor opens, before anything else
of the engine is imported (initialize stays as fast as a bare pygls server's). The editor
clients apply the same rule, read as data from editor-clients/commands.json."""

from __future__ import annotations

import re
from pathlib import Path

from kernelscope.protocol.vocabulary import WORKSPACE_DIRS, WORKSPACE_FENCE, WORKSPACE_FILES, WORKSPACE_README
from kernelscope.protocol.workspace_files import not_regular, read_text

TYPE_CHECKING = False  # typing is 2-3 ms of the CLI fast path's start-up: annotations only
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Literal

    Need = Literal["workspace", "memory", "history", "kernel", "folder"]
    Surface = Literal["cli", "editor"]

_FENCE_OPENING = re.compile(r"^\s*(```+|~~~+)\s*(\S+)\s*$")


def is_optimization_workspace(path: Path) -> bool:
    """Every required file, and a required folder or a README line opening the tagged fence.
    Cheap checks first: the README is read only when the folders are missing."""
    if not all((path / name).is_file() for name in WORKSPACE_FILES):
        return False
    if any((path / name).is_dir() for name in WORKSPACE_DIRS):
        return True
    return _readme_fence(path) is None


def _readme_fence(path: Path) -> str | None:
    """None when the folder's README has a line opening the tagged fence; otherwise why not, in
    words: a README that is no regular file (a pipe, /dev/stdin) or cannot be read says so,
    and is never opened (protocol/workspace_files.py)."""
    readme = path / WORKSPACE_README
    try:
        text = read_text(readme, errors="replace")
    except FileNotFoundError:
        return f"no {WORKSPACE_README} with a ```{WORKSPACE_FENCE} block"
    except OSError as exc:
        return f"{WORKSPACE_README} cannot be read: {exc.strerror or exc}"
    for line in text.splitlines():
        match = _FENCE_OPENING.match(line)
        if match and match.group(2) == WORKSPACE_FENCE:
            return None
    return f"no {WORKSPACE_README} with a ```{WORKSPACE_FENCE} block"


def missing_parts(path: Path, need: Need = "workspace") -> list[str]:
    """What `path` lacks for a command (empty: nothing): a whole workspace by the rule, or what
    a command reads alone: `memory` (the memory commands: a memory/ folder, as the seed's
    manager asked), `history` (a read of the experiment history: a workspace, or a memory/
    folder, whose masks it applies), `kernel` (a benchmark: kernel.py), `folder` (a benchmark
    of other files). A path the system cannot look at (a name too long, a folder this user may
    not enter) lacks what it cannot show, said with the reason: never a traceback."""
    try:
        return _missing_parts(path, need)
    except OSError as exc:
        return [f"cannot be read: {exc.strerror or exc}"]


def _missing_parts(path: Path, need: Need) -> list[str]:
    if not path.is_dir():
        return ["no such directory" if not path.exists() else "not a directory"]
    if need == "folder":
        return []
    has_memory = any((path / name).is_dir() for name in WORKSPACE_DIRS)
    if need == "memory":
        return [] if has_memory else [f"no {WORKSPACE_DIRS[0]}/"]
    if need == "history" and has_memory:
        return []
    missing = [_no_file(path, name) for name in WORKSPACE_FILES if not (path / name).is_file()]
    if need == "kernel":
        return missing
    if not missing and not has_memory:
        why = _readme_fence(path)
        if why is not None:
            dirs = " or ".join(f"{name}/" for name in WORKSPACE_DIRS)
            missing.append(f"no {dirs} and {why}")
    return missing


def _no_file(path: Path, name: str) -> str:
    """A required file the folder lacks, in words: none there, or what stands in its place."""
    what = not_regular(path / name)
    return f"{name} is {what}, not a regular file" if what is not None else f"no {name}"


# What to do about it, said once, in the one error, in the words of the surface that says it
# (the CLI's options and commands; the editor's own gestures), and only what applies to the
# folder as it is (`_situation`): a path that is no folder is pointed at a workspace or the
# demo; a folder without kernel.py is told to add it and start memory/ there; one with
# kernel.py only to start memory/ (a folder whose files a kind recognises is named, and told
# that `bench` measures it as it is); a workspace the editor does not serve, to open it. A
# folder inside a workspace names that one instead. Every CLI way out offers ELSEWHERE (the
# user may have meant another folder), and its commands are run on the folder from where the
# user is (`{init}`: `_in_folder`, with -w unless the user is in it).
ELSEWHERE = "pass -w DIR for a workspace elsewhere"
WAY_OUT = {
    "cli": {
        "absent": f"; {ELSEWHERE}, or run `kernelscope demo` to make an example",
        "bare": (
            f"; {ELSEWHERE}, add kernel.py and run `{{init}}` to start one in it, or run "
            "`kernelscope demo` to make an example"
        ),
        "kernel": (
            f"; {ELSEWHERE}, run `{{init}}` to make this one, or run `kernelscope demo` to make an example"
        ),
        "workspace": f"; run `{{init}}` to start its memory/, or {ELSEWHERE}",
        "problem": "; it looks like {problem}: {bench}`{init}` makes it a workspace (or " + ELSEWHERE + ")",
    },
    "editor": {
        "absent": "; open a workspace's folder in the editor",
        "bare": "; open a workspace's folder in the editor, or add kernel.py and memory/ to this one",
        "kernel": "; open a workspace's folder in the editor, or add memory/ to this one",
        "workspace": "; open {path} in the editor",
        "problem": "; it looks like {problem}: add memory/ to this one to make it a workspace, or open a "
        "workspace's folder in the editor",
    },
}
# the problem hint's commands, run in the folder: given -w where the user is elsewhere
BENCH_AS_IT_IS = {"cli": "`{command}` runs on it as it is; ", "editor": ""}
INSIDE = {
    "cli": "; it is inside the workspace {above}: pass -w {above}",
    "editor": "; it is inside the workspace {above}: open {above} in the editor",
}


def not_a_workspace(resolved: Path, missing: list[str], surface: Surface = "cli") -> str:
    """The one "not an optimization workspace" message, naming what is missing and what a
    workspace holds (or, for a workspace the memory commands find no memory/ in, that it is
    one with no records yet), ending with the way out of the surface that says it (`surface`: the
    CLI's commands, the editor's gestures) that fits the folder (WAY_OUT)."""
    situation = _situation(resolved)
    init = _in_folder("kernelscope memory init", resolved)
    if situation == "workspace" and missing == [f"no {WORKSPACE_DIRS[0]}/"]:
        # a workspace by the rule (its README block stands for memory/): the memory commands,
        # which read memory/ alone, find no records in it yet
        way_out = WAY_OUT[surface][situation].format(path=resolved, init=init)
        return f"{resolved} is an optimization workspace with no records yet ({missing[0]}){way_out}"
    above = workspace_holding(resolved.parent) if resolved.parent != resolved else None
    # what the folder's files look like only where the hint says it: a folder inside a
    # workspace is pointed at that one, unread
    problem = _problem(resolved) if above is None and situation == "kernel" else None
    if above is not None:
        hint = INSIDE[surface].format(above=above)
    elif problem is None:
        hint = WAY_OUT[surface][situation].format(path=resolved, init=init)
    else:
        words, runs, module = problem
        bench = BENCH_AS_IT_IS[surface].format(
            command=_in_folder("kernelscope bench", resolved, *(["--reference", module] if module else []))
        )
        hint = WAY_OUT[surface]["problem"].format(
            path=resolved,
            problem=f"{words} ({module})" if module else words,
            bench=bench if runs else "",
            init=init,
        )
    return (
        f"{resolved} is not an optimization workspace ({'; '.join(missing)}): a workspace holds "
        f"kernel.py, and memory/ or a README.md with a ```{WORKSPACE_FENCE} block{hint}"
    )


def _in_folder(command: str, folder: Path, *args: str) -> str:
    """`command` with `args`, run on `folder` from where the user is: with `-w folder` unless
    the current directory is that folder."""
    import shlex

    try:
        here = Path.cwd().resolve() == folder
    except OSError:  # (the current directory was removed)
        here = False
    return shlex.join([*command.split(), *([] if here else ["-w", str(folder)]), *args])


# The hint is a courtesy on an error path: a reference module larger than this is not parsed
# for it (a 55 MB one took over 88 s and 8 GB), and the folder is named by its files alone.
HINT_PARSE_LIMIT = 256 * 1024


def _situation(path: Path) -> str:
    """Which way out fits the folder (a key of WAY_OUT's; "kernel": it holds kernel.py, and
    `_problem` may find it "problem"), from which files exist alone."""
    try:
        if not path.is_dir():
            return "absent"
        if not all((path / name).is_file() for name in WORKSPACE_FILES):
            return "bare"
        if is_optimization_workspace(path):
            return "workspace"
    except OSError:
        return "absent"
    return "kernel"


def _problem(path: Path) -> tuple[str, bool, str | None] | None:
    """What a folder holding kernel.py looks like (protocol/kinds.py's `problem_in`, asked here
    alone: the error's path, so that importing discovery stays light; a reference over
    HINT_PARSE_LIMIT is not parsed, nor more than kinds.PROBLEM_BYTES_PARSED of its modules)."""
    from kernelscope.protocol import kinds

    return kinds.problem_in(path, parse_limit=HINT_PARSE_LIMIT)


def require_workspace(path: Path, need: Need = "workspace") -> Path:
    """`path` resolved, or the one "not a workspace" error every command gives (exit 2), naming
    what is missing."""
    from kernelscope.daemon.engine import DataError

    resolved = Path(path).expanduser().resolve()
    missing = missing_parts(resolved, need)
    if missing and need == "kernel" and resolved.is_dir():
        raise DataError(no_kernel(resolved, missing))
    if missing:
        raise DataError(not_a_workspace(resolved, missing))
    return resolved


# `kernelscope bench` needs kernel.py alone (no memory/, no README block): its way out.
BENCH_WAY_OUT = (
    "; `kernelscope bench` measures the folder's kernel.py: add it, name another file with "
    f"--candidate FILE, {ELSEWHERE}, or run `kernelscope demo` to make an example"
)


def no_kernel(resolved: Path, missing: list[str]) -> str:
    """A benchmark's error for a folder without kernel.py: what it lacks and what bench
    measures, not the workspace rule's (memory/ and a README block are none of bench's needs);
    a folder inside a workspace names that one."""
    above = workspace_holding(resolved.parent) if resolved.parent != resolved else None
    hint = INSIDE["cli"].format(above=above) if above is not None else BENCH_WAY_OUT
    detail = "" if missing == ["no kernel.py"] else f" ({'; '.join(missing)})"  # (a folder in its place)
    return f"{resolved} has no kernel.py to benchmark{detail}{hint}"


def history_workspace(path: Path, recorded: Callable[[str], bool]) -> tuple[Path, str | None]:
    """The workspace a read of the experiment history is narrowed to (`exp top|list|failures|
    summary -w`), resolved, and a note for the reader (None: nothing to say). A workspace (or
    a folder holding memory/) is read as it is. The store keys experiments by the path they
    were recorded under, and not only workspaces have some (a workspace moved or deleted keeps
    them; `import-traces -w` and `exp import` record under any folder): a path that is
    neither is read when `recorded(path)` says the store holds experiments under it, the note
    saying what the folder is; otherwise, as for every command, require_workspace's one error."""
    resolved = Path(path).expanduser().resolve()
    missing = missing_parts(resolved, "history")
    if not missing:
        return resolved, None
    if not recorded(str(resolved)):
        return require_workspace(resolved, need="history"), None  # (raises the one error)
    what = (
        "no longer exists"
        if missing == ["no such directory"]
        else f"is not a workspace ({'; '.join(missing)})"
    )
    return resolved, f"{resolved} {what}: showing the experiments recorded under that path"


def workspace_holding(path: Path, within: Path | None = None) -> Path | None:
    """The innermost workspace at or above `path` (a file or a folder), or None; with `within`
    (a folder at or above `path`), the climb stops at that folder (the editor's folder: a
    workspace nested any depth below it is found, nothing above it is looked at)."""
    start = path if path.is_dir() else path.parent
    for candidate in [start, *start.parents]:
        if within is not None and candidate != within and within not in candidate.parents:
            return None
        if is_optimization_workspace(candidate):
            return candidate
    return None
