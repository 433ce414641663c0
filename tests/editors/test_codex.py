"""Codex as a client: the real binary (npm @openai/codex, pinned), run headless (`codex exec`)
with kernelscope's skills (editor-clients/claude-code/skills) linked into a fresh user's
`~/.agents/skills/` exactly as editor-clients/claude-code/README.md says, against a scripted
Responses API server of our own on 127.0.0.1 (tests/support/responses_server.py: no network,
no credentials), in the workspace `kernelscope demo` builds (v0..v3 recorded, BLOCK_SIZE 64,
128, 256, 1024).

Codex has no LSP client: it lists the skills it found (name, description, SKILL.md path) in a
developer message of every request, the model reads a skill's SKILL.md through the shell tool
and runs what it says. Each session points Codex's HTTP proxy at the scripted server: any
request meant for another host (update check, plugin sync, analytics) would arrive there and
fail the test.

Runs in CI; locally set KERNELSCOPE_E2E_CODEX=1 (installs the binary into .cache/, ~420 MB)."""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import REPO_ROOT
from tests.support.copies import copy_with_stores
from tests.support.demo_workspace import kernel_with_block
from tests.support.model_server import Reply, texts
from tests.support.npm_tools import npm_binary
from tests.support.responses_server import ResponsesServer, shell

pytestmark = pytest.mark.slow
CODEX = "0.171.0"  # the newest on npm when this was written
SKILLS = REPO_ROOT / "editor-clients" / "claude-code" / "skills"
RUN = pytest.mark.skipif(
    not (os.environ.get("CI") or os.environ.get("KERNELSCOPE_E2E_CODEX")),
    reason="set KERNELSCOPE_E2E_CODEX=1 to run (installs Codex from npm); CI runs it",
)
# The user's ~/.codex/config.toml: the scripted model as a custom provider; no analytics and no
# plugin marketplace sync (without these two Codex 0.171 contacts ab.chatgpt.com, github.com,
# api.github.com and chatgpt.com at start: seen through the proxy below and with strace);
# commands in a non-login shell, as the README tells a user whose `kernelscope` is on the PATH
# Codex starts with but not on the one a login shell's profile sets (Debian's /etc/profile).
CONFIG = """\
model = "scripted"
model_provider = "scripted"
check_for_update_on_startup = false
allow_login_shell = false

[analytics]
enabled = false

[features]
plugins = false

[model_providers.scripted]
name = "scripted"
base_url = "{url}/v1"
wire_api = "responses"
"""


@pytest.fixture(scope="module")
def codex() -> Path:
    return npm_binary("@openai/codex", CODEX, "codex", f"codex-{CODEX}")


def codex_user(tmp_path: Path, copy: Path) -> tuple[Path, dict[str, str]]:
    """A user whose home is fresh, with the skills linked as the README says
    (`ln -s .../skills/* ~/.agents/skills/`), the experiment store of `copy` (a copy of the
    demo), and `kernelscope` on PATH: the home and the environment to run Codex in (its
    config.toml written by `serve_to`)."""
    home = tmp_path / "home"
    (home / ".agents" / "skills").mkdir(parents=True)
    (home / ".codex").mkdir()
    linked = subprocess.run(
        f"ln -s {SKILLS}/* {home}/.agents/skills/", shell=True, capture_output=True, text=True, check=False
    )
    assert linked.returncode == 0, linked.stderr
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "CODEX_", "KERNELSCOPE_"))},
        "HOME": str(home),
        "CODEX_HOME": str(home / ".codex"),
        "XDG_CONFIG_HOME": str(home / ".config"),
        "XDG_DATA_HOME": str(copy / "share"),  # the demo's experiments
        "XDG_CACHE_HOME": str(home / ".cache"),
        "XDG_STATE_HOME": str(home / ".local" / "state"),
        "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}",  # `kernelscope` itself
        "NO_PROXY": "127.0.0.1,localhost",
        "no_proxy": "127.0.0.1,localhost",
    }
    return home, env


def serve_to(server: ResponsesServer, home: Path, env: dict[str, str]) -> None:
    """Codex's config for the scripted model `server`, and its HTTP proxy pointed there too
    (traffic meant for any other host lands in `server.elsewhere`)."""
    (home / ".codex" / "config.toml").write_text(CONFIG.format(url=server.url))
    for name in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY"):
        env[name] = env[name.lower()] = server.url


def session(
    codex: Path,
    demo: Path,
    tmp_path: Path,
    director: Callable[[list[dict[str, Any]], Path], Reply],
    options: tuple[str, ...] = (),
    extra_env: dict[str, str] | None = None,
) -> tuple[subprocess.CompletedProcess[str], ResponsesServer, Path]:
    """One `codex exec` in a private copy of the demo, by a `codex_user`, in Codex's
    workspace-write sandbox (`--full-auto`'s), with `options` and `extra_env` added. Returns
    the run, the server and the workspace."""
    copy = copy_with_stores(demo, tmp_path / "demo")
    ws = copy / "kernel_opt_vector_add"
    home, env = codex_user(tmp_path, copy)
    env.update(extra_env or {})
    with ResponsesServer(lambda requests: director(requests, ws)) as server:
        serve_to(server, home, env)
        run = subprocess.run(
            [
                str(codex),
                "exec",
                "--ephemeral",
                "-s",
                "workspace-write",
                *options,
                "Make the vector add kernel faster.",
            ],
            cwd=ws,
            env=env,
            capture_output=True,
            text=True,
            timeout=240,
        )
    assert run.returncode == 0, run.stdout[-2000:] + run.stderr[-2000:]
    assert server.elsewhere == [], server.elsewhere  # nothing but the scripted model's traffic
    return run, server, ws


def skill_path(first_request: dict[str, Any], name: str) -> str:
    """Where Codex's skill list (its first developer messages) says the SKILL.md of `name` is:
    `- <name>: <description> (file: rN/<dir>/SKILL.md)`, rN a root listed as `- `rN` = `<path>``."""
    listed = texts(first_request)
    roots = dict(re.findall(r"- `(r\d+)` = `([^`]+)`", listed))
    match = re.search(rf"- (?:[\w-]+:)?{re.escape(name)}: .* \(file: (r\d+)/([^)]+)\)", listed)
    assert match, listed[-3000:]
    return f"{roots[match.group(1)]}/{match.group(2)}"


def last_output(request: dict[str, Any]) -> str:
    """The output of the latest tool call, as the request gives it back to the model."""
    return str(
        next(
            item["output"]
            for item in reversed(request["input"])
            if item.get("type") == "function_call_output"
        )
    )


def skill_command(skill_text: str, start: str) -> str:
    """The first line of the skill's ```bash blocks that starts with `start`, as written (its
    trailing comment left out)."""
    lines = [
        line.split("  #")[0].strip()
        for block in re.findall(r"```bash\n(.*?)```", skill_text, re.S)
        for line in block.splitlines()
    ]
    found = next((line for line in lines if line.startswith(start)), None)
    assert found, skill_text[:1500]
    return found


@RUN
def test_the_first_request_lists_kernelscopes_skills(codex: Path, demo: Path, tmp_path: Path) -> None:
    """(a) Linked into ~/.agents/skills/, the three skills are in Codex's first request to the
    model: name, the description of their SKILL.md, and the path to read it from."""
    _run, server, _ws = session(codex, demo, tmp_path, lambda requests, ws: Reply(text="done"))
    listed = texts(server.requests[0])
    assert "<skills_instructions>" in listed, listed[-3000:]
    for skill in sorted(SKILLS.iterdir()):
        front = (skill / "SKILL.md").read_text().split("---")[1]
        description = re.search(r"^description: (.*)$", front, re.M)
        assert description and f"{skill.name}: {description.group(1)}" in listed, listed[-3000:]
        assert Path(skill_path(server.requests[0], skill.name)).resolve() == (skill / "SKILL.md").resolve()


@RUN
def test_a_check_before_gpu_time_names_the_recorded_version(codex: Path, demo: Path, tmp_path: Path) -> None:
    """(b) The model reads the before-gpu-time skill where Codex lists it, makes kernel.py v0's
    code through the shell, then runs the skill's check command as written: the next request
    carries its output, naming v0."""

    def director(requests: list[dict[str, Any]], ws: Path) -> Reply:
        if len(requests) == 1:
            return shell(f"cat {skill_path(requests[0], 'kernelscope-before-gpu-time')}")
        if len(requests) == 2:
            return shell(f"cat > kernel.py <<'EOF'\n{kernel_with_block(64, ws)}EOF")
        if len(requests) == 3:
            return shell(skill_command(last_output(requests[1]), "kernelscope check"))
        return Reply(text="done")

    _run, server, ws = session(codex, demo, tmp_path, director)
    assert len(server.requests) == 4, [last_output(r)[-500:] for r in server.requests[1:]]
    assert "kernelscope check --json" in last_output(server.requests[1])  # the skill, as Codex read it
    assert "BLOCK_SIZE=64)" in (ws / "kernel.py").read_text()
    told = last_output(server.requests[3])
    assert "identical to v0" in told and '"code": "already_tried"' in told, told[-2000:]
    assert "`kernelscope bench`" in told  # what to run instead, a shell command
    report = json.loads(told[told.index("{") :])
    assert report["identical"] is True and report["file"] == str(ws / "kernel.py")


@RUN
def test_the_experiment_history_skill_lists_the_stores_rows_whole(
    codex: Path, demo: Path, tmp_path: Path
) -> None:
    """(c) The experiment-history skill's first command as written, then again with
    --include-interpreter as the skill says for a machine without a GPU, then its `exp show`
    of the best row: the list reaches the model whole, a line per experiment of the demo (best
    score first: v3, BLOCK_SIZE 1024), and the one shown in full
    parses (with `--json` the list was cut in the middle by Codex and did not)."""

    def director(requests: list[dict[str, Any]], ws: Path) -> Reply:
        skill = last_output(requests[1]) if len(requests) > 1 else ""
        if len(requests) == 1:
            return shell(f"cat {skill_path(requests[0], 'kernelscope-experiment-history')}")
        if len(requests) == 2:
            return shell(skill_command(skill, "kernelscope exp top"))
        if len(requests) == 3:
            return shell(skill_command(skill, "kernelscope exp top") + " --include-interpreter")
        if len(requests) == 4:
            best = re.search(r"\b([0-9a-f]{16})\b", last_output(requests[3]))
            assert best, last_output(requests[3])
            return shell(skill_command(skill, "kernelscope exp show").replace("<id>", best.group(1)))
        return Reply(text="done")

    _run, server, _ws = session(codex, demo, tmp_path, director)
    assert len(server.requests) == 5, [last_output(r)[-500:] for r in server.requests[1:]]
    first = last_output(server.requests[2])
    assert re.search(r"\d+ interpreter runs? left out", first) and "--include-interpreter" in first, first[
        -1500:
    ]
    listed = last_output(server.requests[3])
    assert "truncated" not in listed, listed
    rows = [line for line in listed.splitlines() if re.search(r"[0-9a-f]{16}", line)]
    versions = [re.search(r"\b(v\d)\b", row) for row in rows]
    assert sorted(v.group(1) for v in versions if v) == ["v0", "v1", "v2", "v3"], rows
    scores = [float(re.search(r"([\d.]+)x", row).group(1)) for row in rows]  # type: ignore[union-attr]
    assert scores == sorted(scores, reverse=True), rows
    assert versions[0] and versions[0].group(1) == "v3" and "-> 1024" in rows[0], listed
    shown = last_output(server.requests[4])
    assert "truncated" not in shown, shown[:1000]
    record = json.loads(shown[shown.index("{") :])
    assert "BLOCK_SIZE=1024)" in record["code_change"], record


@RUN
def test_the_skills_bench_runs_in_the_workspace_write_sandbox(
    codex: Path, demo: Path, tmp_path: Path
) -> None:
    """(d) `kernelscope bench` as the before-gpu-time skill writes it, run by Codex's shell in
    its workspace-write sandbox with the home read-only (the home lives in /tmp here, so /tmp
    is left out of the writable folders, `exclude_slash_tmp`, and a TMPDIR of its own stands
    in for it): the kernel runs in kernelscope's scratch copy and the result passes. Run again
    without TMPDIR (no writable temporary folder), it says which folder to allow, exit 2."""
    scratch = tmp_path / "tmp"
    scratch.mkdir()

    def director(requests: list[dict[str, Any]], ws: Path) -> Reply:
        skill = last_output(requests[1]) if len(requests) > 1 else ""
        if len(requests) == 1:
            return shell(f"cat {skill_path(requests[0], 'kernelscope-before-gpu-time')}")
        if len(requests) == 2:
            return shell("touch ~/written; echo status $?")
        if len(requests) == 3:
            return shell(skill_command(skill, "kernelscope bench"))
        if len(requests) == 4:
            return shell(f"env -u TMPDIR {skill_command(skill, 'kernelscope bench')}; echo status $?")
        return Reply(text="done")

    _run, server, ws = session(
        codex,
        demo,
        tmp_path,
        director,
        options=("-c", "sandbox_workspace_write.exclude_slash_tmp=true"),
        extra_env={"TMPDIR": str(scratch)},
    )
    assert len(server.requests) == 5, [last_output(r)[-500:] for r in server.requests[1:]]
    home = last_output(server.requests[2])
    assert "Read-only file system" in home and "status 1" in home, home
    measured = last_output(server.requests[3])
    result = json.loads(measured[measured.index("{") :])
    assert result["status"] == "ok" and result["passed"] is True and result["mode"] == "interpreter", (
        measured[-2000:]
    )
    refused = last_output(server.requests[4])
    assert "status 2" in refused and "Traceback" not in refused, refused[-2000:]
    assert "(/tmp: read-only file system)" in refused and "set TMPDIR" in refused, refused[-2000:]
    assert (
        subprocess.run(["git", "status", "--porcelain"], cwd=ws, capture_output=True, text=True).stdout == ""
    )


RECORD = "kernelscope iterate --mode interpreter --seeds 1 -a tiling -d 'BLOCK_SIZE 512'"


@RUN
def test_the_partial_restart_skills_codex_command_records_the_next_version(
    codex: Path, demo: Path, tmp_path: Path
) -> None:
    """(e) The partial-restart skill's `kernelscope restart --agent '...' --json` with the Codex
    command the skill gives in its place, run as written (this `codex` on PATH): the fresh
    agent reads the brief, makes kernel.py new code and records it with `kernelscope iterate`
    as the brief says, through its shell; the restart completes, v4 recorded and committed. The
    restart masks v1 or v2 (v3 is the best and the latest), committing the mask first."""
    skill = (SKILLS / "kernelscope-partial-restart" / "SKILL.md").read_text()
    (line,) = [s.strip() for s in skill.splitlines() if s.strip().startswith("kernelscope restart --agent")]
    agent = re.search(r"`(codex exec [^`]+)`", skill)
    assert agent, skill
    argv = shlex.split(line)
    argv[argv.index("--agent") + 1] = agent.group(1)
    copy = copy_with_stores(demo, tmp_path / "demo")
    ws = copy / "kernel_opt_vector_add"
    home, env = codex_user(tmp_path, copy)
    env["PATH"] = f"{codex.parent}{os.pathsep}{env['PATH']}"

    def director(requests: list[dict[str, Any]]) -> Reply:
        if len(requests) == 1:
            brief = re.search(r"Read (\S+\.md) and follow it", texts(requests[0]))
            assert brief, texts(requests[0])[-2000:]
            return shell(f"cat {brief.group(1)}")
        if len(requests) == 2:
            return shell(f"cat > kernel.py <<'EOF'\n{kernel_with_block(512, ws)}EOF")
        if len(requests) == 3:
            return shell(RECORD)
        return Reply(text="done")

    with ResponsesServer(director) as server:
        serve_to(server, home, env)
        done = subprocess.run(argv, cwd=ws, env=env, capture_output=True, text=True, timeout=300)
    told = [last_output(r)[-1500:] for r in server.requests[1:]]
    report = json.loads(done.stdout)
    assert done.returncode == 0 and report["completed"], (report["violations"], told, done.stderr[-2000:])
    assert server.elsewhere == [], server.elsewhere
    assert len(server.requests) == 4, told
    assert "kernelscope iterate" in last_output(server.requests[1])  # the brief, as the agent read it
    assert report["latest_memory_path"] == str(ws / "memory" / "v4.json")
    assert "BLOCK_SIZE=512)" in (ws / "kernel.py").read_text()
    commit = report["commit_hash"]
    shown = subprocess.run(
        ["git", "show", "--name-only", "--format=", commit], cwd=ws, capture_output=True, text=True
    )
    assert commit and set(shown.stdout.split()) >= {"kernel.py", "memory/v4.json"}, (shown, report)
    # the mask was committed before Codex started (restart.commit_mask): nothing of memory/ is
    # left for the agent's git use to undo
    assert report["mask_commit"], report
    porcelain = subprocess.run(
        ["git", "status", "--porcelain", "--", "memory"], cwd=ws, capture_output=True, text=True
    )
    assert porcelain.stdout == "", porcelain.stdout
