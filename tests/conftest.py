"""Shared fixtures: copies of the example workspaces and an in-process CLI runner."""

from __future__ import annotations

import json
import os
import shutil
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from kernelscope.daemon.cli.main import main

REPO_ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = REPO_ROOT / "examples"


@pytest.fixture
def vector_add_ws(tmp_path: Path) -> Path:
    """A private copy of examples/vector_add (README, kernel.py, memory v0..v4)."""
    target = tmp_path / "kernel_opt_vector_add"
    shutil.copytree(EXAMPLES / "vector_add", target)
    return target


@dataclass
class CliResult:
    exit_code: int
    stdout: str
    stderr: str

    def json(self):  # type: ignore[no-untyped-def]
        return json.loads(self.stdout)


@pytest.fixture
def cli(capsys: pytest.CaptureFixture[str]):  # type: ignore[no-untyped-def]
    """Run `kernelscope ARGS...` in-process and return its exit status and output."""

    def run(*args: str) -> CliResult:
        capsys.readouterr()
        try:
            main(list(args))
            code = 0
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else 0
        captured = capsys.readouterr()
        return CliResult(code, captured.out, captured.err)

    return run


def write_record(ws: Path, version: int, **fields: object) -> Path:
    """Write a memory record directly (as a foreign tool would)."""
    path = ws / "memory" / f"v{version}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"version": f"v{version}", **fields}, indent=2) + "\n")
    return path


@pytest.fixture(params=["sqlite", "postgres"])
def db_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """The store suite runs twice: against SQLite and against a real PostgreSQL server."""
    from tests.store_backends import backend_url

    return backend_url(request.param, tmp_path)


@pytest.fixture
def store(db_url: str):  # type: ignore[no-untyped-def]
    from kernelscope.daemon.engine.store import ExperimentStore

    opened = ExperimentStore(db_url)
    yield opened
    opened.close()


def editor_session(tmp_path: Path, **extra_env: str) -> tuple[Path, Path, dict[str, str]]:
    """For the headless editor tests: a copy of the vector-add workspace, the file the editor
    script writes its findings to, and the environment the scripts read (KS_*)."""
    ws = tmp_path / "kernel_opt_vector_add"
    shutil.copytree(EXAMPLES / "vector_add", ws)
    out = tmp_path / "result.json"
    env = {
        **os.environ,
        "KS_OUT": str(out),
        "KS_WS": str(ws),
        "KS_DB": str(tmp_path / "exp.sqlite"),
        "KS_CMD": json.dumps([sys.executable, "-m", "kernelscope.daemon.lsp"]),
        **extra_env,
    }
    return ws, out, env
