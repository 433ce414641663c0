"""Where the warning on a memory record that cannot be read points (views/diagnostics.py
`record_notices`, published on the record's file by daemon/lsp/features/records.py): on the
line its reason is about, so that an editor's squiggle and an agent's `file:line` lead to it.
Before, every such warning sat on line 1, whatever line the JSON parse stopped at."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from kernelscope.daemon.engine.memory.records import MemoryManager
from kernelscope.daemon.engine.views.diagnostics import Notice, record_notices
from tests.conftest import EXAMPLES


@pytest.fixture
def record(tmp_path: Path) -> Path:
    """memory/v1.json of a copy of the example workspace (pretty-printed, indent 2)."""
    shutil.copytree(EXAMPLES / "vector_add", tmp_path / "ws", ignore=shutil.ignore_patterns("__pycache__"))
    return tmp_path / "ws" / "memory" / "v1.json"


def _warning(record: Path) -> Notice:
    found = record_notices(MemoryManager(record.parent.parent).scan())
    assert set(found) == {record}, found
    return found[record]


def _line_of(text: str, needle: str) -> int:
    """The 1-based line of the first line holding `needle`."""
    return next(i for i, line in enumerate(text.splitlines(), 1) if needle in line)


def test_a_json_error_is_warned_on_the_line_the_parse_stopped_at(record: Path) -> None:
    text = record.read_text()
    broken = text.replace('"tool_used": "ncu",', '"tool_used": "ncu"')  # a comma left out
    record.write_text(broken)
    said = _warning(record)
    stopped = _line_of(broken, '"tool_used"') + 1  # (the parse stops at the next key)
    assert stopped > 1 and f"line {stopped} column" in said.message, said
    assert (said.line, said.column) == (stopped, 0), said


def test_a_record_cut_short_is_warned_where_it_ends(record: Path) -> None:
    text = record.read_text()
    cut = text[: text.index('"optimization"')]  # a write cut short there
    record.write_text(cut)
    assert _warning(record).line == cut.count("\n") + 1


def test_a_field_the_record_model_refuses_is_warned_on_its_line(record: Path) -> None:
    data = json.loads(record.read_text())
    data["timestamp"] = {"when": "yesterday"}  # not a scalar
    text = json.dumps(data, indent=2)
    record.write_text(text)
    said = _warning(record)
    assert "invalid timestamp" in said.message and said.line == _line_of(text, '"timestamp"') > 1, said


def test_a_version_its_name_contradicts_is_warned_on_the_version_line(record: Path) -> None:
    data = {"timestamp": "2026-11-21T10:00:00+00:00", **json.loads(record.read_text()), "version": "v7"}
    text = json.dumps(data, indent=2)  # ("version" after "timestamp": not on line 2 by chance)
    record.write_text(text)
    said = _warning(record)
    assert "its name says v1" in said.message and said.line == _line_of(text, '"version"') > 2, said


@pytest.mark.parametrize(
    "text",
    [
        "[1, 2]",  # not an object: the file as a whole
        json.dumps({"version": "v1", "timestamp": {"when": "yesterday"}}),  # on one line
    ],
)
def test_a_reason_about_the_whole_file_or_its_only_line_is_warned_on_line_1(record: Path, text: str) -> None:
    record.write_text(text)
    assert _warning(record).line == 1


def test_a_key_written_twice_is_warned_where_json_takes_its_value(record: Path) -> None:
    """JSON keeps a duplicated key's last value: the refused one is the second `timestamp`."""
    text = '{\n  "timestamp": "2026-11-21T10:00:00+00:00",\n  "version": "v1",\n  "timestamp": {"when": "x"}\n}\n'
    record.write_text(text)
    said = _warning(record)
    assert "invalid timestamp" in said.message and said.line == 4, said


def test_a_version_named_inside_the_agent_s_log_leaves_the_line_on_the_top_level_one(record: Path) -> None:
    """A record copied from the previous one (its version contradicts its name) whose search_log,
    which the agent writes, names `version` in every entry: the top level's line."""
    data = json.loads(record.read_text())
    data["version"] = "v7"
    data["search_log"] = [{"version": f"v{i}", "tried": i} for i in range(2000)]
    text = json.dumps(data, indent=2)
    record.write_text(text)
    assert _warning(record).line == _line_of(text, '  "version"')


def test_a_parse_stopped_past_the_last_line_is_warned_on_the_last_line(record: Path) -> None:
    record.write_text('{"version": "v1",\n')  # cut short after its newline: json says line 2
    assert _warning(record).line == 1
