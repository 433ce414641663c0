"""A candidate's configurations split into groups (one task each) and merged back: the merged
result is what one run gives (order, score, interval, verdict), and the runner's
`--config-group I/N` runs exactly its share."""

from __future__ import annotations

import random
import shutil
from pathlib import Path

import pytest

from kernelscope.daemon.engine.run.bench import BenchRequest, run_benchmark
from kernelscope.daemon.engine.run.config_groups import merge_results, split_request
from kernelscope.protocol.bench import BenchError, BenchResult, ConfigResult, ProblemFinding
from kernelscope.protocol.stats import bootstrap_geomean_ci, geomean
from tests.conftest import EXAMPLES


def _config(name: str, speedup: float, rng: random.Random) -> ConfigResult:
    base = [1.0 + rng.random() * 0.05 for _ in range(8)]
    cand = [b / speedup for b in base]
    return ConfigResult(
        name=name,
        passed=True,
        speedup=sorted(base)[4] / sorted(cand)[4],
        speedup_ci=(speedup * 0.99, speedup * 1.01),
        baseline_times_ms=base,
        candidate_times_ms=cand,
        speedup_vs_parent=1.1,
    )


def _part(configs: list[ConfigResult], **fields: object) -> BenchResult:
    data = {
        "status": "ok",
        "passed": all(c.passed for c in configs),
        "mode": "interpreter",
        "workspace": "/ws",
        "candidate": "/ws/kernel.py",
        "baseline": "reference",
        "entry_point": "kernel_fn",
        "configs": configs,
        "duration_s": 1.0,
        **fields,
    }
    return BenchResult.model_validate(data)


def test_merge_equals_one_run() -> None:
    rng = random.Random(7)
    configs = [_config(f"c{i}", 1.0 + i / 4, rng) for i in range(5)]
    samples = [(c.baseline_times_ms, c.candidate_times_ms) for c in configs]
    whole_score = geomean([c.speedup for c in configs])  # type: ignore[misc]
    whole_ci = bootstrap_geomean_ci(samples)  # type: ignore[arg-type]
    parts = [_part([c.model_copy() for c in configs[i::3]]) for i in range(3)]
    merged = merge_results(parts)
    assert [c.name for c in merged.configs] == [f"c{i}" for i in range(5)]
    assert merged.passed and merged.status == "ok"
    assert merged.score == pytest.approx(whole_score) and merged.score_ci == pytest.approx(whole_ci)
    assert merged.score_vs_parent == pytest.approx(1.1)
    assert all(c.baseline_times_ms is None and c.candidate_times_ms is None for c in merged.configs)
    assert merged.duration_s == pytest.approx(3.0)
    assert "measured as 3 configuration groups, one task each" in merged.messages


def test_merge_keeps_failures_and_empty_groups() -> None:
    rng = random.Random(1)
    good = [_config("a", 2.0, rng), _config("c", 2.0, rng)]
    bad = ConfigResult(
        name="b", passed=False, error=BenchError(kind="wrong_result", message="b: rel_err 0.5", config="b")
    )
    empty = _part([], messages=["configuration group 2/3 is empty"])
    merged = merge_results([_part([good[0], good[1]]), _part([bad], status="gate_failed"), empty])
    assert [c.name for c in merged.configs] == ["a", "b", "c"]
    assert not merged.passed and merged.status == "gate_failed" and merged.score is None
    assert merged.error is not None and merged.error.config == "b"
    assert not any(m.startswith("configuration group 2/3") for m in merged.messages)
    crashed = _part([], status="error", passed=False, error=BenchError(kind="crash", message="SIGSEGV"))
    whole = merge_results([_part(good), crashed])
    assert whole.status == "error" and whole.error.kind == "crash"  # type: ignore[union-attr]
    assert "configuration group 1/2 failed as a whole" in whole.messages


def test_merge_keeps_what_the_groups_share_and_any_groups_flag() -> None:
    """The problem's lint (found once per problem, by the first group) and the baseline version
    come through the merge; a group's "check before trusting" flag is the candidate's."""
    rng = random.Random(3)
    lint = ProblemFinding(rule="constant-output", message="the output is constant", config="c0")
    first = _part([_config("a", 1.5, rng)], problem_lint=[lint], baseline_version="v2")
    second = _part([_config("b", 12.0, rng)], suspicious="12.0x over the reference: check before trusting")
    merged = merge_results([first, second])
    assert merged.problem_lint == [lint] and merged.baseline_version == "v2"
    assert merged.suspicious == second.suspicious
    assert merged.score is not None and merged.duration_s == pytest.approx(2.0)


@pytest.mark.slow
def test_runner_groups_cover_the_run_exactly_once(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    shutil.copytree(EXAMPLES / "softmax", ws)
    request = BenchRequest(workspace=ws, mode="interpreter", seeds=1)
    whole = run_benchmark(request)
    groups = split_request(request, 3)
    assert len(groups) == 3 and split_request(request, 1) == [request]
    parts = [run_benchmark(group) for group in groups]
    assert all(c.candidate_times_ms for part in parts for c in part.configs)  # --keep-samples
    merged = merge_results(parts)
    assert whole.passed and merged.passed
    assert [c.name for c in merged.configs] == [c.name for c in whole.configs]
    assert merged.score is not None and merged.score_ci is not None
    assert any("is empty" in m for part in parts for m in part.messages)  # 2 configs, 3 groups
    bad = run_benchmark(BenchRequest(workspace=ws, mode="interpreter", extra_args=["--config-group", "3/2"]))
    assert bad.error is not None and bad.error.kind == "setup" and "I/N" in bad.error.message
