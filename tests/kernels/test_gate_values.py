"""The gate's verdict on values the float tolerance used to blur: integer and bool outputs are
exact (compared in int64, not float32), a reference's NaN and infinities must be reproduced,
and an output that overflows is a wrong result, not a cheat. SOL-ExecBench's rule is left as
upstream writes it (tests/kernels/test_sol_verdicts.py)."""

from __future__ import annotations

import pytest
import torch

from kernelscope.kernels import gate


def _verdict(out: torch.Tensor, ref: torch.Tensor, readme_rel_err: float | None = None) -> str:
    try:
        gate.check_outputs([out], [ref], (), None, readme_rel_err)
    except gate.GateFailure as failure:
        return failure.kind
    return "passed"


@pytest.mark.parametrize("dtype", [torch.int8, torch.int32, torch.int64, torch.uint8])
def test_integer_off_by_one_fails(dtype: torch.dtype) -> None:
    ref = torch.arange(100, dtype=dtype)
    assert _verdict(ref.clone(), ref) == "passed"
    assert _verdict(ref + 1, ref) == "wrong_result"
    assert _verdict(ref + 1, ref, readme_rel_err=0.05) == "wrong_result"  # the README's rel_err is for floats


def test_int64_beyond_float_precision_is_compared_exactly(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(gate, "CHUNK_ELEMENTS", 7)  # several slices
    ref = torch.full((20,), 2**60, dtype=torch.int64) + torch.arange(20)
    out = ref.clone()
    out[13] += 1  # equal in float32 (and in float64)
    with pytest.raises(gate.GateFailure) as failure:
        gate.check_outputs([out], [ref], (), None, None)
    assert failure.value.kind == "wrong_result" and "1 of 20 elements" in failure.value.message
    assert "exact" in failure.value.message


def test_bool_outputs_are_exact() -> None:
    ref = torch.tensor([True, False, True, True])
    assert _verdict(ref.clone(), ref) == "passed"
    assert _verdict(ref.logical_not(), ref) == "wrong_result"


def test_module_tolerance_still_applies_to_integers() -> None:
    ref = torch.arange(10, dtype=torch.int32)
    gate.check_outputs([ref + 1], [ref], (), {"atol": 1.0, "rtol": 0.0}, None)


@pytest.mark.parametrize(
    "expected,got,verdict",
    [
        (float("inf"), 0.0, "wrong_result"),
        (float("inf"), float("-inf"), "wrong_result"),
        (float("-inf"), float("nan"), "wrong_result"),
        (float("nan"), 1.0, "wrong_result"),
        (float("inf"), float("inf"), "passed"),
        (float("-inf"), float("-inf"), "passed"),
        (float("nan"), float("nan"), "passed"),
    ],
)
@pytest.mark.parametrize("readme_rel_err", [None, 0.01])
def test_non_finite_reference_values_must_be_reproduced(
    expected: float, got: float, verdict: str, readme_rel_err: float | None
) -> None:
    ref = torch.linspace(1, 2, 64)
    ref[5] = expected
    out = ref.clone()
    out[5] = got
    assert _verdict(out, ref, readme_rel_err) == verdict


def test_all_nan_reference_does_not_pass_anything() -> None:
    ref = torch.full((32,), float("nan"))
    assert _verdict(torch.zeros(32), ref) == "wrong_result"


def test_overflow_and_wrong_dtype_are_wrong_results_not_cheats() -> None:
    ref = torch.softmax(torch.randn(4, 8), dim=-1)
    overflowed = ref.clone()
    overflowed[0] = float("nan")  # exp overflowed: inf / inf
    with pytest.raises(gate.GateFailure) as failure:
        gate.check_outputs([overflowed], [ref], (), None, None)
    assert failure.value.kind == "wrong_result" and "NaN/Inf values" in failure.value.message
    with pytest.raises(gate.GateFailure) as failure:
        gate.check_outputs([ref.double()], [ref], (), None, None)
    assert failure.value.kind == "wrong_result" and "has dtype" in failure.value.message


def test_digest_sees_a_change_inside_a_nested_list() -> None:
    """A tensor in a list in a list (a cache slot) is hashed by its bytes, not by its repr,
    which torch shortens to its corners past 1000 elements."""
    cache = torch.zeros(64, 64)
    inputs = (torch.ones(3), [[cache], 2])
    before = gate.digest(inputs)
    cache[32, 32] = 1.0
    assert gate.digest(inputs) != before
