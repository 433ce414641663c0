"""How a cold child is started: under a stand-in parent, never as a child of this process.

Code under test can signal its parent (`os.kill(os.getppid(), signal.SIGKILL)`): a benchmark
runner or gate command started directly by the CLI or the daemon killed it (the reviewer's
`kernelscope bench` died with exit 137). So the command runs under
`kernels/stand_in_parent.py`, a stdlib-only process in the child's own session that starts
it, waits for it and reports how it ended on a pipe. `bench.run_child` supervises the stand-in's
group (timeout, caps, cancel, group kill) as before; the handle here gives it the command's
return code, and `parent_killed` when the stand-in died without reporting one: the code it ran
killed the process running it (a warm worker's job reports the same through `worker_error`).
"""

from __future__ import annotations

import contextlib
import importlib.util
import json
import os
import select
import signal
import subprocess
import sys
from functools import cache
from pathlib import Path
from typing import Any

from kernelscope.daemon.engine.run.child_limits import ResourceLimits
from kernelscope.daemon.engine.run.warm_worker import rlimits_for

STAND_IN_MODULE = "kernelscope.kernels.stand_in_parent"
START_TIMEOUT_S = 60.0  # a stdlib-only Python start, on a loaded machine


@cache
def _stand_in_script() -> str:
    """The stand-in's file, found without importing it (the daemon imports nothing of kernels/)."""
    spec = importlib.util.find_spec(STAND_IN_MODULE)
    if spec is None or spec.origin is None:
        raise OSError(f"{STAND_IN_MODULE} is not installed with kernelscope")
    return spec.origin


def _how(returncode: int | None) -> str:
    if returncode is not None and returncode < 0 and -returncode in signal.valid_signals():
        return f"killed by {signal.Signals(-returncode).name}"
    return f"exit status {returncode}"


class StandInChild:
    """A cold child seen through its stand-in parent: `pid` is the stand-in's (the group and
    session the watchdog samples and kills); `wait` and `returncode` are the command's, as
    `subprocess.Popen` has them; `parent_killed` says how the stand-in died when it died
    before reporting the command's end (then `returncode` is the stand-in's)."""

    def __init__(self, process: subprocess.Popen[bytes], status_fd: int) -> None:
        self.process, self.pid, self.status_fd = process, process.pid, status_fd
        self.returncode: int | None = None
        self.parent_killed: str | None = None
        self.buffer = b""

    def _message(self, timeout: float | None) -> dict[str, Any] | None:
        """The stand-in's next status line; None at EOF (it exited or died); TimeoutError."""
        while b"\n" not in self.buffer:
            ready, _, _ = select.select([self.status_fd], [], [], timeout)
            if not ready:
                raise TimeoutError
            chunk = os.read(self.status_fd, 1 << 12)
            if not chunk:
                return None
            self.buffer += chunk
        line, self.buffer = self.buffer.split(b"\n", 1)
        with contextlib.suppress(ValueError):
            message = json.loads(line)
            if isinstance(message, dict):
                return message
        return self._message(timeout)

    def started(self) -> None:
        """Until the command exists; OSError as Popen raises it when it cannot start."""
        try:
            message = self._message(START_TIMEOUT_S)
        except TimeoutError:
            message = {"error": f"the stand-in parent did not start the command within {START_TIMEOUT_S:g} s"}
        if message is not None and "started" in message:
            return
        with contextlib.suppress(OSError):
            os.killpg(self.pid, signal.SIGKILL)
        self.process.wait()
        self.close()
        if message is None:
            raise OSError(
                f"the stand-in parent exited ({_how(self.process.returncode)}) before starting the command"
            )
        errno, filename = message.get("errno"), message.get("filename")
        if isinstance(errno, int):
            raise OSError(errno, os.strerror(errno), filename)
        raise OSError(str(message.get("error")))

    def wait(self, timeout: float | None = None) -> int | None:
        if self.returncode is not None or self.parent_killed is not None:
            return self.returncode
        self.process.wait(timeout)  # TimeoutExpired passes through, as Popen's
        message: dict[str, Any] | None = {}
        while message is not None and "exited" not in message:
            message = self._message(None)  # the stand-in is gone: its end of the pipe too
        self.close()
        if message is not None and isinstance(message["exited"], int):
            self.returncode = message["exited"]
        else:
            self.returncode = self.process.returncode
            self.parent_killed = _how(self.process.returncode)
        return self.returncode

    def close(self) -> None:
        with contextlib.suppress(OSError):
            os.close(self.status_fd)
        self.status_fd = -1


def stand_in_spawn(
    argv: list[str], cwd: Path, env: dict[str, str], log: Path, limits: ResourceLimits
) -> StandInChild:
    """The cold path (`bench.run_child`'s default spawn): `argv` under a stand-in parent, in a
    new session, its output appended to `log`; OSError when it cannot start."""
    rlimits = rlimits_for(limits)
    words = [sys.executable, "-I", _stand_in_script(), "--status-fd"]
    read_fd, write_fd = os.pipe()
    words.append(str(write_fd))
    for name in ("fsize", "nproc"):
        if rlimits.get(name) is not None:
            words += [f"--{name}", str(rlimits[name])]
    try:
        with log.open("ab") as sink:
            process = subprocess.Popen(
                [*words, "--", *argv],
                cwd=cwd,
                stdin=subprocess.DEVNULL,
                stdout=sink,
                stderr=subprocess.STDOUT,
                start_new_session=True,
                env=env,
                pass_fds=(write_fd,),
            )
    except BaseException:
        os.close(read_fd)
        raise
    finally:
        os.close(write_fd)
    child = StandInChild(process, read_fd)
    child.started()
    return child
