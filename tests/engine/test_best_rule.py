"""One best version, whatever the README's target: every surface that says "best" (the kernel
lens, the file lens, `memory list`'s score, mask-half's keep, the probe's baseline) ranks by the
one score vs v0 (memory/core.py score_parts), whose order ARCHITECTURE.md gives: from latency
when v0 and the version both have it, otherwise the ratio of the README's target metric.

The workspace below is one where the two orders disagree: v2 moves more bytes per run than v1
(higher GB/s, yet slower). Before, the kernel lens and `memory list` ranked by the latency ratio
(v1) while the file lens and mask-half ranked by bandwidth (v2); for a while this session all of
them ranked by bandwidth (v2), against the spec: a slower kernel is not the better one."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from kernelscope.daemon.engine.memory.records import MemoryManager
from kernelscope.daemon.engine.memory.scores import best_score, memory_scores
from kernelscope.daemon.engine.views.lens_text import file_lens, kernel_lens
from kernelscope.daemon.engine.workflows.probe import best_passing
from kernelscope.daemon.engine.workspace.readme import parse_readme_file
from kernelscope.daemon.engine.workspace.workspace import Workspace
from tests.conftest import EXAMPLES, write_record

# (README example, record metric, v0, v1 (fastest), v2 (highest metric), v3 (latest))
CASES = {
    "bandwidth": ("layernorm", "bandwidth_gbps", 1000.0, 1800.0, 2400.0, 1100.0),
    "tflops": ("matmul", "tflops", 100.0, 180.0, 240.0, 110.0),
}
LATENCY = {0: 100.0, 1: 50.0, 2: 80.0, 3: 90.0}


def _workspace(tmp_path: Path, kind: str) -> Path:
    example, metric, *values = CASES[kind]
    ws = tmp_path / "ws"
    ws.mkdir()
    shutil.copy(EXAMPLES / example / "README.md", ws / "README.md")
    for number, value in enumerate(values):
        write_record(
            ws,
            number,
            masked=False,
            performance={"latency_us": LATENCY[number], metric: value},
            quality_gate={"result": "PASS"},
            git_commit_hash=f"{number:040x}",
        )
    write_record(ws, 4, masked=False, performance={"latency_us": 10.0}, quality_gate={"result": "FAIL"})
    return ws


@pytest.fixture(params=sorted(CASES))
def ws(request: pytest.FixtureRequest, tmp_path: Path) -> Path:
    return _workspace(tmp_path, request.param)


def test_the_score_vs_v0_is_the_latency_ratio_where_both_have_a_latency(ws: Path) -> None:
    readme = parse_readme_file(ws / "README.md")
    scores = {s.version: s.score for s in memory_scores(MemoryManager(ws).scan(), readme)}
    assert scores["v1"] == pytest.approx(2.0) and scores["v2"] == pytest.approx(1.25)  # not 1.8, 2.4


def test_the_lenses_name_the_same_best(ws: Path) -> None:
    readme = parse_readme_file(ws / "README.md")
    entries = MemoryManager(ws).scan()
    scores = memory_scores(entries, readme)
    assert best_score(scores).version == "v1"  # type: ignore[union-attr]
    assert kernel_lens(None, scores).startswith("best 2.00x")
    assert kernel_lens(None, scores).split(" | ")[0].endswith(" v1")
    assert " v1, " in file_lens(Workspace(ws))


def test_mask_half_keeps_and_the_probe_measures_against_the_same_best(ws: Path) -> None:
    readme = parse_readme_file(ws / "README.md")
    manager = MemoryManager(ws)
    dry = manager.mask_half(readme.primary_kind, seed=0, dry_run=True)
    assert dry.best_version == "v1" and dry.latest_passing_version == "v3"
    assert "v1" not in dry.candidates
    best = best_passing(manager.scan(), readme)
    assert best is not None and best.version == "v1"


def test_memory_list_shows_the_score_the_lenses_rank_by(ws: Path, cli, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """Both CLI paths (the fast one reads the README's stop conditions itself, pydantic-free)."""
    for fast in ("", "1"):
        if fast:
            monkeypatch.delenv("KERNELSCOPE_NO_FAST_PATH", raising=False)
        else:
            monkeypatch.setenv("KERNELSCOPE_NO_FAST_PATH", "1")
        done = cli("memory", "list", "--json", "-w", str(ws))
        assert done.exit_code == 0, done.stdout + done.stderr
        rows = {row["version"]: row["score"] for row in json.loads(done.stdout)}
        assert rows["v1"]["value"] == pytest.approx(2.0) and rows["v1"]["kind"] == "latency_ratio"
        assert rows["v2"]["value"] == pytest.approx(1.25)


def test_the_readme_metric_decides_where_a_record_has_no_latency(tmp_path: Path, cli) -> None:  # type: ignore[no-untyped-def]
    """Records of a tool that wrote GB/s (or TFLOP/s) but no latency: the README's target metric
    scores them, on both CLI paths alike (the fast one reads the README's stop conditions)."""
    ws = _workspace(tmp_path, "bandwidth")
    for number, gbps in ((0, 1000.0), (5, 3000.0)):
        write_record(
            ws, number, masked=False, performance={"bandwidth_gbps": gbps}, quality_gate={"result": "PASS"}
        )
    readme = parse_readme_file(ws / "README.md")
    scores = {s.version: s for s in memory_scores(MemoryManager(ws).scan(), readme)}
    assert scores["v5"].score == pytest.approx(3.0)  # v5 GB/s / v0 GB/s: no latency on either
    assert best_score(list(scores.values())).version == "v5"  # type: ignore[union-attr]


def test_the_effect_against_v0_is_the_versions_score(tmp_path: Path) -> None:
    """One number per fact: against v0 a version's effect is its score vs v0. For records
    scored by the README's metric (no latency) the effect was asked without the README's metric
    and came out empty (or, where latencies were recorded too, a second number beside the
    score): the history's effect and score are the same."""
    from kernelscope.daemon.engine.history.service import HistoryService

    ws = tmp_path / "ws"
    ws.mkdir()
    shutil.copy(EXAMPLES / "layernorm" / "README.md", ws / "README.md")
    for number, gbps in ((0, 1000.0), (1, 1800.0)):
        write_record(
            ws, number, masked=False, performance={"bandwidth_gbps": gbps}, quality_gate={"result": "PASS"}
        )
    effect = HistoryService(ws, use_store=False).history().versions["v1"].effect
    assert effect.score is not None and effect.score.value == pytest.approx(1.8)
    assert effect.vs_parent == effect.score


TIED_KERNEL = """import triton
import triton.language as tl


@triton.jit
def add_kernel(x_ptr, n, BLOCK_SIZE: tl.constexpr):
    pass


def run(x, n):
    add_kernel[(triton.cdiv(n, {block}),)](x, n, BLOCK_SIZE={block}, num_warps={warps})
"""


def test_the_tried_values_hint_names_the_best_a_tie_gives_the_later_version(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """v1 and v2 both launch with BLOCK_SIZE=1024 and score the same 2.00x vs v0. The one best
    rule (best_score) gives a tie to the later version, v2, as every lens does; the tried-values
    hint named v1, the earlier one, for the same value (it had a rule of its own)."""
    import subprocess

    from kernelscope.daemon.engine.history.service import HistoryService

    monkeypatch.setenv("KERNELSCOPE_HISTORY_CACHE", str(tmp_path / "history-cache"))
    ws = tmp_path / "ws"
    ws.mkdir()
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@example.com", "-c", "commit.gpgsign=false"]
    subprocess.run([*git, "init", "-q"], cwd=ws, check=True)
    for number, (block, warps, latency) in enumerate(((256, 4, 100.0), (1024, 4, 50.0), (1024, 8, 50.0))):
        (ws / "kernel.py").write_text(TIED_KERNEL.format(block=block, warps=warps))
        subprocess.run([*git, "add", "kernel.py"], cwd=ws, check=True)
        subprocess.run([*git, "commit", "-q", "-m", f"v{number}: kernel"], cwd=ws, check=True)
        head = subprocess.run(
            ["git", "rev-parse", "HEAD"], cwd=ws, capture_output=True, text=True, check=True
        )
        write_record(
            ws,
            number,
            masked=False,
            performance={"latency_us": latency},
            quality_gate={"result": "PASS"},
            git_commit_hash=head.stdout.strip(),
        )
    best = best_score(memory_scores(MemoryManager(ws).scan(), None))
    assert best is not None and (best.version, best.score) == ("v2", pytest.approx(2.0))
    service = HistoryService(ws, use_store=False)
    (hint,) = [h for h in service.tried((ws / "kernel.py").read_text()) if h.label == "BLOCK_SIZE"]
    (row,) = [v for v in hint.values if v.value == "1024"]
    assert (row.best_version, row.versions) == ("v2", ["v1", "v2"]), hint.hint
    assert "1024 2.00x v2 (+1)" in hint.hint, hint.hint
