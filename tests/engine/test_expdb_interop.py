"""Interop with the seed: its JSON database, its module API through the shim, the CLI."""

from __future__ import annotations

import csv
import io
import json
import re
import subprocess
import sys
from pathlib import Path

from kernelscope.daemon.engine.store import ExperimentStore
from kernelscope.protocol.experiment import TOP_KEYS, KernelExperiment

SEED_RECORD = {
    "score": 1.25,
    "raw_result": "shape=128x128 speedup=1.3; shape=256x256 speedup=1.2",
    "dtype_sig": "fp16",
    "env": "MI300X, ROCm 7.0.0",
    "is_buggy": False,
    "error_message": "",
    "change_summary": "tuned block size and vectorized loads",
    "detailed_description": "Adjusted kernel launch for better wave occupancy on MI300X.",
    "code_change": "(diff patch here)",
    "base_commit": "abcdef1234567890",
    "operator_sig": "attention_ragged.cu: paged_attention_ll4mi",
    "profiling_info": "SQ busy 75%, TCP 65%, TCC 55%",
    "status": "new",
    "id": "0123456789abcdef",
    "pid": "",
    "created_at": "2026-01-05T10:00:00.000000Z",
}

# What a skill written against the original module does, unchanged.
SKILL_SCRIPT = r"""
import json
from kernel_exp_dataclass import (KernelExperiment, create_experiment, get_experiment,
    list_experiments, top_experiments, update_experiment, delete_experiment)

exp = KernelExperiment(score=1.25, raw_result="r", dtype_sig="fp16", env="H200", is_buggy=False,
    error_message="", change_summary="tuned block size", detailed_description="d",
    code_change="diff", base_commit="abc", operator_sig="op.py: k", profiling_info="p", status="new")
assert len(exp.id) == 16 and int(exp.id, 16) >= 0 and exp.pid == "" and exp.created_at.endswith("Z")
create_experiment(exp)
try:
    create_experiment(exp)
    raise SystemExit("duplicate accepted")
except ValueError:
    pass
assert get_experiment(exp.id).to_dict() == exp.to_dict()
assert get_experiment("ffffffffffffffff") is None
assert KernelExperiment.from_dict(exp.to_dict()) == exp
top = top_experiments(max_results=20)
assert sorted(top[0]) == ["base_commit", "change_summary", "detailed_description", "dtype_sig",
    "env", "id", "operator_sig", "profiling_info", "raw_result", "score"]
updated = update_experiment(exp.id, score=1.5, raw_result="re-measured")
assert updated.score == 1.5
try:
    update_experiment("ffffffffffffffff", score=2.0)
    raise SystemExit("missing id accepted")
except KeyError:
    pass
child = KernelExperiment(score=0.8, raw_result="", dtype_sig="fp16", env="H200", is_buggy=False,
    error_message="", change_summary="child", detailed_description="", code_change="",
    base_commit="abc", operator_sig="op.py: k", profiling_info="", status="done", pid=exp.id)
create_experiment(child)
delete_experiment(child.id)
print(json.dumps({"count": len(list_experiments()), "score": get_experiment(exp.id).score}))
"""


def test_shim_runs_a_seed_skill_unchanged(tmp_path: Path, cli) -> None:  # type: ignore[no-untyped-def]
    db = tmp_path / "team.sqlite"
    skill = tmp_path / "skill"
    result = cli("exp", "shim", str(skill), "--db", str(db))
    assert result.exit_code == 0, result.stderr
    (skill / "run.py").write_text(SKILL_SCRIPT)
    proc = subprocess.run([sys.executable, "run.py"], cwd=skill, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout) == {"count": 1, "score": 1.5}
    assert ExperimentStore(str(db)).count() == 1


# What an agent on a machine without a GPU runs: the seed's first call, then what the note offers.
CPU_SKILL = r"""
import json
from kernel_exp_dataclass import list_experiments, top_experiments

first = top_experiments(max_results=20)
asked = top_experiments(20, include_interpreter=True)
print(json.dumps({"listed": len(list_experiments()), "top": len(first),
    "asked": [t["change_summary"] for t in asked], "keys": sorted(asked[0])}))
"""


def test_shim_tells_an_agent_without_a_gpu_why_top_experiments_is_empty(tmp_path: Path, cli) -> None:  # type: ignore[no-untyped-def]
    """On a CPU-only machine every run is the Triton interpreter's, which a ranking leaves out:
    the seed's `top_experiments(max_results=20)` returned [] with no word, and
    `include_interpreter=True` (the CLI's `--include-interpreter`) raised "unknown filter"."""
    db = tmp_path / "cpu.sqlite"
    store = ExperimentStore(str(db))
    for summary, score in (("unrolled", 1.5), ("baseline", 1.0), ("wide loads", 0.9)):
        store.create_experiment(
            KernelExperiment(change_summary=summary, score=score, metrics={"mode": "interpreter"})
        )
    store.close()
    skill = tmp_path / "skill"
    assert cli("exp", "shim", str(skill), "--db", str(db)).exit_code == 0
    (skill / "run.py").write_text(CPU_SKILL)
    proc = subprocess.run([sys.executable, "run.py"], cwd=skill, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout) == {
        "listed": 3,
        "top": 0,  # the seed's answer, unchanged: CPU timings do not rank
        "asked": ["unrolled", "baseline", "wide loads"],
        "keys": sorted(TOP_KEYS),
    }
    # said once, on stderr, at the agent's own line, naming the option to pass
    note = "3 interpreter runs left out (CPU timings do not rank; include_interpreter=True shows them)"
    assert proc.stderr.count(note) == 1 and "run.py:5" in proc.stderr, proc.stderr


def test_import_seed_database_then_export(tmp_path: Path, cli) -> None:  # type: ignore[no-untyped-def]
    seed_db = tmp_path / "kernel_experiments_db.json"
    second = {
        **SEED_RECORD,
        "id": "fedcba9876543210",
        "pid": SEED_RECORD["id"],
        "score": 0.7,
        "change_summary": "manual unroll - crashed",
        "is_buggy": True,
        "status": "failed",
    }
    seed_db.write_text(json.dumps({r["id"]: r for r in (SEED_RECORD, second)}, indent=2, sort_keys=True))
    db = str(tmp_path / "x.sqlite")
    first = cli("exp", "import", str(seed_db), "--db", db, "--json")
    assert first.exit_code == 0, first.stderr
    assert first.json() == {"inserted": 2, "skipped": 0, "replaced": 0}
    again = cli("exp", "import", str(seed_db), "--db", db, "--json")
    assert again.json() == {"inserted": 0, "skipped": 2, "replaced": 0}  # idempotent
    shown = cli("exp", "show", SEED_RECORD["id"], "--db", db, "--json").json()
    assert {k: shown[k] for k in SEED_RECORD} == SEED_RECORD

    jsonl = tmp_path / "out.jsonl"
    assert cli("exp", "export", str(jsonl), "--db", db).exit_code == 0
    lines = [json.loads(line) for line in jsonl.read_text().splitlines()]
    assert [line["id"] for line in lines] == [SEED_RECORD["id"], second["id"]]
    other = str(tmp_path / "y.sqlite")
    assert cli("exp", "import", str(jsonl), "--db", other).exit_code == 0
    assert ExperimentStore(other).list_experiments() == ExperimentStore(db).list_experiments()

    csv_path = tmp_path / "out.csv"
    assert cli("exp", "export", str(csv_path), "--db", db).exit_code == 0
    rows = list(csv.DictReader(io.StringIO(csv_path.read_text())))
    assert [r["id"] for r in rows] == [SEED_RECORD["id"], second["id"]]
    assert rows[1]["is_buggy"] == "True" and json.loads(rows[0]["kernels"]) == []


def test_import_with_one_bad_record_imports_nothing(tmp_path: Path, cli) -> None:  # type: ignore[no-untyped-def]
    lines = [json.dumps({**SEED_RECORD, "id": f"{i:016x}"}) for i in range(5)]
    lines.append(json.dumps({**SEED_RECORD, "id": "bad", "score": -3}))
    source = tmp_path / "in.jsonl"
    source.write_text("\n".join(lines) + "\n")
    db = str(tmp_path / "x.sqlite")
    result = cli("exp", "import", str(source), "--db", db)
    assert result.exit_code == 2 and "in.jsonl:6" in result.stderr
    assert "1 invalid record, nothing imported" in " ".join(result.stderr.split())  # (was "record(s)")
    assert ExperimentStore(db).count() == 0
    broken = tmp_path / "broken.json"
    broken.write_text('{"a": ')
    assert cli("exp", "import", str(broken), "--db", db).exit_code == 2  # invalid data, as documented
    latin = tmp_path / "latin.jsonl"
    latin.write_bytes(b'\xff\xfe{"id": "x"}\n')
    undecodable = cli("exp", "import", str(latin), "--db", db)
    assert undecodable.exit_code == 2 and "not UTF-8" in undecodable.stderr
    assert cli("exp", "import", str(tmp_path / "missing.jsonl"), "--db", db).exit_code == 2
    one = tmp_path / "one.jsonl"  # one record a line, without an id: not the seed's id -> record map
    one.write_text(json.dumps({"change_summary": "solo", "score": 1.1, "metrics": {"mode": "gpu"}}) + "\n")
    assert cli("exp", "import", str(one), "--db", db).exit_code == 0
    assert [e.change_summary for e in ExperimentStore(db).list_experiments()] == ["solo"]


def test_cli_commands(tmp_path: Path, vector_add_ws: Path, cli) -> None:  # type: ignore[no-untyped-def]
    db = str(tmp_path / "cli.sqlite")
    ws = str(vector_add_ws)
    base = cli(
        "exp",
        "record",
        "--db",
        db,
        "-m",
        "BLOCK_SIZE 4096 - +16%",
        "--score",
        "1.16",
        "--kernel",
        "add_kernel",
        "-w",
        ws,
        "--memory-version",
        "v1",
        "--operator-sig",
        "add",
        "--json",
    )
    assert base.exit_code == 0, base.stderr
    parent = base.json()["id"]
    assert re.fullmatch(r"[0-9a-f]{16}", parent)
    diff = tmp_path / "change.diff"
    diff.write_text("--- a/kernel.py\n+++ b/kernel.py\n")
    child = cli(
        "exp",
        "record",
        "--db",
        db,
        "-m",
        "persistent loop - wrong tail",
        "--score",
        "0",
        "--buggy",
        "--status",
        "failed",
        "--error",
        "rel_err 0.31",
        "--pid",
        parent,
        "--kernel",
        "add_kernel",
        "-w",
        ws,
        "--memory-version",
        "v3",
        "--code-change",
        f"@{diff}",
        "--json",
    ).json()
    assert child["code_change"].startswith("--- a/kernel.py")
    assert [t["id"] for t in cli("exp", "top", "--db", db, "--json").json()] == [parent]
    assert len(cli("exp", "top", "--db", db, "--include-buggy", "--json").json()) == 2
    assert [e["id"] for e in cli("exp", "list", "--db", db, "--buggy", "--json").json()] == [child["id"]]
    lineage = cli("exp", "lineage", parent, "--db", db, "--json").json()
    assert [d["id"] for d in lineage["descendants"]] == [child["id"]]
    failures = cli("exp", "failures", "--db", db, "--json").json()
    assert [e["id"] for e in failures["buggy"]] == [child["id"]]
    summary = cli("exp", "summary", "-w", ws, "--db", db, "--json").json()
    assert summary == [
        {
            "kernel": "add_kernel",
            "runs": 2,
            "failures": 1,
            "masked_runs": 0,  # (runs of masked memory versions, counted apart: none masked here)
            "best_id": parent,
            "best_score": 1.16,
            "best_version": "v1",
            "latest_id": child["id"],
            "latest_score": 0.0,
            "latest_version": "v3",
            "latest_status": "failed",
        }
    ]
    updated = cli(
        "exp", "update", parent, "--db", db, "--set", "score=1.2", "--set", 'tags=["re-measured"]', "--json"
    )
    assert updated.exit_code == 0 and updated.json()["score"] == 1.2
    assert cli("exp", "update", parent, "--db", db, "--set", "nope=1").exit_code == 1
    assert cli("exp", "update", parent, "--db", db, "--set", "score=-1").exit_code == 1
    assert cli("exp", "show", "ffffffffffffffff", "--db", db).exit_code == 2
    assert cli("exp", "list", "--db", db, "--status", "exploded").exit_code == 1
    human = cli("exp", "top", "--db", db)
    assert human.exit_code == 0 and "BLOCK_SIZE 4096" in human.stdout
