"""History hints on a workspace recorded by `kernelscope iterate` (interpreter, one seed):
v0 BLOCK_SIZE 64, v1 256, v2 1024, v3 a wrong kernel (failed gate, kept on
refs/kernelscope/failed/v3, kernel.py left as it was), v4 BLOCK_SIZE 4096 (passes again).
Each hint's text and position is checked against the numbers the records hold."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest
import typer
from typer.testing import CliRunner

from kernelscope.daemon.cli.blame import blame_command
from kernelscope.daemon.cli.compare import compare_command
from kernelscope.daemon.engine.history.service import HistoryService
from kernelscope.daemon.engine.memory.records import MemoryManager
from kernelscope.daemon.engine.workflows.demo import kernel_with_block
from kernelscope.daemon.engine.workflows.git import Git
from kernelscope.daemon.engine.workflows.iterate import IterateOptions, run_iteration
from tests.conftest import EXAMPLES
from tests.support.copies import copy_with_stores

pytestmark = pytest.mark.slow
KERNEL = (EXAMPLES / "vector_add" / "kernel.py").read_text()
WRONG = kernel_with_block(KERNEL, 4096).replace("x + y, mask=mask", "x - y, mask=mask")
STEPS = [
    (kernel_with_block(KERNEL, 64), "baseline", "Initial kernel: BLOCK_SIZE=64"),
    (kernel_with_block(KERNEL, 256), "block_size", "BLOCK_SIZE 64 -> 256: 4x fewer programs"),
    (kernel_with_block(KERNEL, 1024), "block_size", "BLOCK_SIZE 256 -> 1024: fewer programs"),
    (WRONG, "arithmetic", "subtract instead of add"),
    (kernel_with_block(KERNEL, 4096), "block_size", "BLOCK_SIZE 1024 -> 4096: one program per 16 KiB"),
]
GRID_LINE, LAUNCH_LINE, STORE_LINE = 21, 22, 14  # 0-based lines of the example kernel


@pytest.fixture(autouse=True)
def _history_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Analyses cached on disk go to the test's folder, not the user's ~/.cache."""
    monkeypatch.setenv("KERNELSCOPE_HISTORY_CACHE", str(tmp_path / "history-cache"))


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("history")
    ws = root / "kernel_opt_vector_add"
    ws.mkdir()
    for name in ("README.md", "reference.py"):
        shutil.copy(EXAMPLES / "vector_add" / name, ws / name)
    git = Git(ws)
    git.init()
    git.commit_paths([ws / "README.md", ws / "reference.py"], "init")
    for source, category, description in STEPS:
        (ws / "kernel.py").write_text(source)
        run_iteration(
            ws,
            IterateOptions(
                action_category=category,
                action_description=description,
                mode="interpreter",
                seeds=1,
                db_url=str(root / "exp.sqlite"),
            ),
        )
    return root


@pytest.fixture
def ws(recorded: Path, tmp_path: Path) -> Path:
    """A private copy (the store's workspace paths moved along)."""
    copy = copy_with_stores(recorded, tmp_path / "copy")
    return copy / "kernel_opt_vector_add"


def service(ws: Path) -> HistoryService:
    return HistoryService(ws, db_url=str(ws.parent / "exp.sqlite"))


def record(ws: Path, version: str) -> dict:
    return json.loads((ws / "memory" / f"{version}.json").read_text())


def speedup(ws: Path, version: str) -> str:
    block = record(ws, version)["kernelscope"]
    low, high = block["score_ci"]
    return f"{block['score_vs_v0']:.2f}x vs v0 [{low:.2f}-{high:.2f}]"


def test_blame_names_the_version_its_effect_and_gate(ws: Path) -> None:
    lines = service(ws).blame()
    assert len(lines) == len(KERNEL.splitlines())
    v4 = record(ws, "v4")["kernelscope"]
    expected = (
        f"introduced in v4: BLOCK_SIZE 1024 -> 4096, {v4['score_vs_parent']:.2f}x vs v2 · "
        f"{speedup(ws, 'v4')} (interpreter), PASS"
    )
    assert lines[LAUNCH_LINE].hint == expected and lines[GRID_LINE].hint == expected
    assert lines[LAUNCH_LINE].version == "v4" and lines[LAUNCH_LINE].origin == "version"
    assert lines[LAUNCH_LINE].effect is not None and lines[LAUNCH_LINE].effect.vs_parent.versus == "v2"
    assert (
        lines[STORE_LINE].hint
        == "introduced in v0: Initial kernel: BLOCK_SIZE=64, baseline (interpreter), PASS"
    )
    commit = record(ws, "v4")["git_commit_hash"]
    assert lines[LAUNCH_LINE].commit == commit and lines[LAUNCH_LINE].commit_subject.startswith("V4: ")


def test_unsaved_lines_and_a_failed_versions_line(ws: Path) -> None:
    svc = service(ws)
    edited = (ws / "kernel.py").read_text().replace("4096", "2048")
    lines = svc.blame(edited)
    assert lines[LAUNCH_LINE].origin == "unsaved" and lines[LAUNCH_LINE].hint == "unsaved/unmeasured"
    assert lines[STORE_LINE].version == "v0"
    failed = subprocess.run(
        ["git", "show", "refs/kernelscope/failed/v3:kernel.py"],
        cwd=ws,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert failed == WRONG
    line = svc.blame_line(STORE_LINE, failed)
    assert line is not None and line.tried_in == "v3"
    assert re.fullmatch(r"unsaved/unmeasured; tried in v3: FAILED wrong_result rel_err [\d.]+", line.hint)
    inserted = "\n".join(["# a new comment line", *failed.splitlines()])
    assert svc.blame(inserted)[LAUNCH_LINE + 1].version == "v4"  # later lines keep their origin


def test_masked_version_is_labelled_and_its_numbers_hidden(ws: Path) -> None:
    MemoryManager(ws).set_masked(["v4"], True)
    svc = service(ws)
    line = svc.blame()[LAUNCH_LINE]
    assert line.hint == "introduced in v4 (masked: hidden from the active memory)" and line.effect is None
    shown = svc.blame(include_masked=True)[LAUNCH_LINE]
    assert shown.hint.startswith("introduced in v4 (masked): BLOCK_SIZE 1024 -> 4096, ") and shown.effect


def test_tried_values_at_the_launch_keyword_and_the_grid(ws: Path) -> None:
    hints = {h.label: h for h in service(ws).tried()}
    assert set(hints) == {"grid", "BLOCK_SIZE"}
    block = hints["BLOCK_SIZE"]
    source_line = (ws / "kernel.py").read_text().splitlines()[LAUNCH_LINE]
    assert (block.line, block.character) == (LAUNCH_LINE, source_line.index("4096"))
    assert block.end_character == block.character + 4 and block.value == "4096"
    scores = {v: record(ws, v)["kernelscope"]["score_vs_v0"] for v in ("v1", "v2", "v4")}
    expected = (
        f"tried: 64 1.00x v0 · 256 {scores['v1']:.2f}x v1 · 1024 {scores['v2']:.2f}x v2 · "
        f"4096 {scores['v4']:.2f}x v4 (1 FAIL)"
    )
    assert block.hint == expected
    assert hints["grid"].hint == expected  # the grid's only varying literal, shown compactly
    grid_line = (ws / "kernel.py").read_text().splitlines()[GRID_LINE]
    assert (hints["grid"].line, hints["grid"].character) == (GRID_LINE, grid_line.index("("))
    row = next(v for v in block.values if v.value == "4096")
    assert row.versions == ["v3", "v4"] and row.failed == 1 and row.current and row.best_version == "v4"
    assert set(row.by_config) == {"n=4096", "n=5000"} and all(
        s.kind == "speedup" for s in row.by_config.values()
    )
    new = service(ws).tried((ws / "kernel.py").read_text().replace("4096", "2048"))
    assert new[0].hint.endswith(" · 2048 new")


def test_fingerprint_verdicts(ws: Path) -> None:
    svc = service(ws)
    head = (ws / "kernel.py").read_text()
    current = svc.fingerprint(head)
    assert current.severity == "hint" and current.matches[0].current
    assert current.verdict == f"identical to v4 (committed at HEAD): {speedup(ws, 'v4')}, already measured"
    # comments, blank lines, docstrings and line breaks do not make a kernel new
    reformatted = (
        "# tuned by hand\n"
        + kernel_with_block(KERNEL, 1024)
        .replace(
            '"""Entry point: launches add_kernel over the flattened inputs."""', '"""Another docstring."""'
        )
        .replace(
            "add_kernel[grid](x, y, out, n_elements, BLOCK_SIZE=1024)",
            "add_kernel[grid](\n        x, y, out, n_elements,\n        BLOCK_SIZE=1024,\n    )  # launch",
        )
        + "\n\n"
    )
    check = svc.fingerprint(reformatted)
    assert check.severity == "information"
    assert check.verdict == f"identical to v2: {speedup(ws, 'v2')}, already measured"
    failed = svc.fingerprint(WRONG)
    assert failed.severity == "warning" and failed.matches[0].version == "v3"
    assert re.fullmatch(r"identical to v3: FAILED wrong_result rel_err [\d.]+", failed.verdict or "")
    near = svc.fingerprint(head.replace("4096", "2048"))
    assert near.severity == "information" and [m.kind for m in near.matches] == ["near"] * 3
    assert near.matches[0].version == "v4"
    assert near.matches[0].differences == ["grid 4096 (here 2048)", "BLOCK_SIZE 4096 (here 2048)"]
    assert near.verdict.startswith(f"near v4 ({speedup(ws, 'v4')}, already measured): grid 4096 (here 2048)")
    broken = svc.fingerprint("def broken(:\n")
    assert broken.fingerprint is None and broken.error and "line 1" in broken.error


def test_compare_two_versions(ws: Path) -> None:
    comparison = service(ws).compare("v2", "4")
    assert comparison.a.version == "v2" and comparison.b.version == "v4"
    assert "-    add_kernel[grid](x, y, out, n_elements, BLOCK_SIZE=1024)" in comparison.code_diff
    assert "+    add_kernel[grid](x, y, out, n_elements, BLOCK_SIZE=4096)" in comparison.code_diff
    assert comparison.score_ratio is not None and comparison.score_ratio.versus == "v2"
    assert comparison.score_ratio.value == pytest.approx(record(ws, "v4")["kernelscope"]["score_vs_parent"])
    assert [c.config for c in comparison.configs] == ["n=4096", "n=5000"]
    delta = comparison.configs[0]
    assert delta.latency_ratio == pytest.approx(delta.a_latency_us / delta.b_latency_us)
    assert delta.a_speedup.kind == "speedup" and delta.a_speedup.ci is not None
    assert "| n=4096 |" in comparison.markdown and "latency ratio v2/v4" in comparison.markdown
    assert "**v4 vs v2** (measured in one run): " in comparison.markdown  # iterate's in-run speedup
    failed = service(ws).compare("v2", "v3")
    assert (
        failed.b.gate == "FAIL" and "kernel.py from refs/kernelscope/failed/v3" in failed.gate_details["v3"]
    )
    assert "+    tl.store(out_ptr + offsets, x - y, mask=mask)" in failed.code_diff
    assert all(c.b_passed is False for c in failed.configs)


def test_cli_blame_and_compare(ws: Path) -> None:
    app = typer.Typer()
    app.command("blame")(blame_command)
    app.command("compare")(compare_command)
    runner = CliRunner()
    db = str(ws.parent / "exp.sqlite")
    done = runner.invoke(app, ["blame", "-w", str(ws), "--db", db])
    assert done.exit_code == 0, done.output
    assert re.search(r"\n\s+23  .*add_kernel\[grid\].*introduced in v4: BLOCK_SIZE 1024 -> 4096", done.output)
    assert "kernel.py as it is: identical to v4 (committed at HEAD)" in done.output
    document = json.loads(runner.invoke(app, ["blame", "-w", str(ws), "--db", db, "--json"]).output)
    assert document["lines"][LAUNCH_LINE]["version"] == "v4" and document["fingerprint"]["severity"] == "hint"
    assert {t["label"] for t in document["tried"]} == {"grid", "BLOCK_SIZE"}
    done = runner.invoke(app, ["compare", "v1", "v2", "-w", str(ws), "--db", db])
    assert done.exit_code == 0 and done.output.startswith("## v1 → v2")
    data = json.loads(runner.invoke(app, ["compare", "v1", "v2", "-w", str(ws), "--db", db, "--json"]).output)
    assert data["b"]["vs_parent"]["versus"] == "v1"


def test_cache_is_kept_until_the_history_changes(ws: Path) -> None:
    svc = service(ws)
    first = svc.history()
    assert svc.history() is first and svc.blame() is svc.blame()
    (ws / "kernel.py").write_text(kernel_with_block(KERNEL, 512))  # an unsaved edit: same history
    assert svc.history() is first
    git = Git(ws)
    git.commit_paths([ws / "kernel.py"], "try 512 by hand")
    second = svc.history()
    assert second is not first
    line = svc.blame()[LAUNCH_LINE]
    assert line.origin == "commit" and re.fullmatch(
        r'last changed in [0-9a-f]{8} "try 512 by hand" \(no memory record\)', line.hint
    )
