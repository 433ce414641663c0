"""A workspace file that is no regular file (a named pipe, a link to /dev/stdin or /dev/zero, a
socket) is never read: kernelscope observes workspaces cloned from anyone, and its rules run on
their own (discovery for every folder an editor opens). Before: the discovery rule opened a
README.md that is a FIFO and blocked forever, and one linked to /dev/stdin read the process's
stdin, which in the daemon is the editor's JSON-RPC channel (its messages swallowed, the daemon
waiting for an EOF that never came). The one reader is protocol/workspace_files.py.

Timeouts here only guard against the hang being tested for; nothing waits on one."""

from __future__ import annotations

import asyncio
import os
import shutil
import socket
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import pytest_lsp
from lsprotocol import types
from pytest_lsp import ClientServerConfig

from kernelscope.protocol import workspace_files
from tests.conftest import EXAMPLES, NO_TORCH_SERVER
from tests.support.lsp_client import KernelscopeClient, make_client, start_session

CONSOLE = str(Path(sys.executable).with_name("kernelscope"))
MARKER = b'Content-Length: 52\r\n\r\n{"jsonrpc": "2.0", "method": "editor-bytes"}'
GUARD = 60  # seconds: only a hang reaches it


def _workspace(path: Path, memory: bool = True) -> Path:
    shutil.copytree(EXAMPLES / "vector_add", path, ignore=shutil.ignore_patterns("__pycache__"))
    if not memory:
        shutil.rmtree(path / "memory")
    return path


# -- the reader ------------------------------------------------------------------------------


def test_the_reader_refuses_what_is_no_regular_file_and_reads_through_a_link(tmp_path: Path) -> None:
    regular = tmp_path / "regular.md"
    regular.write_text("# hello\r\nworld\n")
    linked = tmp_path / "linked.md"
    linked.symlink_to(regular)
    assert workspace_files.read_text(linked) == "# hello\nworld\n"  # (newlines as Path.read_text)
    assert workspace_files.read_bytes(linked) == regular.read_bytes()

    fifo = tmp_path / "fifo.md"
    os.mkfifo(fifo)
    zero = tmp_path / "zero.md"
    zero.symlink_to("/dev/zero")
    sock = tmp_path / "sock.md"
    server = socket.socket(socket.AF_UNIX)
    server.bind(str(sock))
    folder = tmp_path / "folder.md"
    folder.mkdir()
    expected = {
        fifo: "it is a named pipe (FIFO), not a regular file, and was not read",
        zero: "it is a link to /dev/zero, a character device, not a regular file, and was not read",
        sock: "it is a socket, not a regular file, and was not read",
        folder: "it is a folder, not a regular file, and was not read",
    }
    try:
        for path, words in expected.items():
            with pytest.raises(workspace_files.RefusedFile) as refused:
                workspace_files.read_text(path)
            assert refused.value.strerror == words
            assert str(refused.value) == f"cannot read {path}: {words}"
            assert isinstance(refused.value, OSError)  # (every caller's "cannot read" path)
    finally:
        server.close()
    with pytest.raises(FileNotFoundError):
        workspace_files.read_text(tmp_path / "absent.md")


def test_a_file_past_the_cap_is_refused_unread(tmp_path: Path) -> None:
    big = tmp_path / "README.md"
    with big.open("wb") as handle:  # (sparse: 64 MiB + 1 without writing them)
        handle.truncate(workspace_files.MAX_FILE_BYTES + 1)
    with pytest.raises(workspace_files.RefusedFile, match=r"it is larger than 64 MiB"):
        workspace_files.read_bytes(big)
    small = tmp_path / "small.md"
    small.write_bytes(b"x" * 10)
    assert workspace_files.read_bytes(small, limit=10) == b"x" * 10
    with pytest.raises(workspace_files.RefusedFile):
        workspace_files.read_bytes(small, limit=9)


# -- the discovery rule, in a process whose stdin holds the editor's bytes -------------------

DISCOVER = textwrap.dedent(
    """
    import sys
    from pathlib import Path
    from kernelscope.daemon.engine.workspace.discovery import is_optimization_workspace, missing_parts

    print(is_optimization_workspace(Path(sys.argv[1])), missing_parts(Path(sys.argv[1])))
    sys.stdout.flush()
    sys.stdout.buffer.write(b"left on stdin: " + sys.stdin.buffer.read())
    """
)


@pytest.mark.parametrize("readme", ["stdin", "fifo"])
def test_discovery_reads_no_readme_that_is_no_file_and_leaves_stdin_alone(
    tmp_path: Path, readme: str
) -> None:
    """Before: /dev/stdin was read (the marker gone, `False` for a README that said nothing);
    a FIFO blocked until the guard killed the process."""
    ws = _workspace(tmp_path / "ws", memory=False)
    (ws / "README.md").unlink()
    if readme == "stdin":
        (ws / "README.md").symlink_to("/dev/stdin")
    else:
        os.mkfifo(ws / "README.md")
    done = subprocess.run(
        [sys.executable, "-c", DISCOVER, str(ws)], input=MARKER, capture_output=True, timeout=GUARD
    )
    assert done.returncode == 0, done.stderr.decode()
    first, rest = done.stdout.split(b"\n", 1)
    assert first.startswith(b"False ['no memory/ and README.md cannot be read: it is ")
    assert b"not a regular file, and was not read" in first
    assert rest == b"left on stdin: " + MARKER


# -- the CLI ---------------------------------------------------------------------------------


def _hostile(tmp_path: Path, case: str) -> tuple[Path, dict[str, str]]:
    """A workspace (and the environment) with one file that is no regular file."""
    env = {
        **os.environ,
        "XDG_CONFIG_HOME": str(tmp_path / "config"),
        "XDG_DATA_HOME": str(tmp_path / "data"),  # (the store, where the config names none)
    }
    env.pop("KERNELSCOPE_CONFIG", None)
    env.pop("KERNELSCOPE_DB_URL", None)  # (the config file is read for the store)
    ws = _workspace(tmp_path / "ws", memory=case == "config_fifo" or case == "kernel_fifo")
    if case.startswith("readme"):
        (ws / "README.md").unlink()
        if case == "readme_stdin":
            (ws / "README.md").symlink_to("/dev/stdin")
        else:
            os.mkfifo(ws / "README.md")
    elif case == "kernel_fifo":
        (ws / "kernel.py").unlink()
        os.mkfifo(ws / "kernel.py")
    elif case == "config_fifo":
        (tmp_path / "config" / "kernelscope").mkdir(parents=True)
        os.mkfifo(tmp_path / "config" / "kernelscope" / "config.toml")
    return ws, env


CLI_CASES = {
    # case: (what the error says, commands that refuse with it)
    "readme_fifo": (
        "README.md cannot be read: it is a named pipe (FIFO), not a regular file",
        ["workspace", "check"],
    ),
    "readme_stdin": (
        "README.md cannot be read: it is a link to /dev/stdin, a named pipe (FIFO), not a regular file",
        ["workspace", "check"],
    ),
    "kernel_fifo": ("kernel.py is a named pipe (FIFO), not a regular file", ["workspace", "check"]),
    "config_fifo": (
        "config.toml: it is a named pipe (FIFO), not a regular file, and was not read",
        ["workspace", "check"],  # (`memory list` reads no config)
    ),
}


@pytest.mark.parametrize(
    ("case", "command"),
    [(case, command) for case, (_, commands) in CLI_CASES.items() for command in commands],
)
def test_the_cli_refuses_a_workspace_file_that_is_no_file_promptly(
    tmp_path: Path, case: str, command: str
) -> None:
    """Exit 2 (missing or invalid data, docs/reference/cli.md) naming the file and what it is;
    the bytes on stdin untouched. Before: `workspace` and `check` blocked on a FIFO README or
    read stdin through the link; a config.toml that is a FIFO was passed over in silence."""
    ws, env = _hostile(tmp_path, case)
    words, _ = CLI_CASES[case]
    done = subprocess.run(  # (killed at the guard: a hang fails the test, never the run)
        [CONSOLE, *command.split(), "-w", str(ws)],
        input=MARKER,
        capture_output=True,
        env=env,
        cwd=tmp_path,
        timeout=GUARD,
    )
    out, err = done.stdout, done.stderr
    assert done.returncode == 2, (out + err).decode()
    assert words in (out + err).decode().replace("\n", " ")


def test_memory_list_reads_no_readme_that_is_no_file(tmp_path: Path) -> None:
    """`memory list` in a workspace whose README is a FIFO lists the records (its fast path
    reads the README only for a metric, and never a pipe); without memory/ it says so."""
    ws, env = _hostile(tmp_path, "readme_fifo")
    (ws / "memory").mkdir()
    done = subprocess.run(
        [CONSOLE, "memory", "list", "-w", str(ws)], input=MARKER, capture_output=True, env=env, timeout=GUARD
    )
    assert done.returncode == 0, done.stderr.decode()


@pytest.mark.parametrize("command", [("memory", "list"), ("memory", "read", "--json")])
def test_a_lock_file_that_is_a_pipe_blocks_no_reader(tmp_path: Path, command: tuple[str, ...]) -> None:
    """A reader that finds a mask-half journal asks whether a writer still holds the memory
    lock (a shared flock on the lock file, opened read-only): a lock file that is a named pipe
    blocked that open until a writer came (the CLI, and the daemon's lens, hung). The review
    of 9f6c054 found it; the reads then go on as for any lock nobody holds."""
    ws = _workspace(tmp_path / "ws")
    (ws / "memory" / ".kernelscope-journal.json").write_text("{}")
    os.mkfifo(ws / "memory" / ".kernelscope.lock")
    done = subprocess.run(
        [CONSOLE, *command, "-w", str(ws)], input=MARKER, capture_output=True, timeout=GUARD
    )
    assert done.returncode == 0, done.stderr.decode()
    assert b"v0" in done.stdout


# -- the daemon ------------------------------------------------------------------------------


@pytest_lsp.fixture(config=ClientServerConfig(client_factory=make_client, server_command=NO_TORCH_SERVER))
async def client(lsp_client: KernelscopeClient):
    yield
    try:
        await asyncio.wait_for(lsp_client.shutdown_session(), GUARD)
    finally:  # (a daemon that never answered initialize is not waited for: pytest-lsp would)
        server = lsp_client._server
        if server is not None and server.returncode is None and lsp_client.capabilities is None:
            server.kill()


async def test_the_daemon_serves_while_a_folder_has_a_readme_that_is_no_file(
    client: KernelscopeClient, tmp_path: Path
) -> None:
    """The editor's folder holds a workspace and two folders whose README.md is a FIFO and a
    link to /dev/stdin (the daemon's stdin is the editor's channel). It answers initialize and
    the workspace's lenses, and a second request after them (nothing of the channel swallowed).
    Before: initialize never came back (discovery blocked on the FIFO; through /dev/stdin it
    read the editor's messages as the README)."""
    folder = tmp_path / "folder"
    folder.mkdir()
    good = _workspace(folder / "kernel_opt_good")
    for name in ("kernel_opt_fifo", "kernel_opt_stdin"):
        hostile = folder / name
        hostile.mkdir()
        (hostile / "kernel.py").write_text("x = 1\n")
    os.mkfifo(folder / "kernel_opt_fifo" / "README.md")
    (folder / "kernel_opt_stdin" / "README.md").symlink_to("/dev/stdin")
    await asyncio.wait_for(
        start_session(client, folder, {"dbUrl": str(tmp_path / "exp.sqlite")}, "visual_studio_code"), GUARD
    )
    uri = (good / "kernel.py").as_uri()
    for _ in range(2):
        lenses = await asyncio.wait_for(
            client.text_document_code_lens_async(
                types.CodeLensParams(text_document=types.TextDocumentIdentifier(uri=uri))
            ),
            GUARD,
        )
        titles = [lens.command.title for lens in lenses or [] if lens.command]
        assert any(t.startswith("best ") for t in titles), titles


def test_a_workload_list_with_invalid_utf8_is_counted_not_a_traceback(tmp_path: Path) -> None:
    """SOL-ExecBench's workload.jsonl with a byte that is no UTF-8: `kernelscope workspace`
    crashed with a UnicodeDecodeError traceback (the count read it strictly; found by the
    review of 9f6c054). It counts the lines, as for any text."""
    ws = tmp_path / "ws"
    shutil.copytree(Path(__file__).parents[1] / "fixtures" / "sol-execbench" / "rmsnorm", ws)
    (ws / "memory").mkdir(exist_ok=True)
    with (ws / "workload.jsonl").open("ab") as handle:
        handle.write(b'{"uuid": "a\xff"}\n')
    done = subprocess.run([CONSOLE, "workspace", "-w", str(ws)], capture_output=True, timeout=GUARD)
    assert done.returncode == 0, done.stderr.decode()
    assert b"Traceback" not in done.stderr
