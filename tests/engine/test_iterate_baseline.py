"""What `kernelscope iterate` times a new version against, and what it calls the number.

A score "vs v0" is against v0's kernel and nothing else. v0's record may name no commit (the
example workspaces ship v0 with `git_commit_hash: null`); its kernel.py is then found as the
history finds it (history/version_code.py): a `V0: ...` commit, else the commit that added
memory/v0.json, when that commit holds kernel.py and added no other record. With no v0 code to be found,
the version is timed against the reference, and the number is recorded and shown as a speedup
vs the reference, never as a score vs v0 (it was: `v1: PASS 0.01x vs v0`).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from kernelscope.daemon.cli.iterate import print_iteration
from kernelscope.daemon.engine.history.service import HistoryService
from kernelscope.daemon.engine.store import ExperimentStore
from kernelscope.daemon.engine.workflows import iterate as iterate_module
from kernelscope.daemon.engine.workflows.git import Git
from kernelscope.daemon.engine.workflows.iterate import IterateOptions, run_iteration
from kernelscope.daemon.engine.workspace.workspace import Workspace
from tests.conftest import EXAMPLES

pytestmark = pytest.mark.slow
NO_CODE = "no v0 kernel.py to time against"


def softmax_workspace(tmp_path: Path, kernel_with_v0: bool) -> Path:
    """The softmax example (v0.json names no commit) in a fresh repository, committed as a
    new user does (`git add -A && git commit`), or with kernel.py only in a later commit."""
    ws = tmp_path / "kernel_opt_softmax"
    shutil.copytree(EXAMPLES / "softmax", ws)
    others = [p for p in ws.rglob("*") if p.is_file() and p.name not in ("kernel.py", "kernel_slow.py")]
    git = Git(ws)
    git.init()
    if kernel_with_v0:
        git.commit_paths([*others, ws / "kernel.py"], "init")
    else:
        git.commit_paths(others, "v0's record, before any kernel")
        git.commit_paths([ws / "kernel.py"], "the kernel")
    assert json.loads((ws / "memory" / "v0.json").read_text())["git_commit_hash"] is None
    kernel = (ws / "kernel.py").read_text()
    (ws / "kernel.py").write_text(kernel.replace("BLOCK_SIZE=block)", "BLOCK_SIZE=block, num_warps=4)"))
    return ws


def iterate(ws: Path, db: str):  # type: ignore[no-untyped-def]
    options = IterateOptions(
        action_category="warps", action_description="num_warps=4", mode="interpreter", seeds=1, db_url=db
    )
    return run_iteration(ws, options)


def test_v0_with_no_commit_is_the_kernel_committed_with_its_record(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Before: v0's record names no commit, so v1 was timed against the reference and the
    speedup over it was stored and printed as v1's score vs v0."""
    ws = softmax_workspace(tmp_path, kernel_with_v0=True)
    v0_kernel = Git(ws).show_file("HEAD", ws / "kernel.py")
    baselines = _spy_baselines(monkeypatch)
    result = iterate(ws, str(tmp_path / "exp.sqlite"))
    assert baselines == [v0_kernel]
    assert result.passed and result.score is not None and result.speedup_vs_reference is None
    assert not any(NO_CODE in m for m in result.messages), result.messages
    record = json.loads((ws / "memory" / "v1.json").read_text())
    assert record["kernelscope"]["score_vs_v0"] == result.score
    assert " vs v0" in Git(ws).run("log", "-1", "--format=%s", result.commit)  # type: ignore[arg-type]


def test_with_no_v0_code_the_number_is_a_speedup_vs_the_reference_everywhere(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """memory/v0.json was committed before kernel.py existed: no v0 code anywhere. v1 is timed
    against the reference, said once, and the number is a speedup vs the reference on every
    surface: the result, the commit, the record, `memory summary`, `check`, the store."""
    ws = softmax_workspace(tmp_path, kernel_with_v0=False)
    db = str(tmp_path / "exp.sqlite")
    result = iterate(ws, db)
    assert result.passed and result.score is None
    assert result.speedup_vs_reference is not None and result.speedup_vs_reference > 0
    said = [m for m in result.messages if "reference" in m and "v0" in m]
    assert len(said) == 1 and NO_CODE in said[0] and "not a score vs v0" in said[0], result.messages
    print_iteration(result)
    printed = capsys.readouterr().out
    assert "v1: PASS  " in printed and "x vs reference" in printed and "vs v0" not in printed, printed
    subject = Git(ws).run("log", "-1", "--format=%s", result.commit)  # type: ignore[arg-type]
    assert "vs v0" not in subject and "x vs reference" in subject, subject
    record = json.loads((ws / "memory" / "v1.json").read_text())
    assert record["kernelscope"]["score_vs_v0"] is None, record["kernelscope"]
    assert record["kernelscope"]["baseline"] == "reference"
    assert record["performance"]["speedup_vs_ref_geomean"] == result.speedup_vs_reference
    (row,) = [r for r in Workspace(ws).summary().versions if r.version == "v1"]
    assert row.score is None and row.speedup_vs_reference == result.speedup_vs_reference
    verdict = HistoryService(ws, db_url=db).fingerprint((ws / "kernel.py").read_text()).verdict or ""
    assert verdict.startswith("identical to v1") and "vs v0" not in verdict and "vs reference" in verdict
    store = ExperimentStore(db)
    (experiment,) = store.list_experiments(memory_version="v1")
    assert experiment.score is None and "vs v0" not in experiment.raw_result, experiment.raw_result
    assert experiment.metrics["speedup_vs_reference"] == result.speedup_vs_reference
    assert not any(e.memory_version == "v1" for group in store.failures(True).values() for e in group)


def _spy_baselines(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The text of every baseline iterate times against ("reference" for the reference)."""
    baselines: list[str] = []
    real = iterate_module.run_benchmark

    def spy(request, cancel=None):  # type: ignore[no-untyped-def]
        baselines.append(
            Path(request.baseline).read_text() if request.baseline != "reference" else "reference"
        )
        return real(request, cancel=cancel)

    monkeypatch.setattr(iterate_module, "run_benchmark", spy)
    return baselines


def _v0_kernel_in_history(ws: Path, db: str) -> str | None:
    """v0's kernel.py as the history reads it (None: the history knows no v0 code)."""
    history = HistoryService(ws, db_url=db).history()
    blob = history.versions["v0"].kernel_blob
    return history.source_of(blob) if blob else None


def _add_v1(ws: Path) -> tuple[str, str]:
    """A v1 record (naming no commit, as hand-recorded ones do) and v1's kernel (num_warps=4)
    in the working tree: (v0's code, v1's code)."""
    v0_code = (ws / "kernel.py").read_text()
    v1_code = v0_code.replace("BLOCK_SIZE=block)", "BLOCK_SIZE=block, num_warps=4)")
    assert v1_code != v0_code
    (ws / "kernel.py").write_text(v1_code)
    v1 = json.loads((ws / "memory" / "v0.json").read_text())
    v1["version"] = "v1"
    v1["optimization"]["action_description"] = "num_warps=4"
    (ws / "memory" / "v1.json").write_text(json.dumps(v1, indent=2) + "\n")
    return v0_code, v1_code


def test_a_workspace_imported_after_v0_has_no_v0_code(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Before: a workspace worked on before its first commit (v0.json, v1.json and v1's
    kernel.py committed at once) had v2 timed against v1's code, the commit that added v0.json
    being taken as v0's, and stored as `V2: 0.85x vs v0`, with no word said; the history
    (rightly) knew no v0 code there. Now both say so: v2 is timed against the reference."""
    ws = tmp_path / "kernel_opt_softmax"
    shutil.copytree(EXAMPLES / "softmax", ws)
    _, v1_code = _add_v1(ws)
    git = Git(ws)
    git.init()
    git.commit_paths(
        [p for p in ws.rglob("*") if p.is_file() and ".git" not in p.parts], "import the workspace"
    )
    (ws / "kernel.py").write_text(v1_code.replace("num_warps=4", "num_warps=8"))
    db = str(tmp_path / "exp.sqlite")
    baselines = _spy_baselines(monkeypatch)
    result = iterate(ws, db)
    assert baselines == ["reference"]
    assert result.version == "v2" and result.score is None and result.speedup_vs_reference is not None
    assert any(NO_CODE in m for m in result.messages), result.messages
    assert "vs v0" not in git.run("log", "-1", "--format=%s", result.commit)  # type: ignore[arg-type]
    assert _v0_kernel_in_history(ws, db) is None


def test_a_v0_commit_subject_holds_v0s_code_for_iterate_as_for_the_history(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Before: the records committed later, together (no commit added v0.json with kernel.py),
    so iterate timed v2 against the reference while the history read v0's code from the
    `V0: baseline` commit. One rule now: both take that commit's kernel.py."""
    ws = tmp_path / "kernel_opt_softmax"
    shutil.copytree(EXAMPLES / "softmax", ws)
    records = [ws / "memory" / "v0.json", ws / "memory" / "v1.json"]
    files = [p for p in ws.rglob("*") if p.is_file() and p not in records]
    git = Git(ws)
    git.init()
    git.commit_paths(files, "V0: baseline")
    v0_code, v1_code = _add_v1(ws)
    git.commit_paths([ws / "kernel.py"], "V1: num_warps=4")
    git.commit_paths(records, "the records")
    (ws / "kernel.py").write_text(v1_code.replace("num_warps=4", "num_warps=8"))
    db = str(tmp_path / "exp.sqlite")
    assert _v0_kernel_in_history(ws, db) == v0_code
    baselines = _spy_baselines(monkeypatch)
    result = iterate(ws, db)
    assert baselines == [v0_code]
    assert result.score is not None and not any(NO_CODE in m for m in result.messages), result.messages


def test_the_history_reads_v0s_code_where_iterate_times_against_it(tmp_path: Path) -> None:
    """Before: iterate took kernel.py from the commit that added v0.json (the example committed
    as a new user does), and the history said v0 had no code there."""
    ws = softmax_workspace(tmp_path, kernel_with_v0=True)
    assert _v0_kernel_in_history(ws, str(tmp_path / "exp.sqlite")) == Git(ws).show_file(
        "HEAD", ws / "kernel.py"
    )
