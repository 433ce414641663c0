"""The workspace `kernelscope demo` builds, for the tests that drive a real agent binary in it
(tests/editors/test_claude_code.py, test_codex.py, test_editor_helix.py): v0..v3 recorded under the interpreter and
committed, BLOCK_SIZE 64, 128, 256, 1024, all active."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path


def build_demo(root: Path) -> Path:
    """`kernelscope demo` into `root` (the workspace is root/kernel_opt_vector_add); its
    experiment store in root/share/kernelscope (the XDG_DATA_HOME it ran with), so that
    copy_with_stores carries the experiments along with the workspace."""
    kernelscope = Path(sys.executable).with_name("kernelscope")
    env = {**os.environ, "XDG_DATA_HOME": str(root / "share")}
    made = subprocess.run(
        [str(kernelscope), "demo", "--dir", str(root), "--mode", "interpreter"],
        capture_output=True,
        text=True,
        timeout=900,
        env=env,
    )
    assert made.returncode == 0, made.stdout[-2000:] + made.stderr[-2000:]
    # The demo's mask-half masks v2 (v3 best and latest; seed 0 picks v2 of v1 and v2); these
    # sessions expect v0..v3 all active.
    ws = root / "kernel_opt_vector_add"
    masked = [
        p.stem for p in sorted((ws / "memory").glob("v*.json")) if json.loads(p.read_text()).get("masked")
    ]
    if masked:
        from kernelscope.daemon.engine.workflows.git import Git

        unmask = [str(kernelscope), "memory", "unmask", "-w", str(ws), "--version", *masked]
        done = subprocess.run(unmask, capture_output=True, text=True, timeout=120, env=env)
        assert done.returncode == 0, done.stdout + done.stderr
        Git(ws).commit_paths(sorted((ws / "memory").glob("v*.json")), f"unmask {', '.join(masked)}")
    return root


def kernel_with_block(block: int, ws: Path) -> str:
    """The workspace's kernel.py with its launch's BLOCK_SIZE (and grid) set to `block`."""
    source = (ws / "kernel.py").read_text()
    source = re.sub(r"triton\.cdiv\(n_elements, \d+\)", f"triton.cdiv(n_elements, {block})", source)
    return re.sub(r"BLOCK_SIZE=\d+\)", f"BLOCK_SIZE={block})", source)
