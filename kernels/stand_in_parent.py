"""The parent of every cold child kernelscope starts to run code it does not own (the benchmark
runner, a workspace's gate command), started by the launcher as
`python -I .../stand_in_parent.py --status-fd N [--fsize B] [--nproc N] -- COMMAND...`.

Code under test can signal its parent: `os.kill(os.getppid(), signal.SIGKILL)`. Started
directly, that parent is the CLI or the daemon. This process stands in for them: it starts
COMMAND in its own session and process group (which the launcher made for it), with its cwd,
environment and output, waits for it, and says on the status fd how it ended; the launcher
(`kernelscope.daemon.engine.run.cold_child`) supervises the group as it would COMMAND's. When
this process dies before saying so, something in its group killed it: the launcher reports that
the code killed the process running it, which is the kernel's verdict, where a warm worker's
death is retried cold (`bench._run_harness`).

Status lines, one JSON object each: `{"started": PID}` or `{"error": MESSAGE, "errno": N,
"filename": F}` (COMMAND could not start), then `{"exited": RETURNCODE}` (negative: killed by
signal -N, as `subprocess.Popen` says). The rlimits are set here, before COMMAND exists, so
it inherits them (the launcher sets them again on this process, too late for a fork).

Standard library only, run isolated (`-I`: no current directory, script directory or
PYTHONPATH on its path): a workspace's `subprocess.py` must not stand in for the stdlib's.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import resource
import subprocess
import sys


def _set_rlimits(fsize: int | None, nproc: int | None) -> None:
    for limit, value in ((resource.RLIMIT_FSIZE, fsize), (resource.RLIMIT_NPROC, nproc)):
        if value is not None:
            with contextlib.suppress(ValueError, OSError):
                resource.setrlimit(limit, (value, value))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="stand_in_parent.py")
    parser.add_argument("--status-fd", type=int, required=True)
    parser.add_argument("--fsize", type=int, default=None)
    parser.add_argument("--nproc", type=int, default=None)
    parser.add_argument("command", nargs=argparse.REMAINDER)
    args = parser.parse_args(argv)
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    with open(args.status_fd, "w", buffering=1, encoding="utf-8") as status:
        _set_rlimits(args.fsize, args.nproc)
        try:
            child = subprocess.Popen(command)  # close_fds: the status fd stays ours
        except (OSError, ValueError, IndexError) as exc:
            errno, filename = getattr(exc, "errno", None), getattr(exc, "filename", None)
            status.write(json.dumps({"error": str(exc), "errno": errno, "filename": filename}) + "\n")
            return 127
        status.write(json.dumps({"started": child.pid}) + "\n")
        returncode = child.wait()
        status.write(json.dumps({"exited": returncode}) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
