"""The VS Code extension: unit tests of its pure parts (node's test runner), and end-to-end
tests in a real VS Code (code-server 4.100.3, and 4.139.1, the newest npm served when this was
written, which runs on Node 24) driven by Debian's Chromium through playwright-core: open an
example workspace, see the lens text above a kernel, run a palette command, see its result, save
a screenshot (4.100.3's refreshes docs/images/vscode-lenses.png when KERNELSCOPE_SCREENSHOTS=docs/images); then
kernel.py is rewritten on disk while open (the kernel moves down 3 lines): the lens follows the
kernel, and an edit + save re-benchmarks (the `last probe:` lens shows the saved text's verdict);
README.md with a stop condition kernelscope cannot check shows the warning in the Problems panel.

All run in CI; locally they need node/npm, and the end-to-end tests run when
KERNELSCOPE_E2E_VSCODE=1 (they install code-server into .cache/code-server[-VERSION] first)."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import (
    EXAMPLES,
    IN_CI,
    REPO_ROOT,
    editor_history_session,
    missing_tool,
    unreadable_stop_condition,
    vector_add_history_kernels,
)

pytestmark = pytest.mark.slow
EXTENSION = REPO_ROOT / "editor-clients" / "vscode"
NPM = shutil.which("npm")


def _npm(*args: str, timeout: int = 600) -> subprocess.CompletedProcess[str]:
    assert NPM is not None
    return subprocess.run([NPM, *args], cwd=EXTENSION, capture_output=True, text=True, timeout=timeout)


@pytest.fixture(scope="module")
def built_extension() -> Path:
    if NPM is None:
        missing_tool("npm", "apt-get install nodejs npm")
    if not (EXTENSION / "node_modules").is_dir():
        install = _npm("ci", "--no-audit", "--no-fund")
        assert install.returncode == 0, "npm ci in editor-clients/vscode failed:\n" + install.stderr[-2000:]
    package = _npm("run", "package")
    assert package.returncode == 0, (
        "npm run package in editor-clients/vscode failed:\n" + package.stdout[-2000:] + package.stderr[-2000:]
    )
    return EXTENSION / "kernelscope.vsix"


def test_extension_unit_tests(built_extension: Path) -> None:
    result = _npm("test")
    assert result.returncode == 0, result.stdout[-3000:]
    written = len(re.findall(r"^test\(", (EXTENSION / "test" / "pure.test.ts").read_text(), re.MULTILINE))
    assert written >= 13
    assert "# fail 0" in result.stdout and f"# pass {written}\n" in result.stdout, result.stdout[-3000:]


E2E = pytest.mark.skipif(
    not (IN_CI or os.environ.get("KERNELSCOPE_E2E_VSCODE")),
    reason="set KERNELSCOPE_E2E_VSCODE=1 (installs code-server) to run locally; CI runs it",
)


# The README's version first (its screenshot is the README's), then the newest one tested.
CODE_SERVERS = ["4.100.3", "4.139.1"]


def _code_server(version: str) -> Path:
    name = "code-server" if version == CODE_SERVERS[0] else f"code-server-{version}"
    prefix = REPO_ROOT / ".cache" / name
    setup = subprocess.run(
        ["bash", str(EXTENSION / "e2e" / "setup-code-server.sh"), str(prefix), version],
        capture_output=True,
        text=True,
        timeout=1800,
    )
    assert setup.returncode == 0, first_failed_step(setup.stderr)
    launcher = prefix / "bin" / "code-server"
    printed = subprocess.run([launcher, "--version"], capture_output=True, text=True, timeout=60).stdout
    assert printed_version(printed) == version, printed
    return launcher


def printed_version(output: str) -> str | None:
    """The version `code-server --version` printed, wherever it printed it: on a first run it
    writes `info  Wrote default config file to ...` before the `4.100.3 <commit> with Code ...`
    line."""
    found = re.search(r"^(\d+\.\d+\.\d+) [0-9a-f]+ with Code ", output, re.MULTILINE)
    return found.group(1) if found else None


def first_failed_step(stderr: str, tail: int = 3000) -> str:
    """A set-up failure as a maintainer needs to read it: the step that failed first (named by
    setup-code-server.sh) with its error lines, then the end of the output."""
    named = [line for line in stderr.splitlines() if line.startswith("setup-code-server: FAILED")]
    head = named[0] if named else "setup-code-server failed without naming a step"
    return f"{head}\n{stderr[-tail:]}"


def _run_e2e(
    extension: Path,
    ws: Path,
    tmp_path: Path,
    screenshot: Path,
    scenario: str = "trusted",
    version: str = CODE_SERVERS[0],
    env: dict[str, str] | None = None,
    command: str = json.dumps([sys.executable, "-m", "kernelscope.daemon.lsp"]),
) -> tuple[subprocess.CompletedProcess[str], dict]:
    report = tmp_path / "report.json"
    run = subprocess.run(
        [
            "node",
            str(EXTENSION / "e2e" / "run.mjs"),
            str(_code_server(version)),
            str(extension),
            str(ws),
            command,
            str(tmp_path / "exp.sqlite"),
            str(screenshot),
            str(report),
            scenario,
        ],
        capture_output=True,
        text=True,
        timeout=600,
        cwd=EXTENSION,
        env=env,
    )
    return run, json.loads(report.read_text())


def shots_dir(version: str, tmp_path: Path) -> Path:
    """Where screenshots go: a temp folder (tests write nothing in the checkout), or, for the
    first code-server version, the folder KERNELSCOPE_SCREENSHOTS names (docs/images refreshes
    the documentation's)."""
    chosen = os.environ.get("KERNELSCOPE_SCREENSHOTS")
    return Path(chosen).resolve() if chosen and version == CODE_SERVERS[0] else tmp_path


def test_every_setting_can_be_set_in_vscode() -> None:
    """Every setting the daemon takes is a `kernelscope.*` setting of the extension and is sent
    (pure.ts's USER_KEYS or FOLDER_KEYS; `trusted` is the config file's, never a VS Code setting,
    and `workspaceTrusted` is VS Code's workspace trust), folder settings with a folder scope
    (before: blameInlay, documented, could not be set)."""
    from kernelscope.protocol.settings import FOLDER_KEYS, USER_KEYS, camel_key

    properties = json.loads((EXTENSION / "package.json").read_text())["contributes"]["configuration"][
        "properties"
    ]
    pure = (EXTENSION / "src" / "pure.ts").read_text()

    def sent(name: str) -> set[str]:
        found = re.search(rf"export const {name} = \[([^\]]*)\]", pure)
        assert found, name
        return set(re.findall(r'"(\w+)"', found.group(1)))

    users, folders = (
        {camel_key(k) for k in USER_KEYS} - {"trusted", "workspaceTrusted"},
        {camel_key(k) for k in FOLDER_KEYS},
    )
    assert sent("USER_KEYS") == users and sent("FOLDER_KEYS") == folders
    for key in users | folders:
        assert f"kernelscope.{key}" in properties, key
    assert {properties[f"kernelscope.{key}"]["scope"] for key in folders} == {"resource"}


@E2E
@pytest.mark.parametrize("version", CODE_SERVERS)
def test_vscode_end_to_end(
    built_extension: Path, tmp_path: Path, version: str, users_own_files: Path
) -> None:
    ws = tmp_path / "kernel_opt_vector_add"
    shutil.copytree(EXAMPLES / "vector_add", ws)
    # a save re-benchmarks where the window is trusted and the user's config file trusts the workspace
    users_own_files.write_text(f'trusted = ["{ws}"]\n')
    screenshot = shots_dir(version, tmp_path) / "vscode-lenses.png"
    run, results = _run_e2e(built_extension, ws, tmp_path, screenshot, version=version)
    assert run.returncode == 0 and results["error"] is None, (results, run.stderr[-3000:])
    assert any(text.startswith("target bandwidth >= 4.32TB/s") for text in results["lenses"])
    assert "best 1.22x v4 | latest 1.22x v4 | 5 runs, 1 failed" in results["lenses"]
    assert results["notification"].startswith("top experiments:")
    assert screenshot.stat().st_size > 10_000
    # kernel.py rewritten on disk while open: the lens moved down with the kernel (line 8 -> 11)
    assert results["kernelLensLine"] == 8, results
    assert results["rewrittenLensLine"] == 11, results["lensesAfterRewrite"]
    # an edit + save re-benchmarked the saved text (it raises at import)
    assert results["saved"] and results["probeLens"], results
    assert "edited in VS Code" in (ws / "kernel.py").read_text()
    # the history lens clicked opens the history panel (the daemon's answer was dropped before)
    assert results["historyTab"], results


@E2E
@pytest.mark.parametrize("version", CODE_SERVERS)
def test_vscode_workspace_settings_cannot_claim_trust(
    built_extension: Path, tmp_path: Path, version: str
) -> None:
    """A cloned repository whose .vscode/settings.json claims trust, names an interpreter, a
    daemon command and a Ray cluster, opened in an untrusted (restricted) window: the user's
    daemon starts, lenses show, and saving kernel.py runs nothing."""
    ws = tmp_path / "kernel_opt_vector_add"
    shutil.copytree(EXAMPLES / "vector_add", ws)
    ran, hijacked = tmp_path / "kernel-ran", tmp_path / "command-hijacked"
    kernel = ws / "kernel.py"
    kernel.write_text(
        kernel.read_text() + f"\nimport pathlib\npathlib.Path({str(ran)!r}).write_text('ran')\n"
    )
    (ws / ".vscode").mkdir()
    (ws / ".vscode" / "settings.json").write_text(
        json.dumps(
            {
                "kernelscope.trusted": True,
                "kernelscope.benchOnSave": True,
                "kernelscope.debounceMs": 50,
                "kernelscope.mode": "interpreter",
                "kernelscope.python": sys.executable,
                "kernelscope.command": [
                    "sh",
                    "-c",
                    f"touch {hijacked}; exec {sys.executable} -m kernelscope.daemon.lsp",
                ],
                "kernelscope.executor": "ray",
                "kernelscope.rayAddress": "127.0.0.1:9",
            }
        )
    )
    run, results = _run_e2e(built_extension, ws, tmp_path, tmp_path / "untrusted.png", "untrusted", version)
    assert run.returncode == 0 and results["error"] is None, (results, run.stderr[-3000:])
    assert "best 1.22x v4 | latest 1.22x v4 | 5 runs, 1 failed" in results["lenses"]
    assert results["saved"] and "# edited in an untrusted window" in kernel.read_text()
    assert not hijacked.exists(), "the daemon was started with the workspace's command"
    assert not ran.exists(), "saving kernel.py in an untrusted workspace ran it"


@E2E
@pytest.mark.parametrize("version", CODE_SERVERS)
def test_vscode_history_hints(built_extension: Path, tmp_path: Path, version: str) -> None:
    """A workspace with a git history (V0..V4 commits): blame in the hover on the launch line,
    the values tried there as inlay hints, Compare Versions v0 -> v4 as a diff editor and a
    table webview, and v0's code written over kernel.py: "identical to v0" in the Problems panel
    and no benchmark. The first version's screenshots are the docs' (docs/images/vscode-hints.png,
    vscode-compare.png) when KERNELSCOPE_SCREENSHOTS names that folder."""
    ws, _, env = editor_history_session(tmp_path)
    v0 = tmp_path / "v0_kernel.py"
    v0.write_text(vector_add_history_kernels()["v0"])
    shots = shots_dir(version, tmp_path)
    env = {**env, "KS_V0_KERNEL": str(v0), "KS_SHOTS": str(shots)}
    run, results = _run_e2e(built_extension, ws, tmp_path, tmp_path / "shot.png", "hints", version, env=env)
    assert run.returncode == 0 and results["error"] is None, (results, run.stderr[-3000:])
    assert results["hover"].startswith("introduced in v1: BLOCK_SIZE 1024 -> 4096, num_warps=8"), results
    # drawn after the value, cut at VS Code's editor.inlayHints.maximumLength (43 by default)
    # (the padding is a hair space in 4.100, a CSS margin in 4.139)
    line = results["launchLineText"].replace("\xa0", " ").replace("\u200a", "")
    assert "BLOCK_SIZE=4096tried (latency ratio vs v0): 1024 1.00x v0" in line, line
    tooltip = results["hintTooltip"] or ""  # the table, fetched by VS Code on inlayHint/resolve
    assert "versions" in tooltip and "1024" in tooltip and "4096 (here)" in tooltip, results
    assert "kernel.py v0 ↔ v4" in " ".join(results["tabs"]) and results["diffEditor"], results["tabs"]
    assert results["diffText"] and "num_warps=8" in results["diffText"]
    table = results["compareTable"]
    assert table and "score (vs v0)" in table and "evict_first on streaming loads" in table, table
    assert "identical to v0" in (results["problems"] or ""), results["problems"]
    assert not any(t.startswith("last probe") for t in results["lensesAfterIdentical"]), results
    assert (shots / "vscode-hints.png").stat().st_size > 10_000
    assert (shots / "vscode-compare.png").stat().st_size > 10_000


@E2E
@pytest.mark.parametrize("version", CODE_SERVERS)
def test_vscode_starts_no_daemon_outside_workspaces(
    built_extension: Path, tmp_path: Path, version: str
) -> None:
    """A Python project that holds no optimization workspace: opening its .py files starts no
    daemon (before: any Python file started one, and without `kernelscope` on the PATH every
    Python project got an error). A workspace an agent then creates in it gets its lenses as
    soon as its kernel.py is opened."""
    project = tmp_path / "project"
    project.mkdir()
    (project / "foo.py").write_text("# plain python, no kernel here\nx = 1\n")
    (project / "kernel.py").write_text("# a kernel.py alone is no workspace\n")
    late = tmp_path / "late"
    shutil.copytree(EXAMPLES / "vector_add", late)
    started = tmp_path / "daemon-started"
    daemon = f"touch {started}; exec {sys.executable} -m kernelscope.daemon.lsp"
    env = {**os.environ, "KS_LATE_WS": str(late), "KS_STARTED_MARK": str(started)}
    run, results = _run_e2e(
        built_extension,
        project,
        tmp_path,
        tmp_path / "plain.png",
        "plain",
        version,
        env,
        json.dumps(["sh", "-c", daemon]),
    )
    assert run.returncode == 0 and results["error"] is None, (results, run.stderr[-3000:])
    assert results["plainOpened"] and results["daemonBeforeWorkspace"] is False, results
    assert "best 1.22x v4 | latest 1.22x v4 | 5 runs, 1 failed" in results["lenses"], results["lenses"]


@E2E
@pytest.mark.parametrize("version", CODE_SERVERS)
def test_vscode_asks_in_a_modal_before_masking(built_extension: Path, tmp_path: Path, version: str) -> None:
    """The daemon's question before a mask (window/showMessageRequest) is a modal dialog with its
    actions, the server's Cancel as the dialog's own (before: a notification toast, easy to miss,
    and no dialog). The "Mask half & restart" lens answered Cancel and the palette's Mask Half
    dismissed with Escape write nothing and start no agent; after Restart Server, Mask Half
    answered Mask masks the version its question named, and no other."""
    ws = tmp_path / "kernel_opt_vector_add"
    shutil.copytree(EXAMPLES / "vector_add", ws)
    before = {p.name: p.read_text() for p in sorted((ws / "memory").iterdir())}
    env = {**os.environ, "KS_AGENT": f"{sys.executable} -c \"print('agent says hello')\""}
    run, results = _run_e2e(built_extension, ws, tmp_path, tmp_path / "shot.png", "confirm", version, env)
    assert run.returncode == 0 and results["error"] is None, (results, run.stderr[-3000:])
    restart, dismissed, mask = results["questions"]
    # one Cancel, the server's (VS Code adds its own unless an action is the dialog's cancel);
    # VS Code orders the buttons by platform
    assert sorted(restart["buttons"]) == ["Cancel", "Mask & restart"], restart
    assert re.match(
        r"Mask v[123] \(1 of 3 candidate versions\) and launch a fresh agent \(", restart["message"]
    )
    assert "Kept: v4 as the best and the latest passing version" in restart["message"], restart
    assert sorted(dismissed["buttons"]) == sorted(mask["buttons"]) == ["Cancel", "Mask"], (dismissed, mask)
    assert results["memoryAfterNo"] == before
    notes = " ".join(results["notesAfterNo"])
    assert "kernelscope restart" not in notes and "mask-half" not in notes, notes
    named = re.match(r"Mask (v[123]) \(1 of 3 candidate versions\) in ", mask["message"])
    assert named, mask["message"]
    after = results["memoryAfterMask"]
    records = {name: json.loads(text) for name, text in after.items() if name.endswith(".json")}
    masked = {name for name, record in records.items() if record["masked"]}
    assert masked == {f"{named.group(1)}.json"}, (masked, mask["message"], results["maskNote"])


@E2E
@pytest.mark.parametrize("version", CODE_SERVERS)
def test_vscode_mask_and_restart_masks_what_it_asked_and_launches_the_agent(
    built_extension: Path, tmp_path: Path, version: str
) -> None:
    """The "Mask half & restart" lens answered Mask & restart (before, only Mask Half's yes had run
    in a real VS Code): the version its question named is masked, and no other, and the restart
    job launches the agent (which copies its brief out) and says it finished. The dialog's
    focused button, the one Enter presses, is Mask & restart: VS Code focuses the first action
    that is not the close affordance, and its API has no way to choose another (the docs say so)."""
    ws = tmp_path / "kernel_opt_vector_add"
    shutil.copytree(EXAMPLES / "vector_add", ws)
    brief = tmp_path / "brief-the-agent-got.md"
    copy = "import shutil, sys; shutil.copy(sys.argv[1], sys.argv[2])"
    env = {**os.environ, "KS_AGENT": f'{sys.executable} -c "{copy}" {{brief}} {brief}'}
    run, results = _run_e2e(built_extension, ws, tmp_path, tmp_path / "shot.png", "restart", version, env)
    assert run.returncode == 0 and results["error"] is None, (results, run.stderr[-3000:])
    (asked,) = results["questions"]
    assert sorted(asked["buttons"]) == ["Cancel", "Mask & restart"], asked
    assert asked["focused"] == "Mask & restart", asked
    named = re.match(
        r"Mask (v[123]) \(1 of 3 candidate versions\) and launch a fresh agent \(", asked["message"]
    )
    assert named, asked["message"]
    records = {
        name: json.loads(text) for name, text in results["memoryAfterMask"].items() if name.endswith(".json")
    }
    assert {name for name, record in records.items() if record["masked"]} == {f"{named.group(1)}.json"}
    assert results["restartNote"].startswith("kernelscope restart: done"), results["restartNote"]
    assert brief.is_file() and "v5" in brief.read_text(), brief


@E2E
@pytest.mark.parametrize("version", CODE_SERVERS)
def test_vscode_shows_a_readmes_unreadable_stop_condition_until_fixed(
    built_extension: Path, tmp_path: Path, version: str
) -> None:
    """The workspace's README.md opened in VS Code with a stop condition kernelscope cannot check
    (`4,32TB/s`): kernelscope's warning is in the Problems panel, on that line (before: the
    extension sent only Python files, so the daemon never saw a README and no one saw its
    warnings); the comma made a point in the buffer, the warnings go. No lens is drawn there."""
    ws = tmp_path / "kernel_opt_vector_add"
    shutil.copytree(EXAMPLES / "vector_add", ws)
    readme = ws / "README.md"
    line = unreadable_stop_condition(readme)
    text = readme.read_text()  # (as the editor opens it)
    env = {**os.environ, "KS_README_LINE": str(line)}
    run, results = _run_e2e(built_extension, ws, tmp_path, tmp_path / "readme.png", "readme", version, env)
    assert run.returncode == 0 and results["error"] is None, (results, run.stderr[-3000:])
    problems = results["problems"]
    assert "4,32 has a decimal comma (write 4.32)" in problems, problems
    assert f"[Ln {line + 1}, Col 1]" in problems and "kernelscope" in problems, problems
    assert results["readmeLenses"] == [], results["readmeLenses"]
    after = results["problemsAfterFix"]
    assert after is not None and "decimal comma" not in after and "kernelscope" not in after, after
    assert readme.read_text() == text  # edited in the buffer only: nothing saved, nothing written
