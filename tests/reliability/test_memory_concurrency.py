"""Concurrent writers lose nothing, and a writer killed mid-write leaves a valid file."""

from __future__ import annotations

import json
import multiprocessing as mp
import os
import random
import signal
import time
from pathlib import Path

import pytest

from kernelscope.daemon.engine.memory.records import MemoryManager

PROCESSES = 4
UPDATES_PER_PROCESS = 200


def _writer(workspace: str, worker: int, count: int) -> None:
    manager = MemoryManager(workspace)
    for index in range(count):
        # Each update is a read-modify-write of the same file: without the lock,
        # concurrent writers would overwrite each other's keys.
        manager.update("v1", [f"counters.w{worker}_{index}={index}"])


@pytest.mark.slow
def test_four_processes_200_updates_each_lose_nothing(tmp_path: Path) -> None:
    manager = MemoryManager(tmp_path)
    manager.create("v1")
    ctx = mp.get_context("spawn")
    procs = [
        ctx.Process(target=_writer, args=(str(tmp_path), w, UPDATES_PER_PROCESS)) for w in range(PROCESSES)
    ]
    for proc in procs:
        proc.start()
    for proc in procs:
        proc.join(timeout=300)
        assert proc.exitcode == 0
    data = json.loads((tmp_path / "memory" / "v1.json").read_text())
    assert len(data["counters"]) == PROCESSES * UPDATES_PER_PROCESS
    leftovers = [p.name for p in (tmp_path / "memory").iterdir() if p.name.startswith(".kernelscope-tmp")]
    assert leftovers == []


BIG = "x" * 200_000  # large enough that a write takes measurable time


def _rewrite_forever(workspace: str) -> None:
    manager = MemoryManager(workspace)
    flip = 0
    while True:
        flip ^= 1
        manager.update("v1", [f"state={flip}", f"payload={json.dumps(BIG if flip else 'small')}"])


@pytest.mark.slow
def test_sigkill_mid_write_leaves_old_or_new_content(tmp_path: Path) -> None:
    manager = MemoryManager(tmp_path)
    manager.create("v1")
    manager.update("v1", ["state=0", "payload=small"])
    path = tmp_path / "memory" / "v1.json"
    ctx = mp.get_context("fork")
    rng = random.Random(1234)
    seen_states = set()
    for _ in range(100):
        proc = ctx.Process(target=_rewrite_forever, args=(str(tmp_path),))
        proc.start()
        time.sleep(rng.uniform(0.001, 0.03))
        os.kill(proc.pid, signal.SIGKILL)
        proc.join()
        data = json.loads(path.read_text())  # always valid JSON
        assert data["version"] == "v1"
        assert (data["state"], data["payload"]) in {(0, "small"), (1, BIG)}  # old or new, never mixed
        seen_states.add(data["state"])
    # the lock is not left held by a killed writer
    manager.update("v1", ["after=1"])
    assert json.loads(path.read_text())["after"] == 1
    # orphaned temp files of killed writers are cleaned up by the next write
    assert [p.name for p in path.parent.iterdir() if p.name.startswith(".kernelscope-tmp")] == []
