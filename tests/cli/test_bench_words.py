"""What `kernelscope bench` says is true: its GPU-timing flags exist and are passed to the
runner (`--cuda-graph` under the interpreter is said not to have been used), a missing
reference points to where the contract is documented, and a setup error is no FAIL verdict."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from kernelscope.daemon.cli.bench import print_result
from kernelscope.protocol.bench import (
    EXIT_RESOURCE,
    EXIT_SETUP,
    exit_status,
    verdict_headline,
    verdict_word,
    worst_exit_status,
)
from tests.conftest import TESTS
from tests.support.bench_fixtures import bench_result, make_workspace


def bench(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    exe = shutil.which("kernelscope", path=str(Path(sys.executable).parent))
    assert exe is not None
    return subprocess.run([exe, "bench", *args], capture_output=True, text=True, timeout=300, cwd=cwd)


def test_gpu_timing_flags_reach_the_runner_and_cuda_graph_is_not_silently_ignored(tmp_path: Path) -> None:
    """docs/harness.md named `--warmup-ms` and `--cuda-graph`; `bench` had neither ("No such
    option", exit 2): only the runner took them."""
    ws = make_workspace(tmp_path / "ws")
    done = bench(
        "-w", str(ws), "--mode", "interpreter", "--seeds", "1", "--warmup-ms", "5", "--cuda-graph", "--json"
    )
    assert done.returncode == 0, done.stdout + done.stderr
    result = json.loads(done.stdout)
    assert result["passed"] and result["mode"] == "interpreter"
    assert any(
        m.startswith("--cuda-graph was not used: the CPU interpreter has no CUDA graphs")
        for m in result["messages"]
    )
    plain = bench("-w", str(ws), "--mode", "interpreter", "--seeds", "1", "--json")
    assert not any("--cuda-graph" in m for m in json.loads(plain.stdout)["messages"])


def test_gpu_time_budgets_under_the_interpreter_are_said_not_to_have_been_used(tmp_path: Path) -> None:
    """`--warmup-ms`/`--rep-ms` were ignored without a word under the CPU interpreter (it times
    a fixed number of calls), where `--cuda-graph` said so."""
    ws = make_workspace(tmp_path / "ws")
    done = bench("-w", str(ws), "--mode", "interpreter", "--seeds", "1", "--warmup-ms", "5", "--rep-ms", "50")
    assert done.returncode == 0, done.stdout + done.stderr
    said = [line for line in done.stderr.splitlines() if "--warmup-ms" in line]
    assert len(said) == 1 and "--rep-ms" in said[0] and "not used" in said[0], done.stderr
    plain = bench("-w", str(ws), "--mode", "interpreter", "--seeds", "1", "--json")
    assert not any("--warmup-ms" in m for m in json.loads(plain.stdout)["messages"])


def test_a_missing_reference_names_where_the_contract_is_documented(tmp_path: Path) -> None:
    """It said "(see the README's benchmark contract)": the project's README has no such
    section, and the workspace may have no README at all."""
    ws = make_workspace(tmp_path / "native")
    (ws / "reference.py").unlink()
    (ws / "README.md").unlink()
    done = bench("-w", str(ws))
    assert done.returncode == 2 and done.stdout == ""
    assert "README's benchmark contract" not in done.stderr
    said = " ".join(done.stderr.split())
    # It named `docs/harness.md, "Contract"`: a bold run-in there, no heading, and no docs/ in a
    # pip install. It names the documentation's page by its title and the section's heading.
    place = (
        '"Contract" section of the "Benchmark and correctness harness" page of kernelscope\'s documentation'
    )
    assert place in said, said
    page = (TESTS.parent / "docs" / "harness.md").read_text().splitlines()
    assert page[0].startswith("# Benchmark and correctness harness") and "## Contract" in page
    assert "--gate-command" not in done.stderr  # a kind kernelscope's harness reads

    v01 = make_workspace(tmp_path / "atrex")  # README with stop conditions and memory/: atrex-v0.1
    (v01 / "reference.py").unlink()
    (v01 / "memory").mkdir()
    done = bench("-w", str(v01))
    assert done.returncode == 2
    assert (
        "docs/harness.md" in done.stderr
        and "atrex-v0.1 workspace is measured by its own gate command" in done.stderr
    )
    assert "--gate-command 'python test_kernel.py'" in done.stderr, done.stderr


def test_a_setup_error_prints_no_fail_verdict(tmp_path: Path) -> None:
    """A KernelBench problem with a size it does not define: `[setup]`, exit 2, and stdout
    began `FAIL  mode=interpreter ...`: a verdict on a kernel that never ran."""
    shutil.copy(TESTS / "fixtures" / "kernelbench" / "19_ReLU.py", tmp_path / "19_ReLU.py")
    (tmp_path / "kernel.py").write_text(
        "import torch.nn as nn\n\n\nclass ModelNew(nn.Module):\n    def forward(self, x):\n        return x.relu()\n"
    )
    done = bench(
        "--reference",
        "19_ReLU.py",
        "--problem-size",
        "batchsize=16",
        "--mode",
        "interpreter",
        "--no-static-rules",
        cwd=tmp_path,
    )
    assert done.returncode == 2, done.stdout + done.stderr
    assert "[setup]" in done.stderr and "batchsize" in done.stderr
    assert "FAIL" not in done.stdout, done.stdout
    assert done.stdout.startswith("NOT RUN (setup error: no verdict on the kernel)"), done.stdout


def test_a_resource_cap_prints_no_fail_verdict(capsys: pytest.CaptureFixture[str]) -> None:
    """A single bench stopped by its memory cap exited 4 ("not a verdict on the answer") under a
    first line `FAIL  mode=interpreter ...`."""
    result = bench_result("out_of_memory")
    assert exit_status(result) == EXIT_RESOURCE
    print_result(result)
    first = capsys.readouterr().out.splitlines()[0]
    assert not first.startswith("FAIL") and first.startswith("STOPPED (resource cap"), first
    assert verdict_word(bench_result("wrong_result", "gate_failed")) == "FAIL"
    assert verdict_word(bench_result("setup")) == "NOT RUN"
    assert verdict_word(bench_result("unsupported", "unsupported")) == "UNSUPPORTED"


def test_candidates_with_a_setup_error_say_not_run_and_exit_2(tmp_path: Path) -> None:
    """`--candidates` printed FAIL for each candidate and exited 3 where the problem itself could
    not be set up; a single bench says NOT RUN and exits 2."""
    shutil.copy(TESTS / "fixtures" / "kernelbench" / "19_ReLU.py", tmp_path / "19_ReLU.py")
    body = "import torch.nn as nn\n\n\nclass ModelNew(nn.Module):\n    def forward(self, x):\n        return x.relu()\n"
    (tmp_path / "kernel.py").write_text(body)
    (tmp_path / "k2.py").write_text(body)
    args = ["--reference", "19_ReLU.py", "--problem-size", "batchsize=16", "--mode", "interpreter"]
    done = bench(*args, "--no-static-rules", "--candidates", "kernel.py", "k2.py", cwd=tmp_path)
    assert done.returncode == 2, done.stdout + done.stderr
    assert "FAIL" not in done.stdout and done.stdout.count("NOT RUN") == 2, done.stdout


def test_candidates_exit_with_the_worst_status() -> None:
    """Setup (2) before a resource cap (4) before a failed gate (3)."""
    ok = bench_result(None, "ok").model_copy(update={"passed": True})
    fail, oom, setup = (
        bench_result("wrong_result", "gate_failed"),
        bench_result("out_of_memory"),
        bench_result("setup"),
    )
    assert worst_exit_status([ok, ok]) == 0
    assert worst_exit_status([ok, fail]) == 3
    assert worst_exit_status([fail, oom, ok]) == 4
    assert worst_exit_status([oom, setup, fail]) == 2


@pytest.mark.parametrize("flag", ["--warmup-ms", "--rep-ms"])
@pytest.mark.parametrize("value", ["inf", "1e308", "nan"])
def test_a_timing_budget_past_any_measurement_is_a_usage_error(
    cli, flag: str, value: str, tmp_path: Path
) -> None:  # type: ignore[no-untyped-def]
    """`--warmup-ms inf` (or 1e308) passed the option's min=0 and crashed the GPU timer
    (`int(inf)`: OverflowError, classified `exception`, a FAIL blamed on the kernel)."""
    ws = make_workspace(tmp_path / "ws")
    done = cli("bench", "-w", str(ws), "--mode", "interpreter", "--seeds", "1", flag, value)
    assert done.exit_code == 2 and flag in done.stderr, done.stdout + done.stderr
    assert "PASS" not in done.stdout


def test_a_folder_without_kernel_py_is_told_what_bench_measures(tmp_path: Path) -> None:
    """`bench` needs kernel.py alone, yet a folder without one got the general "not an
    optimization workspace" error, whose way out (memory init, a README block) is not what
    bench needs. It says kernel.py is missing and how to name another file."""
    done = bench(cwd=tmp_path)
    said = " ".join(done.stderr.split())
    assert done.returncode == 2 and done.stdout == "", done.stdout + done.stderr
    assert "is not an optimization workspace" not in said and "memory init" not in said, said
    assert f"{tmp_path.resolve()} has no kernel.py to benchmark" in said, said
    assert "--candidate FILE" in said and "-w DIR" in said, said
    document = json.loads(bench("--json", cwd=tmp_path).stdout)
    assert document["error"]["kind"] == "setup" and "has no kernel.py" in document["error"]["message"]


@pytest.mark.parametrize("status", ["error", "unsupported"])
def test_an_unsupported_run_says_unsupported(capsys: pytest.CaptureFixture[str], status: str) -> None:
    """The runner reports `unsupported` with status error where the whole run (not one
    configuration) is something it cannot do here: the headline said `NOT RUN (setup error: no
    verdict on the kernel)`, though nothing in the setup was wrong. Both statuses now say what
    it is, UNSUPPORTED (exit 2: no verdict on the kernel)."""
    result = bench_result("unsupported", status)
    print_result(result)
    first = capsys.readouterr().out.splitlines()[0]
    assert first.startswith("UNSUPPORTED  mode="), first
    assert verdict_headline(result) == "UNSUPPORTED" and exit_status(result) == EXIT_SETUP
