"""The Emacs configurations in a real `emacs --batch`: lsp-mode (code lenses, a command, lens
overlays) and eglot (hover carries the facts). Skipped when Emacs is missing (CI installs it)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.conftest import REPO_ROOT, editor_session

pytestmark = pytest.mark.slow
EMACS = shutil.which("emacs")
EMACS_DIR = REPO_ROOT / "editor-clients" / "emacs"


def run_emacs(script: str, tmp_path: Path) -> dict:
    assert EMACS is not None, "CI must install emacs-nox, elpa-lsp-mode and elpa-eglot"
    _, out, env = editor_session(tmp_path, KS_EL=str(EMACS_DIR / "kernelscope.el"), HOME=str(tmp_path))
    proc = subprocess.run(
        [EMACS, "--batch", "-Q", "-l", str(EMACS_DIR / "tests" / script)],
        env=env,
        capture_output=True,
        text=True,
        timeout=180,
    )
    results = json.loads(out.read_text())
    assert proc.returncode == 0 and "error" not in results, (proc.stderr[-2000:], results)
    return results


needs_emacs = pytest.mark.skipif(EMACS is None and not os.environ.get("CI"), reason="emacs is not installed")


@needs_emacs
def test_lsp_mode(tmp_path: Path) -> None:
    results = run_emacs("batch-test.el", tmp_path)
    assert results["initialized"] is True
    assert "best 1.22x v4 | latest 1.22x v4 | 4 runs, 1 failed" in results["lenses"]
    assert any(t.startswith("target bandwidth >= 4.32TB/s") for t in results["lenses"])
    assert results["mask_best"] == "v4"
    assert results["lens_overlays"] >= 2  # lsp-lens-mode drew them


@needs_emacs
def test_eglot_hover(tmp_path: Path) -> None:
    results = run_emacs("eglot-test.el", tmp_path)
    assert results["connected"] is True
    assert results["hover"].startswith("**add_kernel**: 5 experiments")
    assert "| v4 | 1.225x | PASS |" in results["hover"]
