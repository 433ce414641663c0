"""Import and export of experiments: the seed's JSON database, JSON lines and CSV.

The seed keeps one JSON object mapping ids to records (`kernel_experiments_db.json`);
kernelscope reads that and JSON lines (one record per line), and writes JSON lines and CSV.
An import validates every record first and writes nothing if any is invalid, so a bad file
never leaves a half-imported database.
"""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from kernelscope.daemon.engine import counted, load_json
from kernelscope.daemon.engine.store.errors import InvalidImportFile
from kernelscope.protocol.experiment import KernelExperiment

CSV_FIELDS = list(KernelExperiment.model_fields)


def read_records(path: Path) -> list[KernelExperiment]:
    """Records from a seed JSON database or a JSON-lines file, all validated."""
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise InvalidImportFile(f"cannot read {path}: {exc.strerror or exc}") from None
    except UnicodeDecodeError as exc:
        raise InvalidImportFile(f"{path} is not UTF-8 text ({exc.reason} at byte {exc.start})") from None
    raw_records: list[tuple[str, Any]] = []
    stripped = text.lstrip()
    if stripped.startswith("{"):
        try:
            data = load_json(text)
            # The seed's database maps ids to record objects; a record (one JSON line) has
            # fields that are not objects (its summary, its score).
            if isinstance(data, dict) and data and all(isinstance(v, dict) for v in data.values()):
                for key, value in data.items():
                    if isinstance(value, dict) and "id" not in value:
                        value = {**value, "id": key}
                    raw_records.append((f"{path.name}[{key!r}]", value))
            else:
                raw_records.append((path.name, data))
        except json.JSONDecodeError:
            raw_records = _json_lines(path, text)
    elif stripped.startswith("["):
        try:
            data = load_json(text)
        except json.JSONDecodeError as exc:
            raise InvalidImportFile(f"{path}: not valid JSON ({exc})") from None
        raw_records = [(f"{path.name}[{i}]", item) for i, item in enumerate(data)]
    else:
        raw_records = _json_lines(path, text)
    records: list[KernelExperiment] = []
    errors: list[str] = []
    for where, value in raw_records:
        try:
            records.append(KernelExperiment.model_validate(value))
        except ValidationError as exc:
            first = exc.errors()[0]
            errors.append(f"{where}: {'.'.join(str(p) for p in first['loc']) or 'record'}: {first['msg']}")
    if errors:
        shown = "; ".join(errors[:10]) + (f"; and {len(errors) - 10} more" if len(errors) > 10 else "")
        raise InvalidImportFile(f"{counted(len(errors), 'invalid record')}, nothing imported: {shown}")
    return records


def _json_lines(path: Path, text: str) -> list[tuple[str, Any]]:
    found: list[tuple[str, Any]] = []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            found.append((f"{path.name}:{number}", load_json(line)))
        except json.JSONDecodeError as exc:
            raise InvalidImportFile(f"{path}:{number}: not valid JSON ({exc.msg})") from None
    return found


def to_json_lines(records: Iterable[KernelExperiment]) -> str:
    return "".join(json.dumps(r.to_dict(), ensure_ascii=False) + "\n" for r in records)


def to_csv(records: Iterable[KernelExperiment]) -> str:
    """CSV with one column per field; lists and objects as JSON text."""
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=CSV_FIELDS)
    writer.writeheader()
    for record in records:
        row = record.to_dict()
        for key, value in row.items():
            if isinstance(value, (list, dict)):
                row[key] = json.dumps(value, ensure_ascii=False)
        writer.writerow(row)
    return buffer.getvalue()
