"""Benchmark fan-out: many candidates on the local executor and on a local Ray (CPU,
interpreter mode) give the same verdicts and ranking; a killed Ray worker fails its task only."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from kernelscope.daemon.engine.run.bench import BenchRequest
from kernelscope.daemon.engine.run.executors import LocalExecutor
from kernelscope.daemon.engine.run.fanout import bench_candidates, expand_candidates
from kernelscope.daemon.engine.workflows.demo import kernel_with_block
from tests.conftest import EXAMPLES

pytestmark = pytest.mark.slow
ray = pytest.importorskip("ray", reason="the ray extra is not installed")
KERNEL = (EXAMPLES / "vector_add" / "kernel.py").read_text()

KILLS_ITS_RAY_WORKER = """
import os, signal
# Kills the process running it: on Ray, the runner's stand-in parent (kernels/stand_in_parent.py,
# between the Ray worker and the runner since dae59d0), or a Ray worker; never another process.
with open(f"/proc/{os.getppid()}/cmdline", "rb") as handle:
    parent = handle.read()
if b"ray::" in parent or b"stand_in_parent.py" in parent:
    os.kill(os.getppid(), signal.SIGKILL)
raise SystemExit("not on Ray")
"""


@pytest.fixture(scope="module")
def workspace(tmp_path_factory: pytest.TempPathFactory) -> Path:
    ws = tmp_path_factory.mktemp("fanout") / "ws"
    shutil.copytree(EXAMPLES / "vector_add", ws)
    candidates = ws / "candidates"
    candidates.mkdir()
    for block in (64, 256, 1024):
        (candidates / f"block_{block:04d}.py").write_text(kernel_with_block(KERNEL, block))
    (candidates / "wrong.py").write_text(KERNEL.replace("x + y", "x - y"))
    return ws


@pytest.fixture(scope="module")
def ray_executor():  # type: ignore[no-untyped-def]
    from kernelscope.daemon.engine.run.executors import RayExecutor

    executor = RayExecutor(num_cpus=2)
    yield executor
    ray.shutdown()


def template(ws: Path) -> BenchRequest:
    return BenchRequest(
        workspace=ws, baseline=str(ws / "kernel_slow.py"), mode="interpreter", seeds=1, timeout_s=300
    )


def test_ray_and_local_agree(workspace: Path, ray_executor) -> None:  # type: ignore[no-untyped-def]
    candidates = expand_candidates([workspace / "candidates"])
    local = bench_candidates(template(workspace), candidates, LocalExecutor(), "local")
    remote = bench_candidates(template(workspace), candidates, ray_executor, "ray")
    order = [Path(r.candidate).name for r in local.ranking]
    # Interpreter timings never rank: passing candidates keep the order given, failures last.
    assert order == ["block_0064.py", "block_0256.py", "block_1024.py", "wrong.py"]
    assert not local.comparable and not remote.comparable and "not comparable" in local.messages[0]
    assert [Path(r.candidate).name for r in remote.ranking] == order
    assert (
        [r.passed for r in remote.ranking] == [r.passed for r in local.ranking] == [True, True, True, False]
    )
    assert remote.ranking[-1].result.error.kind == local.ranking[-1].result.error.kind == "wrong_result"  # type: ignore[union-attr]
    assert len(remote.ranking) == len(candidates)  # one result per candidate, none twice


def test_configuration_groups_on_ray(workspace: Path, ray_executor) -> None:  # type: ignore[no-untyped-def]
    """Each candidate x configuration group is its own Ray task; merged, the verdicts, the
    ranking and the configurations match one local run per candidate."""
    candidates = [workspace / "candidates" / name for name in ("block_0064.py", "wrong.py", "block_1024.py")]
    local = bench_candidates(template(workspace), candidates, LocalExecutor(), "local")
    split = bench_candidates(template(workspace), candidates, ray_executor, "ray", config_groups=2)
    assert [Path(r.candidate).name for r in split.ranking] == [Path(r.candidate).name for r in local.ranking]
    assert [Path(r.candidate).name for r in split.ranking] == ["block_0064.py", "block_1024.py", "wrong.py"]
    for ours, theirs in zip(split.ranking, local.ranking, strict=True):
        assert ours.passed == theirs.passed
        assert [c.name for c in ours.result.configs] == [c.name for c in theirs.result.configs]
    best = split.ranking[0].result
    assert best.score_ci is not None and "measured as 2 configuration groups, one task each" in best.messages
    assert split.ranking[-1].result.error.kind == "wrong_result"  # type: ignore[union-attr]


def test_killed_worker_fails_only_its_task(workspace: Path, ray_executor) -> None:  # type: ignore[no-untyped-def]
    killer = workspace / "killer.py"
    killer.write_text(KILLS_ITS_RAY_WORKER)
    candidates = [
        workspace / "candidates" / "block_1024.py",
        killer,
        workspace / "candidates" / "block_0256.py",
    ]
    report = bench_candidates(template(workspace), candidates, ray_executor, "ray")
    by_name = {Path(r.candidate).name: r for r in report.ranking}
    assert by_name["block_1024.py"].passed and by_name["block_0256.py"].passed
    failure = by_name["killer.py"].result.error
    # (the process it kills is its stand-in parent, not the Ray worker: the verdict is the kernel's)
    assert failure is not None and failure.kind == "crash", failure
    assert "killed the process running it" in failure.message or "died" in failure.message, failure
    assert len(report.ranking) == 3


def test_daemon_probe_runs_on_the_ray_cluster(workspace: Path, ray_executor, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """A save in a trusted workspace with `executor: "ray"` and `rayAddress`: the daemon joins
    the team's cluster as a driver and its background probe runs on a Ray worker."""
    import os
    import signal

    from tests.reliability.test_fault_injection import Daemon

    address = ray.get_runtime_context().gcs_address
    ws = tmp_path / "ws"
    shutil.copytree(EXAMPLES / "vector_add", ws)
    daemon = Daemon(
        tmp_path,
        ws,
        tmp_path / "exp.sqlite",
        settings={"trusted": True, "seeds": 1, "debounceMs": 50, "executor": "ray", "rayAddress": address},
    )
    try:
        daemon.send(
            {
                "jsonrpc": "2.0",
                "method": "textDocument/didSave",
                "params": {"textDocument": {"uri": (ws / "kernel.py").as_uri()}},
            }
        )
        finished = daemon.wait(lambda m: m.get("method") == "kernelscope/jobFinished", 300)["params"]
        assert finished["kind"] == "benchmark" and finished["background"] is True
        result = finished["result"]
        assert result["passed"] is True, result
        assert any(m.startswith("ran on a Ray worker") for m in result["messages"]), result["messages"]
    finally:
        os.killpg(daemon.process.pid, signal.SIGKILL)
        daemon.process.wait()


def test_a_ray_cluster_it_cannot_join_is_a_clear_error(workspace: Path, tmp_path: Path) -> None:
    """`--executor ray --address` naming no cluster (a typo): before, a Python traceback ending
    in ray's ValueError (ConnectionError for an address where no cluster answers); now exit 2
    and one line naming the address."""
    import subprocess
    import sys

    done = subprocess.run(
        [
            *(sys.executable, "-m", "kernelscope.daemon.cli.main", "bench", "-w", str(workspace)),
            *("--candidates", str(workspace / "candidates" / "block_0064.py")),
            *("--executor", "ray", "--address", "head-node-typo", "--seeds", "1"),
        ],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=tmp_path,
    )
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr
    assert "cannot start or join the Ray cluster at head-node-typo" in done.stderr, done.stderr
