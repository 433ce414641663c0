"""The pieces under the history hints: the ast analysis (fingerprint, skeleton, spots), the
one score per version, the cache key, experiments from the store, and the import guard."""

from __future__ import annotations

import difflib
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from kernelscope.daemon.engine.history.gitdata import history_key
from kernelscope.daemon.engine.history.service import HistoryService
from kernelscope.daemon.engine.history.source import analyze_source
from kernelscope.daemon.engine.history.unified_diff import apply_unified_diff
from kernelscope.daemon.engine.memory.records import MemoryManager
from kernelscope.daemon.engine.memory.scores import memory_scores, parent_effect, score_value, version_score
from kernelscope.daemon.engine.store import ExperimentStore
from kernelscope.protocol.experiment import KernelExperiment
from kernelscope.protocol.memory import MemoryRecord
from tests.support.field_workspaces import KERNEL_V2, build_plain_git_workspace


@pytest.fixture(autouse=True)
def _history_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Analyses cached on disk go to the test's folder, not the user's ~/.cache."""
    monkeypatch.setenv("KERNELSCOPE_HISTORY_CACHE", str(tmp_path / "history-cache"))


AUTOTUNED = '''"""Matmul."""
import triton
import triton.language as tl

CONFIGS = [triton.Config({"BLOCK_K": 32}, num_stages=2)]


@triton.autotune(
    configs=[
        triton.Config({"BLOCK_M": 128, "BLOCK_N": 64}, num_warps=4, num_stages=3),
        triton.Config({"BLOCK_M": 64, "BLOCK_N": 64}, num_warps=8),
    ],
    key=["M", "N"],
)
@triton.jit
def matmul_kernel(a_ptr, M, N, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, GROUP: tl.constexpr = 8):
    pass


def run(a, M, N):
    block = 256  # é
    matmul_kernel[lambda meta: (triton.cdiv(M, meta["BLOCK_M"]),)](a, M, N, GROUP=block)
'''


def test_spots_of_an_autotuned_kernel() -> None:
    facts = analyze_source(AUTOTUNED)
    spots = {(s.key, s.value) for s in facts.spots}
    assert ("autotune:matmul_kernel:BLOCK_M", "128") in spots and (
        "autotune:matmul_kernel:BLOCK_M",
        "64",
    ) in spots
    assert ("autotune:matmul_kernel:num_warps", "8") in spots and (
        "autotune:matmul_kernel:num_stages",
        "3",
    ) in spots
    assert ("autotune:CONFIGS:BLOCK_K", "32") in spots  # a module-level config list
    assert ("default:matmul_kernel:GROUP", "8") in spots
    # a keyword bound to a local name is the value where the name is set
    group = next(s for s in facts.spots if s.key == "launch:matmul_kernel#0:GROUP")
    line = AUTOTUNED.splitlines()[group.line]
    assert group.value == "256" and line[group.character : group.end_character] == "256"
    grid = next(s for s in facts.spots if s.kind == "grid")
    assert grid.value.startswith("lambda meta:")
    assert facts.kernels == ("matmul_kernel",)


def test_a_byte_order_mark_changes_neither_the_fingerprint_nor_the_positions() -> None:
    """kernel.py saved with a UTF-8 BOM (valid Python) is the same kernel: the same fingerprint
    and spots at the same lines and columns, not a parse error."""
    plain, marked = analyze_source(AUTOTUNED), analyze_source("\ufeff" + AUTOTUNED)
    assert marked.error is None and marked.fingerprint is not None
    assert marked.fingerprint == plain.fingerprint and marked.spots == plain.spots


def test_fingerprint_ignores_formatting_and_the_skeleton_only_meta_literals() -> None:
    base = analyze_source(KERNEL_V2)
    formatted = analyze_source(
        "# comment\n"
        + KERNEL_V2.replace('"""RMSNorm', '"""Another docstring. RMSNorm').replace(
            ", num_warps=4,", ",\n   num_warps=4 ,"
        )
    )
    assert formatted.fingerprint == base.fingerprint
    tuned = analyze_source(
        KERNEL_V2.replace("BLOCK_M = 4", "BLOCK_M = 8").replace("num_warps=4", "num_warps=2")
    )
    assert tuned.fingerprint != base.fingerprint and tuned.skeleton == base.skeleton
    differing = [(a, b) for a, b in zip(base.meta, tuned.meta, strict=True) if a != b]
    assert differing == [(("BLOCK_M", "4"), ("BLOCK_M", "8")), (("num_warps", "4"), ("num_warps", "2"))]
    changed = analyze_source(KERNEL_V2.replace("tl.rsqrt(ms + eps)", "1.0 / tl.sqrt(ms + eps)"))
    assert changed.skeleton != base.skeleton
    assert analyze_source("def f(:\n").error is not None


def test_apply_unified_diff_round_trip() -> None:
    after = KERNEL_V2.replace("BLOCK_M = 4", "BLOCK_M = 16").replace("num_warps=4", "num_warps=8") + "# end\n"
    diff = "".join(
        difflib.unified_diff(KERNEL_V2.splitlines(True), after.splitlines(True), "a/kernel.py", "b/kernel.py")
    )
    assert apply_unified_diff(KERNEL_V2, diff) == after
    assert apply_unified_diff("something else\n", diff) is None


def _record(**fields: object) -> MemoryRecord:
    return MemoryRecord.model_validate({"version": "v1", **fields})


def test_one_score_per_version() -> None:
    base = _record(version="v0", performance={"latency_us": 100.0})
    in_run = _record(
        performance={"latency_us": 5.0}, kernelscope={"score_vs_v0": 23.01, "score_ci": [22.5, 23.4]}
    )
    score = version_score(in_run, base)
    assert score is not None and (score.value, score.kind, score.ci) == (23.01, "speedup", (22.5, 23.4))
    assert score.text() == "23.01x vs v0 [22.50-23.40]"
    ratio = version_score(_record(performance={"latency_us": 5.0}), base)
    assert ratio is not None and ratio.kind == "latency_ratio" and ratio.value == 20.0
    assert ratio.text() == "latency ratio 20.00x vs v0"
    baseline = version_score(_record(kernelscope={"score_vs_v0": 1.0, "score_ci": [0.0001, 0.0002]}), base)
    assert baseline is not None and baseline.ci is None  # an interval that does not hold its score is dropped
    parent = parent_effect(
        _record(kernelscope={"score_vs_parent": 1.75, "score_vs_parent_ci": [1.7, 1.8]}), None, "v2"
    )
    assert parent is not None and parent.text() == "1.75x vs v2 [1.70-1.80]"
    carried = _record(
        performance={"latency_us": 5.0, "carried_from_version": "v0", "measurement_subject": "incumbent"}
    )
    assert version_score(carried, base) is None and score_value(carried, base) is None


def test_lenses_use_the_same_score(tmp_path: Path) -> None:
    memory = tmp_path / "memory"
    memory.mkdir()
    (memory / "v0.json").write_text(
        json.dumps(
            {"version": "v0", "performance": {"latency_us": 100.0}, "quality_gate": {"result": "PASS"}}
        )
    )
    (memory / "v1.json").write_text(
        json.dumps(
            {
                "version": "v1",
                "performance": {"latency_us": 4.98},
                "quality_gate": {"result": "PASS"},
                "kernelscope": {"score_vs_v0": 23.01, "score_ci": [22.5, 23.4]},
            }
        )
    )
    scores = {s.version: s.score for s in memory_scores(MemoryManager(tmp_path).scan(), None)}
    assert scores["v1"] == 23.01  # not 100 / 4.98 = 20.08


def test_history_key_sees_memory_writes_and_refs(tmp_path: Path) -> None:
    ws = build_plain_git_workspace(tmp_path / "ws")
    key = history_key(ws, ws / "memory")
    assert history_key(ws, ws / "memory") == key
    record = ws / "memory" / "v2.json"
    record.write_text(record.read_text().replace('"masked": false', '"masked": true'))  # in place
    assert history_key(ws, ws / "memory") != key
    key = history_key(ws, ws / "memory")
    subprocess.run(["git", "update-ref", "refs/kernelscope/failed/v3", "HEAD"], cwd=ws, check=True)
    assert history_key(ws, ws / "memory") != key


def test_experiments_add_tried_values_and_fingerprints(tmp_path: Path) -> None:
    ws = build_plain_git_workspace(tmp_path / "ws")
    head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=ws, capture_output=True, text=True).stdout.strip()
    tried_kernel = KERNEL_V2.replace("num_warps=4", "num_warps=8")
    diff = "".join(
        difflib.unified_diff(
            KERNEL_V2.splitlines(True), tried_kernel.splitlines(True), "a/kernel.py", "b/kernel.py"
        )
    )
    store = ExperimentStore(str(tmp_path / "exp.sqlite"))
    store.create_experiment(
        KernelExperiment(
            id="feedbeef00000001",
            workspace=str(ws.resolve()),
            base_commit=head,
            code_change=diff,
            is_buggy=True,
            status="failed",
            error_message="mismatch on batch_size=33",
            score=None,
        )
    )
    store.create_experiment(
        KernelExperiment(
            id="feedbeef00000002",
            workspace=str(ws.resolve()),
            score=1.31,
            status="done",
            kernels=["_rmsnorm_rows_kernel"],
            metrics={"params": {"BLOCK_M": 16}},
        )
    )
    service = HistoryService(ws, db_url=str(tmp_path / "exp.sqlite"))
    check = service.fingerprint(tried_kernel)
    assert check.severity == "warning"
    assert check.verdict == "identical to experiment feedbeef: FAILED failed: mismatch on batch_size=33"
    v2 = service.history().versions["v2"].effect.score
    assert v2 is not None and v2.kind == "latency_ratio"
    (hint,) = [h for h in service.tried() if h.label == "BLOCK_M"]
    # two kinds of number: the latency ratio says so, the experiment's score is its own
    assert hint.hint == f"tried: 4 {v2.value:.2f}x latency ratio v2 (1 FAIL) · 16 1.31x exp feedbeef"
    warps = next(h for h in service.tried(tried_kernel) if h.label == "num_warps")
    assert warps.hint == f"tried (latency ratio vs v0): 4 {v2.value:.2f}x v2 · 8 FAIL exp feedbeef"


def test_history_imports_neither_torch_nor_triton(tmp_path: Path) -> None:
    ws = build_plain_git_workspace(tmp_path / "ws")
    script = f"""
import sys
class Forbid:
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in ("torch", "triton"):
            raise ImportError(name)
sys.meta_path.insert(0, Forbid())
from kernelscope.daemon.engine.history.service import HistoryService
svc = HistoryService({str(ws)!r}, db_url={str(tmp_path / "exp.sqlite")!r})
print(len(svc.blame()), len(svc.tried()), svc.fingerprint().severity, svc.compare("v1", "v2").b.version)
"""
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == [str(len(KERNEL_V2.splitlines())), "0", "hint", "v2"]


@pytest.mark.parametrize("buffer", [None, "", "x = 1\n"])
def test_workspace_without_git(tmp_path: Path, buffer: str | None) -> None:
    (tmp_path / "memory").mkdir()
    (tmp_path / "memory" / "v0.json").write_text(json.dumps({"version": "v0"}))
    (tmp_path / "kernel.py").write_text("x = 1\n")
    service = HistoryService(tmp_path, db_url=str(tmp_path / "exp.sqlite"))
    lines = service.blame(buffer)
    text = "" if buffer is None else buffer  # None: HEAD's kernel.py, and there is no HEAD
    assert len(lines) == len(text.splitlines())  # one per line of a buffer (the empty one: none)
    assert all(line.origin == "unknown" for line in lines)
    assert service.tried(buffer) == [] and service.history().messages


def test_blob_analyses_are_kept_on_disk(tmp_path: Path) -> None:
    from kernelscope.daemon.engine.history.source import FactsCache

    first = FactsCache().analyze_blob("0123abcd" * 5, KERNEL_V2)
    files = list((tmp_path / "history-cache").rglob("0123abcd*"))
    assert len(files) == 1
    loaded = FactsCache().load_blob("0123abcd" * 5)
    assert loaded == first and loaded is not first
    files[0].write_bytes(b"garbage")
    assert FactsCache().load_blob("0123abcd" * 5) is None


def test_workspace_in_a_subfolder_of_the_repository(tmp_path: Path) -> None:
    """A monorepo: the workspace is `kernels/rmsnorm/` of a larger repository."""
    repo = tmp_path / "repo"
    ws = repo / "kernels" / "rmsnorm"
    ws.mkdir(parents=True)
    identity = ["-c", "user.name=a", "-c", "user.email=a@example.invalid"]

    def git(*args: str) -> str:
        return subprocess.run(
            ["git", *identity, *args], cwd=repo, capture_output=True, text=True, check=True
        ).stdout

    git("init", "-q")
    hashes = []
    for version, source in enumerate((KERNEL_V2.replace("BLOCK_M = 4", "BLOCK_M = 8"), KERNEL_V2)):
        (ws / "kernel.py").write_text(source)
        git("add", "kernels/rmsnorm/kernel.py")
        git("commit", "-qm", f"v{version}: kernel")
        hashes.append(git("rev-parse", "HEAD").strip())
        (ws / "memory").mkdir(exist_ok=True)
        record = {
            "version": f"v{version}",
            "performance": {"latency_us": 10.0 - version},
            "quality_gate": {"result": "PASS"},
            "git_commit_hash": hashes[-1],
        }
        (ws / "memory" / f"v{version}.json").write_text(json.dumps(record))
    service = HistoryService(ws, db_url=str(tmp_path / "exp.sqlite"))
    line = service.blame()[6]
    assert line.version == "v1" and line.hint == "introduced in v1: latency ratio 1.11x vs v0, PASS"
    assert service.blame()[0].version == "v0"
    (hint,) = [h for h in service.tried() if h.label == "BLOCK_M"]
    assert hint.hint == "tried (latency ratio vs v0): 4 1.11x v1 · 8 1.00x v0"
    assert service.compare("v0", "v1").code_diff.count("BLOCK_M = ") == 2


def test_invalidate_does_not_wait_for_a_build_and_the_overtaken_build_is_not_kept(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The daemon's loop calls `invalidate()` on every file event: it must not wait while a
    pool thread builds the history (seconds for a thousand versions), and the history that
    build returns, read before the change, must not be served afterwards."""
    import threading

    from kernelscope.daemon.engine.history import service as service_module

    ws = build_plain_git_workspace(tmp_path / "ws")
    service = HistoryService(ws, db_url=str(tmp_path / "exp.sqlite"))
    real_build = service_module.build_history
    started, release = threading.Event(), threading.Event()
    builds: list[object] = []

    def slow_build(*args: Any, **kwargs: Any) -> Any:
        builds.append(args)
        if len(builds) == 1:
            started.set()
            assert release.wait(60)
        return real_build(*args, **kwargs)

    monkeypatch.setattr(service_module, "build_history", slow_build)
    first: list[object] = []
    builder = threading.Thread(target=lambda: first.append(service.history(check=False)))
    builder.start()
    assert started.wait(60)
    invalidator = threading.Thread(target=service.invalidate)
    invalidator.start()
    invalidator.join(30)
    invalidated_during_build = not invalidator.is_alive()
    release.set()
    builder.join(60)
    invalidator.join(60)
    assert invalidated_during_build, "invalidate() waited for the build under way"
    assert first and len(builds) == 1
    second = service.history(check=False)
    assert len(builds) == 2 and second is not first[0]
    assert service.history(check=False) is second and len(builds) == 2


def test_a_repository_git_refuses_reads_as_no_git_history(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A repository owned by another user (git refuses it without safe.directory) is found by
    kernelscope's file rule, but git reads nothing there: blame says there is no git history,
    as it did when git's refusal meant "not in git", not that every committed line is unsaved."""
    ws = build_plain_git_workspace(tmp_path / "ws")
    monkeypatch.setenv("GIT_TEST_ASSUME_DIFFERENT_OWNER", "1")  # git's own switch for this case
    service = HistoryService(ws, use_store=False)
    line = service.blame_line(0, buffer=(ws / "kernel.py").read_text())  # as the editor asks
    assert line is not None and line.hint == "no git history for kernel.py"
    assert any("dubious ownership" in message for message in service.history().messages)
