"""The experiment store, run against SQLite and PostgreSQL."""

from __future__ import annotations

import math

import pytest

from kernelscope.daemon.engine.store import ExperimentStore, InvalidExperiment, InvalidQuery
from kernelscope.daemon.engine.store.errors import DuplicateExperiment, ExperimentNotFound
from kernelscope.protocol.experiment import TOP_KEYS, KernelExperiment


def exp(**fields: object) -> KernelExperiment:
    base: dict[str, object] = {"change_summary": "tweak", "score": 1.0, "status": "done"}
    base.update(fields)
    return KernelExperiment(**base)  # type: ignore[arg-type]


def test_crud_round_trip(store: ExperimentStore) -> None:
    record = exp(
        score=1.25,
        raw_result="shape=128 speedup=1.3",
        dtype_sig="fp16",
        env="H200, CUDA 13",
        operator_sig="attention.py: fwd",
        kernels=["fwd", "bwd"],
        workspace="/ws",
        memory_version="v3",
        metrics={"by_config": {"n=1": {"speedup": 1.3}}},
        tags=["tma"],
    )
    store.create_experiment(record)
    loaded = store.get_experiment(record.id)
    assert loaded == record
    assert store.get_experiment("0000000000000000") is None
    updated = store.update_experiment(record.id, score=1.5, detailed_description="re-measured")
    assert updated.score == 1.5 and store.require(record.id).detailed_description == "re-measured"
    with pytest.raises(DuplicateExperiment):
        store.create_experiment(record)
    with pytest.raises(ValueError):  # the seed's exception type for a duplicate
        store.create_experiment(record)
    with pytest.raises(KeyError):
        store.update_experiment("missing", score=2.0)
    store.delete_experiment(record.id)
    assert store.get_experiment(record.id) is None
    with pytest.raises(ExperimentNotFound):
        store.delete_experiment(record.id)
    assert store.integrity_check() == []


@pytest.mark.parametrize(
    "fields,message",
    [
        ({"score": math.nan}, "finite"),
        ({"score": math.inf}, "finite"),
        ({"score": -1.0}, "> 0"),
        ({"score": 0.0}, "> 0"),
        ({"change_summary": "x" * 81}, "at most 80"),
        ({"change_summary": "two\nlines"}, "one line"),
        ({"status": "exploded"}, "status"),
        ({"bogus_field": 1}, "bogus_field"),
        ({"created_at": "yesterday"}, "ISO 8601"),
    ],
)
def test_bad_records_are_refused_and_nothing_is_written(
    store: ExperimentStore, fields: dict[str, object], message: str
) -> None:
    good = exp()
    store.create_experiment(good)
    with pytest.raises(InvalidExperiment, match=message):
        store.create_experiment({**good.to_dict(), "id": "other", **fields})
    with pytest.raises(InvalidExperiment):
        store.update_experiment(good.id, **fields)
    assert store.count() == 1
    assert store.require(good.id) == good


def test_buggy_runs_may_score_zero(store: ExperimentStore) -> None:
    store.create_experiment(exp(score=0.0, is_buggy=True, status="failed", error_message="segfault"))
    store.create_experiment(exp(score=None, status="running"))
    assert store.count() == 2


def test_filters(store: ExperimentStore) -> None:
    a = exp(
        operator_sig="cache.py: reshape",
        dtype_sig="fp16",
        env="H200",
        base_commit="c1",
        kernels=["k1"],
        workspace="/w1",
        score=1.2,
        detailed_description="Unroll 4 loops",
        tags=["unroll"],
    )
    b = exp(
        operator_sig="gemm.py: mm",
        dtype_sig="bf16",
        env="MI300X",
        base_commit="c2",
        kernels=["k2"],
        workspace="/w2",
        score=0.9,
        change_summary="Swap loop ORDER",
    )
    c = exp(
        operator_sig="gemm.py: mm",
        dtype_sig="bf16",
        env="MI300X",
        status="failed",
        is_buggy=True,
        score=0.0,
        kernels=["k2", "k3"],
        workspace="/w2",
    )
    for record in (a, b, c):
        store.create_experiment(record)
    ids = lambda **f: [e.id for e in store.list_experiments(**f)]  # noqa: E731
    assert ids() == [a.id, b.id, c.id]
    assert ids(operator_sig="gemm.py: mm") == [b.id, c.id]
    assert ids(dtype_sig="fp16") == [a.id]
    assert ids(env="MI300X", is_buggy=False) == [b.id]
    assert ids(base_commit="c2") == [b.id]
    assert ids(status="failed") == [c.id]
    assert ids(kernel="k2") == [b.id, c.id]
    assert ids(kernel="k3") == [c.id]
    assert ids(workspace="/w1") == [a.id]
    assert ids(min_score=1.0) == [a.id]
    assert ids(min_score=0.5, max_score=1.0) == [b.id]
    assert ids(text="unroll") == [a.id]
    assert ids(text="loop order") == [b.id]
    assert ids(tag="unroll") == [a.id]
    assert ids(is_buggy=True) == [c.id]
    with pytest.raises(InvalidQuery, match="colour"):
        store.list_experiments(colour="red")
    with pytest.raises(InvalidQuery):
        store.list_experiments(status="exploded")
    with pytest.raises(InvalidQuery):
        store.list_experiments(min_score=math.nan)


def test_sql_metacharacters_are_data(store: ExperimentStore) -> None:
    hostile = "x'; DROP TABLE experiments; --"
    store.create_experiment(exp(operator_sig=hostile, change_summary="100% _faster_ \\o/"))
    store.create_experiment(exp(operator_sig="plain", change_summary="1000 faster"))
    assert [e.operator_sig for e in store.list_experiments(operator_sig=hostile)] == [hostile]
    assert [e.change_summary for e in store.list_experiments(text="100%")] == ["100% _faster_ \\o/"]
    assert [e.change_summary for e in store.list_experiments(text="_faster_")] == ["100% _faster_ \\o/"]
    assert store.list_experiments(text="%") != store.list_experiments()
    assert store.count() == 2 and store.integrity_check() == []


def test_big_and_unicode_values(store: ExperimentStore) -> None:
    description = ("Ünïcödé ✓ 中文 🚀 " * 40_000)[:2_000_000]
    record = exp(detailed_description=description, change_summary="多语言 ✓ summary", code_change="\x01\t")
    store.create_experiment(record)
    assert store.require(record.id).detailed_description == description
    assert store.require(record.id).change_summary == "多语言 ✓ summary"


def test_top_experiments(store: ExperimentStore) -> None:
    for score in (1.1, 1.5, 0.9, 1.3):
        store.create_experiment(exp(score=score, operator_sig="op"))
    # a buggy run's score is a wrong output's timing: never ranked, however high
    store.create_experiment(exp(score=9.0, is_buggy=True, operator_sig="op"))
    store.create_experiment(exp(score=None, operator_sig="op"))
    top = store.top_experiments(max_results=3)
    assert [t["score"] for t in top] == [1.5, 1.3, 1.1]
    assert [t["score"] for t in store.top_experiments(max_results=100)] == [1.5, 1.3, 1.1, 0.9]
    assert [e.score for e in store.top(min_score=1.3)] == [1.5, 1.3]  # the bound is inclusive
    assert all(tuple(sorted(t)) == tuple(sorted(TOP_KEYS)) for t in top)
    assert len(store.top_experiments(include_buggy=True, max_results=100)) == 5
    assert [e.score for e in store.top(2, operator_sig="op")] == [1.5, 1.3]
    assert store.top_experiments(max_results=0) == []


def test_lineage(store: ExperimentStore) -> None:
    root = exp(change_summary="v1")
    child = exp(change_summary="v2", pid=root.id)
    grandchild = exp(change_summary="v3", pid=child.id)
    sibling = exp(change_summary="v2b", pid=root.id)
    orphan = exp(change_summary="orphan", pid="feedfeedfeedfeed")
    for record in (root, child, grandchild, sibling, orphan):
        store.create_experiment(record)
    mid = store.lineage(child.id)
    assert [e.id for e in mid.ancestors] == [root.id]
    assert [e.id for e in mid.descendants] == [grandchild.id]
    top = store.lineage(root.id)
    assert [e.id for e in top.descendants] == [child.id, sibling.id, grandchild.id]
    assert store.lineage(orphan.id).missing_parent == "feedfeedfeedfeed"
    # a cycle written by hand does not loop forever
    store.update_experiment(root.id, pid=grandchild.id)
    looped = store.lineage(child.id)
    assert {e.id for e in looped.ancestors} == {root.id, grandchild.id}


def test_failure_categories(store: ExperimentStore) -> None:
    scores = {
        "buggy": (0.0, True),
        "regressive": (0.8, False),
        "slight_regression": (0.985, False),
        "marginal": (1.005, False),
        "improvement": (1.2, False),
    }
    for name, (score, buggy) in scores.items():
        store.create_experiment(exp(change_summary=name, score=score, is_buggy=buggy))
    groups = store.failures()
    assert {k: [e.change_summary for e in v] for k, v in groups.items()} == {
        "buggy": ["buggy"],
        "regressive": ["regressive"],
        "slight_regression": ["slight_regression"],
        "marginal": ["marginal"],
    }


def test_kernel_summaries_match_a_direct_computation(store: ExperimentStore) -> None:
    import random

    rng = random.Random(5)
    records = []
    for index in range(60):
        buggy = rng.random() < 0.2
        record = exp(
            workspace="/ws" if index % 7 else "/other",
            kernels=rng.sample(["a", "b", "c"], rng.randint(1, 2)),
            score=0.0 if buggy else round(rng.uniform(0.5, 2.0), 3),
            is_buggy=buggy,
            status=rng.choice(["done", "failed", "timeout"]) if buggy else "done",
            memory_version=f"v{index}",
            created_at=f"2026-11-01T00:00:{index:02d}Z",
        )
        store.create_experiment(record)
        records.append(record)
    summaries = {s.kernel: s for s in store.kernel_summaries("/ws")}
    for kernel in ("a", "b", "c"):
        mine = [r for r in records if r.workspace == "/ws" and kernel in r.kernels]
        s = summaries[kernel]
        assert s.runs == len(mine)
        assert s.failures == sum(1 for r in mine if r.is_buggy or r.status in ("failed", "timeout"))
        good = [r for r in mine if not r.is_buggy]
        assert s.best_score == max(r.score for r in good)  # type: ignore[type-var]
        assert s.latest_id == mine[-1].id and s.latest_version == mine[-1].memory_version
    assert store.kernel_summaries("/nowhere") == []
    # updates and deletes that lower a best score keep the digest consistent
    best = max(
        (r for r in records if r.workspace == "/ws" and "a" in r.kernels and not r.is_buggy),
        key=lambda r: r.score,
    )  # type: ignore[arg-type,return-value]
    store.update_experiment(best.id, score=0.1)
    store.delete_experiment(records[-1].id)
    store.update_experiment(records[3].id, is_buggy=True, status="failed", score=0.0)
    assert store.kernel_stats_mismatches() == []
    assert {s.kernel: s for s in store.kernel_summaries("/ws")}["a"].best_id != best.id


def test_update_of_kernels_moves_summary_rows(store: ExperimentStore) -> None:
    record = exp(kernels=["old"], workspace="/ws")
    store.create_experiment(record)
    store.update_experiment(record.id, kernels=["new"])
    assert [s.kernel for s in store.kernel_summaries("/ws")] == ["new"]
    assert [e.id for e in store.list_experiments(kernel="new")] == [record.id]
    assert store.kernel_stats_mismatches() == []


def test_import_replace_and_skip(store: ExperimentStore) -> None:
    first = [exp(id=f"{i:016x}", kernels=["k"], workspace="/ws", score=1.0 + i / 10) for i in range(5)]
    assert store.import_experiments(first) == {"inserted": 5, "skipped": 0, "replaced": 0}
    changed = [first[0].model_copy(update={"score": 9.0}), exp(id="new1", kernels=["k"], workspace="/ws")]
    assert store.import_experiments(changed) == {"inserted": 1, "skipped": 1, "replaced": 0}
    assert store.require(first[0].id).score == 1.0
    assert store.import_experiments(changed, replace=True) == {"inserted": 0, "skipped": 0, "replaced": 2}
    assert store.require(first[0].id).score == 9.0
    assert store.kernel_summaries("/ws")[0].best_score == 9.0 and store.kernel_summaries("/ws")[0].runs == 6
    assert store.kernel_stats_mismatches() == []
