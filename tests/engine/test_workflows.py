"""run-iteration, the verified partial restart with scripted agents, and the demo."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import textwrap
import threading
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from kernelscope.daemon.engine.store import ExperimentStore
from kernelscope.daemon.engine.workflows.demo import kernel_with_block, run_demo
from kernelscope.daemon.engine.workflows.git import Git
from kernelscope.daemon.engine.workflows.iterate import IterateOptions, run_iteration
from kernelscope.daemon.engine.workflows.restart import PartialRestart, RestartOptions
from tests.conftest import EXAMPLES
from tests.support.copies import copy_with_stores

pytestmark = pytest.mark.slow
KERNEL = (EXAMPLES / "vector_add" / "kernel.py").read_text()
KELNERSCOPE = str(Path(sys.executable).with_name("kernelscope"))


def iterate(ws: Path, db: str, category: str, **kwargs: object):  # type: ignore[no-untyped-def]
    return run_iteration(
        ws,
        IterateOptions(
            action_category=category,
            action_description=f"{category} step",
            mode="interpreter",
            seeds=1,
            db_url=db,
            **kwargs,
        ),  # type: ignore[arg-type]
    )


def started(
    call: Callable[[], object],
    outcome: dict[str, object],
    key: str,
    name: str | None = None,
    then: Callable[[], object] | None = None,
) -> threading.Thread:
    """`call` in a thread of its own, started: what it returned, or the exception it raised,
    lands in outcome[key] for the test to report; `then` (a test's event) runs after either."""

    def run() -> None:
        try:
            outcome[key] = call()
        except Exception as exc:  # (the test reports it)
            outcome[key] = exc
        finally:
            if then is not None:
                then()

    thread = threading.Thread(target=run, name=name)
    thread.start()
    return thread


@pytest.fixture(scope="module")
def prepared(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A git workspace with v0 (BLOCK 64), v1 (128), v2 (256), v3 (1024) recorded by iterate."""
    root = tmp_path_factory.mktemp("prepared")
    ws = root / "kernel_opt_vector_add"
    ws.mkdir()
    for name in ("README.md", "reference.py"):
        shutil.copy(EXAMPLES / "vector_add" / name, ws / name)
    git = Git(ws)
    git.init()
    git.commit_paths([ws / "README.md", ws / "reference.py"], "init")
    db = str(root / "exp.sqlite")
    for block, category in ((64, "baseline"), (128, "block_size"), (256, "block_size"), (1024, "block_size")):
        (ws / "kernel.py").write_text(kernel_with_block(KERNEL, block))
        assert iterate(ws, db, category).passed
    return root


@pytest.fixture
def workspace(prepared: Path, tmp_path: Path) -> tuple[Path, str]:
    root = tmp_path / "root"
    copy_with_stores(prepared, root)
    return root / "kernel_opt_vector_add", str(root / "exp.sqlite")


def test_iterate_records_memory_experiment_and_commits(workspace: tuple[Path, str]) -> None:
    ws, db = workspace
    (ws / "kernel.py").write_text(kernel_with_block(KERNEL, 4096))
    result = iterate(ws, db, "block_size")
    assert result.passed and result.version == "v4" and result.parent_version == "v3"
    assert result.score is not None and result.score > 1.0 and result.score_vs_parent is not None
    record = json.loads((ws / "memory" / "v4.json").read_text())
    assert set(record["performance"]["latency_us_by_shape"]) == {"n=4096", "n=5000"}
    assert record["performance"]["comparison_with_previous"]["previous_version"] == "v3"
    assert record["optimization"]["action_category"] == "block_size"
    assert record["correctness"]["status"] == "PASS" and record["quality_gate"]["result"] == "PASS"
    git = Git(ws)
    assert record["git_commit_hash"] == result.commit
    assert git.show_file(result.commit, ws / "kernel.py") == (ws / "kernel.py").read_text()
    subject = git.run("log", "-1", "--format=%s", result.commit)
    assert subject.startswith("V4: ") and subject.endswith("| block_size")
    assert git.run("status", "--porcelain") == ""  # everything it wrote is committed
    store = ExperimentStore(db)
    experiment = store.require(result.experiment_id)  # type: ignore[arg-type]
    parent = store.list_experiments(memory_version="v3")[0]  # recorded before the copy moved it
    assert experiment.pid == parent.id and experiment.score == pytest.approx(result.score)
    assert "BLOCK_SIZE=4096" in experiment.code_change and experiment.base_commit
    assert experiment.kernels == ["add_kernel"] and experiment.metrics["git_commit_hash"] == result.commit
    assert [s.kernel for s in store.kernel_summaries(str(ws))] == ["add_kernel"]


@pytest.mark.parametrize("kind", ["folder", "dangling link"])
def test_iterate_records_past_a_version_name_held_by_no_file(workspace: tuple[Path, str], kind: str) -> None:
    """memory/v4.json a folder or a dangling link (committed): iterate took v4, the version
    `next-version` named, and failed ("memory/v4.json already exists") or replaced the link by
    its record and committed it. The name holds v4 (listed as unreadable): iterate records v5
    and leaves v4.json as it was."""
    ws, db = workspace
    held = ws / "memory" / "v4.json"
    if kind == "folder":
        held.mkdir()
        (held / "keep").write_text("")
    else:
        held.symlink_to(ws.parent / "gone.json")
    git = Git(ws)
    git.run("add", "-A")
    git.run("commit", "-qm", "odd v4")
    (ws / "kernel.py").write_text(kernel_with_block(KERNEL, 4096))
    result = iterate(ws, db, "block_size")
    assert result.passed and result.version == "v5"
    assert held.is_dir() if kind == "folder" else held.is_symlink() and not held.exists()
    assert not (ws.parent / "gone.json").exists() and git.run("status", "--porcelain") == ""


def test_failed_gate_is_recorded_and_kernel_kept(workspace: tuple[Path, str]) -> None:
    ws, db = workspace
    broken = KERNEL.replace("x + y", "x - y")
    (ws / "kernel.py").write_text(broken)
    result = iterate(ws, db, "fusion")
    assert not result.passed and result.failed_ref == "refs/kernelscope/failed/v4"
    assert (ws / "kernel.py").read_text() == broken  # a person's edit is left alone
    record = json.loads((ws / "memory" / "v4.json").read_text())
    assert (
        record["quality_gate"]["result"] == "FAIL" and "differs" in record["quality_gate"]["failure_reason"]
    )
    assert record["pitfalls_and_fixes"][0]["failed_kernel_ref"] == "refs/kernelscope/failed/v4"
    git = Git(ws)
    assert git.show_file("refs/kernelscope/failed/v4", ws / "kernel.py") == broken
    experiment = ExperimentStore(db).require(result.experiment_id)  # type: ignore[arg-type]
    assert experiment.is_buggy and experiment.status == "failed" and "x - y" in experiment.code_change
    # the same broken code again is refused (identical to the failed v4); another try, with
    # the revert asked for
    from kernelscope.daemon.engine import DataError

    with pytest.raises(DataError, match="identical to v4"):
        iterate(ws, db, "fusion")
    (ws / "kernel.py").write_text(KERNEL.replace("x + y", "x * y"))
    again = iterate(ws, db, "fusion", revert_on_fail=True)
    assert again.version == "v5" and again.reverted
    assert (ws / "kernel.py").read_text() == kernel_with_block(KERNEL, 1024)  # v3, the last passing


def test_iterate_refuses_without_git(tmp_path: Path) -> None:
    from kernelscope.daemon.engine import DataError

    shutil.copytree(EXAMPLES / "vector_add", tmp_path / "ws")
    with pytest.raises(DataError, match="not a git repository"):
        iterate(tmp_path / "ws", str(tmp_path / "x.sqlite"), "x")


def test_an_edit_during_the_measurement_is_not_what_gets_recorded(
    workspace: tuple[Path, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """kernel.py saved in the editor while the iteration measures it: the commit, the store's
    row and the record are of the measured text, and the newer edit stays in the working tree
    (before, the commit took whatever kernel.py held at the end, under the measured numbers)."""
    from kernelscope.daemon.engine.workflows import iterate as iterate_module

    ws, db = workspace
    measured = kernel_with_block(KERNEL, 4096)
    newer = KERNEL.replace("x + y", "x - y")  # never measured (and wrong)
    (ws / "kernel.py").write_text(measured)
    real = iterate_module.run_benchmark

    def edited_meanwhile(request: object, cancel: object = None) -> object:
        result = real(request, cancel=cancel)  # type: ignore[arg-type]
        (ws / "kernel.py").write_text(newer)
        return result

    monkeypatch.setattr(iterate_module, "run_benchmark", edited_meanwhile)
    # a hook that reads the repository's files from where it runs (as pre-commit's reads its
    # config): it runs in the work tree, not in a copy holding two files
    hook = ws / ".git" / "hooks" / "pre-commit"
    hook.write_text("#!/bin/sh\ntest -f README.md || { echo 'no README here' >&2; exit 1; }\n")
    hook.chmod(0o755)
    result = iterate(ws, db, "block_size")
    assert result.passed and result.version == "v4"
    assert any("edited while it was measured" in m for m in result.messages)
    git = Git(ws)
    assert git.show_file(result.commit, ws / "kernel.py") == measured  # type: ignore[arg-type]
    assert (ws / "kernel.py").read_text() == newer
    assert git.run("status", "--porcelain") == "M kernel.py"  # the edit, shown as not committed
    experiment = ExperimentStore(db).require(result.experiment_id)  # type: ignore[arg-type]
    assert "BLOCK_SIZE=4096" in experiment.code_change and "x - y" not in experiment.code_change
    assert json.loads((ws / "memory" / "v4.json").read_text())["git_commit_hash"] == result.commit


def test_a_commit_refused_by_a_hook_leaves_nothing_recorded(workspace: tuple[Path, str]) -> None:
    """A pre-commit hook says no: no memory record, no store row, no failed-kernel ref and
    nothing staged stay behind, and a second try does the same (before, each try left a
    vN.json without a commit, a 'done' experiment and the files staged in the user's index)."""
    from kernelscope.daemon.engine import DataError

    ws, db = workspace
    hook = ws / ".git" / "hooks" / "pre-commit"
    hook.write_text("#!/bin/sh\necho 'lint failed' >&2\nexit 1\n")
    hook.chmod(0o755)
    git = Git(ws)
    head, memory = git.head(), sorted(p.name for p in (ws / "memory").iterdir())
    experiments = len(ExperimentStore(db).list_experiments())
    for kernel in (kernel_with_block(KERNEL, 4096), KERNEL.replace("x + y", "x - y")):  # pass, fail
        (ws / "kernel.py").write_text(kernel)
        with pytest.raises(DataError, match=r"could not be committed, so nothing was recorded.*lint failed"):
            iterate(ws, db, "block_size")
        assert sorted(p.name for p in (ws / "memory").iterdir()) == memory
        assert len(ExperimentStore(db).list_experiments()) == experiments
        assert git.head() == head and git.run("status", "--porcelain") == "M kernel.py"
        assert git.run("for-each-ref", "refs/kernelscope/") == ""
    hook.unlink()
    assert iterate(ws, db, "fusion").version == "v4"  # the failed text, recorded once allowed


def test_a_refused_second_commit_leaves_the_iteration_recorded(workspace: tuple[Path, str]) -> None:
    """The record's hash goes into memory/vN.json in a second commit; a hook that refuses only
    that one leaves the iteration recorded and committed, said in the result, not raised as
    if nothing had been recorded (before: an error, with v4, its commit and its row in place)."""
    ws, db = workspace
    hook = ws / ".git" / "hooks" / "commit-msg"
    hook.write_text("#!/bin/sh\n! grep -q 'record commit hash' \"$1\"\n")
    hook.chmod(0o755)
    (ws / "kernel.py").write_text(kernel_with_block(KERNEL, 4096))
    result = iterate(ws, db, "block_size")
    assert result.passed and result.version == "v4" and result.commit
    assert any("lacks it" in m for m in result.messages), result.messages
    assert json.loads((ws / "memory" / "v4.json").read_text())["git_commit_hash"] == result.commit
    assert Git(ws).head() == result.commit


def test_iterate_with_a_store_it_cannot_open_records_nothing(
    workspace: tuple[Path, str], tmp_path: Path
) -> None:
    """A --db that cannot be created (a mistyped path): before, the kernel was measured and
    v4 written and committed, and only then the store failed, so the version stood without
    its experiment or its commit hash and a retry was refused as 'identical to v4'. The store
    is opened first now: the error comes before any measurement, nothing is written."""
    from kernelscope.daemon.engine.store.errors import StoreError

    ws, _ = workspace
    (tmp_path / "a-file").write_text("")
    (ws / "kernel.py").write_text(kernel_with_block(KERNEL, 4096))
    head = Git(ws).head()
    with pytest.raises(StoreError, match="cannot create the experiment store"):
        iterate(ws, str(tmp_path / "a-file" / "exp.sqlite"), "block_size")
    assert not (ws / "memory" / "v4.json").exists() and Git(ws).head() == head


def test_a_store_write_that_fails_after_the_commit_leaves_a_complete_version(
    workspace: tuple[Path, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The store opens, the measurement runs, and only the row's insert fails (the store's disk
    filled meanwhile, a team server went away). Before, the error said the store recorded
    nothing, yet v4 stood committed with `git_commit_hash: null` (never a parent or baseline
    after that) and a retry was refused as 'identical to v4'. Now v4 is complete in memory and
    git and the error says so."""
    from kernelscope.daemon.engine.store.errors import StoreError, StoreWriteFailed

    ws, db = workspace

    def disk_full(self: ExperimentStore, exp: object) -> None:
        raise StoreWriteFailed("could not write to exp.sqlite: no space left on the device (disk full)")

    monkeypatch.setattr(ExperimentStore, "create_experiment", disk_full)
    (ws / "kernel.py").write_text(kernel_with_block(KERNEL, 4096))
    with pytest.raises(StoreError, match=r"v4 is recorded in v4\.json and committed .*disk full"):
        iterate(ws, db, "block_size")
    git = Git(ws)
    record = json.loads((ws / "memory" / "v4.json").read_text())
    assert record["git_commit_hash"] and git.show_file(record["git_commit_hash"], ws / "kernel.py")
    assert git.run("status", "--porcelain") == ""  # HEAD's record carries the hash too


def test_iterate_in_a_workspace_below_the_repositorys_top(tmp_path: Path) -> None:
    """A workspace in a subfolder of a git repository (a monorepo of kernels): the commit names
    its files from the repository's top (before, `git add sub/kernel.py` ran in sub/ and failed
    after the measurement)."""
    repo = tmp_path / "repo"
    ws = repo / "kernels" / "vector_add"
    shutil.copytree(EXAMPLES / "vector_add", ws, ignore=shutil.ignore_patterns("memory", "__pycache__"))
    subprocess.run(["git", "init", "-q"], cwd=repo, check=True)
    result = iterate(ws, str(tmp_path / "exp.sqlite"), "baseline")
    assert result.version == "v0" and result.passed
    git = Git(ws)
    files = git.run("show", "--name-only", "--format=", str(result.commit)).split()
    assert files == ["kernels/vector_add/kernel.py", "kernels/vector_add/memory/v0.json"]


def agent_script(tmp_path: Path, body: str) -> str:
    script = tmp_path / "agent.py"
    script.write_text(textwrap.dedent(body))
    return f"{sys.executable} {script}"


HONEST = f"""
    import os, subprocess, sys, re
    ws = os.environ["KERNELSCOPE_WORKSPACE"]
    assert os.environ["KERNELSCOPE_NEXT_VERSION"] == "v4"
    brief = open(os.environ["KERNELSCOPE_BRIEF"]).read()
    assert "Forbidden" in brief and "bandwidth >= 4.32TB/s" in brief
    path = os.path.join(ws, "kernel.py")
    source = open(path).read()
    source = re.sub(r"BLOCK_SIZE=\\d+\\)", "BLOCK_SIZE=4096)", source)
    source = re.sub(r"cdiv\\(n_elements, \\d+\\)", "cdiv(n_elements, 4096)", source)
    open(path, "w").write(source)
    print("agent: trying BLOCK_SIZE=4096", flush=True)
    sys.exit(subprocess.call([{KELNERSCOPE!r}, "iterate", "-w", ws, "-a", "block_size", "-d", "BLOCK 4096",
                              "--mode", "interpreter", "--seeds", "1", "--db", os.environ["DB"]]))
"""


def restart(ws: Path, db: str, agent: str, timeout: float = 120.0, lines: list[str] | None = None):  # type: ignore[no-untyped-def]

    previous = os.environ.get("DB")
    os.environ["DB"] = db  # the agent scripts' store (set for the run only: no leak to later tests)
    try:
        return PartialRestart(
            ws, RestartOptions(agent=agent, seed=1, timeout_s=timeout, brief_dir=ws.parent.parent / "briefs")
        ).run(on_output=(lines.append if lines is not None else None))
    finally:
        if previous is None:
            os.environ.pop("DB", None)
        else:
            os.environ["DB"] = previous


def test_honest_agent_completes(workspace: tuple[Path, str], tmp_path: Path) -> None:
    ws, db = workspace
    lines: list[str] = []
    report = restart(ws, db, agent_script(tmp_path, HONEST), lines=lines)
    assert report.violations == [] and report.completed, report.violations
    assert len(report.mask.masked) == 1 and report.mask.best_version == "v3"
    assert report.next_version == "v4" and report.agent_exit_code == 0
    assert "agent: trying BLOCK_SIZE=4096" in lines  # streamed
    assert report.latest_memory_path and report.latest_memory_path.endswith("v4.json")
    assert report.gate_result == "PASS" and report.action_taken == "block_size" and report.commit_hash
    assert report.stop_conditions_met is None  # an interpreter run: not evaluated, so not "not met"
    brief = Path(report.brief_path).read_text()
    offered = brief.split("## Unmasked memory")[1].split("##")[0]
    assert f"{report.mask.masked[0]}.json" not in offered and "v3.json" in offered  # masked one not offered


def test_a_restart_outside_git_masks_and_launches(workspace: tuple[Path, str], tmp_path: Path) -> None:
    """A workspace outside git whose records still name commits (copied without .git, unpacked
    from an archive): the restart stopped before masking with `git rev-parse --show-toplevel
    failed: not a git repository` (the baseline's kernel was asked of git). Without git there
    is no baseline to compare kernel.py with; the rest of the restart runs."""
    ws, db = workspace
    shutil.rmtree(ws / ".git")
    lines: list[str] = []
    report = restart(ws, db, agent_script(tmp_path, "print('started', flush=True)"), lines=lines)
    assert lines == ["started"] and len(report.mask.masked) == 1 and report.mask_commit is None
    assert json.loads((ws / "memory" / f"{report.mask.masked[0]}.json").read_text())["masked"] is True
    assert report.violations == ["v4 was not written: the agent returned no iteration"], report.violations


# What the agent sees when it starts: the state of memory/ in git, and the last commit.
SEES_GIT = """
    import os, subprocess
    ws = os.environ["KERNELSCOPE_WORKSPACE"]
    git = lambda *a: subprocess.run(["git", *a], cwd=ws, capture_output=True, text=True).stdout.strip()
    print("status:", git("status", "--porcelain", "--", "memory"), flush=True)
    print("last commit:", git("log", "-1", "--format=%s"), flush=True)
"""


def test_the_restart_commits_its_mask_and_nothing_else(workspace: tuple[Path, str], tmp_path: Path) -> None:
    """The mask was left as uncommitted changes for good (the fresh agent's iterate commits only
    kernel.py and its record): a `git checkout .` or `git stash` by the agent or the user
    silently unmasked the records the restart hides, and a `git commit -a` swept them into
    some other commit. The restart now commits exactly the files its mask wrote, before the
    agent starts; a user's edit to another record stays theirs, uncommitted."""
    ws, db = workspace
    git = Git(ws)
    v0 = ws / "memory" / "v0.json"
    v0.write_text(json.dumps({**json.loads(v0.read_text()), "reviewer_note": "check later"}, indent=2))
    user_edit = v0.read_text()
    head = git.head()
    lines: list[str] = []
    report = restart(ws, db, agent_script(tmp_path, SEES_GIT), lines=lines)
    masked, noted = report.mask.masked, report.mask.pitfall_recorded_in
    assert len(masked) == 1 and noted == "v3"
    mask_files = sorted(f"memory/{v}.json" for v in [*masked, noted])
    subject = f"partial restart: masked {masked[0]} (seed 1)"
    assert lines == ["status: M memory/v0.json", f"last commit: {subject}"]  # before the agent ran
    assert git.run("rev-list", f"{head}..HEAD").splitlines() == [report.mask_commit]
    assert git.run("show", "--name-only", "--format=%s", "HEAD").split("\n") == [subject, "", *mask_files]
    assert git.run("status", "--porcelain", "--", "memory") == "M memory/v0.json"
    assert v0.read_text() == user_edit and git.run("diff", "--cached") == ""
    git.run("checkout", "--", "memory")  # what unmasked the records before
    assert json.loads(git.show_file("HEAD", ws / "memory" / f"{masked[0]}.json") or "{}")["masked"] is True
    assert json.loads((ws / "memory" / f"{masked[0]}.json").read_text())["masked"] is True


def test_a_restart_committing_its_mask_during_an_iterations_commit_leaves_both_whole(
    workspace: tuple[Path, str], tmp_path: Path
) -> None:
    """An agent's `kernelscope iterate` committing its version while a partial restart (the
    editor's, or the CLI's) commits its mask: git moved HEAD under the iteration's commit,
    which then failed ("cannot lock ref 'HEAD'"), so a measured iteration was thrown away.
    kernelscope's commits of one repository now take turns: each holds exactly its own files,
    and neither fails. (The iteration's pre-commit hook waits for the mask's commit, which
    under the lock comes only after it, so the hook gives up waiting.)"""
    ws, db = workspace
    git = Git(ws)
    (ws / "kernel.py").write_text(kernel_with_block(KERNEL, 2048))
    in_commit = tmp_path / "iteration-committing"
    hook = ws / ".git" / "hooks" / "pre-commit"
    hook.write_text(
        "#!/bin/sh\n"
        f"[ -e {in_commit} ] && exit 0\n"
        f"touch {in_commit}\n"
        "for i in $(seq 80); do\n"
        "  git log -1 --format=%s HEAD | grep -q '^partial restart' && exit 0\n"
        "  sleep 0.1\n"
        "done\n"
    )
    hook.chmod(0o755)
    outcome: dict[str, object] = {}
    iteration = started(lambda: iterate(ws, db, "block_size"), outcome, "result")
    while not in_commit.exists() and iteration.is_alive():
        time.sleep(0.05)
    report = restart(ws, db, agent_script(tmp_path, "print('started', flush=True)"))
    iteration.join(300)
    result = outcome["result"]
    assert not isinstance(result, Exception), result
    assert result.version == "v4" and report.mask_commit  # type: ignore[attr-defined]
    files = git.run("show", "--name-only", "--format=", str(result.commit)).split()  # type: ignore[attr-defined]
    assert files == ["kernel.py", "memory/v4.json"]
    mask_files = sorted(f"memory/{v}.json" for v in [*report.mask.masked, report.mask.pitfall_recorded_in])
    assert git.run("show", "--name-only", "--format=", report.mask_commit).split() == mask_files
    for version in report.mask.masked:
        assert json.loads(git.show_file("HEAD", ws / "memory" / f"{version}.json") or "{}")["masked"] is True
    assert git.run("status", "--porcelain") == ""


def test_an_iteration_measuring_across_a_restart_is_not_credited_to_its_agent(
    workspace: tuple[Path, str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An iterate of the run before a partial restart (the old agent's, a person's) measured
    while the restart masked half of the memory and wrote a brief saying "first iteration: v4".
    It recorded v4 once the restart released the lock, so the fresh agent's iteration became
    v5, and the restart's report gave the old iteration's v4 as the agent's result. An
    iteration a restart overtook now records nothing and says why; the agent's is v4."""
    from kernelscope.daemon.engine import DataError
    from kernelscope.daemon.engine.workflows import iterate as iterate_module

    ws, db = workspace
    (ws / "kernel.py").write_text(kernel_with_block(KERNEL, 2048))
    measured, recorded = threading.Event(), threading.Event()
    release = threading.Event()
    real_bench = iterate_module.run_benchmark

    def measuring(request: object, cancel: object = None) -> object:
        result = real_bench(request, cancel=cancel)  # type: ignore[arg-type]
        measured.set()
        release.wait(120)  # (the restart masks and writes its brief meanwhile)
        return result

    monkeypatch.setattr(iterate_module, "run_benchmark", measuring)
    outcome: dict[str, object] = {}
    real_brief = PartialRestart._brief

    def brief_then_old_iteration_records(self: PartialRestart, *args: object) -> object:
        made = real_brief(self, *args)  # type: ignore[arg-type]
        release.set()  # the lock is free: the old iteration records now, before the agent runs
        assert recorded.wait(120)
        return made

    monkeypatch.setattr(PartialRestart, "_brief", brief_then_old_iteration_records)
    thread = started(lambda: iterate(ws, db, "block_size"), outcome, "old iteration", then=recorded.set)
    assert measured.wait(300)
    report = restart(ws, db, agent_script(tmp_path, HONEST))
    thread.join(60)
    assert report.next_version == "v4"
    error = outcome["old iteration"]
    assert isinstance(error, DataError), error
    assert "partial restart" in str(error) and "nothing was recorded" in str(error), error
    record = json.loads((ws / "memory" / "v4.json").read_text())
    assert record["optimization"]["action_description"] == "BLOCK 4096"  # the agent's, as briefed
    assert not (ws / "memory" / "v5.json").exists()
    assert report.completed and report.latest_memory_path.endswith("v4.json"), report.violations  # type: ignore[union-attr]
    assert Git(ws).run("status", "--porcelain") == ""


def test_an_iteration_started_after_a_restarts_mask_leaves_its_agent_the_promised_version(
    workspace: tuple[Path, str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A person's iterate (the CLI, the editor's) started once the restart had masked and
    written the brief that says "first iteration: v4", before the agent started: it read the
    restart's mark as there when it started, so nothing refused it, and it recorded v4; the
    agent's own iteration became v5 and the report credited the wrong measurement. While a
    restart runs, its promised version is its agent's: any other iteration is refused, naming
    the restart, and the agent's iteration is v4."""
    from kernelscope.daemon.engine import DataError

    ws, db = workspace
    (ws / "kernel.py").write_text(kernel_with_block(KERNEL, 2048))
    outcome: dict[str, object] = {}
    real_brief = PartialRestart._brief

    def brief_then_another_iteration(self: PartialRestart, *args: object) -> object:
        made = real_brief(self, *args)  # type: ignore[arg-type]
        try:  # (the mask made and its lock released; the agent not started yet)
            outcome["other"] = iterate(ws, db, "block_size")
        except Exception as exc:
            outcome["other"] = exc
        return made

    monkeypatch.setattr(PartialRestart, "_brief", brief_then_another_iteration)
    report = restart(ws, db, agent_script(tmp_path, HONEST))
    error = outcome["other"]
    assert isinstance(error, DataError), error
    assert "partial restart" in str(error) and "v4" in str(error) and "nothing was recorded" in str(error)
    assert "nothing was measured" in str(error)  # refused when it started: no GPU time spent
    record = json.loads((ws / "memory" / "v4.json").read_text())
    assert record["optimization"]["action_description"] == "BLOCK 4096"  # the agent's, as briefed
    assert not (ws / "memory" / "v5.json").exists()
    assert report.completed and report.latest_memory_path.endswith("v4.json"), report.violations  # type: ignore[union-attr]
    (ws / "kernel.py").write_text(kernel_with_block(KERNEL, 2048))
    after = iterate(ws, db, "block_size")  # the restart ended: iterations record again
    assert after.version == "v5", after


def test_a_second_restart_while_the_first_runs_is_refused_before_it_masks(
    workspace: tuple[Path, str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A second partial restart of the workspace while the first's agent works: its mask gave
    the first's agent's version to its own agent (and the first's agent was refused at its
    end, the mark changed). It is refused before it masks anything, naming why."""
    from kernelscope.daemon.engine import DataError

    ws, db = workspace
    outcome: dict[str, object] = {}
    real_brief = PartialRestart._brief

    def brief_then_a_second_restart(self: PartialRestart, *args: object) -> object:
        made = real_brief(self, *args)  # type: ignore[arg-type]
        if "second" not in outcome:
            outcome["second"] = None  # (the second's own brief does not start a third)
            masked = sorted(
                p.name for p in (ws / "memory").glob("v*.json") if json.loads(p.read_text()).get("masked")
            )
            try:
                outcome["second"] = restart(ws, db, agent_script(tmp_path, HONEST))
            except Exception as exc:
                outcome["second"] = exc
            outcome["masked"] = masked == sorted(
                p.name for p in (ws / "memory").glob("v*.json") if json.loads(p.read_text()).get("masked")
            )
        return made

    monkeypatch.setattr(PartialRestart, "_brief", brief_then_a_second_restart)
    report = restart(ws, db, agent_script(tmp_path, HONEST))
    error = outcome["second"]
    assert isinstance(error, DataError) and "a partial restart (kernelscope restart) is running" in str(error)
    assert "refusing to restart, nothing was changed" in str(error), error
    assert outcome["masked"]  # the second masked nothing
    assert report.completed and report.latest_memory_path.endswith("v4.json"), report.violations  # type: ignore[union-attr]


SCRUBBED = f"""
    import os, re, subprocess, sys
    ws = os.environ["KERNELSCOPE_WORKSPACE"]
    brief = open(os.environ["KERNELSCOPE_BRIEF"]).read()
    # a shell that does not pass the environment on (Codex's shell_environment_policy "core",
    # a container): the agent gives the id its brief names
    env = {{k: v for k, v in os.environ.items() if k != "KERNELSCOPE_RESTART_ID"}}
    given = re.search(r"add `--restart-id (\\w+)`", brief)
    path = os.path.join(ws, "kernel.py")
    source = open(path).read()
    source = re.sub(r"BLOCK_SIZE=\\d+\\)", "BLOCK_SIZE=4096)", source)
    source = re.sub(r"cdiv\\(n_elements, \\d+\\)", "cdiv(n_elements, 4096)", source)
    open(path, "w").write(source)
    command = [{KELNERSCOPE!r}, "iterate", "-w", ws, "-a", "block_size", "-d", "BLOCK 4096",
               "--mode", "interpreter", "--seeds", "1", "--db", os.environ["DB"]]
    if os.environ.get("WITH_ID"):
        command += ["--restart-id", given.group(1)]
    sys.exit(subprocess.call(command, env=env))
"""


@pytest.mark.parametrize("with_id", [False, True])
def test_an_agent_whose_shell_drops_the_environment_records_with_the_briefs_restart_id(
    workspace: tuple[Path, str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch, with_id: bool
) -> None:
    """An agent whose shell does not pass KERNELSCOPE_RESTART_ID on (found by the review) was
    refused its own version, told to wait for the agent it is. The brief names the id and the
    `--restart-id` option; the refusal names the variable, the restart's id and the one the
    iteration carried. Given the id, the agent records v4."""
    ws, db = workspace
    (ws / "kernel.py").write_text(kernel_with_block(KERNEL, 2048))
    if with_id:
        monkeypatch.setenv("WITH_ID", "1")
    lines: list[str] = []
    report = restart(ws, db, agent_script(tmp_path, SCRUBBED), lines=lines)
    if with_id:
        assert report.completed and report.latest_memory_path.endswith("v4.json"), report.violations  # type: ignore[union-attr]
        return
    assert not report.completed and not (ws / "memory" / "v4.json").exists()
    said = " ".join(" ".join(lines).split())
    assert "KERNELSCOPE_RESTART_ID=" in said and "--restart-id" in said, said[-1500:]
    assert "this iteration carried none" in said, said[-1500:]


def test_a_mask_half_while_a_restart_runs_is_refused(
    workspace: tuple[Path, str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A mask-half (the memory command, another daemon's maskHalf) while a restart's agent
    worked replaced the restart's mark, so its promise was gone: a person's iterate recorded
    the agent's version and the report credited it to the agent (found by the review). It is
    refused while the restart runs, nothing changed, and the agent records its version."""
    from kernelscope.daemon.engine import DataError

    ws, db = workspace
    for block in (2048, 512):  # more history: v4, v5 (a mask-half would mask something)
        (ws / "kernel.py").write_text(kernel_with_block(KERNEL, block))
        iterate(ws, db, "block_size")
    outcome: dict[str, object] = {}
    real_brief = PartialRestart._brief

    def brief_then_a_mask_half(self: PartialRestart, *args: object) -> object:
        made = real_brief(self, *args)  # type: ignore[arg-type]
        before = {p.name: p.read_bytes() for p in (ws / "memory").iterdir()}
        mark = self.ws.memory.mask_half_mark()
        try:
            outcome["mask"] = self.ws.memory.mask_half(None, seed=3)
        except Exception as exc:
            outcome["mask"] = exc
        outcome["unchanged"] = before == {p.name: p.read_bytes() for p in (ws / "memory").iterdir()}
        outcome["mark kept"] = mark == self.ws.memory.mask_half_mark()
        return made

    monkeypatch.setattr(PartialRestart, "_brief", brief_then_a_mask_half)
    report = restart(ws, db, agent_script(tmp_path, HONEST.replace('== "v4"', '== "v6"')))
    error = outcome["mask"]
    assert isinstance(error, DataError) and "refusing to mask half of the memory" in str(error), error
    assert outcome["unchanged"] and outcome["mark kept"]
    assert report.completed and report.latest_memory_path.endswith("v6.json"), report.violations  # type: ignore[union-attr]


def test_a_mask_half_waits_for_an_iteration_recording(
    workspace: tuple[Path, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """`kernelscope memory mask-half` (and the editor's maskHalf: the same MemoryManager
    call) between an iteration's restart check and its record: it took no iteration lock, so
    it masked and gave v4 as the next version while the iteration, its check passed, then
    recorded v4. It now waits for the iteration's write phase, as a restart does."""
    from kernelscope.daemon.engine.memory import atomic_io
    from kernelscope.daemon.engine.workflows import iterate as iterate_module
    from kernelscope.daemon.engine.workspace.workspace import Workspace

    ws, db = workspace
    (ws / "kernel.py").write_text(kernel_with_block(KERNEL, 2048))
    checked, go, mask_waits = threading.Event(), threading.Event(), threading.Event()
    real_check, real_lock = iterate_module.refuse_if_restarted, atomic_io.workspace_lock

    def check_then_pause(*args: object) -> None:
        real_check(*args)  # type: ignore[arg-type]
        checked.set()  # (under the iteration lock, before the record)
        assert go.wait(120)

    def lock(lock_dir: Path, timeout: float = 60.0, name: str = atomic_io.LOCK_NAME) -> object:
        if name == atomic_io.ITERATION_LOCK_NAME and threading.current_thread().name == "mask":
            mask_waits.set()  # the iteration holds it: the mask goes on once it is released
        return real_lock(lock_dir, timeout, name)

    monkeypatch.setattr(iterate_module, "refuse_if_restarted", check_then_pause)
    monkeypatch.setattr(atomic_io, "workspace_lock", lock)
    outcome: dict[str, object] = {}
    iteration = started(lambda: iterate(ws, db, "block_size"), outcome, "iteration")
    assert checked.wait(300)
    memory = Workspace(ws).memory  # as the memory command does (daemon/cli/memory.py)
    mask = started(lambda: memory.mask_half(None, seed=1), outcome, "mask", name="mask", then=mask_waits.set)
    assert mask_waits.wait(60)  # waiting for the lock, or (before) done
    go.set()
    iteration.join(120)
    mask.join(120)
    result, masked = outcome["iteration"], outcome["mask"]
    assert result.version == "v4" and result.passed, result  # type: ignore[union-attr]
    assert masked.next_version == "v5", masked  # type: ignore[union-attr]
    assert memory.mask_half_mark()["next_version"] == "v5"  # type: ignore[index]


def test_a_refused_mask_commit_stops_the_restart_before_the_agent(
    workspace: tuple[Path, str], tmp_path: Path
) -> None:
    """A hook that refuses the mask's commit: the agent is not launched on a mask any git
    command could undo; the error says what happened, and the mask stays, named with the
    command that undoes it. Nothing is left staged."""
    from kernelscope.daemon.engine import DataError

    ws, db = workspace
    hook = ws / ".git" / "hooks" / "pre-commit"
    hook.write_text("#!/bin/sh\necho 'lint failed' >&2\nexit 1\n")
    hook.chmod(0o755)
    head, started = Git(ws).head(), tmp_path / "agent-started"
    agent = agent_script(tmp_path, f"open({str(started)!r}, 'w').close()")
    with pytest.raises(DataError) as raised:
        restart(ws, db, agent)
    masked = sorted(
        p.stem for p in (ws / "memory").glob("v*.json") if json.loads(p.read_text()).get("masked")
    )
    assert len(masked) == 1 and not started.exists()
    message = str(raised.value)
    assert (
        "could not be committed" in message
        and "lint failed" in message
        and "agent was not started" in message
    )
    assert f"kernelscope memory unmask --version {masked[0]}" in message
    assert Git(ws).head() == head and Git(ws).run("diff", "--cached") == ""


def test_a_restart_in_a_repository_git_refuses_masks_nothing(
    workspace: tuple[Path, str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A repository owned by another user (a container's mounted volume), which git refuses:
    the restart took it for git (its lock, its mark) but asked git "is this a repository?",
    heard no, masked half of the memory without committing it and launched an agent whose
    every iterate was then refused. It is refused before the mask, with git's reason."""
    from kernelscope.daemon.engine import DataError

    ws, db = workspace
    started = tmp_path / "agent-started"
    agent = agent_script(tmp_path, f"open({str(started)!r}, 'w').close()")
    monkeypatch.setenv("GIT_TEST_ASSUME_DIFFERENT_OWNER", "1")  # git's own switch for this case
    with pytest.raises(DataError, match="dubious ownership"):
        restart(ws, db, agent)
    assert not started.exists()
    assert not any(json.loads(p.read_text()).get("masked") for p in (ws / "memory").glob("v*.json"))


def test_a_restart_leaves_records_git_ignores_uncommitted(
    workspace: tuple[Path, str], tmp_path: Path
) -> None:
    """A repository that keeps memory/ out of git (.gitignore): the mask's commit named the
    ignored records and git refused it ('pathspec did not match'), so the restart stopped
    before the agent. An ignored record is not undone by `git checkout` or `git stash`:
    the mask is left as it is, uncommitted, and the agent launches."""
    ws, db = workspace
    git = Git(ws)
    (ws / ".gitignore").write_text("memory/\n")
    git.run("rm", "-r", "-q", "--cached", "memory")
    git.run("add", ".gitignore")
    git.run("commit", "-q", "-m", "memory/ stays out of git")
    head, started = git.head(), tmp_path / "agent-started"
    report = restart(ws, db, agent_script(tmp_path, f"open({str(started)!r}, 'w').close()"))
    assert len(report.mask.masked) == 1 and report.mask_commit is None and started.exists()
    assert git.head() == head and git.run("status", "--porcelain") == ""
    assert json.loads((ws / "memory" / f"{report.mask.masked[0]}.json").read_text())["masked"] is True


def test_unrelated_new_folders_beside_the_workspace_are_no_violation(
    workspace: tuple[Path, str], tmp_path: Path
) -> None:
    """The seed's workspace is /tmp/kernel_opt_<name>: while the agent works, compilers,
    caches and other programs make folders in /tmp. Only a folder that is a new workspace (named
    after this one, or holding kernel.py or memory/) breaks the rule; before, any new folder
    made an honest restart 'NOT completed'."""
    ws, db = workspace
    cache = "import os; os.mkdir(os.path.join(os.path.dirname(os.environ['KERNELSCOPE_WORKSPACE']), 'torchinductor_me'))"
    report = restart(ws, db, agent_script(tmp_path, cache + "\n" + textwrap.dedent(HONEST)))
    assert (ws.parent / "torchinductor_me").is_dir()
    assert report.violations == [] and report.completed, report.violations


MISBEHAVING = {
    "deletes a memory file": (
        "import os; os.remove(os.path.join(os.environ['KERNELSCOPE_WORKSPACE'], 'memory', 'v3.json'))",
        "memory files deleted: v3.json",
    ),
    "edits README thresholds": (
        "import os; p = os.path.join(os.environ['KERNELSCOPE_WORKSPACE'], 'README.md'); "
        "text = open(p).read(); open(p, 'w').write(text.replace('4.32TB/s', '1.0TB/s'))",
        "targets changed (README target",
    ),
    "masks v0": (
        "import os, json; p = os.path.join(os.environ['KERNELSCOPE_WORKSPACE'], 'memory', 'v0.json'); "
        "d = json.load(open(p)); d['masked'] = True; json.dump(d, open(p, 'w'))",
        "v0.json (the baseline) was masked",
    ),
    "reverts kernel.py to baseline": (
        "import os, subprocess; ws = os.environ['KERNELSCOPE_WORKSPACE']; "
        "import json; c = json.load(open(os.path.join(ws, 'memory', 'v0.json')))['git_commit_hash']; "
        "open(os.path.join(ws, 'kernel.py'), 'w').write(subprocess.check_output(['git', 'show', c + ':kernel.py'], cwd=ws, text=True))",
        "kernel.py was reverted to the baseline",
    ),
    "deletes the masked file": (  # (before: the verification crashed on it, no report at all)
        "import os, json, glob; [os.remove(p) for p in glob.glob(os.path.join("
        "os.environ['KERNELSCOPE_WORKSPACE'], 'memory', 'v*.json')) if json.load(open(p)).get('masked')]",
        "memory files deleted: v",
    ),
    "breaks the masked file": (
        "import os, json, glob; [open(p, 'w').write('{') for p in glob.glob(os.path.join("
        "os.environ['KERNELSCOPE_WORKSPACE'], 'memory', 'v*.json')) if json.load(open(p)).get('masked')]",
        "masked versions were made unreadable: v",
    ),
    "writes nothing": ("print('thinking...')", "v4 was not written"),
    "creates a new workspace": (
        "import os; os.mkdir(os.environ['KERNELSCOPE_WORKSPACE'] + '_iter4')",
        "new workspace directories created",
    ),
    "copies the kernel into a new folder": (
        "import os, shutil; ws = os.environ['KERNELSCOPE_WORKSPACE']; "
        "os.mkdir(os.path.join(os.path.dirname(ws), 'fresh')); "
        "shutil.copy(os.path.join(ws, 'kernel.py'), os.path.join(os.path.dirname(ws), 'fresh'))",
        "new workspace directories created next to this one: fresh",
    ),
}


@pytest.mark.parametrize("name", list(MISBEHAVING))
def test_misbehaving_agents_are_caught(workspace: tuple[Path, str], tmp_path: Path, name: str) -> None:
    ws, db = workspace
    code, expected = MISBEHAVING[name]
    report = restart(ws, db, agent_script(tmp_path, code))
    assert not report.completed
    assert any(expected in v for v in report.violations), report.violations
    if name == "deletes a memory file":
        assert not (ws / "memory" / "v3.json").exists()  # reported, not silently undone
    if name == "edits README thresholds":
        assert "1.0TB/s" in (ws / "README.md").read_text()


def test_hanging_agent_is_stopped(workspace: tuple[Path, str], tmp_path: Path) -> None:
    ws, db = workspace
    report = restart(
        ws, db, agent_script(tmp_path, "import time\nwhile True:\n    time.sleep(1)\n"), timeout=3
    )
    assert report.agent_timed_out and not report.completed
    assert "ran past its 3 s limit" in report.violations[0]


@pytest.mark.parametrize("agent", ["no-such-agent-xyz {brief}", "./agents/missing.sh"])
def test_restart_with_an_agent_that_cannot_start_changes_nothing(
    workspace: tuple[Path, str], agent: str
) -> None:
    """A mistyped agent command: before, half of the memory was masked (and the restart noted
    in a record) and then the launch died with a FileNotFoundError traceback; a second try
    masked another half. Now it is refused first, naming the program; nothing is masked."""
    from kernelscope.daemon.engine import UsageError

    ws, db = workspace
    before = {p.name: p.read_text() for p in (ws / "memory").glob("v*.json")}
    with pytest.raises(UsageError, match="cannot start the agent"):
        restart(ws, db, agent)
    assert {p.name: p.read_text() for p in (ws / "memory").glob("v*.json")} == before


def test_restart_with_an_agent_found_but_not_runnable_reports_it(
    workspace: tuple[Path, str], tmp_path: Path
) -> None:
    """An executable script without a #! line passes the check but cannot be executed: the
    report names it (before: an OSError traceback after the mask)."""
    ws, db = workspace
    script = tmp_path / "agent-no-shebang"
    script.write_text("echo hello\n")
    script.chmod(0o755)
    report = restart(ws, db, str(script))
    assert not report.completed and report.agent_exit_code is None
    assert report.violations[0].startswith("the agent could not be started: "), report.violations
    assert f"unmask {', '.join(report.mask.masked)}" in report.violations[0]


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM])
def test_an_interrupted_restart_stops_its_agent_and_reports(
    workspace: tuple[Path, str], tmp_path: Path, signum: int
) -> None:
    """Ctrl-C on `kernelscope restart`, or SIGTERM (an agent's Bash tool timing out): the agent
    runs in its own session, out of the terminal's reach. Before, it went on editing the
    workspace unwatched and no report said what had been masked; now it is stopped and the
    report is printed (not completed, the masked versions named)."""
    ws, db = workspace
    started = tmp_path / "agent.pid"
    body = f"import os, time\nopen({str(started)!r}, 'w').write(str(os.getpid()))\ntime.sleep(120)\n"
    proc = subprocess.Popen(
        [
            KELNERSCOPE,
            "restart",
            "-w",
            str(ws),
            "--json",
            "--seed",
            "1",
            "--agent",
            agent_script(tmp_path, body),
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "KERNELSCOPE_DB_URL": db},
    )
    for _ in range(600):  # until the agent runs (the CLI starts, masks, writes the brief)
        if started.is_file() and started.read_text():
            break
        time.sleep(0.1)
    agent = int(started.read_text())
    proc.send_signal(signum)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 3, (proc.returncode, err)
    report = json.loads(out)
    assert "the agent was cancelled" in report["violations"] and not report["completed"], report
    assert report["mask"]["masked"], report
    with pytest.raises(ProcessLookupError):  # gone (and reaped: no zombie either)
        os.kill(agent, 0)


def test_restart_cli_needs_an_agent(
    workspace: tuple[Path, str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ws, _ = workspace
    monkeypatch.setenv("KERNELSCOPE_CONFIG", str(tmp_path / "none.toml"))
    proc = subprocess.run([KELNERSCOPE, "restart", "-w", str(ws)], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 1 and "no agent command" in proc.stderr
    assert not any(json.loads(p.read_text()).get("masked") for p in (ws / "memory").glob("v*.json"))
    # the file's agent is validated as the daemon validates it: a list was an AttributeError
    # traceback from shlex
    (tmp_path / "none.toml").write_text('agent = ["claude", "-p"]\n')
    proc = subprocess.run([KELNERSCOPE, "restart", "-w", str(ws)], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stderr
    assert "invalid settings in the config file" in proc.stderr and "agent" in proc.stderr, proc.stderr
    assert not any(json.loads(p.read_text()).get("masked") for p in (ws / "memory").glob("v*.json"))
    # an unclosed quote: shlex's ValueError, a usage error naming the setting, nothing masked
    proc = subprocess.run(
        [KELNERSCOPE, "restart", "-w", str(ws), "--agent", "claude -p 'unclosed"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 1 and "the agent command" in proc.stderr, proc.stderr
    assert "not valid shell words" in proc.stderr and "Traceback" not in proc.stderr, proc.stderr
    assert not any(json.loads(p.read_text()).get("masked") for p in (ws / "memory").glob("v*.json"))


def test_the_baseline_is_recorded_as_exactly_one(workspace: tuple[Path, str]) -> None:
    """v0's score is 1.0 by definition; the interval of its speedup over PyTorch's reference
    was left beside it ([7.8e-05, 1.07e-04] in a demo's v0.json, not holding the 1.0): in its
    record and its experiment the baseline is now 1.0 with no interval, as every surface
    shows it (the table and the lens alike: tests/engine/test_history_demo.py)."""
    ws, db = workspace
    block = json.loads((ws / "memory" / "v0.json").read_text())["kernelscope"]
    assert block["score_vs_v0"] == 1.0 and block["score_ci"] is None, block
    (experiment,) = ExperimentStore(db).list_experiments(memory_version="v0")
    assert experiment.score == 1.0 and experiment.metrics["score_ci"] is None, experiment.metrics


def test_each_demo_step_runs_fewer_programs_over_no_more_lanes() -> None:
    """Under the interpreter a program costs about c0 + c1 * BLOCK_SIZE, masked lanes
    included, with c0/c1 the machine's own: a step that makes fewer programs over no more lanes
    is faster on every machine; one that adds lanes may not be. The old last step, 1024 -> 4096,
    ran n=5000 as 2 programs over 8192 lanes (5 over 5120 before): a CI runner measured it
    slower (v2 17.30x, v3 16.77x), and the demo's restart then masked nothing."""
    import ast

    from kernelscope.daemon.engine.workflows.demo import STEPS

    reference = ast.parse((EXAMPLES / "vector_add" / "reference.py").read_text())
    (configs,) = [
        ast.literal_eval(node.value)
        for node in reference.body
        if isinstance(node, ast.Assign) and getattr(node.targets[0], "id", "") == "CPU_CONFIGS"
    ]
    for config in configs:
        blocks = [block for block, _category, _description in STEPS]
        programs = [-(-config["n"] // block) for block in blocks]
        lanes = [-(-config["n"] // block) * block for block in blocks]
        assert programs == sorted(set(programs), reverse=True), (config, programs)  # strictly fewer
        assert max(lanes) <= min(lanes) * 1.05, (config, lanes)  # (64's 5056 and the rest's 5120)


def test_demo(tmp_path: Path) -> None:
    """The demo's order holds on every machine (demo.py's docstring: each step makes fewer
    programs over the same lanes), so its restart masks one of v1 and v2 every time. With the
    old last step, BLOCK_SIZE 1024 -> 4096, a CI runner measured v2 best (17.30x against 16.77x
    v3): v1 alone was a candidate, nothing was masked and no mask commit was made."""
    result = run_demo(tmp_path / "demo", None, mode="interpreter")
    assert [i.version for i in result.iterations] == ["v0", "v1", "v2", "v3"]
    assert all(i.passed for i in result.iterations)
    scores = [i.score or 0.0 for i in result.iterations]
    assert scores[0] == 1.0 and scores[0] < scores[1] < scores[2] < scores[3], scores
    # the mask's best is the lowest recorded latency of the largest configuration: v3's is about
    # a third of v2's (an absolute time, which other processes on the machine can stretch, not
    # an in-run ratio; one run on a shared 2-core machine measured v3 at 0.8x v2's instead)
    mask = result.mask
    assert mask is not None and mask.best_version == "v3" and mask.latest_passing_version == "v3"
    assert mask.candidates == ["v1", "v2"] and mask.masked == ["v2"], mask  # (the demo's seed 0)
    masked = "v2"
    git = Git(result.workspace)
    assert git.run("log", "-1", "--format=%s").strip().startswith(f"partial restart: masked {masked}")
    assert json.loads((result.workspace / "memory" / f"{masked}.json").read_text())["masked"] is True
    lens = result.kernel_lenses["add_kernel"]
    assert lens.startswith(f"best {scores[3]:.2f}x v3 |") and "3 runs (+1 masked), 0 failed" in lens, lens
    assert "next v4 | 1 masked" in result.file_lens and "interpreter runs only" in result.file_lens
    assert git.run("status", "--porcelain") == ""


def test_unnamed_first_iteration_is_the_baseline_in_both_records(tmp_path: Path) -> None:
    """Without --action-category, v0 is "baseline" in its memory record and its experiment
    alike (the experiment used to be built after v0.json existed and said "unspecified")."""
    import subprocess

    from kernelscope.daemon.engine.store import ExperimentStore
    from tests.reliability.test_fault_injection import CLI, _env, make_gate_only_workspace

    ws = make_gate_only_workspace(tmp_path, iterations=0, copies_up_to=-1)
    db = tmp_path / "exp.sqlite"
    subprocess.run(
        [*CLI, "iterate", "-w", str(ws), "--db", str(db)], check=True, capture_output=True, env=_env(tmp_path)
    )
    record = json.loads((ws / "memory" / "v0.json").read_text())
    assert record["optimization"]["action_category"] == "baseline"
    (experiment,) = ExperimentStore(str(db)).list_experiments()
    assert experiment.change_summary.startswith("baseline: ")


def test_iterate_refuses_code_already_recorded(workspace: tuple[Path, str], tmp_path: Path) -> None:
    """kernel.py back to v1's code: refused before any GPU time, naming v1 (nothing is ever
    deleted, so a second record would stay); --force records it anyway. Without what changed
    and why, the CLI asks (or, off a terminal, refuses)."""
    ws, db = workspace
    (ws / "kernel.py").write_text(kernel_with_block(KERNEL, 128))  # v1's code
    refused = subprocess.run(
        [str(KELNERSCOPE), "iterate", "-w", str(ws), "--db", db, "-a", "tiling", "-d", "again", "--json"],
        capture_output=True,
        text=True,
    )
    assert refused.returncode == 2, refused.stdout + refused.stderr
    assert "kernel.py is identical to v1" in json.loads(refused.stdout)["error"]["message"]
    assert not (ws / "memory" / "v4.json").exists()
    (ws / "kernel.py").write_text(kernel_with_block(KERNEL, 512))
    unsaid = subprocess.run(
        [str(KELNERSCOPE), "iterate", "-w", str(ws), "--db", db],
        capture_output=True,
        text=True,
        stdin=subprocess.DEVNULL,
    )
    assert unsaid.returncode == 1 and "--action-description" in unsaid.stderr, unsaid.stderr
    assert not (ws / "memory" / "v4.json").exists()
    (ws / "kernel.py").write_text(kernel_with_block(KERNEL, 128))
    forced = subprocess.run(
        [
            str(KELNERSCOPE),
            "iterate",
            "-w",
            str(ws),
            "--db",
            db,
            "-a",
            "tiling",
            "-d",
            "again",
            "--force",
            "--mode",
            "interpreter",
            "--seeds",
            "1",
            "--json",
        ],
        capture_output=True,
        text=True,
    )
    assert forced.returncode == 0 and json.loads(forced.stdout)["version"] == "v4", forced.stderr[-2000:]


def test_a_local_probe_writes_nothing_in_the_workspace_git_folder_included(
    workspace: tuple[Path, str],
) -> None:
    """The background probe a save starts runs kernel.py against the best recorded version,
    written out from its commit: into the system's temp folder, not under `.git/` (only a Ray
    probe, whose workers may be on other machines, needs the workspace's shared filesystem)."""
    from kernelscope.daemon.engine.workflows.probe import ProbeOptions, run_probe

    ws, _ = workspace
    (ws / "kernel.py").write_text(kernel_with_block(KERNEL, 512))

    def everything() -> dict[str, tuple[int, int]]:
        return {str(p.relative_to(ws)): (p.stat().st_mtime_ns, p.stat().st_size) for p in ws.rglob("*")}

    before = everything()
    result = run_probe(ws, ProbeOptions(mode="interpreter", seeds=1))
    assert result.passed, result.error
    assert result.baseline_version in {"v0", "v1", "v2", "v3"}  # the best passing one, by its score
    assert "kernel_opt_vector_add" not in result.baseline
    assert everything() == before


def test_the_record_hint_names_the_kernels_of_a_kernel_too_large_for_the_editor(tmp_path: Path) -> None:
    """The editor's reads stop at EDITOR_MAX_CHARS; iterate's own reads of kernel.py (the
    experiment's kernels, the `exp record` hint) are no editor's and read it whole: a large
    kernel.py is still filed under its kernels."""
    from kernelscope.daemon.engine.workflows.iterate import exp_record_command
    from kernelscope.daemon.engine.workspace.kernel_scan import EDITOR_MAX_CHARS

    kernel = (EXAMPLES / "vector_add" / "kernel.py").read_text()
    large = kernel + "TABLE = [" + "1, " * (EDITOR_MAX_CHARS // 3) + "]\n"
    record = {"version": "v2", "quality_gate": {"result": "PASS"}}
    command = exp_record_command(tmp_path, "sqlite:////tmp/other.sqlite", record, large)
    assert "--kernel add_kernel" in command and "--memory-version v2" in command, command


def test_a_restart_cancelled_while_it_waits_for_an_iteration_writes_nothing(
    workspace: tuple[Path, str], tmp_path: Path
) -> None:
    """A restart clicked while an agent's iterate was in its write phase waits for the
    iteration lock; Cancel pressed meanwhile was seen only once the agent ran: half the memory
    was masked, the mask committed and the agent launched, then killed. Now nothing is written."""
    from kernelscope.daemon.engine import Cancelled
    from kernelscope.daemon.engine.memory.atomic_io import iteration_lock

    ws, _db = workspace
    head = Git(ws).run("rev-parse", "HEAD").strip()
    memory = {p.name: p.read_bytes() for p in (ws / "memory").iterdir()}
    cancel, outcome = threading.Event(), dict[str, object]()
    options = RestartOptions(agent=agent_script(tmp_path, "print('started')"), seed=1, timeout_s=60)
    with iteration_lock(ws):  # an iteration writing
        restarting = started(lambda: PartialRestart(ws, options).run(cancel=cancel), outcome, "report")
        time.sleep(0.5)  # (the restart is waiting for the lock; if not yet, it finds cancel set)
        cancel.set()
    restarting.join(120)
    assert isinstance(outcome.get("report"), Cancelled), outcome
    assert Git(ws).run("rev-parse", "HEAD").strip() == head
    assert {p.name: p.read_bytes() for p in (ws / "memory").iterdir()} == memory


def test_a_mask_half_that_masks_nothing_refuses_no_iteration(workspace: tuple[Path, str]) -> None:
    """The memory command's mask-half (and the editor's) left its mark even when it masked
    nothing: no record changed and no run started, yet an iteration measuring at the time was
    refused, told "a partial restart happened". A restart's empty mask still leaves one (its
    agent starts at the next version); a plain one that masks nothing leaves none."""
    from kernelscope.daemon.engine import DataError
    from kernelscope.daemon.engine.workflows.iterate import refuse_if_restarted
    from kernelscope.daemon.engine.workspace.workspace import Workspace

    ws, _db = workspace
    memory = Workspace(ws).memory
    first = memory.mask_half(None, seed=1)
    assert first.masked, first  # two candidates: one masked
    mark = memory.mask_half_mark()
    assert mark is not None
    empty = memory.mask_half(None, seed=1)  # one candidate left: half of it is none
    assert empty.masked == [], empty
    refuse_if_restarted(memory, mark)  # the mark an iteration started with still stands
    assert mark["by"] == "mask-half"
    restart = memory.mask_half(None, seed=1, for_restart=True)
    assert restart.masked == [] and memory.mask_half_mark() not in (None, mark)
    with pytest.raises(DataError, match=r"a partial restart \(kernelscope restart\) masked nothing"):
        refuse_if_restarted(memory, mark)


def test_the_record_hint_gives_no_db_a_command_cannot_log_in_with(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The `exp record` hint a refused or cut-short iteration prints runs as printed: no --db
    for the store commands read without one (KERNELSCOPE_DB_URL here), and for another store
    with a password never its masked URL (`***` cannot log in), but the variable to export."""
    from kernelscope.daemon.engine.workflows.iterate import exp_record_command, store_note

    record = {"version": "v2", "quality_gate": {"result": "PASS"}}
    team = "postgresql+psycopg://kim:s3cret@db.team/exp"
    monkeypatch.setenv("KERNELSCOPE_DB_URL", "sqlite:////tmp/read-by-all.sqlite")
    read = exp_record_command(tmp_path, "sqlite:////tmp/read-by-all.sqlite", record, None)
    assert "--db" not in read and store_note("sqlite:////tmp/read-by-all.sqlite") == ""
    other = exp_record_command(tmp_path, "sqlite:////tmp/other.sqlite", record, None)
    assert other.endswith("--db sqlite:////tmp/other.sqlite")
    locked = exp_record_command(tmp_path, team, record, None)
    assert "***" not in locked and "s3cret" not in locked
    assert locked.endswith('--db "$KERNELSCOPE_DB_URL"') and "KERNELSCOPE_DB_URL exported" in store_note(team)


def test_iterate_says_at_its_start_which_stop_conditions_it_cannot_check(workspace: tuple[Path, str]) -> None:
    """A README bullet kernelscope skips (a decimal comma) is named once, before the iteration
    runs (stderr), and in --json in the result's `warnings`: an agent is not left iterating
    toward a target iterate never checks. Nothing else changes: the iteration records as before."""
    ws, db = workspace
    readme = ws / "README.md"
    readme.write_text(readme.read_text().replace("bandwidth >= 4.32TB/s", "bandwidth >= 4,32TB/s"))
    Git(ws).commit_paths([readme], "a decimal comma")
    said = "README line 32: stop condition skipped, kernelscope cannot check it"
    base = [KELNERSCOPE, "iterate", "-w", str(ws), "--db", db, "--mode", "interpreter", "--seeds", "1"]
    (ws / "kernel.py").write_text(kernel_with_block(KERNEL, 4096))
    text = subprocess.run([*base, "-a", "tiling", "-d", "4096"], capture_output=True, text=True)
    assert text.returncode == 0, text.stderr[-2000:]
    assert text.stderr.count(said) == 1 and "4,32 has a decimal comma" in text.stderr, text.stderr
    assert text.stderr.index(said) < text.stderr.index("interpreter mode"), text.stderr  # first, not after
    assert said not in text.stdout
    (ws / "kernel.py").write_text(kernel_with_block(KERNEL, 2048))
    as_json = subprocess.run([*base, "-a", "tiling", "-d", "2048", "--json"], capture_output=True, text=True)
    assert as_json.returncode == 0, as_json.stderr[-2000:]
    result = json.loads(as_json.stdout)
    assert result["version"] == "v5" and result["stop_conditions"] == []
    assert [w for w in result["warnings"] if w.startswith(said)] and said not in as_json.stderr, result[
        "warnings"
    ]


def _written(ws: Path, db: str) -> tuple[list[str], str, str, int, str]:
    """What an iteration writes: memory/'s files, HEAD, the side refs, the store's rows, and
    the next version."""
    from kernelscope.daemon.engine.memory.records import MemoryManager

    git = Git(ws)
    return (
        sorted(p.name for p in (ws / "memory").iterdir()),
        git.run("rev-parse", "HEAD"),
        git.run("for-each-ref", "refs/kernelscope"),
        len(ExperimentStore(db).list_experiments()),
        MemoryManager(ws).next_version(),
    )


def test_a_run_that_judged_nothing_records_nothing(workspace: tuple[Path, str]) -> None:
    """Two autotune configs under the interpreter (UNSUPPORTED: nothing judged the kernel):
    iterate wrote memory/v4.json with a FAIL gate, a buggy experiment, a failed-kernel ref and
    a `V4: UNSUPPORTED` commit, used up v4, and exited 3 (bench exits 2 for the same run). Now
    it records nothing, says what happened and how to go on, and exits with bench's status."""
    ws, db = workspace
    autotuned = KERNEL.replace(
        "@triton.jit",
        "@triton.autotune(configs=[triton.Config({}, num_warps=2), triton.Config({}, num_warps=4)],"
        ' key=["n_elements"])\n@triton.jit',
    )
    (ws / "kernel.py").write_text(autotuned)
    before = _written(ws, db)
    base = [KELNERSCOPE, "iterate", "-w", str(ws), "--db", db, "--mode", "interpreter", "--seeds", "1"]
    said = subprocess.run([*base, "-a", "tiling", "-d", "autotune"], capture_output=True, text=True)
    assert said.returncode == 2, said.stdout + said.stderr[-2000:]
    assert "UNSUPPORTED" in said.stderr and "autotunes over 2 configs" in said.stderr, said.stderr
    assert "Nothing was recorded" in said.stderr and "v4 is still the next version" in said.stderr
    assert _written(ws, db) == before
    as_json = subprocess.run(
        [*base, "-a", "tiling", "-d", "autotune", "--json"], capture_output=True, text=True
    )
    assert as_json.returncode == 2, as_json.stderr[-2000:]
    assert "Nothing was recorded" in json.loads(as_json.stdout)["error"]["message"]
    assert _written(ws, db) == before
    from kernelscope.daemon.engine import DataError

    with pytest.raises(DataError, match="UNSUPPORTED") as raised:  # (the daemon's job: its error)
        iterate(ws, db, "tiling")
    assert raised.value.exit_code == 2 and _written(ws, db) == before


def test_a_run_a_resource_cap_stopped_is_recorded_as_stopped_and_exits_4(workspace: tuple[Path, str]) -> None:
    """A kernel past the memory cap: judged, but no verdict on its answer. Recorded as before
    (a version, the failed kernel kept), its failure reason says STOPPED, and iterate exits 4
    as bench does (it exited 3, a wrong answer)."""
    ws, db = workspace
    too_big = "    out = torch.empty_like(x)\n    torch.empty(2**45, dtype=torch.float32)\n"
    (ws / "kernel.py").write_text(KERNEL.replace("    out = torch.empty_like(x)\n", too_big))
    run = [KELNERSCOPE, "iterate", "-w", str(ws), "--db", db, "--mode", "interpreter", "--seeds", "1"]
    said = subprocess.run([*run, "-a", "memory", "-d", "too big", "--json"], capture_output=True, text=True)
    assert said.returncode == 4, said.stdout + said.stderr[-2000:]
    result = json.loads(said.stdout)
    assert result["version"] == "v4" and result["verdict"] == "STOPPED (out_of_memory)", result
    record = json.loads((ws / "memory" / "v4.json").read_text())
    reason = record["quality_gate"]["failure_reason"]
    assert record["quality_gate"]["result"] == "FAIL" and reason.startswith("STOPPED (resource cap"), reason
    assert Git(ws).run("for-each-ref", "refs/kernelscope") != ""
