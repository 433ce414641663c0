"""Stop-condition bullets as READMEs write them (rev8e's 352-bullet corpus), each read to its
number or refused with a reason. 80665b3 refused 46 ordinary bullets that were read right
before it (a shape `8192 x 8192`, `99% of runs`, `20% faster than v0` taken for arithmetic on
the figure), and a refused bullet leaves the verdict None for good: the agent is never told to
stop. It listed the comparison it had read as not read (`speedup >= 2x and latency <= 20 us`).
"""

from __future__ import annotations

import pytest

from kernelscope.daemon.engine.memory.stop_rule import readme_verdict
from kernelscope.daemon.engine.workspace.readme import parse_readme

RECORD = {
    "performance": {"latency_us": 10.0, "bandwidth_gbps": 4400.0, "tflops": 800.0},
    "quality_gate": {"result": "PASS"},
    "kernelscope": {"mode": "gpu"},
}


def stop_conditions(*bullets: str) -> str:
    return "# t\n\n## Stop Conditions\n" + "".join(f"- {bullet}\n" for bullet in bullets)


@pytest.mark.parametrize(
    "bullet,target",
    [
        # a shape or a count after the figure
        ("bf16 GEMM: >= 700 TFLOPS for 8192 x 8192 x 8192", 700.0),
        ("bandwidth >= 3 TB/s at 4096 x 4096", 3000.0),
        ("bandwidth >= 3 TB/s for 4096*4096", 3000.0),
        ("bandwidth >= 3 TB/s for a 4096 * 4096 matrix", 3000.0),
        ("latency <= 20us shape 1*4096*32*128", 20.0),
        ("latency <= 20 us per layer x 32 layers", 20.0),
        ("bandwidth >= 3 TB/s per GPU x 8", 3000.0),
        ("bandwidth >= 3 TB/s per GPU (x8)", 3000.0),
        ("latency <= 10 us (x2 = 20 us total)", 10.0),
        ("bandwidth >= 3 TB/s (x8 GPUs = 24 TB/s)", 3000.0),
        # a percentage in prose: of the runs, a confidence, an occupancy, a change vs v0
        ("latency <= 20 us for 99% of runs", 20.0),
        ("latency <= 20 us in 99% of runs", 20.0),
        ("latency <= 20 us (99.9%)", 20.0),
        ("latency <= 20 us at 95% confidence", 20.0),
        ("latency < 20 us @ 50% load", 20.0),
        ("latency < 20 us, 20% faster than v0", 20.0),
        ("latency < 20 us, -20% vs v0", 20.0),
        ("bandwidth >= 3 TB/s (+10% vs v0)", 3000.0),
        ("bandwidth >= 3 TB/s, +10%", 3000.0),
        ("bandwidth >= 3 TB/s at 80% occupancy", 3000.0),
        ("bandwidth >= 3 TB/s with 80% SM utilization", 3000.0),
        ("latency <= 20 us ± 5%", 20.0),
        ("latency <= 20 us ~10%", 20.0),
        ("latency <= 20 us +/- 1 us", 20.0),
        ("latency: <= 20 us | 90% runs", 20.0),
        ("Bandwidth >= 3.87 TB/s (peak utilization >= 90%)", 3870.0),
        # `less`/`minus` a percentage not directly after the figure, or before more words
        ("latency <= 20 us (less 10% noise)", 20.0),
        ("latency <= 20 us at less 10% load", 20.0),
        ("latency <= 20 us, with less 10% variance", 20.0),
        ("latency <= 20 us and no less 10% faster", 20.0),
        ("latency <= 20 us, minus 5% jitter allowance", 20.0),
        ("latency <= 20 us (no less 5% margin)", 20.0),
        # the target first, then how it was derived
        ("bandwidth >= 3.87 TB/s, roughly 90% of the 4.3 TB/s peak", 3870.0),
        ("bandwidth >= 3870 GB/s, 90% of peak", 3870.0),
        ("bandwidth >= 3.87 TB/s = 90% of peak", 3870.0),
        ("bandwidth >= 3.87 TB/s. That is 90%.", 3870.0),
        ("bandwidth >= 4.32 TB/s = 0.9 × 4.8 TB/s", 4320.0),
        ("bandwidth >= 4.32 TB/s ≈ 0.9 × 4.8 TB/s", 4320.0),
        ("bandwidth >= 4.32 TB/s (× 0.9 of 4.8 TB/s peak)", 4320.0),
        ("bandwidth >= 4.32 TB/s (= 4.8 TB/s × 0.9)", 4320.0),
        ("bandwidth >= 4.32 TB/s, i.e. 0.9 × peak", 4320.0),
        ("Bandwidth >= 3.87 TB/s (90% of 4.3 TB/s HBM peak)", 3870.0),
        ("bandwidth >= 3 TB/s 4.3 x 0.7", 3000.0),
        ("bandwidth >= 3.87 TB/s on H200 / 3.0 TB/s on H100", 3870.0),
        # `=>` is an arrow to the result
        ("bandwidth >= 4.8TB/s*0.9 => 4.32TB/s", 4320.0),
        # where a stated result agrees with its product, the target is the product (exact)
        ("bandwidth >= 4.8TB/s × 90% ≈ 4TB/s", 4320.0),
        ("bandwidth >= 4.8TB/s × 90% = 4.3TB/s", 4320.0),
        # the multiplication signs agents type
        ("bandwidth >= 4.8 TB/s \u22c5 0.9", 4320.0),
        ("bandwidth >= 4.8 TB/s \u2022 0.9", 4320.0),
        ("bandwidth >= 4.8 TB/s \u2715 0.9", 4320.0),
    ],
)
def test_an_ordinary_bullet_is_read_to_its_number(bullet: str, target: float) -> None:
    info = parse_readme(stop_conditions(bullet))
    assert [c.normalized_value for c in info.stop_conditions] == [pytest.approx(target)], info.notes
    assert not info.unchecked_stop_conditions and not info.warnings, info.warnings


def test_the_label_names_the_exact_product() -> None:
    (condition,) = parse_readme(stop_conditions("bandwidth >= 4.8TB/s × 90% ≈ 4TB/s")).stop_conditions
    assert condition.target_text == ">= 4.32TB/s"


@pytest.mark.parametrize(
    "bullet",
    [
        # the figure is the peak, and a share of it is the target
        "bandwidth >= 4.8 TB/s HBM peak (target: 90%)",
        "bandwidth >= 4.8 TB/s peak (aim for 90%)",
        "bandwidth >= 4.8 TB/s (peak; 90% target)",
        "bandwidth >= 4.8 TB/s (H200 peak, target 90%)",
        "bandwidth >= 4.8TB/s peak; target >= 90%",
        "bandwidth >= 4.8 TB/s peak, 0.9x",
        "bandwidth >= 4.8 TB/s peak times 0.9",
        "bandwidth >= 4.8 TB/s (H200) ×0.9",
        "bandwidth >= 4.8 TB/s (H200 HBM3e, 141 GB) × 0.9",
        "bandwidth >= 3 TB/s (@ 90%)",
        "bandwidth >= 4.8TB/s at 90% of peak",
        # a share taken off the figure
        "bandwidth >= 4.8 TB/s less 10%",
        "bandwidth >= 4.8 TB/s (-10%)",
        "bandwidth >= 4.8 TB/s minus 10%",
        "bandwidth >= 4.8 TB/s, less 10%",
        "bandwidth >= 4.8 TB/s less 10% of peak",
        "latency <= 20 us less 10%",
        # a product with a count: no target
        "bandwidth >= 4.8 TB/s * 90 percent",
        "latency <= 20 us x 100 iterations",
        # a derivation that contradicts the target
        "bandwidth >= 4.32 TB/s = 0.9 × 4.3 TB/s",
        # a stated result its product contradicts
        "bandwidth >= 4.8TB/s × 90% = 4.4TB/s",
    ],
)
def test_arithmetic_on_the_figure_is_refused_with_a_reason(bullet: str) -> None:
    info = parse_readme(stop_conditions(bullet))
    assert not info.stop_conditions and info.unchecked_stop_conditions == [bullet]
    (skipped,) = [note for note in info.notes if note.code == "readme:stop-condition-skipped"]
    assert "cannot" in skipped.message or "not " in skipped.message, skipped.message


@pytest.mark.parametrize(
    "bullet",
    [
        "speedup >= 2x and latency <= 20 us",
        "correctness: atol <= 1e-3, latency <= 20us",
        "latency <= 20 us; currently > 25 us",
        "latency <= 20 us; N > 4096 -> 40 us",
    ],
)
def test_a_comparison_beside_the_target_is_no_second_target(bullet: str) -> None:
    """The latency is read and met; what stands beside it (a speedup, a tolerance, a status,
    a size) is no target, so nothing is listed as not read and the verdict is given."""
    info = parse_readme(stop_conditions(bullet))
    assert [c.normalized_value for c in info.stop_conditions] == [20.0]
    assert info.unchecked_stop_conditions == [] and not info.warnings, info.warnings
    statuses, met = readme_verdict(info, RECORD)
    assert met is True and [s.met for s in statuses] == [True]


def test_a_second_measured_target_is_said_not_the_one_read() -> None:
    info = parse_readme(stop_conditions("latency <= 20 us and bandwidth >= 4.8TB/s * 0.9"))
    assert info.unchecked_stop_conditions == ["bandwidth >= 4.8TB/s * 0.9"]
    info = parse_readme(stop_conditions("speedup >= 2x, latency <= 20 us and bandwidth >= 5 TB/s"))
    assert [c.normalized_value for c in info.stop_conditions] == [20.0]
    assert info.unchecked_stop_conditions == ["bandwidth >= 5 TB/s"]


def test_a_refusal_quotes_the_bullet_without_markdown_blanks() -> None:
    info = parse_readme(stop_conditions("bandwidth >= **4.8 TB/s** (H200)   ×   `0.9`"))
    (skipped,) = [note for note in info.notes if note.code == "readme:stop-condition-skipped"]
    assert "  " not in skipped.message, skipped.message
