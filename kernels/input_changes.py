"""Inputs the reference changes in place: part of its result where the kind says so; else a cheat.

Some references work in place. SOL-ExecBench's `moe_index_add` sample (NVIDIA/SOL-ExecBench
`tests/samples/moe_index_add/reference.py` @c720752) accumulates into an input,
`final_hidden_states.index_add_(0, token_indices, expert_outputs)`, and returns it; Atrex-Bench
has more (reshape_and_cache, moe_sum_reduce). A kernel that does the same to the same input
does what the problem asks. Where an evaluator compares outputs only (KernelBench, a native
workspace), a reference's in-place op is incidental (`a.relu_(); return a + b`): upstream
KernelBench passes a kernel that leaves `a` alone. So a change is part of the result only
where the kind's adapter says its evaluator means it (`Problem.inputs_in_result`:
SOL-ExecBench's destination passing), or where the reference returns the input it changed
(`part_of_result`); any other input the reference changes is its own business: the
candidate gets a fresh draw and must leave it alone. The gate's rule is per input
(`check_inputs`):

- an input the reference leaves alone (or changes, not as part of its result) must come back
  from the candidate's call bit for bit: a change is a `cheat` (the harness, the reference's
  next call, the next timed call all see what the candidate wrote into data it was lent);
- an input the reference changes as part of its result is compared, after the candidate's
  call, with the value the reference left in it, by the outputs' rule and tolerance (an
  integer or bool input exactly, whatever the tolerance: counters, indices, masks): another
  value is `wrong_result`, and so is leaving it as it was, since the change is what the
  reference computes.

The reference runs first (`reference_first`) on its own draw; where it changed an input, the
candidate gets the same draw made again (the problem's inputs are a function of the seed), so
both start from the same values. A draw made again that differs from the first (inputs from
Python's `random` or `torch.empty`, which no seed fixes) is caught by its digest: the
reference then runs again, on a copy of the candidate's draw.

Upstream differs, by aliasing. SOL-ExecBench's `eval_driver.py` (@2f55c0f, the correctness
rounds) calls the reference and then the candidate on the same input tensors, never checks
inputs for changes, and takes the reference's returned tensors as they are (`normalize_outputs`
returns a tensor on the right device itself, not a copy: `core/bench/io.py`, read in a copy of
upstream, qhy991/SOL-Execbench @534eff0, the file not being in upstream's stored snapshot).
The expected output of `moe_index_add` is then the input tensor the candidate goes on to
change: a candidate that
accumulates in place and copies the input to its output passes whatever it adds (it is
compared with itself), and one that leaves the input alone and writes the right sum fails (it
adds to an input the reference already changed). docs/verdicts.md lists the differences.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import torch

from kernelscope.kernels.gate import GateFailure, digest, exact_dtype, overlaps


@dataclass
class ReferenceRun:
    """The inputs the candidate gets (as the problem made them), the reference's outputs, each
    input's digest before the candidate's call, and for each input the reference changed (by
    position) the value it left there."""

    inputs: tuple[Any, ...]
    references: list[torch.Tensor]
    before: list[str]
    changed: dict[int, torch.Tensor] = field(default_factory=dict)

    def outputs_may_not_view(self) -> tuple[Any, ...]:
        """The inputs an output must not share memory with (kernels.gate.check_outputs): all
        but those the reference changes, which are part of the result; a candidate may return
        one, as the reference does (`return final_hidden_states`), its value compared anyway."""
        return tuple(None if index in self.changed else value for index, value in enumerate(self.inputs))


def part_of_result(changed: torch.Tensor, references: list[torch.Tensor], declared: bool) -> bool:
    """Whether an input the reference changed in place is part of its result: where the kind's
    evaluator means it (`declared`, the adapter's `inputs_in_result`), or where the reference
    returns that input (an output sharing its memory)."""
    return declared or any(overlaps(reference, changed) for reference in references)


def _changed_in_result(
    inputs: tuple[Any, ...], touched: list[int], references: list[torch.Tensor], declared: bool
) -> dict[int, torch.Tensor]:
    """Of the inputs a reference call changed (`touched`, by position), the tensors that are
    part of its result (`part_of_result`)."""
    return {
        index: inputs[index]
        for index in touched
        if isinstance(inputs[index], torch.Tensor) and part_of_result(inputs[index], references, declared)
    }


def _touched(inputs: tuple[Any, ...], before: list[str]) -> list[int]:
    """The positions of the inputs whose digest is no longer `before`'s."""
    return [index for index, value in enumerate(inputs) if digest(value) != before[index]]


def reference_first(
    make_inputs: Callable[[], tuple[Any, ...]],
    reference: Callable[[tuple[Any, ...]], list[torch.Tensor]],
    declared: bool,
) -> ReferenceRun:
    """Run the reference on a draw; a reference that changed an input hands the candidate the
    same draw made again. `declared`: the kind's evaluator counts changed inputs as part of
    the result (`part_of_result`). Raises what the reference or the input maker raises."""
    inputs = make_inputs()
    before = [digest(value) for value in inputs]
    references = reference(inputs)
    touched = _touched(inputs, before)
    if not touched:
        return ReferenceRun(inputs, references, before, {})
    changed = _changed_in_result(inputs, touched, references, declared)
    drawn = before
    inputs = make_inputs()
    before = [digest(value) for value in inputs]
    if before == drawn:
        return ReferenceRun(inputs, references, before, changed)
    # The draw is not a function of the seed (Python's random, torch.empty): the reference
    # runs again on a copy of the candidate's own draw, made before either call.
    given = copy_inputs(inputs)
    references = reference(given)
    changed = _changed_in_result(given, _touched(given, before), references, declared)
    return ReferenceRun(inputs, references, before, changed)


def map_tensors(value: Any, fn: Callable[[torch.Tensor], Any]) -> Any:
    """`fn` of a tensor; a list or tuple rebuilt item by item, at any depth (a list of cache
    tensors); other values as they are. The one walk of an input's tensors: copies here,
    the timed loop's perturbation (kernels/timed_checks.py)."""
    if isinstance(value, torch.Tensor):
        return fn(value)
    if isinstance(value, (list, tuple)):
        return type(value)(map_tensors(item, fn) for item in value)
    return value


def copy_value(value: Any) -> Any:
    """A new tensor holding a tensor's value (same strides, dtype, device, requires_grad); a
    list or tuple copied item by item (a list of cache tensors); other values as they are."""
    return map_tensors(value, lambda tensor: tensor.detach().clone().requires_grad_(tensor.requires_grad))


def copy_inputs(inputs: tuple[Any, ...]) -> tuple[Any, ...]:
    return tuple(copy_value(value) for value in inputs)


def restore_value(target: Any, pristine: Any) -> None:
    """`target`'s tensors (itself, or the items of a list or tuple) set back to `pristine`'s
    values, in place; a list's items put back where the reference replaced one."""
    if isinstance(target, torch.Tensor):
        with torch.no_grad():
            target.copy_(pristine)
    elif isinstance(target, list):
        for index, item in enumerate(pristine):
            if isinstance(item, (torch.Tensor, list, tuple)) and type(target[index]) is type(item):
                restore_value(target[index], item)
            else:
                target[index] = copy_value(item)
    elif isinstance(target, tuple):
        for item, kept in zip(target, pristine, strict=True):
            restore_value(item, kept)


def changed_in_place(
    inputs: tuple[Any, ...], reference: Callable[[tuple[Any, ...]], list[torch.Tensor]]
) -> dict[int, Any]:
    """The inputs the reference changes in place (a tensor, or a list or tuple holding
    tensors), by position, each as a copy of its value now: the pristine value the timed loop
    restores before every call, as SOL-ExecBench copies its inputs into fresh tensors before
    each timed call. The reference runs on a copy."""
    given = copy_inputs(inputs)
    before = [digest(value) for value in given]
    reference(given)
    return {
        index: copy_value(value)
        for index, value in enumerate(inputs)
        if digest(given[index]) != before[index] and isinstance(value, (torch.Tensor, list, tuple))
    }


def check_call(
    run: ReferenceRun,
    outputs: list[torch.Tensor],
    when: str,
    compare: Callable[[list[torch.Tensor], list[torch.Tensor], tuple[Any, ...]], object],
) -> None:
    """A call's outputs and then its inputs against the reference's run: `compare(outputs,
    references, inputs no output may share memory with)` (kernels.gate.check_outputs with the
    problem's tolerance), then `check_inputs`. Raises GateFailure (or what `compare` raises)."""
    compare(outputs, run.references, run.outputs_may_not_view())
    check_inputs(run, when, lambda ins, refs: compare(ins, refs, ()))


def check_inputs(
    run: ReferenceRun, when: str, compare: Callable[[list[torch.Tensor], list[torch.Tensor]], object]
) -> None:
    """The rule of the module docstring on `run.inputs` after the candidate's call (`when`
    names the call in messages); `compare` is the gate's comparison of outputs with the
    reference's (kernels.gate.check_outputs with the problem's tolerance). Raises GateFailure."""
    for index, value in enumerate(run.inputs):
        expected = run.changed.get(index)
        unchanged = digest(value) == run.before[index]
        if expected is None:
            if not unchanged:
                raise GateFailure(
                    "cheat",
                    f"the candidate modified its inputs in place: input {index}, which the reference "
                    f"leaves unchanged {when}",
                )
            continue
        if unchanged:
            raise GateFailure(
                "wrong_result",
                f"the reference changes input {index} in place (part of its result); the candidate "
                f"left it unchanged {when}",
            )
        if exact_dtype(expected.dtype) and value.shape == expected.shape and value.dtype == expected.dtype:
            unequal = int((value != expected).sum())  # counters, indices, masks: no tolerance
            if unequal:
                raise GateFailure(
                    "wrong_result",
                    f"input {index}, which the reference changes in place, differs from the reference at "
                    f"{unequal} of {value.numel()} elements (integer or bool: compared exact) {when}",
                )
            continue
        try:
            compare([value], [expected])
        except GateFailure as failure:
            what = failure.message.removeprefix("output ")
            raise GateFailure(
                failure.kind, f"input {index}, which the reference changes in place, {what} {when}"
            ) from None
