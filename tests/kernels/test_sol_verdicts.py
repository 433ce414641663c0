"""SOL-ExecBench's correctness rule, exactly (issue #25 item 4): `required_matched_ratio`,
`max_error_cap` and `allow_negative_inf` as upstream's `core/bench/correctness.py` applies them
(8d2237d), with the matched ratio and both verdicts in the result. The unit cases are the
edge cases run against upstream's own `compute_error_stats` (1,000 elements, its defaults);
the end-to-end case is a kernel wrong on 5 % of its elements, on a SOL workspace whose one
workload asks for 0.9 and whose other takes upstream's 0.99."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest
import torch

from kernelscope.kernels.adapters.sol_execbench import UPSTREAM_ATOL, UPSTREAM_RTOL
from kernelscope.kernels.gate import GateFailure, check_outputs
from tests.kernels.test_sol_execbench import KERNELSCOPE, bench_cli
from tests.support.sol_workspace import KERNELS, make_sol_workspace

SOL_DEFAULTS: dict[str, Any] = {
    "atol": UPSTREAM_ATOL,
    "rtol": UPSTREAM_RTOL,
    "required_matched_ratio": 0.99,
    "max_error_cap": None,
    "allow_negative_inf": False,
}


def verdict(out: torch.Tensor, ref: torch.Tensor, **tolerance: Any) -> tuple[bool, dict[str, Any]]:
    found: dict[str, Any] = {}
    try:
        check_outputs([out], [ref], (), {**SOL_DEFAULTS, **tolerance}, None, upstream=found)
    except GateFailure as failure:
        found["failure"] = failure
        return False, found
    return True, found


def off_by(count: int, by: float) -> tuple[torch.Tensor, torch.Tensor]:
    ref = torch.linspace(-1, 1, 1000)
    out = ref.clone()
    out[:count] += by
    return out, ref


def test_one_percent_off_passes_two_percent_fails() -> None:
    passed, found = verdict(*off_by(10, 1.0))
    assert passed and found["matched_ratio"] == pytest.approx(0.99)
    assert found["kernelscope_passed"] is False and "decides here" in found["note"]
    passed, found = verdict(*off_by(20, 1.0))
    assert not passed and "matched 0.9800" in found["failure"].message


def test_outliers_pass_unless_capped() -> None:
    passed, _ = verdict(*off_by(5, 100.0))
    assert passed  # upstream bounds no single element unless max_error_cap is set
    passed, found = verdict(*off_by(5, 100.0), max_error_cap=0.5)
    assert not passed and found["passed"] is False


def test_error_equal_to_the_cap_passes() -> None:
    out, ref = off_by(1, 0.5)
    assert verdict(out, ref, max_error_cap=0.5)[0]


def test_all_zeros_fails_against_a_tiny_reference() -> None:
    passed, found = verdict(torch.zeros(1000), torch.full((1000,), 1e-4))
    assert not passed and "all zeros" in found["failure"].message


def test_non_finite_values() -> None:
    ref = torch.linspace(-1, 1, 1000)
    both_neg = ref.clone()
    both_neg[3] = float("-inf")
    assert not verdict(both_neg.clone(), both_neg)[0]
    assert verdict(both_neg.clone(), both_neg, allow_negative_inf=True)[0]
    both_pos = ref.clone()
    both_pos[3] = float("inf")
    assert not verdict(both_pos.clone(), both_pos, allow_negative_inf=True)[0]
    nan_ref = ref.clone()
    nan_ref[7] = float("nan")
    passed, found = verdict(ref.clone(), nan_ref)
    assert not passed and "NaN" in found["failure"].message


def test_without_upstream_fields_the_every_element_rule_holds() -> None:
    out, ref = off_by(1, 1.0)
    with pytest.raises(GateFailure, match="1 of 1000 elements beyond"):
        check_outputs([out], [ref], (), {"atol": 1e-2, "rtol": 1e-2}, None)


FIVE_PERCENT_WRONG = KERNELS["triton"].replace(
    "y = x * rstd * w", "y = tl.where(cols % 20 == 0, x * rstd * w + 1.0, x * rstd * w)"
)


@pytest.mark.slow
def test_five_percent_wrong_passes_at_0_9_and_fails_at_0_99(tmp_path: Path) -> None:
    ws = make_sol_workspace(tmp_path / "ws")
    assert "y = x * rstd * w" in KERNELS["triton"]
    (ws / "kernel.py").write_text(FIVE_PERCENT_WRONG)
    lines = [json.loads(line) for line in (ws / "workload.jsonl").read_text().splitlines()]
    loose, strict = dict(lines[1]), dict(lines[2])  # 7 rows; 1000 rows (shrunk)
    loose["tolerance"] = {"max_atol": 1e-2, "max_rtol": 1e-2, "required_matched_ratio": 0.9}
    strict.pop("tolerance", None)  # upstream's defaults: 0.99
    (ws / "workload.jsonl").write_text(json.dumps(loose) + "\n" + json.dumps(strict) + "\n")
    code, result, stderr = bench_cli(ws, "--seeds", "1")
    first, second = result["configs"]
    assert first["passed"], (first.get("error"), stderr)
    upstream = first["upstream"]
    assert upstream["passed"] and not upstream["kernelscope_passed"]
    assert 0.9 <= upstream["matched_ratio"] < 0.96 and upstream["required_matched_ratio"] == 0.9
    assert "SOL-ExecBench's rule" in upstream["note"]
    assert not second["passed"] and second["error"]["kind"] == "wrong_result"
    assert second["upstream"]["passed"] is False and second["upstream"]["required_matched_ratio"] == 0.99
    assert "matched 0.9" in second["error"]["message"]
    assert code == 3 and result["passed"] is False
    text = subprocess.run(
        [str(KERNELSCOPE), "bench", "-w", str(ws), "--mode", "interpreter", "--seeds", "1"],
        capture_output=True,
        text=True,
        timeout=600,
    )
    said = " ".join((text.stdout + text.stderr).split())
    assert "SOL-ExecBench's rule passes it (matched 0.9" in said and "every-element rule fails it" in said
