"""Starts `kernelscope serve` (as no_torch_server.py does) with a profile hook on every thread
that follows the save flow: each call made while a kernelscope frame of
`daemon/lsp/features/save.py` or `.../lenses.py` is on the stack is checked for a climb back,
a call into a file that is already on the stack below another file (A -> B -> A). A
builder handed to a cache owner and called by it (`WorkspaceCache.get`, `History.memoized`,
`.per_buffer`, `.analyzed`) is the one way down that comes back: it is not a climb. Each
distinct climb is appended to the file named by the first argument as one JSON line: the
stack's files, outermost first."""

import json
import os
import sys
import threading
from pathlib import Path

ROOT = str(Path(__file__).resolve().parents[2]) + os.sep
OUT = sys.argv.pop(1)
ROOTS = ("daemon/lsp/features/save.py", "daemon/lsp/features/lenses.py")
# (file, function) of the cache owners that call the builder they are handed
OWNERS = {
    ("daemon/engine/workspace/cache.py", "get"),
    ("daemon/engine/history/timeline.py", "memoized"),
    ("daemon/engine/history/timeline.py", "per_buffer"),
    ("daemon/engine/history/timeline.py", "_analyzed_then"),
}
_seen: set[tuple[str, ...]] = set()
_lock = threading.Lock()


def _ours(filename: str) -> str | None:
    if not filename.startswith(ROOT):
        return None
    relative = filename[len(ROOT) :]
    return relative if relative.startswith(("daemon/", "protocol/")) else None


def _profile(frame, event, arg):  # type: ignore[no-untyped-def]
    if event != "call":
        return
    here = _ours(frame.f_code.co_filename)
    if here is None:
        return
    # The stack's files from the call up to its root, or up to the builder a cache owner
    # called (what is above that boundary was checked when it was called).
    files = [here]
    inside = frame
    caller = frame.f_back
    crossed = False
    rooted = here in ROOTS
    while caller is not None:
        name = _ours(caller.f_code.co_filename)
        if name is not None:
            rooted = rooted or name in ROOTS
            if (
                not crossed
                and (name, caller.f_code.co_name) in OWNERS
                and inside.f_code.co_filename != caller.f_code.co_filename
            ):
                crossed = True  # `inside` is a builder the owner was handed
            elif not crossed and name != files[-1]:
                files.append(name)
            inside = caller
        caller = caller.f_back
    chain = tuple(reversed(files))  # outermost first, consecutive frames of one file collapsed
    if not rooted or len(set(chain)) == len(chain):
        return
    with _lock:
        if chain in _seen:
            return
        _seen.add(chain)
        with open(OUT, "a", encoding="utf-8") as out:
            out.write(json.dumps(chain) + "\n")


threading.setprofile(_profile)
sys.setprofile(_profile)

exec(compile(Path(__file__).with_name("no_torch_server.py").read_text(), "no_torch_server.py", "exec"))
