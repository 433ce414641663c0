"""A restart refused is refused alike on every path: the editor's question (asked before a
`confirm` click writes), the editor's command sent without `confirm` (a script), and
`kernelscope restart`. Each situation below gave different answers on those paths: the
question asked, or the command started a job, where the CLI refused (the yes, or the job,
then failed); one refusal on a path, another on the next; a crash where the CLI named the
bad setting. The rule is the engine's one preflight (workflows/restart.py); the LSP layer
only resolves the workspace and translates its refusal into InvalidParams, nothing written,
no job started."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, nullcontext
from pathlib import Path
from typing import Any

import pytest
from pygls.exceptions import JsonRpcInvalidParams

from kernelscope.daemon.lsp.features.commands import Commands
from kernelscope.daemon.lsp.state import ServerState
from kernelscope.protocol.lsp import RestartParams
from tests.conftest import EXAMPLES
from tests.support.locks import a_restart_running

KERNELSCOPE = str(Path(sys.executable).with_name("kernelscope"))
AGENT = f"{sys.executable} -c pass"


class _NoJobs:
    """Jobs that record a start: a refused command starts none."""

    def __init__(self) -> None:
        self.started: list[str] = []

    def restart(self, ws: Any, agent: str, *args: Any) -> Any:
        self.started.append(agent)
        raise AssertionError("a restart job was started where the restart is refused")


def _no_readme(ws: Path) -> AbstractContextManager[None]:
    (ws / "README.md").unlink()  # kernel.py and memory/: a workspace all the same
    return nullcontext()


def _supervised(ws: Path) -> AbstractContextManager[None]:
    (ws / ".orchestrator_state.json").write_text('{"status": "running"}\n')
    return nullcontext()


# situation: (how to make it, the config file's text, the words the refusal says)
SITUATIONS: dict[str, tuple[Callable[[Path], AbstractContextManager[None]], str | None, str]] = {
    "no README": (_no_readme, f"agent = {AGENT!r}\n", "no README.md"),
    "supervised, no agent": (_supervised, None, "refusing to restart"),
    "an agent that is no text": (lambda ws: nullcontext(), 'agent = ["claude", "-p"]\n', "invalid settings"),
    "a restart of another process": (
        a_restart_running,
        f"agent = {AGENT!r}\n",
        "is running in this workspace",
    ),
}


@pytest.fixture
def ws(tmp_path: Path) -> Iterator[Path]:
    folder = tmp_path / "folder"
    shutil.copytree(EXAMPLES / "vector_add", folder / "kernel_opt_vector_add")
    yield folder / "kernel_opt_vector_add"


def _memory(ws: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in (ws / "memory").iterdir()}


@pytest.mark.parametrize("situation", SITUATIONS)
def test_a_restart_is_refused_alike_by_the_question_the_command_and_the_cli(
    ws: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, situation: str
) -> None:
    make, config, words = SITUATIONS[situation]
    path = tmp_path / "config.toml"
    if config is not None:
        path.write_text(config)
    monkeypatch.setenv("KERNELSCOPE_CONFIG", str(path))
    state = ServerState()
    state.set_folders([ws.parent])
    jobs = _NoJobs()
    commands = Commands(object(), state, jobs)  # type: ignore[arg-type]
    params = RestartParams.model_validate({"workspace": str(ws), "seed": 1})
    before = _memory(ws)
    with make(ws):
        cli = subprocess.run(
            [KERNELSCOPE, "restart", "-w", str(ws), "--seed", "1", "--json"],
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert cli.returncode in (1, 2), (cli.returncode, cli.stdout, cli.stderr)
        refusal = json.loads(cli.stdout)["error"]["message"]
        assert words in refusal, refusal
        answers = []
        for path_name, call in (("question", commands.question), ("command", commands.restart)):
            with pytest.raises(JsonRpcInvalidParams) as refused:
                call(params)
            answers.append((path_name, refused.value.message))
        assert answers == [("question", refusal), ("command", refusal)]
    assert jobs.started == []
    assert _memory(ws) == before
