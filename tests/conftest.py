"""Shared fixtures: copies of the example workspaces and an in-process CLI runner."""

from __future__ import annotations

import json
import os
import shutil
import sys
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import NoReturn

import pytest

from kernelscope.daemon.cli.main import main

REPO_ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = REPO_ROOT / "examples"
TESTS = REPO_ROOT / "tests"
FIXTURES = TESTS / "fixtures"  # upstream files, verbatim
# the daemon in a process that cannot import torch (tests/support/no_torch_server.py)
NO_TORCH_SERVER = [sys.executable, str(TESTS / "support" / "no_torch_server.py")]

# Under CI (`.ci/run` sets it) the editor and agent tests run for real: a missing binary they
# drive is a failure there, never a silent skip; elsewhere it is a skip naming the install.
IN_CI = bool(os.environ.get("CI"))


def missing_tool(what: str, install: str) -> NoReturn:
    """`what` (an editor, npm) is not installed: fail under CI, skip elsewhere."""
    if IN_CI:
        pytest.fail(f"CI must run this test with {what}: {install}")
    pytest.skip(f"{what} is not installed ({install})")


XDG_FOLDERS = {
    "XDG_CONFIG_HOME": "config",
    "XDG_DATA_HOME": "data",
    "XDG_CACHE_HOME": "cache",
    "XDG_STATE_HOME": "state",
    "XDG_RUNTIME_DIR": "runtime",
}
# the suite's own switches (tests/editors, tests/reliability, tests/support/store_backends.py)
TEST_CONTROLS = (
    "KERNELSCOPE_TEST_",
    "KERNELSCOPE_E2E_",
    "KERNELSCOPE_FAULT_",
    "KERNELSCOPE_SCREENSHOTS",
    "KERNELSCOPE_UPDATE_SNAPSHOTS",
)


@pytest.fixture(autouse=True)
def users_own_files(
    tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch
) -> Iterator[Path]:
    """No test reads or writes the developer's own kernelscope files: the config file, the
    per-user experiment store, the history-facts cache, restart briefs and TCP token files live
    in a folder of the test run's (daemons and CLIs the tests start inherit it), and no
    KERNELSCOPE_* setting of the developer's shell reaches the product (only the suite's own
    switches, TEST_CONTROLS). A test that needs a config file writes one there; it is removed
    after the test (a test's `seeds = 0` made later tests on the same worker warn "invalid
    settings in the config file", so the suite's outcome hung on the order of its tests)."""
    home = tmp_path_factory.getbasetemp() / "user"
    private = private_user_env(home, os.environ)
    for name in set(os.environ) - set(private):
        monkeypatch.delenv(name)
    for name in XDG_FOLDERS:
        monkeypatch.setenv(name, private[name])
    config = home / "config" / "kernelscope" / "config.toml"
    config.unlink(missing_ok=True)
    yield config
    config.unlink(missing_ok=True)


def private_user_env(home: Path, environ: Mapping[str, str]) -> dict[str, str]:
    """`environ` for a process that must keep off the developer's own kernelscope files (a
    daemon whose environment is fixed when its test module loads, before `users_own_files`):
    its XDG folders inside `home`, and none of the product's KERNELSCOPE_* settings."""
    (home / "config" / "kernelscope").mkdir(parents=True, exist_ok=True)
    (home / "runtime").mkdir(mode=0o700, exist_ok=True)
    env = {
        name: value
        for name, value in environ.items()
        if not name.startswith("KERNELSCOPE_") or name.startswith(TEST_CONTROLS)
    }
    return {**env, **{name: str(home / folder) for name, folder in XDG_FOLDERS.items()}}


@pytest.fixture(scope="module")
def prepared(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The folder tests/lsp/test_lsp.make_workspace builds (two recorded versions, their
    experiments, a foreign workspace), once per test module that asks for it (the LSP tests,
    `kernelscope check`, the first-day tests); a module that needs another defines its own."""
    from tests.lsp.test_lsp import make_workspace

    root = tmp_path_factory.mktemp("prepared")
    make_workspace(root)
    return root


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
    from tests.support.store_backends import backend_url

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


VECTOR_ADD_STOP = "- memory-bound target: bandwidth >= 4.32TB/s"


def unreadable_stop_condition(readme: Path) -> int:
    """For the editors' README tests: vector-add's stop condition written `4,32TB/s`, a target
    kernelscope cannot read (a warning on its line); that line's index (0-based)."""
    text = readme.read_text()
    assert VECTOR_ADD_STOP in text
    readme.write_text(text.replace(VECTOR_ADD_STOP, VECTOR_ADD_STOP.replace("4.32", "4,32")))
    return text.splitlines().index(VECTOR_ADD_STOP)


VECTOR_ADD_LAUNCH = "add_kernel[grid](x, y, out, n_elements, BLOCK_SIZE=1024)"


def vector_add_history_kernels() -> dict[str, str]:
    """kernel.py of examples/vector_add as each recorded version had it (v3 failed and was
    never committed): what the memory records' action descriptions say each version did."""
    v0 = (EXAMPLES / "vector_add" / "kernel.py").read_text()
    assert VECTOR_ADD_LAUNCH in v0, "examples/vector_add/kernel.py changed: update the history"
    v1 = v0.replace(VECTOR_ADD_LAUNCH, VECTOR_ADD_LAUNCH.replace("=1024)", "=4096, num_warps=8)")).replace(
        "triton.cdiv(n_elements, 1024)", "triton.cdiv(n_elements, 4096)"
    )
    v2 = v1.replace(
        "    mask = offsets < n_elements\n",
        "    offsets = tl.multiple_of(offsets, 16)\n    mask = offsets < n_elements\n",
    )
    v4 = v1.replace("mask=mask)\n    y", 'mask=mask, eviction_policy="evict_first")\n    y').replace(
        "y_ptr + offsets, mask=mask)", 'y_ptr + offsets, mask=mask, eviction_policy="evict_first")'
    )
    assert len({v0, v1, v2, v4}) == 4
    return {"v0": v0, "v1": v1, "v2": v2, "v4": v4}


def root_rule_folders(tmp_path: Path) -> tuple[Path, Path]:
    """Two folders for the clients' workspace rule (the server's): `fresh` has a README with a
    ```kernelscope block and no memory/ yet (a workspace), `plain` only kernel.py (not one);
    each has a `sub/` folder to look from."""
    fresh, plain = tmp_path / "fresh", tmp_path / "plain"
    for folder in (fresh, plain):
        (folder / "sub").mkdir(parents=True)
        (folder / "kernel.py").write_text("")
    (fresh / "README.md").write_text("# op\n\n```kernelscope\nmetric: latency\n```\n")
    return fresh, plain


def editor_history_session(tmp_path: Path, **extra_env: str) -> tuple[Path, Path, dict[str, str]]:
    """editor_session's workspace with the git history an atrex-style agent leaves: one
    `V<N>: <action>` commit per passing version (kernel.py and its record), the failed v3
    recorded without a commit. kernel.py is v4's, as committed; KS_LAUNCH_LINE (0-based) is
    the launch line, where v1 changed BLOCK_SIZE 1024 -> 4096 and added num_warps=8."""
    import subprocess

    ws, out, env = editor_session(tmp_path, **extra_env)
    kernels = vector_add_history_kernels()
    identity = ["-c", "user.name=agent", "-c", "user.email=agent@example.invalid"]

    def git(*args: str) -> None:
        subprocess.run(["git", *identity, *args], cwd=ws, check=True, capture_output=True)

    git("-c", "init.defaultBranch=main", "init", "-q")
    for version in ("v0", "v1", "v2", "v3", "v4"):
        record = json.loads((ws / "memory" / f"{version}.json").read_text())
        action = record["optimization"]["action_description"]
        paths = [f"memory/{version}.json"]
        if version in kernels:
            (ws / "kernel.py").write_text(kernels[version])
            paths.append("kernel.py")
        if version == "v0":
            paths += ["README.md", "reference.py", "kernel_slow.py"]
        git("add", *paths)
        git("commit", "-q", "-m", f"{version.upper()}: {action}")
    launch = next(i for i, line in enumerate(kernels["v4"].splitlines()) if "add_kernel[grid]" in line)
    return ws, out, {**env, "KS_LAUNCH_LINE": str(launch)}
