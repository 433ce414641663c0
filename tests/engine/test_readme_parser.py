"""The README parser on the variants real workspaces have."""

from __future__ import annotations

from pathlib import Path

import pytest

from kernelscope.daemon.engine.workspace.readme import parse_condition, parse_readme, parse_readme_file

ATREX_FILLED = """# Kernel Opt Session Configuration

## Target
- platform: MI308X (parsed from user input)
- arch: CDNA3 (derived from platform)
- framework: Triton (parsed from user input)
- dtype: bf16
- kernel type: GEMM

## Inputs
- shapes: M=N=K=4096
- correctness threshold: rel_err < 0.01 (bf16 default) / 0.05 (fp8/fp4)

## Hardware Specs
- HBM bandwidth: 4.3 TB/s <- gpu-wiki/docs/amd/cdna3/mi308x/hardware-specs/hardware_specs_mi308x.md
- bf16 dense TFLOPS: 206 T <- gpu-wiki/docs/amd/cdna3/mi308x/hardware-specs/hardware_specs_mi308x.md
- LDS bandwidth: UNKNOWN

## Stop Conditions
The following targets are filled by Step 0 after calculation as `hardware peak * 90%`.

- compute-bound target: bf16 TFLOPS >= 185.4T
- memory-bound target: bandwidth >= 3.87TB/s
- end-to-end latency: measured via `triton.testing.do_bench(kernel_fn, warmup=N, rep=N)` (p50 median, in ms)

## Task Context
- platform:
- arch:
- framework:
"""

ATREX_TEMPLATE = """# Kernel Opt Session Configuration

## Target
- platform: <H20 / MI308X / MI355X / ...> (parsed from user input)
- framework: <CuteDSL / Gluon / FlyDSL / Triton / ...> (parsed from user input)

## Stop Conditions
- compute-bound target: <dtype> TFLOPS >= <peak * 90%> T, for example MI308X bf16 peak 206T -> target >= 185.4T
- memory-bound target: bandwidth >= <peak * 90%> TB/s, for example MI308X HBM peak 4.3TB/s -> target >= 3.87TB/s
"""

MINIMAL = """# softmax
## Stop Conditions
- latency <= 120 us
"""

MACHINE_BLOCK = """# layernorm

## Stop Conditions
- memory-bound target: bandwidth >= 3.0TB/s

```kernelscope
{
  "target": {"platform": "H200", "framework": "Triton", "dtype": "fp16", "kernel_type": "Norm"},
  "stop_conditions": [
    {"metric": "latency", "op": "<=", "value": 0.05, "unit": "ms"},
    "bandwidth >= 4.1 TB/s"
  ],
  "correctness_threshold": 0.02,
  "hardware_specs": [{"metric": "HBM bandwidth", "value": 4.8, "unit": "TB/s", "source": "datasheet"}]
}
```
"""

NO_STOP = """# my kernel
Some notes, no targets at all.
"""

BROKEN_BLOCK = """# x
## Stop Conditions
- memory-bound target: bandwidth >= 900 GB/s

```kernelscope
{"stop_conditions": [ this is not json
```
"""

WEIRD_MARKDOWN = """Title
=====

### STOP CONDITIONS ###
* Memory-bound target: **bandwidth ≥ 2.5 TB/s** on the largest shape
1. latency target: < 1.5ms
- TFLOPS >= 300 TFLOPS (fp8)

```
## Stop Conditions
- inside a code fence: bandwidth >= 1 TB/s
```
"""


def test_atrex_style_readme() -> None:
    info = parse_readme(ATREX_FILLED)
    assert info.target.platform == "MI308X"
    assert info.target.arch == "CDNA3"
    assert info.target.framework == "Triton"
    assert info.target.dtype == "bf16"
    assert info.target.kernel_type == "GEMM"
    assert [c.kind for c in info.stop_conditions] == ["tflops", "bandwidth"]
    tflops, bandwidth = info.stop_conditions
    assert tflops.dtype == "bf16" and tflops.normalized_value == pytest.approx(185.4)
    assert tflops.comparator == ">=" and tflops.label == "compute-bound target"
    assert bandwidth.normalized_value == pytest.approx(3870.0) and bandwidth.unit == "TB/s"
    assert bandwidth.line == 23
    assert info.correctness_threshold is not None and info.correctness_threshold.value == 0.01
    specs = {s.metric: s for s in info.hardware_specs}
    assert specs["HBM bandwidth"].value == 4.3 and specs["HBM bandwidth"].unit == "TB/s"
    assert specs["HBM bandwidth"].source.startswith("gpu-wiki/")
    assert specs["LDS bandwidth"].known is False
    assert info.primary_kind == "tflops"
    assert not info.warnings and not info.errors
    assert bandwidth.is_met(3900.0) and not bandwidth.is_met(3800.0)


def test_unfilled_template_warns_instead_of_reading_examples() -> None:
    info = parse_readme(ATREX_TEMPLATE)
    assert info.stop_conditions == []
    assert info.target.platform is None
    assert any("placeholder" in w for w in info.warnings)
    assert any("no stop conditions" in w for w in info.warnings)


def test_minimal_latency_readme() -> None:
    info = parse_readme(MINIMAL)
    (condition,) = info.stop_conditions
    assert condition.kind == "latency" and condition.comparator == "<="
    assert condition.normalized_value == 120.0 and condition.is_met(100.0)
    assert info.correctness_threshold is None


def test_machine_block_wins() -> None:
    info = parse_readme(MACHINE_BLOCK)
    assert info.machine_block
    assert info.target.platform == "H200" and info.target.kernel_type == "Norm"
    kinds = [(c.kind, c.normalized_value) for c in info.stop_conditions]
    assert kinds == [("latency", 50.0), ("bandwidth", pytest.approx(4100.0))]
    assert info.correctness_threshold is not None and info.correctness_threshold.value == 0.02
    assert info.hardware_specs[0].source == "datasheet"


def test_no_stop_conditions_is_a_warning_not_a_crash() -> None:
    info = parse_readme(NO_STOP)
    assert info.stop_conditions == []
    assert len(info.warnings) == 1 and "no stop conditions" in info.warnings[0]


def test_broken_machine_block_is_an_error_and_prose_still_counts() -> None:
    info = parse_readme(BROKEN_BLOCK)
    assert not info.machine_block
    assert info.errors and "not valid JSON" in info.errors[0]
    assert [c.normalized_value for c in info.stop_conditions] == [900.0]


def test_unusual_markdown_headings_bullets_and_units() -> None:
    info = parse_readme(WEIRD_MARKDOWN)
    values = [(c.kind, c.comparator, c.normalized_value) for c in info.stop_conditions]
    assert values == [
        ("bandwidth", ">=", pytest.approx(2500.0)),
        ("latency", "<", pytest.approx(1500.0)),
        ("tflops", ">=", 300.0),
    ]


@pytest.mark.parametrize(
    "text,kind,value",
    [
        ("bandwidth >= 3.87TB/s", "bandwidth", 3870.0),
        ("bandwidth >= 900GB/s", "bandwidth", 900.0),
        ("fp16 TFLOPS >= 120 TFLOPS", "tflops", 120.0),
        ("latency <= 0.25 ms", "latency", 250.0),
        ("latency < 80us", "latency", 80.0),
        ("latency <= 80 µs", "latency", 80.0),
    ],
)
def test_units(text: str, kind: str, value: float) -> None:
    condition = parse_condition(text)
    assert condition is not None and condition.kind == kind
    assert condition.normalized_value == pytest.approx(value)


def test_hostile_content_never_raises() -> None:
    hostile = (
        "## Stop Conditions\n"
        + "- "
        + "<" * 10000
        + "\n"
        + "\x00\ud800".encode("utf-8", "surrogatepass").decode("utf-8", "replace")
        + "\n```kernelscope\n[1,2]\n```\n"
        + "#" * 7
        + "\n"
    )
    info = parse_readme(hostile)
    assert info.errors  # the block is a list, not an object


def test_targets_digest_tracks_thresholds(tmp_path: Path) -> None:
    readme = tmp_path / "README.md"
    readme.write_text(ATREX_FILLED)
    before = parse_readme_file(readme).targets_digest
    readme.write_text(ATREX_FILLED.replace("## Inputs", "## Inputs\n- note: unrelated edit"))
    assert parse_readme_file(readme).targets_digest == before
    readme.write_text(ATREX_FILLED.replace("3.87TB/s", "2.0TB/s"))
    assert parse_readme_file(readme).targets_digest != before


def test_missing_readme_is_an_error_on_the_result(tmp_path: Path) -> None:
    info = parse_readme_file(tmp_path / "README.md")
    assert info.errors and "cannot read" in info.errors[0]


def test_a_filled_in_condition_with_comparators_in_its_note_is_not_a_placeholder() -> None:
    """`<=` and `n > 1M` in one bullet are comparators, not a template's `<...>` bracket: the
    condition is read (it is the primary one, not the bullet after it) and nothing warns."""
    info = parse_readme(
        "# x\n\n## Stop Conditions\n"
        "- latency <= 40 us (do_bench p50, for n > 1M)\n"
        "- memory-bound target: bandwidth >= 4.32TB/s -> then stop\n"
        "- latency < 90 us for 1K<n<1M (n>4K: do_bench median)\n"
    )
    latency, bandwidth, small = info.stop_conditions
    assert latency.kind == "latency" and latency.value == 40.0 and latency.line == 4
    assert bandwidth.kind == "bandwidth" and bandwidth.normalized_value == pytest.approx(4320.0)
    assert small.value == 90.0 and info.primary_kind == "latency"
    assert not any("placeholder" in w for w in info.warnings), info.warnings
    template = parse_readme("# x\n\n## Stop Conditions\n- latency <= <target> us (for n > <size>)\n")
    assert template.stop_conditions == [] and any("placeholder" in w for w in template.warnings)


@pytest.mark.parametrize(
    "value,why",
    [
        ("-4TB/s", "negative"),
        ("nanTB/s", "not a number"),
        ("infTB/s", "not finite"),
        ("1e400TB/s", "not finite"),
        ("0TB/s", "not positive"),
        ("4.32 PB/s", "unit 'PB/s'"),
        ("4,32TB/s", "decimal comma (write 4.32)"),
        ("3,350 GB/s", "may group thousands or mark decimals (write 3350 or 3.350)"),
        ("1,000,000 GB/s", "commas grouping thousands (write 1000000)"),
        ("3,350.5 GB/s", "commas grouping thousands (write 3350.5)"),
        ("1,2,3 TB/s", "1,2,3 is no number kernelscope reads"),
        ("", "no value"),
        ("99999999999999999999999999999999999999", "no unit"),
    ],
)
def test_a_stop_condition_kernelscope_cannot_check_is_named_with_why(value: str, why: str) -> None:
    """Such bullets were dropped without a word (or, for 1e400, read as a target of inf TB/s
    that can never be met): each is skipped with a warning naming its line, its text and what
    is wrong, and the README counts no stop condition from it (the CLI fast path neither)."""
    from kernelscope.daemon.engine.workspace.readme_conditions import primary_kind

    text = f"# x\n\n## Stop Conditions\n- memory-bound target: bandwidth >= {value}\n"
    info = parse_readme(text)
    assert info.stop_conditions == [] and primary_kind(text) is None
    (skipped,) = [w for w in info.warnings if "line 4" in w]
    assert f"bandwidth >= {value}".strip() in skipped and why in skipped, skipped
    assert "expected" in skipped, skipped


def test_each_warning_carries_its_line_and_kind_as_data() -> None:
    """The editor shows a warning on its line (lsp/features/readme.py): the line and the kind
    are the model's data, not only words in the sentence; the sentence is unchanged."""
    text = (
        "# x\n\n## Target\n- platform: <platform>\n\n## Stop Conditions\n"
        "- memory-bound target: bandwidth >= 4,32TB/s\n- compute-bound target: <value>\n"
    )
    info = parse_readme(text)
    found = [(n.code, n.line) for n in info.notes]
    assert found == [
        ("readme:target-placeholder", 4),
        ("readme:stop-condition-skipped", 7),
        ("readme:stop-condition-placeholder", 8),
        ("readme:no-measurable-stop-condition", None),
    ], found
    assert info.warnings[1] == f"README line 7: {info.notes[1].message}"
    assert info.notes[1].message.startswith("stop condition skipped, kernelscope cannot check it:")
    assert info.model_dump(mode="json")["warnings"] == info.warnings  # (as --json says them)


def test_a_latency_of_zero_and_a_good_bullet_beside_a_bad_one() -> None:
    info = parse_readme(
        "# x\n\n## Stop Conditions\n- end-to-end latency: <= 0 us\n- latency <= 40 us\n"
        "- correctness: rel_err < 0.01\n- stop when the plan is done -> report\n"
    )
    assert [(c.kind, c.value, c.line) for c in info.stop_conditions] == [("latency", 40.0, 5)]
    assert info.correctness_threshold is not None and info.correctness_threshold.value == 0.01
    # the zero latency is named; the correctness threshold and the words are not targets
    assert len(info.warnings) == 1 and "line 4" in info.warnings[0], info.warnings
    assert "not positive" in info.warnings[0]


def test_the_machine_block_refuses_an_unusable_target_saying_why() -> None:
    info = parse_readme('# x\n```kernelscope\n{"stop_conditions": ["bandwidth >= 1e400TB/s"]}\n```\n')
    assert not info.machine_block and info.stop_conditions == []
    assert info.errors and "not finite" in info.errors[0], info.errors
    negative = parse_readme(
        '# x\n```kernelscope\n{"stop_conditions": [{"metric": "bandwidth", "value": -4, "unit": "TB/s"}]}\n```\n'
    )
    assert negative.errors and "negative" in negative.errors[0], negative.errors


def test_atrex_unknown_runtime_architecture_is_no_arch() -> None:
    """atrex's orchestrator/campaign.py (16f7ec4, L895-906) writes
    ``- Runtime architecture: `unknown (use the runtime GPU API before choosing codegen)` ``
    when it was given no arch: that is no architecture (it was shown as the arch)."""
    text = (
        "# rms_norm\n\n## Config\n- Target platform: `B200`\n"
        "- Runtime architecture: `unknown (use the runtime GPU API before choosing codegen)`\n"
        "- Framework: `Triton`\n"
    )
    target = parse_readme(text).target
    assert target.platform == "B200" and target.framework == "Triton"
    assert target.arch is None
    assert parse_readme(text.replace("`unknown (use", "`UNKNOWN (use")).target.arch is None
    assert (
        parse_readme(
            text.replace("unknown (use the runtime GPU API before choosing codegen)", "sm_100")
        ).target.arch
        == "sm_100"
    )
