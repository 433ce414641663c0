"""History hints on workspaces other tools wrote: plain git commits with atrex-style messages,
and today's atrex SOL-ExecBench workspace (episode branches, squash-merged promotions, a pivot
recorded without a commit, evaluations.jsonl verdicts), both from tests/support/field_workspaces.py."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from kernelscope.daemon.engine.history.service import HistoryService
from tests.support.field_workspaces import (
    E1_TRIAL_KERNELS,
    KERNEL_E2_CHECKPOINT,
    KERNEL_E3_CHECKPOINT,
    KERNEL_V1,
    KERNEL_V2,
    WORKSPACE_NAME,
    build_atrex_sol_workspace,
    build_plain_git_workspace,
)

BLOCK_M_LINE = 6  # `BLOCK_M = 4` in KERNEL_V2 (0-based)


@pytest.fixture(autouse=True)
def _history_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Analyses cached on disk go to the test's folder, not the user's ~/.cache."""
    monkeypatch.setenv("KERNELSCOPE_HISTORY_CACHE", str(tmp_path / "history-cache"))


def _record(ws: Path, version: str) -> dict:
    return json.loads((ws / "memory" / f"{version}.json").read_text())


def _line(text: str, needle: str) -> int:
    return next(i for i, line in enumerate(text.splitlines()) if needle in line)


@pytest.fixture(scope="module")
def sol(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_atrex_sol_workspace(tmp_path_factory.mktemp("sol") / WORKSPACE_NAME)


@pytest.fixture(scope="module")
def plain(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_plain_git_workspace(tmp_path_factory.mktemp("plain") / "kernel_opt_plain")


def _service(ws: Path) -> HistoryService:
    return HistoryService(ws, db_url=str(ws.parent / "exp.sqlite"))


def test_plain_git_blame(plain: Path) -> None:
    lines = _service(plain).blame()
    v1, v2 = _record(plain, "v1")["performance"], _record(plain, "v2")["performance"]
    ratio = v1["latency_us"] / v2["latency_us"]
    v2_text = (
        f"introduced in v2: hand-written Triton kernel, latency ratio {ratio:.2f}x vs v1 · "
        f"{v2['speedup_vs_ref_geomean']:.2f}x vs reference (geomean), PASS"
    )
    assert lines[BLOCK_M_LINE].hint == v2_text and lines[BLOCK_M_LINE].version == "v2"
    assert lines[_line(KERNEL_V2, "import torch")].hint.startswith("introduced in v0: reference wrapper, ")
    v1_line = lines[_line(KERNEL_V2, "EPS = 1e-6")]
    assert v1_line.version == "v1" and v1_line.commit_subject == "v1: kernel candidate"
    assert v1_line.hint.startswith("introduced in v1: hand-written Triton kernel, latency ratio ")


def test_plain_git_commit_without_a_record_degrades_to_git(plain: Path, tmp_path: Path) -> None:
    copy = tmp_path / "plain"
    subprocess.run(["git", "clone", "-q", str(plain), str(copy)], check=True)
    (copy / "kernel.py").write_text(KERNEL_V2.replace("BLOCK_M = 4", "BLOCK_M = 2"))
    identity = ["-c", "user.name=a", "-c", "user.email=a@example.invalid"]
    subprocess.run(["git", *identity, "commit", "-qam", "experiment: two rows"], cwd=copy, check=True)
    line = _service(copy).blame()[BLOCK_M_LINE]
    head = subprocess.run(
        ["git", "rev-parse", "HEAD"], cwd=copy, capture_output=True, text=True
    ).stdout.strip()
    assert line.origin == "commit" and line.version is None
    assert line.hint == f'last changed in {head[:8]} "experiment: two rows" (no memory record)'
    tried = {h.label: h for h in _service(copy).tried()}
    v2 = _record(plain, "v0")["performance"]["latency_us"] / _record(plain, "v2")["performance"]["latency_us"]
    assert tried["BLOCK_M"].hint == f"tried (latency ratio vs v0): 4 {v2:.2f}x v2 · 2 new"


def test_sol_blame_uses_episode_promotions_and_atrex_numbers(sol: Path) -> None:
    lines = _service(sol).blame()
    text = (sol / "kernel.py").read_text()
    assert text == KERNEL_V2
    v2 = _record(sol, "v2")["performance"]
    line = lines[BLOCK_M_LINE]
    assert (
        line.version == "v2" and line.commit_subject == "episode 2: promote verified long-horizon candidate"
    )
    assert line.hint == (
        "introduced in v2: Four rows per program as one 2-D tile cut the geomean by ~1…, "
        f"latency {-v2['authoritative_improvement_pct']:+.1f}% vs v1 · {v2['speedup_vs_ref_geomean']:.2f}x vs reference (geomean), PASS"
    )
    v1 = _record(sol, "v1")["performance"]
    v1_line = lines[_line(text, "import triton")]
    assert v1_line.version == "v1"
    # against v0 the effect is the version's one score (the latency ratio atrex's -66 % is)
    shown = re.search(
        r"latency ratio ([0-9.]+)x vs v0 · ([0-9.]+)x vs reference \(geomean\), PASS$", v1_line.hint
    )
    assert shown, v1_line.hint
    assert abs(float(shown.group(1)) - 1 / (1 - v1["authoritative_improvement_pct"] / 100)) < 0.01
    assert shown.group(2) == f"{v1['speedup_vs_ref_geomean']:.2f}"
    assert lines[_line(text, "import torch")].version == "v0"
    assert lines[_line(text, "import torch")].commit_subject == "V0: baseline (SOL reference wrapper)"
    assert all(b.origin == "version" for b in lines)
    history = _service(sol).history()
    assert history.versions["v3"].effect.text == "pivot (numbers carried from v2, not measured)"
    assert history.versions["v3"].effect.score is None  # carried numbers are never a measurement


def test_sol_tried_values_include_the_episode_checkpoint(sol: Path) -> None:
    (hint,) = _service(sol).tried()
    assert (hint.label, hint.line, hint.character) == ("BLOCK_M", BLOCK_M_LINE, len("BLOCK_M = "))
    base = _record(sol, "v0")["performance"]["latency_us"]
    v2 = base / _record(sol, "v2")["performance"]["latency_us"]
    evaluations = (sol / ".atrex_long_horizon/episodes/e0002/episode_runtime/evaluations.jsonl").read_text()
    checkpoint = json.loads(evaluations.splitlines()[0])["result"]["latency_us_geomean"]
    assert (
        hint.hint
        == f"tried (latency ratio vs v0): 4 {v2:.2f}x v2 (1 pivot) · 8 {base / checkpoint:.2f}x v2 checkpoint"
    )


def test_an_episode_trial_without_a_positive_latency_has_no_score(sol: Path, tmp_path: Path) -> None:
    """A RESULT_JSON row whose geomean is not a positive latency (here negated) scores as a
    record would (memory/core.py score_parts: no score): the trial's own copy of the rule
    divided by it and showed a negative latency ratio, `8 -3.31x v2 checkpoint`."""
    clone = _clone(sol, tmp_path / WORKSPACE_NAME)
    path = clone / ".atrex_long_horizon/episodes/e0002/episode_runtime/evaluations.jsonl"
    rows = [json.loads(line) for line in path.read_text().splitlines()]
    rows[0]["result"]["latency_us_geomean"] = -rows[0]["result"]["latency_us_geomean"]
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    history = _service(clone).history()
    (checkpoint,) = [t for t in history.tried_kernels if t.short_label == "v2 checkpoint"]
    assert checkpoint.passed and checkpoint.score is None, checkpoint.score
    (hint,) = _service(clone).tried()
    assert "x v2 checkpoint" not in hint.hint, hint.hint


@pytest.mark.parametrize(
    "source,severity,verdict",
    [
        (KERNEL_V2, "hint", "identical to v2 (committed at HEAD): latency ratio "),
        (KERNEL_V1, "information", "identical to v1: latency ratio "),
        (
            E1_TRIAL_KERNELS[4],
            "warning",
            'identical to "v1 trial 5: fast kernel candidate" (',
        ),
        (
            KERNEL_E3_CHECKPOINT,
            "warning",
            "identical to v3: pivot, not promoted; its branch evaluation: PASS ",
        ),
        (KERNEL_E2_CHECKPOINT, "information", 'identical to "v2: checkpoint 8 rows per program" ('),
    ],
)
def test_sol_fingerprints(sol: Path, source: str, severity: str, verdict: str) -> None:
    # comments, blank lines and the docstring do not make a kernel new
    reformatted = "# reformatted\n" + source.replace('"""', '"""Edited. ', 1) + "\n\n"
    check = _service(sol).fingerprint(reformatted)
    assert check.severity == severity and check.verdict is not None and check.verdict.startswith(verdict)


def test_sol_failed_trial_verdict_and_near_match(sol: Path) -> None:
    svc = _service(sol)
    failed = svc.fingerprint(E1_TRIAL_KERNELS[4])
    assert failed.verdict is not None and failed.verdict.endswith(
        "FAILED 0/3 workloads 0d3c5b8e=INCORRECT_NUMERICAL"
    )
    near = svc.fingerprint(KERNEL_V1.replace("num_warps=8", "num_warps=16"))
    assert near.matches[0].version == "v1" and near.matches[0].differences == ["num_warps 8 (here 16)"]
    assert near.severity == "information"


def test_sol_compare_v1_v2(sol: Path) -> None:
    comparison = _service(sol).compare("v1", "v2")
    assert comparison.score_ratio is not None and comparison.score_ratio.kind == "latency_change_pct"
    assert len(comparison.configs) == 3 and all(
        c.latency_ratio and c.latency_ratio > 1 for c in comparison.configs
    )
    assert "+BLOCK_M = 4" in comparison.code_diff
    pivot = _service(sol).compare("v2", "v3")
    assert pivot.b.outcome == "pivot" and pivot.configs and all(c.b_latency_us is None for c in pivot.configs)
    assert any("branch atrex/long-e0003-" in d for d in pivot.gate_details["v3"])


def test_version_commits_found_by_subject_when_records_cite_none(tmp_path: Path) -> None:
    """Records without git_commit_hash (the shipped example's), committed as `V<N>: action`
    (the seed workflow's messages): each version's kernel.py is its V<N> commit's, so the
    values tried at the launch line and compare's code come from git; the failed v3, whose
    commit holds only its record, has no kernel."""
    from tests.conftest import editor_history_session, vector_add_history_kernels

    ws, _, env = editor_history_session(tmp_path)
    launch = int(env["KS_LAUNCH_LINE"])
    service = HistoryService(ws, db_url=str(tmp_path / "exp.sqlite"))
    tried = {(h.line, h.label): h for h in service.tried()}
    block = tried[(launch, "BLOCK_SIZE")]
    assert block.hint.startswith("tried (latency ratio vs v0): 1024 1.00x v0 · 4096 1.22x v4"), block.hint
    kernels = vector_add_history_kernels()
    comparison = service.compare("v0", "v4")
    assert comparison.code_a == kernels["v0"] and comparison.code_b == kernels["v4"]
    assert "-    add_kernel[grid](x, y, out, n_elements, BLOCK_SIZE=1024)" in comparison.code_diff
    failed = service.compare("v2", "v3")
    assert failed.code_a == kernels["v2"] and failed.code_b is None and not failed.code_available


def test_subject_commits_of_another_workspace_in_the_same_repository_are_not_taken(tmp_path: Path) -> None:
    """Two workspaces in one repository, both committed as `V<N>: ...`: workspace b's `V1:`
    and `V2:` commits are not workspace a's v1 and v2 (a's v2 is recorded, never committed),
    so a's v1 kernel is its own and v2 has none."""
    from tests.conftest import EXAMPLES, vector_add_history_kernels

    kernels = vector_add_history_kernels()
    repo = tmp_path / "repo"
    identity = ["-c", "user.name=agent", "-c", "user.email=agent@example.invalid"]

    def git(*args: str) -> None:
        subprocess.run(["git", *identity, *args], cwd=repo, check=True, capture_output=True)

    def version(ws: str, number: int, kernel: str, message: str) -> None:
        (repo / ws / "kernel.py").write_text(kernel)
        record = (EXAMPLES / "vector_add" / "memory" / f"v{number}.json").read_text()
        (repo / ws / "memory" / f"v{number}.json").write_text(record)
        git("add", "-A")
        git("commit", "-qm", message)

    for ws in ("a", "b"):
        (repo / ws / "memory").mkdir(parents=True)
        for name in ("README.md", "reference.py"):
            (repo / ws / name).write_text((EXAMPLES / "vector_add" / name).read_text())
    git("-c", "init.defaultBranch=main", "init", "-q")
    version("a", 0, kernels["v0"], "V0: a baseline")
    version("b", 0, kernels["v0"], "V0: b baseline")
    version("a", 1, kernels["v1"], "V1: a BLOCK_SIZE 4096")
    version("b", 1, kernels["v2"], "V1: b multiple_of")
    version("b", 2, kernels["v4"], "V2: b evict_first")
    (repo / "a" / "memory" / "v2.json").write_text(
        (EXAMPLES / "vector_add" / "memory" / "v2.json").read_text()
    )

    comparison = HistoryService(repo / "a", db_url=str(tmp_path / "exp.sqlite")).compare("v1", "v2")
    assert comparison.code_a == kernels["v1"]
    assert comparison.code_b is None and not comparison.code_available


def _clone(sol: Path, target: Path, *options: str) -> Path:
    """A clone of the campaign's repository as a reviewer gets it: episode branches only as
    remote-tracking refs (or none with --single-branch), the supervisor's journals copied."""
    subprocess.run(["git", "clone", "-q", *options, str(sol), str(target)], check=True, capture_output=True)
    shutil.copytree(sol / ".atrex_long_horizon", target / ".atrex_long_horizon", dirs_exist_ok=True)
    return target


def test_a_clone_reads_episode_branches_from_remote_tracking_refs(sol: Path, tmp_path: Path) -> None:
    """In a clone the pivot v3's kernel is its episode branch's checkpoint, found under
    refs/remotes/origin/atrex/, not the incumbent kernel.py of its outcome commit."""
    clone = _clone(sol, tmp_path / WORKSPACE_NAME)
    pivot = _service(clone).compare("v2", "v3")
    assert any("branch origin/atrex/long-e0003-" in d for d in pivot.gate_details["v3"]), pivot.gate_details
    assert pivot.code_b is not None and pivot.code_b != pivot.code_a
    check = _service(clone).fingerprint(KERNEL_V2)
    assert check.verdict is not None and check.verdict.startswith("identical to v2"), check.verdict


def test_an_outcome_versions_subject_commit_lends_it_no_kernel(sol: Path, tmp_path: Path) -> None:
    """Without its episode branch, the pivot v3 has only its `v3: ... pivot` outcome commit,
    which holds records and the incumbent's kernel.py: v3 gets the commit, not that kernel, so
    the incumbent is not flagged as the pivot's tried-and-not-promoted code."""
    clone = _clone(sol, tmp_path / WORKSPACE_NAME, "--single-branch")
    pivot = _service(clone).compare("v2", "v3")
    assert pivot.code_b is None, pivot.gate_details["v3"]
    check = _service(clone).fingerprint(KERNEL_V2)
    assert check.verdict is not None and check.verdict.startswith("identical to v2"), check.verdict


def test_a_ratio_of_two_records_latencies_is_not_said_to_be_measured_in_one_run(tmp_path: Path) -> None:
    """The shipped example's records hold latencies measured apart: compare shows v2 vs v1 as
    their latency ratio, labelled as coming from the two records, never "measured in one run"."""
    from tests.conftest import EXAMPLES

    ws = tmp_path / "kernel_opt_vector_add"
    shutil.copytree(EXAMPLES / "vector_add", ws)
    comparison = _service(ws).compare("v1", "v2")
    assert comparison.score_ratio is not None and comparison.score_ratio.kind == "latency_ratio"
    assert "measured in one run)" not in comparison.markdown.replace("not measured in one run)", "")
    assert (
        "**v2 vs v1** (from the two records, not measured in one run): latency ratio" in comparison.markdown
    )


def test_lines_older_than_a_shallow_clones_history_have_no_version(tmp_path: Path) -> None:
    """In a clone with --depth 2 git blame gives every older line to the oldest commit it has
    (its `boundary`): those lines are before the shallow history, version unknown, not that
    commit's version; a line the newest commit changed is still its version's. In the full
    history the root commit's lines stay v0's."""
    from tests.conftest import editor_history_session

    ws, _, env = editor_history_session(tmp_path)
    launch = int(env["KS_LAUNCH_LINE"])  # changed in v1
    evict = _line((ws / "kernel.py").read_text(), "evict_first")  # changed in v4, the newest commit
    full = _service(ws).blame()
    assert full[launch].version == "v1" and full[0].version == "v0", full[0].hint
    clone = tmp_path / "shallow" / ws.name
    subprocess.run(
        ["git", "clone", "-q", "--depth", "2", f"file://{ws}", str(clone)], check=True, capture_output=True
    )
    lines = HistoryService(clone, db_url=str(tmp_path / "shallow.sqlite")).blame()
    assert lines[evict].version == "v4", lines[evict].hint
    for line in (0, launch):
        assert lines[line].origin == "unknown" and lines[line].version is None, lines[line].hint
        assert lines[line].hint.startswith("before the shallow history (it starts at "), lines[line].hint
