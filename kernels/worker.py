"""The warm benchmark worker: `python -m kernelscope.kernels.worker`, started and owned by the
daemon (`kernelscope.daemon.engine.run.warm_worker`), never by people.

A cold benchmark starts a process that imports torch and triton (1-2 s before anything is
measured). The worker pays that once: it imports torch, triton and the harness, then runs
benchmark jobs one at a time, each in a child forked for it, which runs exactly what a cold
run runs (`kernelscope.kernels.runner.main(argv)`) with the same isolation:

- the child calls setsid (its own session and process group: the daemon's watchdog samples,
  caps and kills that group exactly as it does a cold runner's), sets its rlimits
  (RLIMIT_FSIZE, RLIMIT_NPROC) itself before any job code runs, sends its output to the job's
  log file, works in the job's scratch copy with the job's environment, shows the runner's
  command line in `ps` / /proc/PID/cmdline, and leaves with `os._exit` (no atexit handler or
  thread of the candidate outlives the result);
- the candidate is imported in that child only, so whatever it patches (clocks, torch
  functions, the harness itself, Triton's launch hooks) dies with the child: the worker's own
  modules are never touched by job code, and every job's anti-cheat watches
  (kernels/integrity.py) are installed afresh, in the child, before its candidate is imported;
- a crash, hang or kill of a job kills that child, never the worker.

GPU: nothing that forks may hold a CUDA context (a forked child cannot use its parent's), so
the worker never initializes CUDA. It decides gpu vs interpreter with NVML
(PYTORCH_NVML_BASED_CUDA_CHECK=1, torch's own fork-safe availability check) and refuses to
serve (the daemon then runs cold) when it could only find out by initializing CUDA, or when
anything it imported did. Each job's child creates its own context: the saving on a GPU is
the process start, `import torch`/`import triton` and the harness imports, not the context.

Control channel (one JSON object per line): the daemon writes jobs to the worker's stdin, the
worker answers on its stdout, which it keeps for that and nothing else:

    <- {"ready": true, "pid", "mode", "version", "sources", "torch", "triton"} (or "ready": false, "reason")
    -> {"job": ID, "argv": [runner args], "cwd", "env", "log", "title", "rlimits": {"fsize", "nproc"}}
    <- {"started": ID, "pid": CHILD}       as soon as the child exists
    <- {"exited": ID, "pid": CHILD, "returncode": N}   negative: killed by signal -N (as Popen)

The worker exits on stdin EOF, and with its parent (PR_SET_PDEATHSIG), killing a running job
first; a job's child dies with the worker the same way.
"""

from __future__ import annotations

import argparse
import contextlib
import ctypes
import importlib
import json
import os
import resource
import signal
import sys
import traceback
from pathlib import Path
from typing import Any

PROTOCOL = 1
PR_SET_PDEATHSIG = 1
RUNNER = "kernelscope.kernels.runner"
# Modules every job uses: imported once here, inherited by every forked child (a job that
# imports one of ours itself pays it on every save: tests/engine/test_warm_worker.py checks).
HARNESS_MODULES = (
    "kernelscope.kernels.runner",
    "kernelscope.kernels.static_gate",
    "kernelscope.kernels.problem_lint",
    "kernelscope.kernels.second_inputs",
    "kernelscope.protocol.record_rules",
    "kernelscope.kernels.gate",
    "kernelscope.kernels.timed_checks",
    "kernelscope.kernels.timing",
    "kernelscope.protocol.stats",
    "kernelscope.kernels.integrity",
    "kernelscope.kernels.adapters",
    "kernelscope.kernels.adapters.base",
    "kernelscope.kernels.adapters.native",
    "kernelscope.kernels.adapters.kernelbench",
    "kernelscope.protocol.kinds",
    "kernelscope.kernels.sizing",
    "kernelscope.kernels.interpreter_limits",
    "kernelscope.kernels.adapters.sol_execbench",
    "kernelscope.protocol.bench",
)
LIBRARY_MODULES = (
    "torch",
    "triton",
    "triton.language",
    "triton.testing",
    "numpy",
    # imported lazily by every run, and slow: the gate's no-kernel check calls
    # torch.use_deterministic_algorithms, which imports torch._inductor (and torch._dynamo,
    # sympy...: ~0.7 s); Triton's code generator on a kernel's first launch
    "torch._inductor.config",
    "torch.utils.deterministic",
    "triton.compiler.compiler",
    "triton.compiler.code_generator",
    "triton.runtime.build",
)
GPU_MODULES = ("triton.backends.nvidia.driver", "triton.backends.nvidia.compiler")


def _prctl_pdeathsig(sig: int) -> bool:
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        return libc.prctl(PR_SET_PDEATHSIG, int(sig), 0, 0, 0) == 0
    except (OSError, AttributeError):
        return False


def set_cmdline(words: list[str]) -> bool:
    """Show `words` as this process's command line (/proc/PID/cmdline, ps), the way
    setproctitle does on Linux: overwrite the argv strings in place (arg_start..arg_end from
    /proc/self/stat), truncated to the room the process was started with, NUL-padded."""
    try:
        raw = Path("/proc/self/stat").read_bytes()
        fields = raw[raw.rfind(b")") + 2 :].split()
        start, end = int(fields[45]), int(fields[46])  # fields 48 and 49 of proc(5)
    except (OSError, ValueError, IndexError):
        return False
    room = end - start
    if start <= 0 or room <= 1:
        return False
    data = b"\0".join(w.encode("utf-8", "surrogateescape") for w in words)[: room - 1]
    ctypes.memmove(start, data + b"\0" * (room - len(data)), room)
    return True


def _warm(mode: str) -> tuple[str, dict[str, Any]]:
    """Import what every job needs and decide the mode, without initializing CUDA. Returns
    the mode the jobs run in and facts for the ready line; raises RuntimeError when this
    worker cannot serve jobs (the daemon then runs them cold)."""
    facts: dict[str, Any] = {}
    if mode == "interpreter" or os.environ.get("TRITON_INTERPRET") == "1":
        os.environ["TRITON_INTERPRET"] = "1"
        resolved = "interpreter"
        import torch
    else:
        os.environ["PYTORCH_NVML_BASED_CUDA_CHECK"] = "1"  # availability without a CUDA context
        os.environ.pop("TRITON_INTERPRET", None)
        import torch

        try:
            count = int(torch.cuda._device_count_nvml()) if torch.backends.cuda.is_built() else 0
        except Exception:  # a torch without the NVML helper: cannot tell without CUDA
            count = -1
        if count < 0 and any(os.path.exists(n) for n in ("/dev/nvidiactl", "/dev/kfd")):
            raise RuntimeError(
                "NVML cannot say whether a GPU is usable, and asking CUDA would create a context "
                "a forked job could not use"
            )
        if count > 0:
            resolved = "gpu"
        elif mode == "gpu":
            raise RuntimeError("--mode gpu was asked for but NVML sees no CUDA device")
        else:
            os.environ["TRITON_INTERPRET"] = "1"
            resolved = "interpreter"
        facts["gpus"] = max(count, 0)
    extra = ("triton.runtime.interpreter",) if resolved == "interpreter" else GPU_MODULES
    for name in (*LIBRARY_MODULES, *extra):
        with contextlib.suppress(ImportError):
            importlib.import_module(name)
    for name in HARNESS_MODULES:
        importlib.import_module(name)
    if torch.cuda.is_initialized():
        raise RuntimeError("a CUDA context was created while warming up: forked jobs could not use CUDA")
    if resolved == "gpu" and _forks_are_bad():
        raise RuntimeError("CUDA was initialized while warming up: a forked job could not use it")
    import threading

    if threading.active_count() > 1:  # a fork keeps only this thread: a library's would be lost
        names = ", ".join(t.name for t in threading.enumerate() if t is not threading.current_thread())
        raise RuntimeError(f"threads were started while warming up ({names}): forking would lose them")
    import triton

    facts.update(torch=torch.__version__, triton=triton.__version__)
    return resolved, facts


def _forks_are_bad() -> bool:
    """Whether a child forked now would be refused CUDA (torch marks children of a process
    that initialized the driver as being "in a bad fork")."""
    pid = os.fork()
    if pid == 0:
        code = 2
        try:
            import torch

            code = 1 if torch.cuda._is_in_bad_fork() else 0
        finally:
            os._exit(code)
    _, status = os.waitpid(pid, 0)
    return os.waitstatus_to_exitcode(status) != 0


def _version() -> str | None:
    try:
        from importlib.metadata import version

        return version("kernelscope")
    except Exception:
        return None


class Channel:
    """The control channel: private duplicates of fds 0 and 1; the real fds 0/1 are pointed at
    /dev/null and stderr so nothing printed by a library can corrupt it."""

    def __init__(self) -> None:
        self.read_fd = os.dup(0)
        self.write_fd = os.dup(1)
        devnull = os.open(os.devnull, os.O_RDONLY)
        os.dup2(devnull, 0)
        os.close(devnull)
        os.dup2(2, 1)
        self.buffer = b""

    def send(self, message: dict[str, Any]) -> None:
        data = (json.dumps(message) + "\n").encode()
        while data:
            data = data[os.write(self.write_fd, data) :]

    def receive(self) -> dict[str, Any] | None:
        """The next message, or None at EOF."""
        while b"\n" not in self.buffer:
            chunk = os.read(self.read_fd, 1 << 16)
            if not chunk:
                return None
            self.buffer += chunk
        line, self.buffer = self.buffer.split(b"\n", 1)
        return json.loads(line)

    def close_in_child(self) -> None:
        for fd in (self.read_fd, self.write_fd):
            with contextlib.suppress(OSError):
                os.close(fd)


def _job_child(job: dict[str, Any], channel: Channel, worker_pid: int, mode: str) -> None:
    """In the forked child: become the runner process the job asked for, run it, exit. Never
    returns."""
    code = 1
    try:
        os.setsid()
        _prctl_pdeathsig(signal.SIGKILL)  # the worker dies: so does its job
        if os.getppid() != worker_pid:
            os._exit(1)
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        signal.signal(signal.SIGINT, signal.default_int_handler)
        channel.close_in_child()
        limits = job.get("rlimits") or {}
        if limits.get("fsize"):
            with contextlib.suppress(ValueError, OSError):
                resource.setrlimit(resource.RLIMIT_FSIZE, (int(limits["fsize"]), int(limits["fsize"])))
        if limits.get("nproc"):
            with contextlib.suppress(ValueError, OSError):
                resource.setrlimit(resource.RLIMIT_NPROC, (int(limits["nproc"]), int(limits["nproc"])))
        log = os.open(job["log"], os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        devnull = os.open(os.devnull, os.O_RDONLY)
        os.dup2(devnull, 0)
        os.dup2(log, 1)
        os.dup2(log, 2)
        os.close(log)
        os.close(devnull)
        sys.stdin = open(0, encoding="utf-8", closefd=False)  # noqa: SIM115
        sys.stdout = open(1, "w", encoding="utf-8", closefd=False)  # noqa: SIM115
        sys.stderr = open(2, "w", encoding="utf-8", errors="backslashreplace", buffering=1, closefd=False)  # noqa: SIM115
        cwd = str(job["cwd"])
        os.chdir(cwd)
        env = {str(k): str(v) for k, v in (job.get("env") or {}).items()}
        if mode == "interpreter":
            env["TRITON_INTERPRET"] = "1"
        else:
            env.pop("TRITON_INTERPRET", None)
        os.environ.clear()
        os.environ.update(env)
        set_cmdline([str(w) for w in job.get("title") or []])
        runner = sys.modules[RUNNER]
        argv = [str(a) for a in job["argv"]]
        sys.argv = [str(runner.__file__), *argv]
        if sys.path and not getattr(sys.flags, "safe_path", False):
            sys.path[0] = cwd  # as `python -m` started in the scratch copy would have it
        code = int(runner.main(argv) or 0)
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
        if exc.code is not None and not isinstance(exc.code, int):
            with contextlib.suppress(Exception):
                print(exc.code, file=sys.stderr)
    except BaseException:
        with contextlib.suppress(Exception):
            traceback.print_exc()
        code = 1
    finally:
        for stream in (sys.stdout, sys.stderr):
            with contextlib.suppress(Exception):
                stream.flush()
        os._exit(code)


def _returncode(status: int) -> int:
    return os.waitstatus_to_exitcode(status) if hasattr(os, "waitstatus_to_exitcode") else status


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m kernelscope.kernels.worker")
    parser.add_argument("--mode", choices=["auto", "gpu", "interpreter"], default="auto")
    parser.add_argument("--daemon-pid", type=int, default=None)
    parser.add_argument("--title-space", default="", help="room for the jobs' command lines")
    args = parser.parse_args(argv)
    channel = Channel()
    running: dict[str, int] = {}

    def die(_signum: int, _frame: Any) -> None:
        """The daemon is gone (PR_SET_PDEATHSIG) or asks us to stop: the job goes first."""
        for pid in running.values():
            with contextlib.suppress(OSError):
                os.killpg(pid, signal.SIGKILL)
        os._exit(0)

    signal.signal(signal.SIGTERM, die)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    _prctl_pdeathsig(signal.SIGTERM)
    if args.daemon_pid is not None and os.getppid() != args.daemon_pid:
        return 0  # the daemon died before we could ask to die with it
    set_cmdline([sys.executable, "-m", "kernelscope.kernels.worker", "--mode", args.mode])
    try:
        mode, facts = _warm(args.mode)
    except BaseException as exc:
        if isinstance(exc, KeyboardInterrupt):
            raise
        channel.send({"ready": False, "reason": f"{type(exc).__name__}: {exc}", "protocol": PROTOCOL})
        return 0
    sources = sorted({str(Path(sys.modules[n].__file__ or "").parent) for n in HARNESS_MODULES})
    channel.send(
        {
            "ready": True,
            "protocol": PROTOCOL,
            "pid": os.getpid(),
            "mode": mode,
            "python": sys.executable,
            "version": _version(),
            "sources": sources,
            **facts,
        }
    )
    worker_pid = os.getpid()
    while True:
        job = channel.receive()
        if job is None:
            return 0
        job_id = str(job.get("job"))
        # Flush anything buffered before forking, or the child would write it a second time.
        for stream in (sys.stdout, sys.stderr):
            with contextlib.suppress(Exception):
                stream.flush()
        pid = os.fork()
        if pid == 0:
            _job_child(job, channel, worker_pid, mode)  # never returns
        running[job_id] = pid
        channel.send({"started": job_id, "pid": pid})
        while True:
            try:
                _, status = os.waitpid(pid, 0)
                break
            except ChildProcessError:
                status = 1 << 8
                break
        running.pop(job_id, None)
        channel.send({"exited": job_id, "pid": pid, "returncode": _returncode(status)})


if __name__ == "__main__":
    sys.exit(main())
