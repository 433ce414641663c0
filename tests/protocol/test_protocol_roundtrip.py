"""Records written by other tools survive load -> dump unchanged (keys, values, order)."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kernelscope.protocol import MemoryRecord, as_float, parse_version
from tests.conftest import EXAMPLES

EXAMPLE_MEMORY = EXAMPLES / "vector_add" / "memory"

FOREIGN = {
    "git_commit_hash": "abc123",
    "version": "v7",
    "performance": {
        "latency_us_by_shape": {"4096x4096": 12, "8192x8192": "41.5"},
        "latency_us": "12.5",
        "custom_metric": {"nested": [1, 2.5, None, "x"]},
        "tflops": 150,
        "comparison_with_previous": "n/a (first run on this GPU)",
    },
    "masked": False,
    "weird": [{"a": 1}, [], {}],
    "pitfalls_and_fixes": [{"error_type": "oom", "extra": True}, "free-form lesson"],
    "optimization": "swapped loop order",
    "correctness": {"rel_err": 0.003, "status": "PASS", "atol": 1e-3},
    "unicode": "héllo ✓ 中文",
}


def test_foreign_record_round_trips_exactly() -> None:
    record = MemoryRecord.model_validate(FOREIGN)
    dumped = record.to_json_dict()
    assert dumped == FOREIGN
    assert json.dumps(dumped) == json.dumps(FOREIGN)  # same key order at every level
    assert list(dumped["performance"]) == list(FOREIGN["performance"])
    assert dumped["performance"]["tflops"] == 150 and isinstance(dumped["performance"]["tflops"], int)


def test_typed_accessors_are_lenient() -> None:
    record = MemoryRecord.model_validate(FOREIGN)
    assert record.metric("latency_us") == 12.5
    assert record.metric("tflops") == 150.0
    assert record.gate_result == "PASS"
    assert record.number == 7
    assert as_float("3.5 us") == 3.5 and as_float("fast") is None and as_float(float("nan")) is None


def test_example_records_round_trip() -> None:
    for path in sorted(EXAMPLE_MEMORY.glob("v*.json")):
        raw = json.loads(path.read_text())
        assert MemoryRecord.model_validate(raw).to_json_dict() == raw, path.name


@pytest.mark.parametrize("bad", ["7", "v", "v-1", "version7", ""])
def test_version_must_be_v_n(bad: str) -> None:
    with pytest.raises(ValueError):
        parse_version(bad)
    with pytest.raises(ValueError):
        MemoryRecord.model_validate({"version": bad})


json_scalars = (
    st.none()
    | st.booleans()
    | st.integers(-(2**53), 2**53)
    | st.text(max_size=8)
    | st.floats(allow_nan=False, allow_infinity=False)
)
json_values = st.recursive(
    json_scalars,
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=6), children, max_size=4)
    ),
    max_leaves=20,
)
known_keys = st.sampled_from(
    [
        "masked",
        "timestamp",
        "performance",
        "optimization",
        "correctness",
        "quality_gate",
        "pitfalls_and_fixes",
        "search_log",
        "open_directions",
        "git_commit_hash",
        "extra_key",
    ]
)


@settings(max_examples=200, deadline=None)
@given(st.dictionaries(known_keys | st.text(max_size=6), json_values, max_size=8), st.integers(0, 999))
def test_any_json_object_with_a_version_round_trips(body: dict, number: int) -> None:
    data = {"version": f"v{number}", **{k: v for k, v in body.items() if k != "version"}}
    try:
        record = MemoryRecord.model_validate(data)
    except ValueError:
        # A known key with an impossible type (e.g. masked="yes") may be refused, but
        # then it is refused, never silently altered.
        return
    assert json.dumps(record.to_json_dict()) == json.dumps(data)
