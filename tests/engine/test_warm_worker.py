"""The warm benchmark worker (kernels/worker.py, daemon/engine/run/warm_worker.py): every way a job
or the worker itself can go wrong, under the CPU interpreter. One worker serves the failure
tests in turn: each test also checks that it is the same worker afterwards and that the next
honest job through it passes. No wall-clock assertions: speed lives in
benchmarks/probe_bench.py."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
import uuid
from pathlib import Path

import pytest

from kernelscope.daemon.engine.run.bench import BenchRequest, run_benchmark
from kernelscope.daemon.engine.run.child_limits import stat_fields
from kernelscope.daemon.engine.run.warm_worker import WarmWorkers
from kernelscope.protocol.bench import EXIT_GATE_FAILED, BenchResult, exit_status, verdict_word
from tests.conftest import EXAMPLES, NO_TORCH_SERVER
from tests.support.bench_fixtures import alive_with, make_workspace
from tests.support.cheat_kernels import HONEST
from tests.support.stdio_client import StdioClient

pytestmark = pytest.mark.slow
SERVER = NO_TORCH_SERVER


def gone(pid: int) -> bool:
    fields = stat_fields(pid)
    return fields is None or fields[0] in ("Z", "X")


def workspace(root: Path, kernel: str = "good", source: str | None = None) -> Path:
    """A workspace whose folder name is unique: it appears in the scratch path on the job's
    command line (and its forked children's), so `alive_with(name)` finds what it left."""
    ws = make_workspace(root / f"ws-{kernel}-{uuid.uuid4().hex[:8]}", kernel)
    if source is not None:
        (ws / "kernel.py").write_text(source)
    return ws


def bench(ws: Path, pool: WarmWorkers | None, **kwargs: object) -> BenchResult:
    """A job through `pool` (None: cold). The static rules are off: these kernels misbehave at
    run time on purpose, and the static gate would stop them before the defences under test
    (tests/protocol/test_static_rules.py covers the gate)."""
    kwargs.setdefault("seeds", 1)
    kwargs.setdefault("extra_args", ["--no-static-rules"])
    kwargs.setdefault("mode", "interpreter")
    return run_benchmark(BenchRequest(workspace=ws, **kwargs), workers=pool)  # type: ignore[arg-type]


@pytest.fixture(scope="module")
def pool():  # type: ignore[no-untyped-def]
    workers = WarmWorkers()
    yield workers
    workers.close()


def honest_through(pool: WarmWorkers, root: Path, pid: int | None = None) -> BenchResult:
    """An honest job (checking at import that the worker's clocks, torch functions and
    harness are the originals) through `pool`; passes, with normal numbers, in worker `pid`."""
    pristine = (
        "import time, torch\n"
        "import kernelscope.kernels.runner as _runner, kernelscope.kernels.gate as _gate\n"
        "assert type(time.perf_counter).__name__ == 'builtin_function_or_method', time.perf_counter\n"
        "assert type(torch.allclose).__name__ == 'builtin_function_or_method', torch.allclose\n"
        "assert _runner._summarise.__code__.co_filename.endswith('runner.py'), _runner._summarise\n"
        "assert _gate.check_outputs.__code__.co_filename.endswith('gate.py'), _gate.check_outputs\n"
    )
    result = bench(workspace(root, source=pristine + HONEST), pool, seeds=2)
    assert result.passed, result.error
    warm = result.env.get("warm_worker")
    assert warm is not None, "the job ran cold"
    if pid is not None:
        assert warm["pid"] == pid, (warm, pid)
    assert result.score is not None and result.score > 0
    for config in result.configs:
        assert config.passed and config.launches_per_call == 1
        assert config.candidate_ms and config.baseline_ms and config.timed_outputs_checked
        assert config.speedup == pytest.approx(config.baseline_ms / config.candidate_ms)
    return result


def test_jobs_share_one_warm_worker(pool: WarmWorkers, tmp_path: Path) -> None:
    first = honest_through(pool, tmp_path)
    pid = first.env["warm_worker"]["pid"]
    second = honest_through(pool, tmp_path, pid)
    assert second.env["warm_worker"]["job"] > first.env["warm_worker"]["job"]
    assert pool.pids() == [pid]
    # the same result as a cold run: same schema, same configurations, same checks
    cold = bench(EXAMPLES / "vector_add", None, seeds=2)
    warm = bench(EXAMPLES / "vector_add", pool, seeds=2)
    assert cold.passed and warm.passed and "warm_worker" not in cold.env
    assert [c.name for c in cold.configs] == [c.name for c in warm.configs]
    assert [m.split(":")[0] for m in cold.messages] == [m.split(":")[0] for m in warm.messages]
    assert (cold.status, cold.comparable, cold.verdict) == (warm.status, warm.comparable, warm.verdict)
    assert set(cold.env) == set(warm.env) - {"warm_worker"}


PRELOAD_CHECK = """
import json, sys
from pathlib import Path
from kernelscope.kernels import runner, worker
worker._warm("interpreter")
ours = lambda: {m for m in sys.modules if m.startswith("kernelscope.")}
before = ours()
ws, out = Path(sys.argv[1]), Path(sys.argv[2])
try:
    runner.main(["--workspace", str(ws), "--candidate", str(ws / "kernel.py"),
                 "--reference", str(ws / "reference.py"), "--mode", "interpreter", "--seeds", "1",
                 "--output", str(out), "--adapter", sys.argv[3]])
except SystemExit:
    pass
print(json.dumps({"passed": json.loads(out.read_text())["passed"], "new": sorted(ours() - before)}))
"""


def test_the_worker_preloads_every_harness_module_a_job_imports(tmp_path: Path) -> None:
    """What a job imports of kernelscope's own after the worker warmed up is paid again by
    every job's child (on each save): the worker's list must hold all of it."""
    import json
    import subprocess

    from kernelscope.protocol import kinds

    ws = workspace(tmp_path)
    adapter = kinds.adapter_for(kinds.Folder(ws, ws / "reference.py"))
    done = subprocess.run(
        [sys.executable, "-c", PRELOAD_CHECK, str(ws), str(tmp_path / "out.json"), adapter],
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "TRITON_INTERPRET": "1"},
    )
    assert done.returncode == 0, done.stderr[-3000:]
    found = json.loads(done.stdout.strip().splitlines()[-1])
    assert found == {"passed": True, "new": []}, found


@pytest.mark.parametrize("kernel,fragment", [("segfault", "SIGSEGV"), ("abort", "SIGABRT")])
def test_a_crash_kills_the_job_not_the_worker(
    pool: WarmWorkers, tmp_path: Path, kernel: str, fragment: str
) -> None:
    pid = honest_through(pool, tmp_path).env["warm_worker"]["pid"]
    ws = workspace(tmp_path, kernel)
    result = bench(ws, pool)
    assert result.error is not None and result.error.kind == "crash", result.error
    assert fragment in result.error.message and result.error.stderr_tail is not None
    assert alive_with(ws.name) == []
    honest_through(pool, tmp_path, pid)


def test_a_hang_is_killed_at_its_timeout(pool: WarmWorkers, tmp_path: Path) -> None:
    pid = honest_through(pool, tmp_path).env["warm_worker"]["pid"]
    ws = workspace(tmp_path, "hang")
    result = bench(ws, pool, timeout_s=8)
    assert result.error is not None and result.error.kind == "timeout", result.error
    assert "8 s" in result.error.message
    assert alive_with(ws.name) == []
    honest_through(pool, tmp_path, pid)


def test_a_cancelled_job_is_killed(pool: WarmWorkers, tmp_path: Path) -> None:
    pid = honest_through(pool, tmp_path).env["warm_worker"]["pid"]
    ws = workspace(tmp_path, "hang")
    cancel = threading.Event()
    found: list[BenchResult] = []
    runner = threading.Thread(
        target=lambda: found.append(
            run_benchmark(
                BenchRequest(
                    workspace=ws, mode="interpreter", seeds=1, timeout_s=120, extra_args=["--no-static-rules"]
                ),
                cancel,
                pool,
            )
        )
    )
    runner.start()
    deadline = time.monotonic() + 60
    while not alive_with(ws.name):  # the job's child shows the runner's command line
        assert time.monotonic() < deadline and runner.is_alive()
        time.sleep(0.05)
    cancel.set()
    runner.join(60)
    assert found and found[0].error is not None and "cancelled" in found[0].error.message
    assert alive_with(ws.name) == []
    honest_through(pool, tmp_path, pid)


@pytest.mark.parametrize(
    "kernel,kind,fragment,limit",
    [
        ("fork_bomb", "resource_limit", "started more than 256 processes", None),
        ("prints_forever", "resource_limit", "printed more than 64 MB", None),
        ("hoards_memory", "out_of_memory", "over the 1200 MB cap", 1200),
    ],
)
def test_resource_abuse_is_capped_and_the_worker_lives(
    pool: WarmWorkers, tmp_path: Path, kernel: str, kind: str, fragment: str, limit: int | None
) -> None:
    pid = honest_through(pool, tmp_path).env["warm_worker"]["pid"]
    ws = workspace(tmp_path, kernel)
    result = bench(ws, pool, timeout_s=100, memory_limit_mb=limit)
    assert result.error is not None and result.error.kind == kind, result.error
    assert fragment in result.error.message
    assert alive_with(ws.name) == []  # the job's whole group, forked children included
    honest_through(pool, tmp_path, pid)


CHEATS = {
    "clock": (
        "import time\n_real = time.perf_counter\ntime.perf_counter = lambda: _real() * 0.001\n",
        "time.perf_counter",
    ),
    "torch": ("import torch\ntorch.allclose = lambda *a, **k: True\n", "torch.allclose"),
    "runner": (
        "import kernelscope.kernels.runner as _r\n_r._summarise = lambda *a, **k: None\n",
        "kernelscope.kernels.runner._summarise",
    ),
    "gate": (
        "import kernelscope.kernels.gate as _g\n_g.check_outputs = lambda *a, **k: (0.0, 0.0, 0.0, 'ok')\n",
        "kernelscope.kernels.gate.check_outputs",
    ),
}


@pytest.mark.parametrize("name", sorted(CHEATS))
def test_a_cheat_is_caught_and_its_patches_die_with_its_child(
    pool: WarmWorkers, tmp_path: Path, name: str
) -> None:
    """A candidate patching the clocks, torch or the harness (the very runner module running
    it, in a worker's child) fails as a cheat; the next honest job through the same worker
    sees the originals (it checks them at import) and passes with normal numbers."""
    pid = honest_through(pool, tmp_path).env["warm_worker"]["pid"]
    patch, fragment = CHEATS[name]
    result = bench(workspace(tmp_path, source=patch + HONEST), pool)
    assert result.error is not None and result.error.kind == "cheat", result.error
    assert fragment in result.error.message
    honest_through(pool, tmp_path, pid)


def test_a_worker_killed_from_outside_gets_its_job_run_again_cold(tmp_path: Path) -> None:
    """A worker killed mid-job by something other than the kernel (the OOM killer, a user):
    the job was STOPPED (`worker`, "run it again"); it gets its fair second run in a cold
    runner at once, and that run's verdict is the result, with a note that the worker died."""
    hold = tmp_path / "hold"  # the kernel waits at import while this exists
    hold.touch()
    source = f"import os, time\nwhile os.path.exists({str(hold)!r}):\n    time.sleep(0.05)\n" + HONEST
    workers = WarmWorkers()
    try:
        first = honest_through(workers, tmp_path)
        pid = first.env["warm_worker"]["pid"]
        ws = workspace(tmp_path, source=source)
        found: list[BenchResult] = []
        runner = threading.Thread(target=lambda: found.append(bench(ws, workers, timeout_s=120)))
        runner.start()
        deadline = time.monotonic() + 60
        while not alive_with(ws.name):
            assert time.monotonic() < deadline and runner.is_alive()
            time.sleep(0.05)
        os.kill(pid, signal.SIGKILL)  # from outside, mid-job
        while not gone(pid):
            assert time.monotonic() < deadline
            time.sleep(0.05)
        hold.unlink()
        runner.join(120)
        assert found, "the job did not end"
        result = found[0]
        assert result.passed, result.error
        assert "warm_worker" not in result.env  # the cold re-run's result
        notes = [m for m in result.messages if f"warm benchmark worker (pid {pid})" in m]
        assert notes and "SIGKILL" in notes[0] and "run again in a fresh process" in notes[0], result.messages
        assert alive_with(ws.name) == []
        assert gone(pid)
        again = honest_through(workers, tmp_path)
        assert again.env["warm_worker"]["pid"] != pid
    finally:
        workers.close()


KILLS_PARENT = "import os, signal\n\ndef kernel_fn(x, y):\n    os.kill(os.getppid(), signal.SIGKILL)\n"


def test_a_kernel_that_kills_its_worker_gets_a_verdict(tmp_path: Path) -> None:
    """A candidate that SIGKILLs its parent (the warm worker) was STOPPED (`worker`, exit 2,
    "run it again") on every run, each paying a new worker. It is run again cold and kills the
    process running it there too: that is the kernel's doing, a `crash` (FAIL, exit 3)."""
    workers = WarmWorkers()
    try:
        ws = workspace(tmp_path, source=KILLS_PARENT)
        result = bench(ws, workers)
        assert result.error is not None and result.error.kind == "crash", result.error
        assert "the kernel killed the process running it" in result.error.message, result.error
        assert exit_status(result) == EXIT_GATE_FAILED and verdict_word(result) == "FAIL"
        assert any("warm benchmark worker" in m and "died" in m for m in result.messages), result.messages
        assert alive_with(ws.name) == []
    finally:
        workers.close()


CALLER = """
import json, sys
from pathlib import Path
from kernelscope.daemon.engine.run.bench import BenchRequest, run_benchmark
request = BenchRequest(
    workspace=Path(sys.argv[1]), mode="interpreter", seeds=1, extra_args=["--no-static-rules"],
    gate_command=sys.argv[2] or None,
)
result = run_benchmark(request)
print(json.dumps({"kind": result.error and result.error.kind, "message": result.error and result.error.message}))
"""


@pytest.mark.parametrize("gate", [False, True])
def test_a_cold_run_that_signals_its_parent_leaves_the_caller_alive(tmp_path: Path, gate: bool) -> None:
    """A cold runner's (and a gate command's) parent was the process that started it: the CLI
    or the daemon, which the reviewer's kernel killed (`kernelscope bench` died with SIGKILL,
    exit 137). The caller here is a separate process running `run_benchmark` as the CLI does."""
    ws = workspace(tmp_path, source=KILLS_PARENT)
    command = (
        f"{sys.executable} -c 'import os, signal; os.kill(os.getppid(), signal.SIGKILL)'" if gate else ""
    )
    done = subprocess.run(
        [sys.executable, "-c", CALLER, str(ws), command], capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, (done.returncode, done.stderr[-3000:])
    found = json.loads(done.stdout.strip().splitlines()[-1])
    if gate:
        assert found["kind"] == "gate_command", found
        assert "killed the process running it" in found["message"], found
    else:
        assert found["kind"] == "crash", found
        assert "the kernel killed the process running it" in found["message"], found
    assert alive_with(ws.name) == []


def test_a_new_interpreter_or_settings_change_means_a_new_worker(tmp_path: Path) -> None:
    """Another interpreter: a new worker, the old one stopped. The daemon's interpreter or trust
    setting changing stops its workers. kernelscope's files changing on disk: a new worker."""
    from kernelscope.daemon.lsp.state import ServerState
    from kernelscope.protocol.settings import UserSettings

    other = tmp_path / "other-python"
    other.write_text(f'#!/bin/sh\nexec "{sys.executable}" "$@"\n')
    other.chmod(0o755)
    state = ServerState()
    try:
        workers = state.warm_workers
        old = honest_through(workers, tmp_path).env["warm_worker"]["pid"]
        swapped = bench(workspace(tmp_path), workers, python=str(other))
        assert swapped.passed and swapped.env["warm_worker"]["pid"] != old
        assert gone(old) and workers.pids() == [swapped.env["warm_worker"]["pid"]]
        # the daemon's user settings: the interpreter, then the trust, changes
        for user in (UserSettings(python=str(other)), UserSettings(python=str(other), trusted=True)):
            before = bench(workspace(tmp_path), workers, python=str(other)).env["warm_worker"]["pid"]
            state.user = user
            assert gone(before) and workers.pids() == []
        fresh = bench(workspace(tmp_path), workers, python=str(other))
        pid = fresh.env["warm_worker"]["pid"]
        state.user = UserSettings(python=str(other), trusted=True, timeout_s=60)  # neither: kept
        assert workers.pids() == [pid]
        workers.idle[0].fingerprint = ()  # as if kernelscope's files had changed under it
        upgraded = bench(workspace(tmp_path), workers, python=str(other))
        assert upgraded.passed and upgraded.env["warm_worker"]["pid"] != pid and gone(pid)
    finally:
        state.close()


def test_no_worker_means_cold_runs_logged_once(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    broken = tmp_path / "no-worker-python"  # runs everything except the worker
    broken.write_text(
        f'#!/bin/sh\nif [ "$2" = kernelscope.kernels.worker ]; then exit 3; fi\nexec "{sys.executable}" "$@"\n'
    )
    broken.chmod(0o755)
    workers = WarmWorkers()
    try:
        with caplog.at_level("WARNING", logger="kernelscope.bench"):
            results = [bench(workspace(tmp_path), workers, python=str(broken)) for _ in range(2)]
        assert all(r.passed and "warm_worker" not in r.env for r in results)
        warnings = [r for r in caplog.records if "no warm benchmark worker" in r.getMessage()]
        assert len(warnings) == 1, [r.getMessage() for r in caplog.records]
    finally:
        workers.close()


def _daemon_with_worker(tmp_path: Path) -> tuple[StdioClient, int]:
    """A real daemon (torch unimportable in it) whose benchmark command ran through its warm
    worker; returns the client and the worker's pid."""
    folder = tmp_path / "folder"
    ws = folder / "kernel_opt_vector_add"
    shutil.copytree(EXAMPLES / "vector_add", ws)
    client = StdioClient(SERVER, log=tmp_path / "daemon.log")
    client.initialize(
        folder,
        {"trusted": True, "mode": "interpreter", "seeds": 1, "dbUrl": str(tmp_path / "exp.sqlite")},
    )
    client.request(
        2,
        "workspace/executeCommand",
        {"command": "kernelscope.benchmark", "arguments": [{"workspace": str(ws)}]},
    )
    finished = client.wait(lambda m: m.get("method") == "kernelscope/jobFinished", 180)
    result = finished["params"]["result"]
    assert result["passed"], result
    return client, int(result["env"]["warm_worker"]["pid"])


def test_daemon_exit_leaves_no_worker(tmp_path: Path) -> None:
    client, pid = _daemon_with_worker(tmp_path / "clean")
    assert not gone(pid)
    client.request(3, "shutdown", None)
    client.send({"jsonrpc": "2.0", "method": "exit"})
    client.process.wait(timeout=30)
    deadline = time.monotonic() + 10
    while not gone(pid):
        assert time.monotonic() < deadline, "the worker outlived the daemon"
        time.sleep(0.05)


def test_a_killed_daemon_leaves_no_worker(tmp_path: Path) -> None:
    client, pid = _daemon_with_worker(tmp_path / "killed")
    client.process.kill()  # no cleanup code runs: stdin EOF and PR_SET_PDEATHSIG do it
    client.process.wait(timeout=30)
    deadline = time.monotonic() + 10
    while not gone(pid):
        assert time.monotonic() < deadline, "the worker outlived the daemon"
        time.sleep(0.05)
