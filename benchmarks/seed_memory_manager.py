#!/usr/bin/env python3
"""A stand-in for the seed's `tools/memory_manager.py` (the atrex gpu-kernel-optimizer's memory
tool, as the seeds in /work/shared/seeds describe it: `list`, `read [--version] [--field]
[--unmasked-only]`, `update --version --set k=v...`, `mask`/`unmask --version v2 v4`, `latest`,
`summary`, `init`, `create`), written for `benchmarks/cli_bench.py` to time kernelscope's
memory commands against.

Like the seed's script it is one file of plain argparse + json: no locking, no atomic writes,
no validation (which is exactly what kernelscope adds). Its start-up is what the comparison is
about, so it imports what such a script imports (argparse, json, re, copy, datetime, pathlib)
and nothing else. Not used by kernelscope itself.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from copy import deepcopy
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

TEMPLATE: dict[str, Any] = {
    "version": None,
    "masked": False,
    "timestamp": None,
    "performance": {
        "latency_us": None,
        "tflops": None,
        "bandwidth_gbps": None,
        "tflops_peak_utilization_pct": None,
        "bandwidth_peak_utilization_pct": None,
        "comparison_with_previous": {"latency_delta": None, "tflops_delta": None, "bandwidth_delta": None},
    },
    "optimization": {
        "action_category": None,
        "action_description": None,
        "expected_impact": None,
        "risks_and_rollback": None,
    },
    "profile_evidence": {
        "tool_used": None,
        "evidence_summary": None,
        "bottleneck_type": None,
        "evidence_chain": None,
    },
    "correctness": {"rel_err": None, "status": None},
    "isa_metric_progress": [],
    "search_log": [],
    "pitfalls_and_fixes": [],
    "references": [],
    "quality_gate": {"result": None, "failure_reason": None},
    "open_directions": [],
    "git_commit_hash": None,
}


def fail(message: str) -> None:
    print(f"Error: {message}", file=sys.stderr)
    sys.exit(1)


def memory_dir(args: argparse.Namespace) -> Path:
    return Path(args.workspace) / "memory"


def number_of(name: str) -> int:
    match = re.match(r"v(\d+)", name)
    if not match:
        raise ValueError(f"bad version {name!r}: expected v<N>")
    return int(match.group(1))


def files(args: argparse.Namespace) -> list[Path]:
    folder = memory_dir(args)
    return sorted(folder.glob("v*.json"), key=lambda p: number_of(p.stem)) if folder.is_dir() else []


def load(path: Path) -> dict[str, Any]:
    with open(path, encoding="utf-8") as handle:
        return json.load(handle)


def save(path: Path, data: dict[str, Any]) -> None:
    with open(path, "w", encoding="utf-8") as handle:
        json.dump(data, handle, indent=2, ensure_ascii=False)
        handle.write("\n")


def dig(data: Any, dotted: str) -> Any:
    for key in dotted.split("."):
        if not (isinstance(data, dict) and key in data):
            raise KeyError(f"field '{dotted}' not found (failed at '{key}')")
        data = data[key]
    return data


def typed(raw: str) -> Any:
    lowered = raw.lower()
    if lowered in ("null", "none"):
        return None
    if lowered in ("true", "false"):
        return lowered == "true"
    if raw.strip()[:1] in ("[", "{"):
        try:
            return json.loads(raw)
        except json.JSONDecodeError:
            pass
    for convert in (int, float):
        try:
            return convert(raw)
        except ValueError:
            pass
    return raw


def cmd_init(args: argparse.Namespace) -> None:
    memory_dir(args).mkdir(parents=True, exist_ok=True)
    print(f"Initialized memory directory: {memory_dir(args)}")


def cmd_create(args: argparse.Namespace) -> None:
    number_of(args.version)
    memory_dir(args).mkdir(parents=True, exist_ok=True)
    path = memory_dir(args) / f"{args.version}.json"
    if path.exists() and not args.force:
        fail(f"{path} already exists. Use --force to overwrite.")
    data = deepcopy(TEMPLATE)
    data.update(version=args.version, timestamp=datetime.now(timezone.utc).isoformat())
    save(path, data)
    print(f"Created: {path}")


def cmd_read(args: argparse.Namespace) -> None:
    if args.version:
        path = memory_dir(args) / f"{args.version}.json"
        if not path.exists():
            fail(f"{path} not found.")
        data = load(path)
        if data.get("masked", False):
            fail(f"{args.version} is masked and cannot be read. Use 'unmask' first.")
        if args.field:
            try:
                data = dig(data, args.field)
            except KeyError as exc:
                fail(str(exc))
        print(json.dumps(data, indent=2, ensure_ascii=False))
        return
    paths = files(args)
    if not paths:
        fail("no iteration files found.")
    results = []
    for path in paths:
        data = load(path)
        if data.get("masked", False):
            continue
        if args.field:
            try:
                value = dig(data, args.field)
            except KeyError:
                value = None
            results.append({"version": data.get("version", path.stem), args.field: value})
        else:
            results.append(data)
    print(json.dumps(results, indent=2, ensure_ascii=False))


def cmd_update(args: argparse.Namespace) -> None:
    path = memory_dir(args) / f"{args.version}.json"
    if not path.exists():
        fail(f"{path} not found.")
    data = load(path)
    for assignment in args.set:
        if "=" not in assignment:
            fail(f"invalid --set {assignment!r}: expected key=value.")
        key, raw = assignment.split("=", 1)
        parts = key.strip().split(".")
        target = data
        for part in parts[:-1]:
            if not isinstance(target.get(part), dict):
                target[part] = {}
            target = target[part]
        target[parts[-1]] = typed(raw)
    save(path, data)
    print(f"Updated: {path}")


def set_masked(args: argparse.Namespace, masked: bool) -> None:
    for version in args.version:
        path = memory_dir(args) / f"{version}.json"
        if not path.exists():
            print(f"Warning: {path} not found, skipping.", file=sys.stderr)
            continue
        data = load(path)
        data["masked"] = masked
        save(path, data)
        print(f"{'Masked' if masked else 'Unmasked'}: {path}")


def cmd_summary(args: argparse.Namespace) -> None:
    paths = files(args)
    if not paths:
        fail("no iteration files found.")
    print(f"{'Version':<10} {'Masked':<8} {'TFLOPS':>10} {'BW(GB/s)':>12} {'Status':<14} Action")
    for path in paths:
        data = load(path)
        perf = data.get("performance") or {}
        status = f"{(data.get('correctness') or {}).get('status') or ''}/{(data.get('quality_gate') or {}).get('result') or ''}"
        tflops, bandwidth = perf.get("tflops"), perf.get("bandwidth_gbps")
        print(
            f"{data.get('version', path.stem):<10} {'YES' if data.get('masked') else '':<8} "
            f"{'-' if tflops is None else f'{tflops:.1f}':>10} {'-' if bandwidth is None else f'{bandwidth:.1f}':>12} "
            f"{status:<14} {(data.get('optimization') or {}).get('action_category') or ''}"
        )


def cmd_latest(args: argparse.Namespace) -> None:
    paths = files(args)
    if not paths:
        fail("no iteration files found.")
    for path in reversed(paths):
        data = load(path)
        if not data.get("masked", False):
            print(data.get("version", path.stem))
            return
    fail("no unmasked iterations found.")


def cmd_list(args: argparse.Namespace) -> None:
    paths = files(args)
    if not paths:
        fail("no iteration files found.")
    for path in paths:
        data = load(path)
        flag = " [MASKED]" if data.get("masked", False) else ""
        print(f"{data.get('version', path.stem)}{flag}  {data.get('timestamp', '')}  {path}")


def parser() -> argparse.ArgumentParser:
    root = argparse.ArgumentParser(description="Memory JSON files of a kernel optimization workspace.")
    commands = root.add_subparsers(dest="command", required=True)

    def command(name: str, help_text: str) -> argparse.ArgumentParser:
        sub = commands.add_parser(name, help=help_text)
        sub.add_argument("--workspace", required=True, help="Kernel optimization workspace.")
        return sub

    command("init", "Create memory/.")
    create = command("create", "New iteration file from the template.")
    create.add_argument("--version", required=True)
    create.add_argument("--force", action="store_true")
    read = command("read", "Read one iteration, or all unmasked ones.")
    read.add_argument("--version")
    read.add_argument("--field")
    read.add_argument("--unmasked-only", action="store_true")
    update = command("update", "Set fields of an iteration.")
    update.add_argument("--version", required=True)
    update.add_argument("--set", action="append", required=True)
    for name in ("mask", "unmask"):
        command(name, f"{name.capitalize()} iterations.").add_argument("--version", nargs="+", required=True)
    command("summary", "Performance table.")
    command("latest", "Latest unmasked iteration.")
    command("list", "Every iteration file.")
    return root


def main() -> None:
    args = parser().parse_args()
    handlers = {
        "init": cmd_init,
        "create": cmd_create,
        "read": cmd_read,
        "update": cmd_update,
        "mask": lambda a: set_masked(a, True),
        "unmask": lambda a: set_masked(a, False),
        "summary": cmd_summary,
        "latest": cmd_latest,
        "list": cmd_list,
    }
    handlers[args.command](args)


if __name__ == "__main__":
    main()
