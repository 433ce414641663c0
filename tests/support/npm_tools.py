"""Agent binaries the editor tests run for real, installed from npm into REPO/.cache/ once."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

from tests.conftest import REPO_ROOT, missing_tool


def npm_binary(package: str, version: str, command: str, folder: str) -> Path:
    """`package@version` installed into REPO/.cache/<folder> (unless it is there already); the
    path of its `command`. No npm: missing_tool (a failure under CI, a skip elsewhere)."""
    npm = shutil.which("npm")
    if npm is None:
        missing_tool("npm", "apt-get install nodejs npm")
    prefix = REPO_ROOT / ".cache" / folder
    binary = prefix / "node_modules" / ".bin" / command
    if not binary.exists():
        install = subprocess.run(
            [npm, "install", "--prefix", str(prefix), "--no-audit", "--no-fund", f"{package}@{version}"],
            capture_output=True,
            text=True,
            timeout=900,
        )
        assert install.returncode == 0, f"npm install {package} failed:\n" + install.stderr[-3000:]
    shown = subprocess.run([binary, "--version"], capture_output=True, text=True, timeout=60)
    assert version in shown.stdout, (shown.stdout, shown.stderr)
    return binary
