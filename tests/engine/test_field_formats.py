"""Today's atrex workspaces as its supervisor leaves them (tests/support/field_workspaces.py reproduces
what the upstream writers produce): the workspace kind and its targets, records with
`experience`, a pivot that carries the incumbent's numbers, the running episode, and the
observer rule (kernelscope never writes into a workspace a supervisor drives unless forced)."""

from __future__ import annotations

import hashlib
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from kernelscope.daemon.engine.memory import atrex_fields
from kernelscope.daemon.engine.memory.scores import memory_scores
from kernelscope.daemon.engine.views.lens_text import file_lens, kernel_lens, recorded_notes
from kernelscope.daemon.engine.workflows.restart import PartialRestart, RestartOptions
from kernelscope.daemon.engine.workspace import atrex
from kernelscope.daemon.engine.workspace.kinds import detect_kind
from kernelscope.daemon.engine.workspace.workspace import Workspace
from tests.conftest import EXAMPLES, FIXTURES
from tests.support.field_workspaces import build_atrex_sol_workspace, build_plain_git_workspace


@pytest.fixture(scope="module")
def atrex_template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("atrex")
    return build_atrex_sol_workspace(root / "kernel_opt_rmsnorm_h512_triton_b200")


@pytest.fixture
def atrex_ws(atrex_template: Path, tmp_path: Path) -> Path:
    """A private copy of the supervised workspace (its git repository included)."""
    ws = tmp_path / atrex_template.name
    shutil.copytree(atrex_template, ws, symlinks=True)
    return ws


def tree_state(ws: Path) -> dict[str, str]:
    """Every file of the work tree (ignored ones included, .git excluded) by content hash."""
    return {
        str(p.relative_to(ws)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(ws.rglob("*"))
        if p.is_file() and ".git" not in p.relative_to(ws).parts
    }


def git_status(ws: Path) -> str:
    return subprocess.run(
        ["git", "status", "--porcelain", "--ignored"], cwd=ws, capture_output=True, text=True, check=True
    ).stdout


def kernelscope(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "kernelscope.daemon.cli.main", *args],
        capture_output=True,
        text=True,
        timeout=600,
        cwd=cwd,
    )


# -- kinds and targets ---------------------------------------------------------------------


def test_workspace_json_shows_kind_and_targets(atrex_ws: Path, cli) -> None:  # type: ignore[no-untyped-def]
    result = cli("workspace", "-w", str(atrex_ws), "--json")
    assert result.exit_code == 0, result.stdout
    summary = result.json()
    profile = summary["profile"]
    assert summary["kind"] == profile["kind"] == "sol-execbench"
    assert profile["target_platform"] == "B200" and profile["framework"] == "Triton"
    assert profile["goal"] == "Minimize the GEOMEAN of per-workload kernel latency"
    assert profile["workload_count"] == 3
    assert profile["targets_digest"] != hashlib.sha256(b"").hexdigest()
    assert {"definition.json", "workload.jsonl", "config.json"} <= set(profile["digest_sources"])
    assert (
        profile["supervisor"]["name"] == "atrex long-horizon supervisor" and profile["supervisor"]["running"]
    )
    assert any("memory/live.json" in item for item in profile["supervisor"]["evidence"])


def test_targets_digest_covers_ground_truth_and_readme(atrex_ws: Path) -> None:
    ws = Workspace(atrex_ws)
    before = ws.profile().targets_digest
    workloads = atrex_ws / "workload.jsonl"
    original = workloads.read_text()
    workloads.write_text(original.replace('"batch_size": 33', '"batch_size": 34'))
    assert original != workloads.read_text()
    assert ws.profile().targets_digest != before
    workloads.write_text(original)
    assert ws.profile().targets_digest == before
    readme = atrex_ws / "README.md"
    readme.write_text(readme.read_text().replace("`B200`", "`H100`"))
    assert ws.profile().targets_digest != before


def test_digest_of_nothing_is_not_the_empty_hash(tmp_path: Path) -> None:
    profile = Workspace(tmp_path).profile()
    assert profile.digest_sources == [] and profile.targets_digest != hashlib.sha256(b"").hexdigest()


def test_kinds_from_the_files_present(tmp_path: Path, atrex_ws: Path) -> None:
    assert detect_kind(atrex_ws, Workspace(atrex_ws).readme()) == "sol-execbench"
    for example in ("vector_add", "matmul"):
        assert detect_kind(EXAMPLES / example, Workspace(EXAMPLES / example).readme()) == "native"
    kernelbench = tmp_path / "kb"
    kernelbench.mkdir()
    shutil.copy(FIXTURES / "kernelbench" / "19_ReLU.py", kernelbench / "reference.py")
    assert detect_kind(kernelbench, None) == "kernelbench"
    bench = tmp_path / "atrex_bench"
    bench.mkdir()
    (bench / "shapes.json").write_text("[]")
    (bench / "input.py").write_text("")
    assert detect_kind(bench, None) == "atrex-bench"
    seed = tmp_path / "seed"
    (seed / "memory").mkdir(parents=True)
    shutil.copy(EXAMPLES / "vector_add" / "README.md", seed / "README.md")
    shutil.copy(EXAMPLES / "vector_add" / "kernel.py", seed / "kernel.py")
    assert detect_kind(seed, Workspace(seed).readme()) == "atrex-v0.1"


def test_config_section_targets_are_read(atrex_ws: Path) -> None:
    readme = Workspace(atrex_ws).readme()
    assert readme.target.platform == "B200" and readme.target.framework == "Triton"
    assert readme.workload_count == 3 and readme.goal
    assert any("goal but no measurable stop condition" in w for w in readme.warnings)


# -- what the agents recorded -------------------------------------------------------------


def test_pivot_is_labelled_and_its_carried_numbers_are_not_measurements(atrex_ws: Path) -> None:
    ws = Workspace(atrex_ws)
    entries = ws.memory.scan()
    assert [e.version for e in entries] == ["v0", "v1", "v2", "v3"]  # live.json, long_horizon_*: not versions
    v3 = entries[3].record
    assert v3 is not None
    outcome = atrex_fields.record_outcome(v3)
    assert outcome.label == "pivot" and outcome.carried_from == "v2" and not outcome.measured
    scores = {s.version: s for s in memory_scores(entries, ws.readme())}
    assert scores["v3"].score is None and scores["v3"].label == "pivot"
    lens = kernel_lens(None, list(scores.values()))
    assert lens.startswith("best 3.46x v2 | latest v3 pivot, kept v2 | 4 runs, 0 failed, 1 pivot"), lens
    rows = {row.version: row for row in ws.memory.summaries()}
    assert rows["v3"].latency_us is None and rows["v3"].carried_from == "v2" and rows["v3"].outcome == "pivot"
    assert rows["v2"].experiments == 3 and rows["v2"].open_directions == 2
    assert rows["v2"].speedup_vs_reference == pytest.approx(3.476, rel=1e-3)


def test_file_lens_shows_goal_progress_and_the_running_episode(atrex_ws: Path) -> None:
    ws = Workspace(atrex_ws)
    text = file_lens(ws)
    assert (
        "goal: Minimize the GEOMEAN of per-workload kernel latency | best 2.83 us v2, 3.48x vs reference"
        in text
    )
    assert "running: episode 4 -> v4 exploring, 2 experiments, latest: num_warps=2 for BLOCK_M=4" in text
    assert "next v4 (the supervisor's; kernelscope observes)" in text
    live = json.loads((atrex_ws / "memory" / "live.json").read_text())
    live["phase"] = "recorded"
    (atrex_ws / "memory" / "live.json").write_text(json.dumps(live))
    assert "running:" not in file_lens(ws)


def test_hover_notes_list_experiments_directions_outcome_and_workloads(atrex_ws: Path) -> None:
    notes = "\n".join(recorded_notes(atrex_ws, Workspace(atrex_ws).memory.scan()))
    assert "**running now**: episode 4 -> v4 exploring" in notes
    assert "**v3** FAIL, pivot (numbers carried from v2, not measured)" in notes
    assert "- 2. split-row reduction [revert]: slower than the incumbent on every workload" in notes
    assert "- per workload (carried): 0d3c5b8e 2.7 us" in notes
    assert "- per workload (measured): 0d3c5b8e 2.7 us" in notes  # v2's own measurement
    assert "- episode 3 pivot: Split-row and persistent-grid reductions" in notes
    assert "- open directions: Reuse the weight tile across row blocks" in notes


def test_one_experiment_is_an_experiment_not_experiments(atrex_ws: Path) -> None:
    """The running episode with one experiment read `1 experiments` in the file lens, and a
    record with nine experiments `… 1 more experiments` in hover (engine.counted, one rule)."""
    live_path = atrex_ws / "memory" / "live.json"
    live = json.loads(live_path.read_text())
    live["experiment_count"] = 1
    live_path.write_text(json.dumps(live))
    text = file_lens(Workspace(atrex_ws))
    assert "running: episode 4 -> v4 exploring, 1 experiment, latest:" in text, text
    v2 = atrex_ws / "memory" / "v2.json"
    record = json.loads(v2.read_text())
    record["experience"]["experiments"] = [{"index": n, "name": f"try {n}"} for n in range(1, 10)]
    v2.write_text(json.dumps(record))
    notes = recorded_notes(atrex_ws, Workspace(atrex_ws).memory.scan())
    assert "- … 1 more experiment" in notes, notes


def test_the_file_lens_names_an_unreadable_memory_file(tmp_path: Path) -> None:
    """A corrupt record drops out of every figure (the best, the masked count): before, the
    editor said nothing, so "0 masked" read as data when the masked record was the corrupt one."""
    ws = tmp_path / "kernel_opt_vector_add"
    shutil.copytree(EXAMPLES / "vector_add", ws)
    workspace = Workspace(ws)
    assert "unreadable" not in file_lens(workspace)
    (ws / "memory" / "v2.json").write_text('{"version": "v2", "masked": tru')
    text = file_lens(workspace)
    assert text.endswith("| memory/v2.json cannot be read (`kernelscope memory list` says why)"), text


def test_lenses_never_name_a_masked_version_best_or_latest(tmp_path: Path) -> None:
    """Masking v4 (the best and latest) hides it from the active memory, and blame hides its
    numbers: the lenses name v1 best and the failed v3 latest, with v1's numbers, not v4's."""
    ws = tmp_path / "kernel_opt_vector_add"
    shutil.copytree(EXAMPLES / "vector_add", ws)
    workspace = Workspace(ws)
    before = kernel_lens(None, memory_scores(workspace.memory.scan(), workspace.readme()))
    assert before.startswith("best 1.22x v4 | latest 1.22x v4"), before
    workspace.memory.set_masked(["v4"], masked=True)
    entries = workspace.memory.scan()
    lens = kernel_lens(None, memory_scores(entries, workspace.readme()))
    assert lens.startswith("best 1.16x v1 | latest FAILED v3 | 4 runs (+1 masked)"), lens
    text = file_lens(workspace, entries)
    assert "best 3842 GB/s v1" in text and "v4" not in text.split("| next")[0], text
    # the store's digest is read through the masks: tests/engine/test_masked_counts.py


def test_the_goal_lens_never_names_a_masked_version_best(atrex_ws: Path) -> None:
    """A README with a goal (today's atrex) instead of a stop condition: the file lens's best
    left masked versions in, so after a restart it named the hidden v2 (2.83 us)."""
    path = atrex_ws / "memory" / "v2.json"
    record = json.loads(path.read_text())
    path.write_text(json.dumps({**record, "masked": True}, indent=2))  # an agent's write
    text = file_lens(Workspace(atrex_ws))
    assert text.startswith("goal: Minimize the GEOMEAN of per-workload kernel latency | best "), text
    assert "v2" not in text.split(" | ")[1], text


def test_hover_names_workloads_whole_unless_they_are_uuids(tmp_path: Path) -> None:
    """Per-workload latencies: a workload.jsonl uuid is shown by its first 8 characters, a
    readable name whole (`n=16777216`, not `n=167772`), a long one cut with an ellipsis."""
    ws = tmp_path / "kernel_opt_vector_add"
    shutil.copytree(EXAMPLES / "vector_add", ws)
    notes = "\n".join(recorded_notes(ws, Workspace(ws).memory.scan()))
    assert "- per workload (measured): n=16777216 " in notes, notes
    assert atrex_fields.workload_label("0d3c5b8e-2a41-4f7e-9c13-5b6d8e0f1a27") == "0d3c5b8e"
    assert atrex_fields.workload_label("M=4096,N=4096,K=4096,dtype=bf16") == "M=4096,N=4096,K=4096,dt…"


def test_memory_summary_cli_columns(atrex_ws: Path) -> None:
    result = kernelscope("memory", "summary", "-w", str(atrex_ws), "--json")
    assert result.returncode == 0, result.stderr
    rows = {row["version"]: row for row in json.loads(result.stdout)["versions"]}
    assert rows["v3"]["outcome"] == "pivot" and rows["v3"]["carried_from"] == "v2"
    table = subprocess.run(
        [sys.executable, "-m", "kernelscope.daemon.cli.main", "memory", "summary", "-w", str(atrex_ws)],
        capture_output=True,
        text=True,
        env={"COLUMNS": "220", "PATH": "/usr/bin:/bin"},
    )
    assert "(from v2)" in table.stdout and "pivot" in table.stdout, table.stdout + table.stderr


# -- the observer rule --------------------------------------------------------------------


@pytest.mark.parametrize(
    "args,action",
    [
        (["iterate", "--mode", "interpreter", "--seeds", "1"], "run an iteration"),
        (["memory", "mask-half"], "mask half of the memory"),
        (["memory", "unmask", "v1"], "mask or unmask"),
        (["memory", "mask", "v1"], "mask or unmask"),
        (["restart", "--agent", "true"], "restart"),
    ],
)
def test_writes_refuse_in_a_supervised_workspace(atrex_ws: Path, args: list[str], action: str) -> None:
    before, status, head = tree_state(atrex_ws), git_status(atrex_ws), _head(atrex_ws)
    result = kernelscope(*args, "-w", str(atrex_ws))
    assert result.returncode == 2, (result.stdout, result.stderr)
    message = " ".join(result.stderr.split())
    assert f"refusing to {action}" in message and "atrex long-horizon supervisor" in message
    assert "--force" in message and "nothing was changed" in message
    assert tree_state(atrex_ws) == before and git_status(atrex_ws) == status and _head(atrex_ws) == head


def test_dry_run_and_reads_still_work_in_a_supervised_workspace(atrex_ws: Path) -> None:
    before = tree_state(atrex_ws)
    for args in (
        ["memory", "mask-half", "--dry-run"],
        ["memory", "list"],
        ["workspace"],
        ["memory", "latest"],
    ):
        result = kernelscope(*args, "-w", str(atrex_ws))
        assert result.returncode == 0, (args, result.stderr)
    assert tree_state(atrex_ws) == before


def test_forced_iteration_never_takes_the_supervisors_next_version(atrex_ws: Path, tmp_path: Path) -> None:
    result = kernelscope(
        "iterate",
        "-w",
        str(atrex_ws),
        "--mode",
        "interpreter",
        "--seeds",
        "1",
        "--force",
        "-a",
        "tuning",
        "-d",
        "a forced run beside the supervisor",
        "--db",
        str(tmp_path / "exp.sqlite"),
        "--json",
    )
    assert result.returncode in (0, 3), result.stderr
    iteration = json.loads(result.stdout)
    assert iteration["version"] == "v5"  # v4 belongs to the running episode (memory/live.json)
    assert not (atrex_ws / "memory" / "v4.json").exists()


def test_plain_git_workspace_is_not_supervised(tmp_path: Path) -> None:
    ws = build_plain_git_workspace(tmp_path / "plain")
    assert Workspace(ws).profile().supervisor is None
    assert atrex.refuse_if_supervised(ws, "write", force=False) is None


def test_restart_brief_describes_the_kind_and_the_recorded_experiments(
    atrex_ws: Path, tmp_path: Path
) -> None:
    agent = f"{sys.executable} -c \"print('no-op')\""
    report = PartialRestart(
        atrex_ws, RestartOptions(agent=agent, seed=1, force=True, brief_dir=tmp_path)
    ).run()
    brief = Path(report.brief_path).read_text()
    assert (
        "Continue optimizing this SOL-ExecBench op" in brief and "gpu-kernel-profile-optimizer" not in brief
    )
    assert "- workspace kind: sol-execbench" in brief and "- platform: B200" in brief
    assert "- goal: Minimize the GEOMEAN of per-workload kernel latency" in brief
    assert "## Experiments the agents recorded" in brief and "split-row reduction [revert]" in brief
    assert "v3: long_horizon_episode" in brief and "[pivot (numbers carried from v2, not measured)]" in brief
    assert report.next_version == "v4" or report.next_version == "v5"


def test_restart_notices_an_edited_workload_file(atrex_ws: Path, tmp_path: Path) -> None:
    edit = (
        "import os; p = os.path.join(os.environ['KERNELSCOPE_WORKSPACE'], 'workload.jsonl'); "
        "open(p, 'a').write('\\n')"
    )
    agent = f'{sys.executable} -c "{edit}"'
    report = PartialRestart(
        atrex_ws, RestartOptions(agent=agent, seed=1, force=True, brief_dir=tmp_path)
    ).run()
    assert any(v.startswith("targets changed") for v in report.violations), report.violations


def _head(ws: Path) -> str:
    return subprocess.run(["git", "rev-parse", "HEAD"], cwd=ws, capture_output=True, text=True).stdout
