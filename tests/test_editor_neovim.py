"""The Neovim plugin in a real (headless) Neovim: lens text read from the buffer's extmarks,
a lens executed, a user command run. Skipped when Neovim is not installed (CI installs it)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.conftest import REPO_ROOT, editor_session

pytestmark = pytest.mark.slow
NVIM = shutil.which("nvim")


@pytest.mark.skipif(
    NVIM is None and not os.environ.get("CI"), reason="neovim is not installed (CI installs it)"
)
def test_neovim_plugin(tmp_path: Path) -> None:
    assert NVIM is not None, "CI must install neovim"
    _, out, env = editor_session(tmp_path, KS_PLUGIN=str(REPO_ROOT / "editor-clients" / "neovim"))
    script = REPO_ROOT / "editor-clients" / "neovim" / "tests" / "headless_test.lua"
    proc = subprocess.run(
        [NVIM, "--headless", "-u", "NONE", "-c", f"luafile {script}"],
        env=env,
        capture_output=True,
        text=True,
        timeout=180,
    )
    results = json.loads(out.read_text())
    assert proc.returncode == 0 and "error" not in results, (proc.stderr[-2000:], results)
    assert results["attached"] is True
    texts = [item["text"] for item in results["lenses"]]
    assert any(t.startswith("target bandwidth >= 4.32TB/s") for t in texts), texts
    assert "best 1.22x v4 | latest 1.22x v4 | 4 runs, 1 failed" in texts  # memory records alone
    kernel_lens = next(item for item in results["lenses"] if item["text"].startswith("best "))
    assert kernel_lens["line"] == 7  # above `@triton.jit` of add_kernel
    history = results["commands"]["kernelscope.showHistory"]  # the lens was executed
    assert history["kernel"] == "add_kernel" and len(history["entries"]) == 5
    mask = results["commands"]["kernelscope.maskHalf"]  # the user command ran
    assert mask["dry_run"] is True and mask["best_version"] == "v4"
