"""The one score formatter and KernelBench's excessive-speedup flag (issue #25 item 3): a
speedup over the reference above 10x says "check before trusting" wherever it is written;
and the one reader of a record's sections (section_get), which must answer as getattr does."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from kernelscope.protocol.record_rules import EXCESSIVE_SPEEDUP, check_before_trusting, format_score


def test_speedups_over_the_reference_above_ten_are_flagged() -> None:
    assert EXCESSIVE_SPEEDUP == 10.0  # KernelBench eval.py excessive_speedup_threshold
    assert check_before_trusting(10.0) is None and check_before_trusting(None) is None
    flag = check_before_trusting(12.5)
    assert flag and flag.startswith("check before trusting: 12.50x over the reference")
    assert format_score(12.5, versus="reference") == "12.50x vs reference (check before trusting)"
    assert format_score(9.99, versus="reference") == "9.99x vs reference"


def test_speedups_over_a_version_are_not() -> None:
    # ten times faster than a naive v0 is what optimization does; only the reference is KernelBench's bar
    assert format_score(35.78, versus="v0") == "35.78x vs v0"
    assert format_score(1.16, "latency_ratio") == "latency ratio 1.16x"


def test_section_get_reads_fields_kept_keys_and_nothing_else() -> None:
    from kernelscope.protocol.memory import MemoryRecord
    from kernelscope.protocol.record_rules import section_get

    record = MemoryRecord.model_validate(
        {
            "version": "v3",
            "performance": {"latency_us": 41.5, "carried_from_version": "v2"},
            "long_horizon": {"status": "pivot"},
        }
    )
    assert section_get(record, "version") == "v3"  # a declared field
    assert section_get(section_get(record, "long_horizon"), "status") == "pivot"  # a kept unknown key
    assert section_get(section_get(record, "performance"), "carried_from_version") == "v2"  # nested, unknown
    assert section_get(section_get(record, "performance"), "latency_us") == 41.5
    assert section_get(record, "experience") is None  # absent
    assert section_get(record, "number") == 3  # a property answers, as getattr's did
    assert section_get({"status": "ok"}, "status") == "ok" and section_get("text", "status") is None
    assert section_get(None, "status") is None


@settings(max_examples=200, deadline=None)
@given(
    st.dictionaries(
        st.sampled_from(["latency_us", "carried_from_version", "measurement_subject", "x"]),
        st.one_of(st.none(), st.integers(), st.text(max_size=3), st.floats(allow_nan=False)),
    ),
    st.sampled_from(
        [
            "latency_us",
            "carried_from_version",
            "measurement_subject",
            "version",
            "number",
            "is_masked",
            "metric",
            "model_extra",
            "x",
            "y",
            "_k",
            "_key_order",
            "performance",
            "long_horizon",
        ]
    ),
)
def test_section_get_on_a_model_answers_as_getattr(extra: dict[str, object], key: str) -> None:
    """The fast path for keys a model lacks changes no answer: pydantic's own getattr decides."""
    from kernelscope.protocol.memory import MemoryRecord
    from kernelscope.protocol.record_rules import section_get

    record = MemoryRecord.model_validate({"version": "v1", "performance": dict(extra), **extra})
    for section in (record, record.performance):
        expected = getattr(section, key, None)
        if callable(expected):  # a method: getattr gives a new bound object each time
            assert callable(section_get(section, key))
        else:
            assert section_get(section, key) == expected
