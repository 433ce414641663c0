"""Stop conditions as agents write them: atrex's setup prompt has its agent "compute absolute
targets (`hardware peak * 90%`)" (orchestrator/prompts/setup.md @16f7ec4 L55), so a bullet
may read `bandwidth >= 4.8TB/s * 90% = 4.32TB/s`. It was read by its first number, a target of
4,800 GB/s the README never meant (a kernel at 4,400 GB/s missed it). The target is the result
stated after `=`, else the product (`4.8TB/s * 90%`); other arithmetic cannot be checked and
says why, never a number taken from part of it.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from kernelscope.daemon.engine.memory.stop_rule import readme_verdict
from kernelscope.daemon.engine.views.lens_text import file_lens, stop_condition_lines
from kernelscope.daemon.engine.workspace.readme import parse_readme
from kernelscope.daemon.engine.workspace.readme_conditions import primary_kind
from kernelscope.daemon.engine.workspace.workspace import Workspace


def stop_conditions(*bullets: str) -> str:
    return "# t\n\n## Stop Conditions\n" + "".join(f"- {bullet}\n" for bullet in bullets)


@pytest.mark.parametrize(
    "bullet,kind,unit,target",
    [
        ("memory-bound target: bandwidth >= 4.8TB/s * 90% = 4.32TB/s", "bandwidth", "TB/s", 4320.0),
        ("bandwidth >= 4.8TB/s * 90%", "bandwidth", "TB/s", 4320.0),
        ("bandwidth >= 0.9 * 4.8 TB/s", "bandwidth", "TB/s", 4320.0),
        ("bandwidth >= 4.8TB/s x 0.9", "bandwidth", "TB/s", 4320.0),
        ("bandwidth >= 90% * 4.8TB/s", "bandwidth", "TB/s", 4320.0),
        ("bandwidth >= 4.8TB/s * 90% = 4320GB/s", "bandwidth", "GB/s", 4320.0),
        ("bandwidth >= HBM peak * 90% = 4.32TB/s", "bandwidth", "TB/s", 4320.0),
        ("bandwidth >= (4.8TB/s * 90%) = 4.3TB/s", "bandwidth", "TB/s", 4320.0),  # the exact product
        ("compute-bound target: bf16 TFLOPS >= 989.4T * 90% = 890.5T", "tflops", "T", 890.46),
        ("bf16 TFLOPS >= 989.4 TFLOPS x 0.9", "tflops", "TFLOPS", 890.46),
        ("latency <= 12 us * 110%", "latency", "us", 13.2),
        ("latency <= 0.5 ms * 0.8 = 400 us", "latency", "us", 400.0),
    ],
)
def test_the_target_is_what_the_arithmetic_comes_to(bullet: str, kind: str, unit: str, target: float) -> None:
    text = stop_conditions(bullet)
    info = parse_readme(text)
    (condition,) = info.stop_conditions
    assert (condition.kind, condition.unit) == (kind, unit)
    assert condition.normalized_value == pytest.approx(target), condition
    assert not info.warnings and primary_kind(text) == kind, info.warnings


def test_a_kernel_above_the_computed_target_meets_it() -> None:
    """Read as 4,800 GB/s, a version at 4,400 GB/s was `not met`."""
    readme = parse_readme(stop_conditions("bandwidth >= 4.8TB/s * 90% = 4.32TB/s"))
    record = {
        "performance": {"bandwidth_gbps": 4400.0},
        "quality_gate": {"result": "PASS"},
        "kernelscope": {"mode": "gpu"},
    }
    (status,), met = readme_verdict(readme, record)
    assert (status.target, status.measured, status.met, met) == (4320.0, 4400.0, True, True)


@pytest.mark.parametrize(
    "arithmetic,why",
    [
        ("4.8TB/s / 2", "cannot compute '4.8TB/s / 2'"),
        ("peak * 90%", "cannot compute 'peak * 90%'"),
        ("4.8TB/s * peak_factor", "cannot compute '4.8TB/s * peak_factor'"),
        ("40 us - 5 us", "cannot compute '40 us - 5 us'"),
        ("4.8TB/s * 90% = 4.5TB/s", "4.8TB/s * 90% is 4.32TB/s, not 4.5TB/s as stated"),
        ("4.8TB/s * 90% = 4.32", "the result after '=' in '4.8TB/s * 90%' is no figure with a unit"),
        (
            "4.8TB/s * 90% = 4.32 us",
            "'4.8TB/s * 90%' is a bandwidth, the result after '=' (4.32us) a latency",
        ),
        ("4.8TB/s * 0%", "0TB/s is not positive"),
        # `≈` and an arrow state a result as `=` does: one its product contradicts is no target
        ("4.8TB/s * 90% ≈ 4.5TB/s", "4.8TB/s * 90% is 4.32TB/s, not 4.5TB/s as stated"),
        ("4.8TB/s * 90% -> 4.5TB/s", "4.8TB/s * 90% is 4.32TB/s, not 4.5TB/s as stated"),
        # arithmetic after a note on the figure: read as written, the peak was the target
        ("4.8 TB/s (H200 HBM3e) * 0.9", "cannot tell the target in '4.8 TB/s (H200 HBM3e) * 0.9'"),
        ("4.8TB/s peak × 90%", "cannot tell the target in '4.8TB/s peak × 90%'"),
        ("4.8TB/s, * 0.9", "cannot tell the target in '4.8TB/s, * 0.9'"),
        ("4.8TB/s @ 90%", "cannot tell the target in '4.8TB/s @ 90%'"),
        ("4.8TB/s at 90%", "cannot tell the target in '4.8TB/s at 90%'"),
        ("4.8TB/s 90%", "cannot tell the target in '4.8TB/s 90%'"),
        ("4.8 TB/s, 90%", "cannot tell the target in '4.8 TB/s, 90%'"),
        ("4.8TB/s (× 0.9)", "cannot tell the target in '4.8TB/s (× 0.9)'"),
        ("4 320 GB/s", "4 320 has spaces grouping thousands (write 4320)"),
        ("4.8TB/s * 90% = 4,5 TB/s", "4,5 has a decimal comma (write 4.5)"),
    ],
)
def test_arithmetic_it_cannot_read_is_a_condition_it_cannot_check(arithmetic: str, why: str) -> None:
    text = stop_conditions("latency <= 40 us", f"bandwidth >= {arithmetic}")
    info = parse_readme(text)
    assert [c.kind for c in info.stop_conditions] == ["latency"]
    assert info.unchecked_stop_conditions == [f"bandwidth >= {arithmetic}"]
    (skipped,) = [note for note in info.notes if note.code == "readme:stop-condition-skipped"]
    assert skipped.line == 5 and why in skipped.message, skipped.message
    # never met beside a condition nobody can check
    record = {"performance": {"latency_us": 10.0}, "quality_gate": {"result": "PASS"}}
    assert readme_verdict(info, {**record, "kernelscope": {"mode": "gpu"}})[1] is None


@pytest.mark.parametrize(
    "bullet,target",
    [
        ("**bandwidth >= 4.32TB/s**", 4320.0),  # Markdown's asterisks, no product
        ("bandwidth >= 3.87TB/s (HBM 4.3TB/s * 90%)", 3870.0),  # a note after the target
        ("memory-bound target: bandwidth >= 4.32TB/s -> then stop", 4320.0),
        ("latency <= 40 us - measured by do_bench", 40.0),
    ],
)
def test_a_target_written_plainly_is_read_as_before(bullet: str, target: float) -> None:
    info = parse_readme(stop_conditions(bullet))
    assert [c.normalized_value for c in info.stop_conditions] == [pytest.approx(target)]
    assert not info.warnings, info.warnings


def test_the_lens_names_the_target_the_arithmetic_comes_to(tmp_path: Path) -> None:
    """The lens read the bullet's text again for its label and named the peak:
    `target bandwidth >= 4.8TB/s` over a target of 4,320 GB/s. The label is the parser's."""
    text = stop_conditions(
        "memory-bound target: bandwidth >= 4.8TB/s * 90% = 4.32TB/s",
        "compute-bound target: bf16 TFLOPS >= 989.4 TFLOPS x 0.9",
        "latency <= 40 us (do_bench p50, for n > 1M)",
    )
    (tmp_path / "README.md").write_text(text)
    (tmp_path / "kernel.py").write_text("def kernel_fn(x):\n    return x\n")
    (tmp_path / "memory").mkdir()
    lens = file_lens(Workspace(tmp_path))
    assert lens.startswith("target bandwidth >= 4.32TB/s | no passing measurement yet"), lens
    assert stop_condition_lines(Workspace(tmp_path))[1:] == [
        "tflops >= 890.46TFLOPS: not evaluated",
        "latency <= 40 us: not evaluated",
    ]
    bandwidth, tflops, latency = parse_readme(text).stop_conditions
    assert (bandwidth.target_text, tflops.target_text) == (">= 4.32TB/s", ">= 890.46TFLOPS")
    assert latency.target_text == "<= 40 us"  # as written


def test_arithmetic_after_a_note_on_a_latency_cannot_be_checked() -> None:
    """`12 us (H100) * 1.1` was read as 12 us: the factor after the note was dropped."""
    info = parse_readme(stop_conditions("latency <= 12 us (H100) * 1.1"))
    assert not info.stop_conditions and info.unchecked_stop_conditions == ["latency <= 12 us (H100) * 1.1"]
    (skipped,) = [note for note in info.notes if note.code == "readme:stop-condition-skipped"]
    assert "cannot tell the target in '12 us (H100) * 1.1'" in skipped.message, skipped.message


@pytest.mark.parametrize(
    "bullet,kind,target",
    [
        # a stated result after a note is read, checked against the product across the note
        ("bandwidth >= 4.8 TB/s (H200 HBM3e peak) × 0.9 = 4.32 TB/s", "bandwidth", 4320.0),
        ("bandwidth >= 4.8TB/s peak × 90% = 4.32TB/s", "bandwidth", 4320.0),
        ("bandwidth >= 4.8TB/s @ 90% = 4.32TB/s", "bandwidth", 4320.0),
        # the operators as agents type them
        ("bandwidth >= 4.8TB/s X 0.9", "bandwidth", 4320.0),
        ("bandwidth >= 4.8TB/s \u2217 0.9", "bandwidth", 4320.0),
        ("bandwidth >= 90% of 4.8TB/s", "bandwidth", 4320.0),
        ("bf16 >= 0.9x989.4T", "tflops", 890.46),
        # Markdown and `~` around a target (the whole condition was dropped, no warning)
        ("bandwidth >= `4.8TB/s * 0.9`", "bandwidth", 4320.0),
        ("bandwidth >= `4.32TB/s`", "bandwidth", 4320.0),
        ("bandwidth >= ~4.32 TB/s", "bandwidth", 4320.0),
        ("bandwidth >= **4.32 TB/s** (4.8 × 0.9)", "bandwidth", 4320.0),
        # a stated result in Markdown, or with its thousands grouped (its product says which)
        ("bandwidth >= 4.8TB/s * 0.9 = **4.32TB/s**", "bandwidth", 4320.0),
        ("bandwidth >= 4.8 TB/s * 0.9 = `4.32 TB/s`", "bandwidth", 4320.0),
        ("bandwidth >= 4.8TB/s * 90% = 4,320 GB/s", "bandwidth", 4320.0),
        ("bandwidth >= 4.8TB/s * 90% = 4,32 TB/s", "bandwidth", 4320.0),  # a decimal comma
    ],
)
def test_a_target_as_agents_write_it_is_read_to_its_number(bullet: str, kind: str, target: float) -> None:
    info = parse_readme(stop_conditions(bullet))
    (condition,) = info.stop_conditions
    assert (condition.kind, condition.normalized_value) == (kind, pytest.approx(target)), condition
    assert not info.warnings and not info.unchecked_stop_conditions, info.warnings


def test_the_label_writes_a_large_target_as_a_plain_decimal() -> None:
    (condition,) = parse_readme(stop_conditions("bandwidth >= 4800000MB/s * 0.9")).stop_conditions
    assert condition.target_text == ">= 4320000MB/s"


def test_a_second_comparison_in_a_bullet_is_said_not_read_not_dropped() -> None:
    """`latency <= 20 us and bandwidth >= 4.8TB/s * 0.9` kept the latency and dropped the
    bandwidth target with no word: a version meeting 20 us was `met`."""
    info = parse_readme(stop_conditions("latency <= 20 us and bandwidth >= 4.8TB/s * 0.9"))
    assert [c.target_text for c in info.stop_conditions] == ["<= 20 us"]
    assert info.unchecked_stop_conditions == ["bandwidth >= 4.8TB/s * 0.9"]
    (skipped,) = [note for note in info.notes if note.code == "readme:stop-condition-skipped"]
    assert "'bandwidth >= 4.8TB/s * 0.9' is not read" in skipped.message, skipped.message
    record = {"performance": {"latency_us": 10.0}, "quality_gate": {"result": "PASS"}}
    assert readme_verdict(info, {**record, "kernelscope": {"mode": "gpu"}})[1] is None
    # a comparison inside a note is the note's
    assert not parse_readme(stop_conditions("bandwidth >= 4.32TB/s (H100: >= 3.35TB/s)")).warnings
