"""Several processes (spawned or forked after first use) writing one store lose nothing."""

from __future__ import annotations

import multiprocessing as mp

import pytest

from kernelscope.daemon.engine.store import ExperimentStore
from kernelscope.protocol.experiment import KernelExperiment

PROCESSES = 4
OPS_PER_PROCESS = 500  # half creates, half updates


def _worker(url: str, worker: int) -> None:
    store = ExperimentStore(url)
    for index in range(OPS_PER_PROCESS // 2):
        record = KernelExperiment(
            id=f"w{worker}-{index}",
            change_summary=f"worker {worker} #{index}",
            score=1.0,
            kernels=[f"k{worker}"],
            workspace="/ws",
        )
        store.create_experiment(record)
        store.update_experiment(record.id, score=1.0 + index / 1000, status="done")


@pytest.mark.slow
def test_four_processes_500_ops_each(db_url: str) -> None:
    ExperimentStore(db_url).count()  # create the schema once
    ctx = mp.get_context("spawn")
    procs = [ctx.Process(target=_worker, args=(db_url, w)) for w in range(PROCESSES)]
    for proc in procs:
        proc.start()
    for proc in procs:
        proc.join(timeout=600)
        assert proc.exitcode == 0
    store = ExperimentStore(db_url)
    records = store.list_experiments()
    assert len(records) == PROCESSES * OPS_PER_PROCESS // 2
    for record in records:
        _worker_id, index = record.id[1:].split("-")
        assert record.score == pytest.approx(1.0 + int(index) / 1000) and record.status == "done"
    summaries = {s.kernel: s.runs for s in store.kernel_summaries("/ws")}
    assert summaries == {f"k{w}": OPS_PER_PROCESS // 2 for w in range(PROCESSES)}
    assert store.integrity_check() == []
    assert store.kernel_stats_mismatches() == []


def _forked_child(worker: int) -> None:
    from kernelscope.daemon import expdb

    for index in range(50):
        expdb.create_experiment(KernelExperiment(id=f"f{worker}-{index}", change_summary="forked", score=1.1))


@pytest.mark.slow
def test_module_api_survives_fork_after_first_call(db_url: str) -> None:
    from kernelscope.daemon import expdb

    expdb.use_database(db_url)
    try:
        expdb.create_experiment(KernelExperiment(id="parent", change_summary="before fork", score=1.0))
        assert expdb.get_experiment("parent") is not None  # the parent holds pooled connections
        ctx = mp.get_context("fork")
        procs = [ctx.Process(target=_forked_child, args=(w,)) for w in range(3)]
        for proc in procs:
            proc.start()
        for proc in procs:
            proc.join(timeout=300)
            assert proc.exitcode == 0
        assert len(expdb.list_experiments()) == 1 + 3 * 50  # the parent still works too
        assert expdb.current_store().integrity_check() == []
    finally:
        expdb.use_database(None)
