"""A workspace's own evaluator as the gate, and the rule that nothing kernelscope runs writes
into a workspace.

The gate here is a stand-in for atrex-kernel-agent's SOL-ExecBench `test_kernel.py` with the
same contract: it evaluates `kernel.py` on every workload of `workload.jsonl` (under the CPU
interpreter), writes `traces.jsonl` and, when everything passed, `submission.json` into its
working directory (and `memory/` without `--no-memory`), prints
`[test_kernel] RESULT_JSON={...}` and exits 1 when a workload failed.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import math
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import pytest_lsp
from lsprotocol import types
from pytest_lsp import ClientServerConfig, LanguageClient

from kernelscope.daemon.engine.run.gate_output import GateLines, configs_from_report, report_from
from kernelscope.daemon.engine.run.scratch import scratch_copy, workspace_files
from kernelscope.daemon.engine.workflows.git import Git
from tests.conftest import EXAMPLES
from tests.lsp.test_lsp import SERVER, init_params
from tests.support.bench_fixtures import jobs_folder
from tests.support.lsp_client import KernelscopeClient, _as_dict, make_client

pytestmark = pytest.mark.slow
VENV_BIN = Path(sys.executable).parent
# The environment kernelscope itself runs in (off the developer's own files), minus the bytecode
# switch some shells (and CI) set: kernelscope must keep __pycache__/ out of the workspace on its own.
CLEAN_ENV = {k: v for k, v in jobs_folder()[1].items() if k != "PYTHONDONTWRITEBYTECODE"}
GATE = "python test_kernel.py --no-memory"

WORKLOADS = [
    {"uuid": "3f2a9c4e-0b1d-4c7a-9e55-6d0c2b8a1f01", "axes": {"n": 1000}},
    {"uuid": "7b8e1d20-55aa-4f0e-8c3b-2e9f4a6c7d02", "axes": {"n": 2048}},
    {"uuid": "c41d6e9a-9f3b-4b21-a0d7-5e8b1c2f3a03", "axes": {"n": 4096}},
]

FAKE_TEST_KERNEL = '''"""Stand-in for a SOL-ExecBench test_kernel.py (same output contract, same files)."""
import argparse
import json
import math
import os
import sys
import time
from pathlib import Path

os.environ.setdefault("TRITON_INTERPRET", "1")
import torch


def timed(fn):
    start = time.perf_counter()
    out = fn()
    return out, (time.perf_counter() - start) * 1000.0


def geomean(xs):
    xs = [x for x in xs if x > 0]
    return math.exp(sum(math.log(x) for x in xs) / len(xs)) if xs else 0.0


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--workspace", default=".")
    parser.add_argument("--no-memory", action="store_true")
    args = parser.parse_args()
    ws = Path(args.workspace).resolve()
    sys.path.insert(0, str(ws))
    import kernel

    traces = []
    for line in (ws / "workload.jsonl").read_text().splitlines():
        wl = json.loads(line)
        g = torch.Generator().manual_seed(0)
        x, y = torch.randn(wl["axes"]["n"], generator=g), torch.randn(wl["axes"]["n"], generator=g)
        out, ms = timed(lambda: kernel.kernel_fn(x, y))
        ref, ref_ms = timed(lambda: x + y)
        abs_err = (out - ref).abs().max().item()
        rel_err = ((out - ref).abs() / ref.abs().clamp_min(1e-6)).max().item()
        ok = abs_err <= wl["correctness"]["max_atol"]
        evaluation = {"status": "PASSED" if ok else "INCORRECT_NUMERICAL",
                      "correctness": {"max_absolute_error": abs_err, "max_relative_error": rel_err}}
        if ok:
            evaluation["performance"] = {"latency_ms": ms, "reference_latency_ms": ref_ms,
                                         "speedup_factor": ref_ms / ms}
        traces.append({"workload": wl, "evaluation": evaluation})
    (ws / "traces.jsonl").write_text("".join(json.dumps(t) + "\\n" for t in traces))

    per_shape, speedups, failures = {}, [], []
    for t in traces:
        ev, wl = t["evaluation"], t["workload"]
        if ev["status"] == "PASSED":
            per_shape[wl["uuid"]] = ev["performance"]["latency_ms"] * 1000.0
            speedups.append(ev["performance"]["speedup_factor"])
        else:
            failures.append(f"{wl['uuid'][:8]}={ev['status']} ({wl['axes']})")
    s = {
        "total": len(traces),
        "passed": len(traces) - len(failures),
        "all_pass": not failures,
        "failures": failures,
        "latency_us_by_shape": per_shape,
        "latency_us_geomean": geomean(list(per_shape.values())),
        "latency_us_arith_mean": sum(per_shape.values()) / len(per_shape) if per_shape else 0.0,
        "speedup_vs_ref_geomean": geomean(speedups),
        "max_abs_err": max(t["evaluation"]["correctness"]["max_absolute_error"] for t in traces),
        "max_rel_err": max(t["evaluation"]["correctness"]["max_relative_error"] for t in traces),
    }
    print("[test_kernel] workloads PASSED:", s["passed"], "/", s["total"])
    print("[test_kernel] RESULT_JSON=" + json.dumps(s, sort_keys=True))
    if not args.no_memory:
        (ws / "memory").mkdir(exist_ok=True)
        (ws / "memory" / "v0.json").write_text(json.dumps({"version": "v0", "performance": s}))
    if s["all_pass"]:
        (ws / "submission.json").write_text(json.dumps({"sources": [{"path": "kernel.py"}]}))
        print(f"[test_kernel] ready-to-submit -> {ws / 'submission.json'}")
    return 0 if s["all_pass"] else 1


if __name__ == "__main__":
    raise SystemExit(main())
'''

# Wrong on the largest workload only: the gate must name that one failure.
BROKEN_ON_4096 = "    if n_elements >= 4096:\n        out[0] += 1.0\n    return out\n"


def tree_digest(root: Path) -> dict[str, str]:
    """Every entry under `root` but .git/: files by content, links by target, directories by
    presence (a new empty __pycache__/ counts), untracked and ignored ones included."""
    digest: dict[str, str] = {}
    for current, dirs, files in os.walk(root):
        here = Path(current)
        dirs[:] = [d for d in dirs if not (here == root and d == ".git")]
        for name in dirs:
            path = here / name
            digest[path.relative_to(root).as_posix()] = (
                "link:" + os.readlink(path) if path.is_symlink() else "dir"
            )
        for name in files:
            path = here / name
            key = path.relative_to(root).as_posix()
            if path.is_symlink():
                digest[key] = "link:" + os.readlink(path)
            else:
                stat = path.stat()
                content = hashlib.sha256(path.read_bytes()).hexdigest()
                digest[key] = f"{content}:{stat.st_mode:o}"
    return digest


def git_status(ws: Path) -> str:
    return subprocess.run(
        ["git", "status", "--porcelain"], cwd=ws, capture_output=True, text=True, check=True
    ).stdout


def make_gate_workspace(root: Path, with_reference: bool) -> Path:
    """examples/vector_add as an atrex-style git workspace with a SOL test_kernel.py, plus an
    untracked file, ignored outputs of an earlier manual run and an ignored runtime symlink."""
    ws = root / "kernel_opt_vector_add"
    shutil.copytree(EXAMPLES / "vector_add", ws)
    if not with_reference:
        (ws / "reference.py").unlink()  # SOL's reference lives inside the gate here
    (ws / "test_kernel.py").write_text(FAKE_TEST_KERNEL)
    (ws / "workload.jsonl").write_text(
        "".join(
            json.dumps({**w, "inputs": {"x": {"type": "random"}}, "correctness": {"max_atol": 1e-5}}) + "\n"
            for w in WORKLOADS
        )
    )
    (ws / ".gitignore").write_text(
        "__pycache__/\ntraces.jsonl\nsubmission.json\n*.ncu-rep\n/reference-projects\n"
    )
    files = sorted(p for p in ws.rglob("*") if p.is_file())
    git = Git(ws)
    git.init()
    git.commit_paths(files, "seed")
    (ws / "notes.txt").write_text("untracked, not ignored\n")
    (ws / "traces.jsonl").write_text('{"stale": "from an earlier manual run"}\n')
    (ws / "profile.ncu-rep").write_bytes(b"\x00binary profile")
    big = root / "reference-projects"  # the orchestrator's symlinked source trees: never copied
    big.mkdir()
    (big / "huge.txt").write_text("x" * 1000)
    (ws / "reference-projects").symlink_to(big)
    return ws


def kernelscope_bench(ws: Path, *args: str) -> tuple[int, dict]:
    env = {**CLEAN_ENV, "PATH": f"{VENV_BIN}{os.pathsep}{os.environ.get('PATH', '')}"}
    done = subprocess.run(
        [
            str(VENV_BIN / "kernelscope"),
            "bench",
            "-w",
            str(ws),
            "--mode",
            "interpreter",
            "--seeds",
            "1",
            *args,
        ],
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
        cwd=ws.parent,
    )
    assert done.stdout.strip(), done.stderr
    return done.returncode, json.loads(done.stdout)


def break_kernel(ws: Path) -> None:
    """The user edits and commits kernel.py (their own write, before kernelscope runs)."""
    path = ws / "kernel.py"
    path.write_text(path.read_text().replace("    return out\n", BROKEN_ON_4096))
    Git(ws).commit_paths([path], "broken on n=4096")


def test_atrex_gate_numbers_are_the_result_and_the_workspace_is_untouched(tmp_path: Path) -> None:
    ws = make_gate_workspace(tmp_path, with_reference=False)
    before, status = tree_digest(ws), git_status(ws)
    assert status == "?? notes.txt\n"

    code, result = kernelscope_bench(ws, "--gate-command", GATE, "--json")
    assert code == 0 and result["passed"] and result["status"] == "ok", result
    gate = result["gate"]
    assert gate["source"] == "test_kernel" and gate["all_pass"] is True and gate["total"] == 3
    latencies = gate["latency_us_by_shape"]
    assert sorted(latencies) == sorted(w["uuid"] for w in WORKLOADS)
    by_name = {c["name"]: c for c in result["configs"]}
    assert sorted(by_name) == sorted(latencies)
    for workload in WORKLOADS:
        config = by_name[workload["uuid"]]
        assert config["passed"] and config["params"] == workload["axes"]  # named from workload.jsonl
        assert math.isclose(config["candidate_ms"] * 1000.0, latencies[workload["uuid"]])
    geomean = math.exp(sum(math.log(v) for v in latencies.values()) / len(latencies))
    assert math.isclose(gate["latency_us_geomean"], geomean, rel_tol=1e-9)
    assert result["score"] == gate["speedup_vs_ref_geomean"] > 0
    assert result["baseline"] == "reference" and result["workspace"] == str(ws)
    assert gate["max_abs_err"] == 0.0 and gate["max_rel_err"] == 0.0
    assert any("measured by the workspace's test_kernel.py" in m for m in result["messages"])
    assert not any("correctness only" in m for m in result["messages"])
    assert tree_digest(ws) == before and git_status(ws) == status

    break_kernel(ws)
    before, status = tree_digest(ws), git_status(ws)
    code, failed = kernelscope_bench(ws, "--gate-command", GATE, "--json")
    assert code == 3 and not failed["passed"] and failed["status"] == "gate_failed"
    assert failed["error"]["kind"] == "gate_command"
    assert (
        "test_kernel.py failed 1 of 3 workloads: c41d6e9a=INCORRECT_NUMERICAL" in failed["error"]["message"]
    )
    assert failed["gate"]["failures"] == ["c41d6e9a=INCORRECT_NUMERICAL ({'n': 4096})"]
    assert failed["gate"]["passed"] == 2 and failed["gate"]["max_abs_err"] == pytest.approx(1.0, abs=0.1)
    broken = [c for c in failed["configs"] if not c["passed"]]
    assert [c["name"] for c in broken] == [WORKLOADS[2]["uuid"]]  # the uuid prefix resolved
    assert broken[0]["error"]["kind"] == "wrong_result" and broken[0]["params"] == {"n": 4096}
    assert sum(c["passed"] for c in failed["configs"]) == 2
    assert tree_digest(ws) == before and git_status(ws) == status


def test_gate_then_harness_and_a_plain_run_leave_the_tree_unchanged(tmp_path: Path) -> None:
    ws = make_gate_workspace(tmp_path, with_reference=True)
    before, status = tree_digest(ws), git_status(ws)

    code, plain = kernelscope_bench(ws, "--json")  # the harness runner alone
    assert code == 0 and plain["passed"], plain
    assert plain["workspace"] == str(ws) and plain["candidate"] == str(ws / "kernel.py")
    assert [c["name"] for c in plain["configs"]] == ["n=4096", "n=5000"]
    assert tree_digest(ws) == before and git_status(ws) == status  # no __pycache__/, nothing

    code, both = kernelscope_bench(ws, "--gate-command", GATE, "--json")
    assert code == 0 and both["passed"], both
    assert [c["name"] for c in both["configs"]] == ["n=4096", "n=5000"]  # the harness timed it
    assert both["gate"]["all_pass"] and len(both["gate"]["latency_us_by_shape"]) == 3
    assert both["messages"][0] == f"gate command passed: {GATE}"
    assert "measured by the workspace's test_kernel.py" in both["messages"][1]
    assert tree_digest(ws) == before and git_status(ws) == status


def test_a_traceback_names_the_workspace_not_the_scratch_copy(tmp_path: Path) -> None:
    ws = make_gate_workspace(tmp_path, with_reference=True)
    (ws / "kernel.py").write_text("def kernel_fn(x, y):\n    raise ValueError('boom')\n")
    before = tree_digest(ws)
    code, result = kernelscope_bench(ws, "--json", "--no-static-rules")  # no Triton: it must run
    assert code == 3 and result["error"]["kind"] == "exception"
    traceback = result["configs"][0]["error"]["traceback"]
    assert str(ws / "kernel.py") in traceback and "kernelscope-scratch-" not in traceback
    assert tree_digest(ws) == before


def test_scratch_copy_holds_what_git_shows(tmp_path: Path) -> None:
    ws = make_gate_workspace(tmp_path, with_reference=True)
    listed = workspace_files(ws)
    assert "notes.txt" in listed and "test_kernel.py" in listed and "memory/v0.json" in listed
    assert not {"traces.jsonl", "profile.ncu-rep", "reference-projects"} & set(listed)
    with scratch_copy(ws) as scratch:
        assert scratch.root.name == ws.name and not scratch.root.is_relative_to(ws)
        assert (scratch.root / "kernel.py").read_bytes() == (ws / "kernel.py").read_bytes()
        assert scratch.map(ws / "kernel.py") == scratch.root / "kernel.py"
        assert scratch.map(ws / "traces.jsonl") == ws / "traces.jsonl"  # not copied: the original
        env = scratch.env({"TRITON_CACHE_DIR": str(ws / ".triton")})
        assert env["PYTHONDONTWRITEBYTECODE"] == "1" and not env["TRITON_CACHE_DIR"].startswith(str(ws))
        parent = scratch.root.parent
    assert not parent.exists()
    plain = tmp_path / "plain"  # no git: everything but .git and caches
    shutil.copytree(EXAMPLES / "vector_add", plain)
    (plain / "__pycache__").mkdir()
    (plain / "__pycache__" / "kernel.cpython-311.pyc").write_bytes(b"")
    assert "__pycache__/kernel.cpython-311.pyc" not in workspace_files(plain)
    assert "kernel.py" in workspace_files(plain)


def test_a_workspace_named_cache_gets_its_scratch_copy(tmp_path: Path) -> None:
    """The scratch's private cache folder sits beside the copy: a workspace folder named `cache`
    collided with it (FileExistsError, no result)."""
    ws = tmp_path / "cache"
    shutil.copytree(EXAMPLES / "vector_add", ws)
    with scratch_copy(ws) as scratch:
        assert scratch.root.name == "cache" and (scratch.root / "kernel.py").is_file()
        assert scratch.cache.is_dir() and scratch.cache != scratch.root
        parent = scratch.root.parent
    assert not parent.exists()


def test_a_tracked_folder_now_a_file_is_copied_as_the_file(tmp_path: Path) -> None:
    """git's index still lists memory/v0.json after memory/ became a file: the copy made the
    file, then memory/ for the stale path, and `kernelscope bench` died with FileExistsError.
    The copy holds what the work tree has (the file), and the run goes on."""
    ws = tmp_path / "ws"
    shutil.copytree(EXAMPLES / "vector_add", ws)
    files = sorted(p for p in ws.rglob("*") if p.is_file())
    git = Git(ws)
    git.init()
    git.commit_paths(files, "seed")
    shutil.rmtree(ws / "memory")
    (ws / "memory").write_text("hi\n")
    assert "memory/v0.json" in workspace_files(ws)  # the index's stale path
    with scratch_copy(ws) as scratch:
        assert (scratch.root / "memory").read_text() == "hi\n"
        assert (scratch.root / "kernel.py").read_bytes() == (ws / "kernel.py").read_bytes()


# In the scratch copy, what a kernel's child does first on a GPU: Triton's compile cache stores a file.
TRITON_CACHE_USE = """
import subprocess, sys
from pathlib import Path
from kernelscope.daemon.engine.run.scratch import scratch_copy
with scratch_copy(Path(sys.argv[1])) as scratch:
    env = {**scratch.env(), "TRITON_INTERPRET": "1"}
    put = "from triton.runtime.cache import get_cache_manager as g; g('0' * 64).put(b'x', 'a.bin')"
    done = subprocess.run([sys.executable, "-c", put], env=env, capture_output=True, text=True)
    print(done.returncode, done.stderr[-500:])
"""


def test_a_read_only_home_gets_tritons_cache_in_the_scratch_folder(tmp_path: Path) -> None:
    """An agent's sandbox keeps the home read-only (Codex's workspace-write): Triton's default
    cache (~/.triton/cache) could not be made, so on a GPU every compile in the kernel's child
    died on the read-only file system. The child's TRITON_CACHE_DIR is now in the scratch
    folder. The home is bind-mounted read-only in a private mount namespace."""
    from tests.reliability.test_disk_full import _namespace_prefix

    prefix = _namespace_prefix(tmp_path)
    if prefix is None:
        pytest.skip("no mount namespace here (unshare)")
    ws = tmp_path / "ws"
    shutil.copytree(EXAMPLES / "vector_add", ws)
    home = tmp_path / "home"
    home.mkdir()
    env = {**{k: v for k, v in CLEAN_ENV.items() if not k.startswith("TRITON_")}, "HOME": str(home)}
    script = f'mount --bind {home} {home} && mount -o remount,bind,ro {home} && exec "$@"'
    done = subprocess.run(
        [*prefix, "bash", "-c", script, "-", sys.executable, "-c", TRITON_CACHE_USE, str(ws)],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert done.returncode == 0 and done.stdout.startswith("0 "), (done.stdout, done.stderr[-2000:])
    assert not (home / ".triton").exists()


def test_gate_lines_formats_and_hostile_values(tmp_path: Path) -> None:
    lines = GateLines()
    for line in (
        '{"passed": true}',
        "[my_eval] RESULT_JSON=not json",
        '[test_kernel] RESULT_JSON={"total": 2, "passed": 1, "all_pass": false, "failures": ["abc=TIMEOUT"],'
        ' "latency_us_by_shape": {"w1": 12.5, "w2": "fast", "w3": NaN}, "latency_us_geomean": true, "note": 1}',
        '{"passed": false}',
    ):
        lines.feed(line)
    assert lines.json_line == {"passed": False}
    assert lines.result_json is not None
    source, data = lines.result_json
    report = report_from("cmd", source, data, 1)
    assert report.source == "test_kernel" and report.latency_us_by_shape == {"w1": 12.5}
    assert report.latency_us_geomean is None and report.extra == {"note": 1}
    configs = configs_from_report(report, tmp_path)
    assert [(c.name, c.passed) for c in configs] == [("w1", True), ("abc", False)]
    assert configs[1].error is not None and configs[1].error.kind == "timeout"


# -- the editor's save-triggered probe ---------------------------------------------------------


@pytest.fixture
def probe_folder(tmp_path: Path) -> Path:
    folder = tmp_path / "folder"
    folder.mkdir()
    make_gate_workspace(folder, with_reference=True)
    return folder


@pytest_lsp.fixture(
    config=ClientServerConfig(client_factory=make_client, server_command=SERVER, server_env=CLEAN_ENV)
)
async def probe_client(lsp_client: KernelscopeClient, probe_folder: Path):
    lsp_client.finished = []

    @lsp_client.feature("kernelscope/jobFinished")
    def on_finished(*args: object) -> None:
        params = args[-1]
        lsp_client.finished.append(params if isinstance(params, dict) else _as_dict(params))

    @lsp_client.feature(types.WORKSPACE_CODE_LENS_REFRESH)
    def on_refresh(params: None) -> None:
        pass

    await lsp_client.initialize_session(init_params(probe_folder, "visual_studio_code"))
    yield
    await lsp_client.shutdown_session()


async def test_a_save_triggered_probe_leaves_the_tree_unchanged(
    probe_client: LanguageClient, probe_folder: Path
) -> None:
    ws = probe_folder / "kernel_opt_vector_add"
    before, status = tree_digest(ws), git_status(ws)
    uri = (ws / "kernel.py").as_uri()
    probe_client.text_document_did_save(
        types.DidSaveTextDocumentParams(text_document=types.TextDocumentIdentifier(uri=uri))
    )
    deadline = asyncio.get_running_loop().time() + 120
    while not probe_client.finished:  # type: ignore[attr-defined]
        assert asyncio.get_running_loop().time() < deadline, "no probe finished"
        await asyncio.sleep(0.1)
    finished = probe_client.finished[0]  # type: ignore[attr-defined]
    assert finished["kind"] == "benchmark" and finished["background"]
    assert finished["result"]["passed"] is True, finished
    assert tree_digest(ws) == before and git_status(ws) == status
