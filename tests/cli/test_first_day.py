"""What a new user sees is true (issue #23), on a workspace `kernelscope iterate` recorded (v0
BLOCK_SIZE 64, v1 1024) with its experiments in a store of its own, as older demos left them:
one store (the user's, found and filled), one number per version on every surface, one "not
a workspace" error, refusals as one JSON document under --json, an orchestrator's workspace
offered no write action, new files with the umask's mode."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from kernelscope.protocol.record_rules import format_score
from tests.support.copies import copy_with_stores

pytestmark = pytest.mark.slow
KERNELSCOPE = str(Path(sys.executable).with_name("kernelscope"))


@pytest.fixture
def ws(prepared: Path, tmp_path: Path) -> Path:
    return copy_with_stores(prepared, tmp_path / "folder", records=True) / "kernel_opt_vector_add"


def run(*args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([KERNELSCOPE, *args], capture_output=True, text=True, input=stdin, timeout=300)


def test_the_workspace_names_its_store_and_brings_its_experiments_there(ws: Path) -> None:
    """The experiments were recorded in the folder's exp.sqlite (its records say so); the user's
    store (the default) had none: `kernelscope workspace` names the store and imports them, and
    then every command without --db sees them."""
    before = run("exp", "summary", "-w", str(ws), "--json")
    assert json.loads(before.stdout) == [], before.stdout
    shown = run("workspace", "-w", str(ws), "--json")
    assert shown.returncode == 0, shown.stderr
    found = json.loads(shown.stdout)
    assert found["store"].endswith("kernelscope/experiments.sqlite")  # the user's one store
    assert list(found["imported"].values()) == [2] and next(iter(found["imported"])).endswith("exp.sqlite")
    after = json.loads(run("exp", "summary", "-w", str(ws), "--json").stdout)
    assert after and after[0]["runs"] == 2
    again = json.loads(run("workspace", "-w", str(ws), "--json").stdout)
    assert again["imported"] == {}  # nothing twice


def test_the_workspace_command_says_the_kind_and_the_supervisor(ws: Path) -> None:
    """README's quick start: `kernelscope workspace` shows "kind, targets, store, supervisor";
    the text named no kind (only --json had it) and a supervisor only as a warning (found by a
    new-user walkthrough)."""
    said = run("workspace", "-w", str(ws))
    assert said.returncode == 0 and "Kind: native; supervisor: none" in said.stdout, said.stdout
    (ws / ".orchestrator_state.json").write_text("{}")
    said = run("workspace", "-w", str(ws))
    assert (
        "Kind: native; supervisor: atrex long-horizon supervisor (kernelscope only observes)" in said.stdout
    )


def test_one_number_per_version_on_every_surface(ws: Path) -> None:
    """v1's score vs v0 reads the same in memory list, memory summary, the demo's lens rule,
    exp top and compare (vs its parent v0 included)."""
    db = str(ws.parent / "exp.sqlite")
    summary = json.loads(run("memory", "list", "-w", str(ws), "--json").stdout)
    v1 = next(row for row in summary if row["version"] == "v1")
    text = format_score(v1["score"]["value"])
    assert "latency_ratio" in v1 and "speedup_vs_v0" not in v1  # the second quantity: its own name
    listed = run("memory", "list", "-w", str(ws)).stdout
    assert "score vs v0" in listed and "latency ratio vs v0" not in listed
    assert re.search(rf"v1 .*{re.escape(text)}", listed), listed
    compared = run("compare", "v0", "v1", "-w", str(ws), "--db", db).stdout
    row = next(line for line in compared.splitlines() if line.startswith("| vs its parent"))
    assert row.count(text) == 1 and "vs v0" in row, row
    top = run("exp", "top", "--db", db, "-w", str(ws), "--include-interpreter").stdout  # CPU runs
    assert re.search(r"\d\.\d\dx", top) and not re.search(r"\d\.\d{3,}x", top), top


@pytest.mark.parametrize(
    "command",
    [
        ["workspace"],
        ["memory", "list"],
        ["memory", "read"],
        ["memory", "mask-half"],
        ["bench"],
        ["iterate", "-a", "x", "-d", "y"],
        ["restart", "--agent", "true"],
        ["blame"],
        ["check"],
        ["compare", "v0", "v1"],
    ],
)
def test_one_not_a_workspace_error(command: list[str], tmp_path: Path) -> None:
    missing = tmp_path / "no-such-dir"
    done = run(*command, "-w", str(missing))
    assert done.returncode == 2, (command, done.stdout, done.stderr)
    assert f"{missing} is not an optimization workspace (no such directory)" in done.stderr
    as_json = run(*command, "-w", str(missing), "--json")
    assert as_json.returncode == 2
    document = json.loads(as_json.stdout)  # one JSON document, nothing else on stdout
    message = document["error"]["message"] if "message" in document["error"] else document["error"]
    assert "is not an optimization workspace" in str(message), document


def test_the_checkout_itself_is_no_workspace() -> None:
    from tests.conftest import REPO_ROOT

    done = run("workspace", "-w", str(REPO_ROOT))
    assert done.returncode == 2 and "(no kernel.py)" in done.stderr, done.stderr


def test_an_orchestrators_workspace_names_the_supervisor_first(ws: Path) -> None:
    (ws / ".atrex_long_horizon").mkdir()
    (ws / ".atrex_long_horizon" / "state.json").write_text("{}")
    refused = run("restart", "-w", str(ws), "--json")  # no agent configured either
    assert refused.returncode == 2
    assert "supervisor" in json.loads(refused.stdout)["error"]["message"]


def test_new_memory_files_get_the_umasks_mode(ws: Path) -> None:
    old = os.umask(0o022)
    try:
        created = run("memory", "create", "-w", str(ws), "--version", "v7")
    finally:
        os.umask(old)
    assert created.returncode == 0, created.stderr
    assert (ws / "memory" / "v7.json").stat().st_mode & 0o777 == 0o644


def test_the_demo_writes_the_users_store_and_prints_what_serve_shows(tmp_path: Path) -> None:
    """The demo on the embedded defaults: experiments in the user's store (no second one in
    --dir), lens texts equal to what the LSP lenses compute for the folder."""
    done = run("demo", "--dir", str(tmp_path / "demo"), "--mode", "interpreter")
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    assert not (tmp_path / "demo" / "experiments.sqlite").exists()
    assert "Experiments: " in done.stdout and "kernelscope/experiments.sqlite" in done.stdout
    from kernelscope.daemon.engine.store import ExperimentStore
    from kernelscope.daemon.engine.views.lens_text import workspace_texts
    from kernelscope.daemon.engine.workspace.cache import WorkspaceCache

    store = ExperimentStore(None)
    ws = tmp_path / "demo" / "kernel_opt_vector_add"
    file_text, kernels = workspace_texts(WorkspaceCache(ws, lambda: store))
    assert f"[top of file] {file_text}" in done.stdout
    assert f"[above add_kernel] {kernels['add_kernel']}" in done.stdout
    # v0-v3 with v3 best and latest: the demo's mask-half (seed 0) masks v2 of v1 and v2
    masked = [
        p.stem for p in sorted((ws / "memory").glob("v*.json")) if json.loads(p.read_text()).get("masked")
    ]
    assert masked == ["v2"] and "3 runs (+1 masked), 0 failed" in kernels["add_kernel"], kernels
    assert "mask-half: masked v2 (seed 0); kept v3 as best; next version v4" in done.stdout, done.stdout[
        -2000:
    ]
    shutil.rmtree(tmp_path / "demo")
