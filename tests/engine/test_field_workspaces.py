"""Sanity checks of the atrex field-workspace fixtures (tests/support/field_workspaces.py).

The fixtures must look exactly like what atrex-kernel-agent's supervisor leaves behind: a clean
git work tree, JSON that parses and matches the writers' types, commit hashes that resolve, and a
``test_kernel.py`` that prints upstream's ``RESULT_JSON`` line. Upstream's
``reference/v_iteration.schema.json`` is a fill-in template, not a JSON Schema, so records are
validated against the schemas in field_workspaces.py, which encode upstream's writers.
"""

from __future__ import annotations

import ast
import json
import os
import subprocess
import sys
from pathlib import Path

import jsonschema
import pytest

from tests.support import field_workspaces as fw


def _git(ws: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=ws, capture_output=True, text=True, check=True).stdout.strip()


def _load(path: Path) -> object:
    return json.loads(path.read_text(encoding="utf-8"))


@pytest.fixture(scope="module", params=[(True, True), (False, False)], ids=["running", "idle-no-orch"])
def sol_ws(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> tuple[Path, bool, bool]:
    live, orchestrator = request.param
    root = tmp_path_factory.mktemp("sol")
    ws = fw.build_atrex_sol_workspace(root / fw.WORKSPACE_NAME, live=live, orchestrator=orchestrator)
    return ws, live, orchestrator


def test_sol_workspace_is_a_clean_git_repo(sol_ws: tuple[Path, bool, bool]) -> None:
    ws, _, _ = sol_ws
    assert _git(ws, "status", "--porcelain", "--untracked-files=all") == ""
    for rule in fw.INFO_EXCLUDE_RULES:
        assert rule in (ws / ".git" / "info" / "exclude").read_text().splitlines()


def test_every_json_file_parses(sol_ws: tuple[Path, bool, bool]) -> None:
    ws, _, _ = sol_ws
    files = [p for p in ws.rglob("*") if p.is_file() and ".git" not in p.relative_to(ws).parts[:1]]
    parsed = 0
    for path in files:
        if path.suffix == ".json":
            _load(path)
            parsed += 1
        elif path.suffix == ".jsonl":
            for line in path.read_text(encoding="utf-8").splitlines():
                json.loads(line)
            parsed += 1
    assert parsed >= 25


def test_memory_records_match_upstream_writers(sol_ws: tuple[Path, bool, bool]) -> None:
    ws, _, _ = sol_ws
    records = {n: _load(ws / "memory" / f"v{n}.json") for n in range(4)}
    for record in records.values():
        jsonschema.validate(record, fw.MEMORY_RECORD_SCHEMA)
    for n in (1, 2):
        record = records[n]
        assert set(record["performance"]["latency_us_by_shape"]) == set(fw.WORKLOAD_IDS)
        assert record["experience"]["experiment_count"] == len(record["experience"]["experiments"])
        assert record["long_horizon"]["status"] == "candidate_ready"
        assert record["performance"]["measurement_subject"] == "candidate"
    latencies = [records[n]["performance"]["latency_us"] for n in range(3)]
    assert latencies == sorted(latencies, reverse=True)  # v0 > v1 > v2: improving
    for n in (1, 2):
        jsonschema.validate(_load(ws / "memory" / f"long_horizon_e000{n}.json"), fw.EVIDENCE_SCHEMA)
    assert not (ws / "memory" / "long_horizon_e0003.json").exists()  # only promoted episodes


def test_pivot_record_carries_the_incumbent(sol_ws: tuple[Path, bool, bool]) -> None:
    ws, _, _ = sol_ws
    v2, v3 = _load(ws / "memory" / "v2.json"), _load(ws / "memory" / "v3.json")
    assert v3["git_commit_hash"] is None
    assert v3["quality_gate"]["result"] == "FAIL" and v3["quality_gate"]["failure_reason"]
    assert v3["long_horizon"] == {
        "status": "pivot",
        "candidate_commit": None,
        "mode": "full",
        "fast_trials": None,
    }
    perf = v3["performance"]
    assert perf["carried_from_version"] == "v2"
    assert perf["measurement_subject"] == "incumbent"
    assert perf["measurement_source"] == "canonical_incumbent_carry_forward"
    assert perf["latency_us_by_shape"] == v2["performance"]["latency_us_by_shape"]
    assert perf["latency_us"] == v2["performance"]["latency_us_geomean"]


def test_git_history_and_commit_hashes(sol_ws: tuple[Path, bool, bool]) -> None:
    ws, _, _ = sol_ws
    subjects = _git(ws, "log", "--first-parent", "--reverse", "--format=%s").splitlines()
    subject = fw.SUPERVISOR_COMMIT_SUBJECTS
    assert subjects == [
        subject["v0_source_sol"],
        subject["v0_measurement"],
        subject["promotion"].format(episode=1),
        subject["promotion"].format(episode=2),
        subject["outcome"].format(version=3, episode=3, status="pivot"),
    ]
    assert subjects[-1] == "v3: long-horizon episode 3 pivot"
    main_line = _git(ws, "rev-list", "--first-parent", "--reverse", "HEAD").splitlines()
    v0 = _load(ws / "memory" / "v0.json")
    assert v0["git_commit_hash"] == main_line[0]
    for n in (1, 2):
        cited = _load(ws / "memory" / f"v{n}.json")["git_commit_hash"]
        branch = next(
            b
            for b in _git(ws, "branch", "--format=%(refname:short)").splitlines()
            if b.startswith(f"atrex/long-e000{n}-")
        )
        assert _git(ws, "rev-parse", branch) == cited  # the candidate commit on the episode branch
        assert _git(ws, "rev-parse", f"{cited}:kernel.py") == _git(
            ws, "rev-parse", f"{main_line[n + 1]}:kernel.py"
        )
    for n in range(4):  # canonical memory is committed as written
        assert json.loads(_git(ws, "show", f"HEAD:memory/v{n}.json")) == _load(ws / "memory" / f"v{n}.json")
    assert _git(ws, "rev-parse", "HEAD:kernel.py") == _git(ws, "rev-parse", f"{main_line[3]}:kernel.py")


def test_runtime_state(sol_ws: tuple[Path, bool, bool]) -> None:
    ws, live, orchestrator = sol_ws
    runtime = ws / fw.RUNTIME_DIR
    state = _load(runtime / "state.json")
    jsonschema.validate(state, fw.STATE_SCHEMA)
    assert (state["episodes"], state["accepted"], state["pivoted"]) == (3, 2, 1)
    for n in (1, 2, 3):
        episode = runtime / "episodes" / f"e000{n}"
        jsonschema.validate(_load(episode / "attempt.json"), fw.ATTEMPT_SCHEMA)
        journal = _load(episode / "episode_runtime" / "journal.json")
        jsonschema.validate(journal, fw.JOURNAL_SCHEMA)
        assert journal["state"] in fw.TERMINAL_STATES and journal["outcome"]["summary"]
        for line in (episode / "episode_runtime" / "evaluations.jsonl").read_text().splitlines():
            jsonschema.validate(json.loads(line), fw.EVALUATION_LINE_SCHEMA)
    live_view = _load(ws / "memory" / "live.json")
    jsonschema.validate(live_view, fw.LIVE_SCHEMA)
    assert (ws / fw.STALL_STATE_FILE).exists() is orchestrator
    assert (ws / fw.MODE_STATE_FILE).exists() is orchestrator
    if orchestrator:
        jsonschema.validate(_load(ws / fw.STALL_STATE_FILE), fw.ORCHESTRATOR_STATE_SCHEMA)
    if not live:
        assert not (runtime / "active_episode.json").exists()
        assert (live_view["phase"], live_view["canonical_memory"], live_view["episode"]) == (
            "recorded",
            "memory/v3.json",
            3,
        )
        return
    active = _load(runtime / "active_episode.json")
    jsonschema.validate(active, fw.ACTIVE_EPISODE_SCHEMA)
    assert active["memory_version"] == 4 and active["base_commit"] == _git(ws, "rev-parse", "HEAD")
    worktree = Path(active["worktree"])
    assert str(worktree) in _git(ws, "worktree", "list", "--porcelain")
    journal = _load(worktree / fw.RUNTIME_DIR / "journal.json")
    jsonschema.validate(journal, fw.JOURNAL_SCHEMA)
    assert journal["state"] == "in_progress" and journal["episode_branch"] == active["episode_branch"]
    assert live_view["phase"] == "exploring" and live_view["version"] == "v4"
    assert live_view["experiment_count"] == len(journal["experiments"])
    assert live_view["latest_experiment"] == journal["experiments"][-1]
    assert _git(worktree, "status", "--porcelain") == "M kernel.py"


def test_readme_and_ground_truth(sol_ws: tuple[Path, bool, bool]) -> None:
    ws, _, _ = sol_ws
    lines = (ws / "README.md").read_text(encoding="utf-8").splitlines()
    for line in (
        "## Goal",
        "## Config",
        "- Target platform: `B200`",
        "## Ground truth (immutable)",
        "## Workflow",
    ):
        assert line in lines
    assert any(line.startswith("- Target framework: `Triton`") for line in lines)
    assert "- Workloads (shape set): 3 in `workload.jsonl` (ground truth — do NOT edit)" in lines
    workloads = [json.loads(x) for x in (ws / "workload.jsonl").read_text().splitlines()]
    assert [w["uuid"] for w in workloads] == list(fw.WORKLOAD_IDS)
    definition = _load(ws / "definition.json")
    run = next(
        node
        for node in ast.parse((ws / "kernel.py").read_text()).body
        if isinstance(node, ast.FunctionDef) and node.name == "run"
    )
    assert [a.arg for a in run.args.args] == [*definition["inputs"], *definition["outputs"]]
    assert _load(ws / "solution.json")["spec"]["entry_point"] == "kernel.py::run"


def test_test_kernel_prints_result_json(sol_ws: tuple[Path, bool, bool]) -> None:
    ws, live, _ = sol_ws
    if not live:
        pytest.skip("one run is enough; the kernel is the same in both builds")
    env = {**os.environ, "TRITON_INTERPRET": "1"}
    done = subprocess.run(
        [sys.executable, "test_kernel.py", "--no-memory"],
        cwd=ws,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    line = [x for x in done.stdout.splitlines() if x.startswith(fw.RESULT_PREFIX)][-1]
    result = json.loads(line[len(fw.RESULT_PREFIX) :])
    jsonschema.validate(result, fw.RESULT_JSON_SCHEMA)
    assert set(result) == fw.RESULT_KEYS
    assert result["all_pass"] and result["passed"] == result["total"] == 3
    assert set(result["latency_us_by_shape"]) == set(fw.WORKLOAD_IDS)
    assert _git(ws, "status", "--porcelain", "--untracked-files=all") == ""


def test_write_atrex_memory_into_plain_directory(tmp_path: Path) -> None:
    fw.write_atrex_memory(tmp_path, live=True, orchestrator=False)
    for n in range(4):
        jsonschema.validate(_load(tmp_path / "memory" / f"v{n}.json"), fw.MEMORY_RECORD_SCHEMA)
    jsonschema.validate(_load(tmp_path / "memory" / "live.json"), fw.LIVE_SCHEMA)
    jsonschema.validate(_load(tmp_path / fw.RUNTIME_DIR / "state.json"), fw.STATE_SCHEMA)
    assert not (tmp_path / fw.STALL_STATE_FILE).exists()


def test_write_atrex_memory_cites_the_repository_head(tmp_path: Path) -> None:
    ws = fw.build_plain_git_workspace(tmp_path / "ws")
    fw.write_atrex_memory(ws, live=False)
    head = _git(ws, "rev-parse", "HEAD")
    assert _load(ws / "memory" / "v1.json")["git_commit_hash"] == head
    assert _load(ws / "memory" / "v3.json")["git_commit_hash"] is None


def test_plain_git_workspace_has_no_supervisor_state(tmp_path: Path) -> None:
    ws = fw.build_plain_git_workspace(tmp_path / "plain")
    assert _git(ws, "status", "--porcelain", "--untracked-files=all") == ""
    for name in (fw.RUNTIME_DIR, fw.STALL_STATE_FILE, fw.MODE_STATE_FILE, "memory/live.json"):
        assert not (ws / name).exists()
    assert not [
        b for b in _git(ws, "branch", "--format=%(refname:short)").splitlines() if b.startswith("atrex/")
    ]
    assert "/.atrex_long_horizon/" not in (ws / ".git" / "info" / "exclude").read_text()
    for n in range(3):
        record = _load(ws / "memory" / f"v{n}.json")
        jsonschema.validate(record, fw.MEMORY_RECORD_SCHEMA)
        assert _git(ws, "cat-file", "-t", record["git_commit_hash"]) == "commit"
