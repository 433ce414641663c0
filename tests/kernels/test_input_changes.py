"""kernels/input_changes.py on its own: the rule for inputs a reference changes in place."""

from __future__ import annotations

import pytest
import torch

from kernelscope.kernels.gate import GateFailure, check_outputs
from kernelscope.kernels.input_changes import check_inputs, reference_first

SOL_TOLERANCE = {"atol": 1e-2, "rtol": 1e-2, "required_matched_ratio": 0.99}  # a workload's own


def _counters() -> tuple[torch.Tensor, ...]:
    return (torch.full((200,), 1000, dtype=torch.int64),)


@pytest.mark.parametrize("step", [5, 2])
def test_an_integer_input_changed_in_place_is_compared_exactly(step: int) -> None:
    """Counters, indices, bool masks: exact, whatever the floating-point tolerance (1000 + 5
    is within 1% of 1000 + 1)."""
    run = reference_first(_counters, lambda xs: [xs[0].add_(1).clone()], True)
    run.inputs[0].add_(step)
    with pytest.raises(GateFailure) as failure:
        check_inputs(run, "(test)", lambda ins, refs: check_outputs(ins, refs, (), SOL_TOLERANCE, None))
    assert failure.value.kind == "wrong_result" and "exact" in failure.value.message


def test_the_same_integer_change_passes() -> None:
    run = reference_first(_counters, lambda xs: [xs[0].add_(1).clone()], True)
    run.inputs[0].add_(1)
    check_inputs(run, "(test)", lambda ins, refs: check_outputs(ins, refs, (), SOL_TOLERANCE, None))
