"""The hidden audit's verdict (kernels/timing.py): a wrong output on its fresh draw is a `cheat`
only with evidence that the candidate games the timing (the timed inputs' answer replayed, a
right answer when called again, a wrong one now on inputs it was right on); a plain
data-dependent bug is a wrong result, worded as the second distribution words it."""

from __future__ import annotations

import random
from contextlib import nullcontext
from types import SimpleNamespace
from typing import Any

import pytest
import torch

from kernelscope.kernels import gate
from kernelscope.kernels.timing import AUDIT_SEED, TimedCallChecks, TimedCheckFailure

GUARD = SimpleNamespace(
    check=lambda when: None, launches=SimpleNamespace(counting=lambda: nullcontext(SimpleNamespace(count=1)))
)


def draw(seed: int) -> tuple[torch.Tensor]:
    """The problem's inputs: values in [0, 1) for the gate's and timing's seeds; the audit's
    fresh seed happens to reach larger values (a draw the problem allows)."""
    generator = torch.Generator().manual_seed(seed)
    scale = 100.0 if seed >= AUDIT_SEED else 1.0
    return (torch.rand(256, generator=generator) * scale,)


def timed_loop(candidate: Any, calls: int = 4) -> None:
    """Timer.run's order of checks around each call, without the clock."""
    inputs = draw(0)
    checks = TimedCallChecks(
        inputs,
        reference=lambda xs: [xs[0] * 2],
        fresh_inputs=draw,
        candidate=candidate,
        compare=lambda outs, refs, xs: gate.check_outputs(outs, refs, xs, None, None),
        outputs_of=lambda value: gate.as_tensor_list(value, "the candidate"),
        digest=gate.digest,
        guard=GUARD,  # type: ignore[arg-type]
        rng=random.Random(0),
        calls=calls,
        verify=0,  # the audit alone decides here
    )
    for index in range(calls):
        checks.before(index)
        checks.after(index, candidate(*inputs))
        checks.audit_point(index)


def test_a_data_dependent_bug_on_the_audit_s_draw_is_a_wrong_result() -> None:
    def clamps_large_values(x: torch.Tensor) -> torch.Tensor:  # a bug only values >= 50 show
        return torch.where(x < 50, x * 2, x)

    with pytest.raises(TimedCheckFailure) as caught:
        timed_loop(clamps_large_values)
    assert caught.value.kind == "wrong_result", caught.value.message
    assert "right on the problem's own inputs, wrong on a fresh draw of them" in caught.value.message


def test_a_replay_of_the_timed_inputs_answer_is_still_a_cheat() -> None:
    seen: list[torch.Tensor] = []

    def replays(x: torch.Tensor) -> torch.Tensor:  # remembers the timed input, answers for it
        seen[:] = seen or [x]
        return seen[0] * 2

    with pytest.raises(TimedCheckFailure) as caught:
        timed_loop(replays)
    assert caught.value.kind == "cheat"
    assert "the output for the timed inputs instead: a replayed or cached output" in caught.value.message


def test_a_lazy_candidate_is_still_a_cheat() -> None:
    calls = [0]

    def lazy(x: torch.Tensor) -> torch.Tensor:  # right for its first calls only
        calls[0] += 1
        return x * 2 if calls[0] <= 2 else torch.zeros_like(x)

    with pytest.raises(TimedCheckFailure) as caught:
        timed_loop(lazy, calls=6)
    assert caught.value.kind == "cheat" and "a lazy or stateful output" in caught.value.message
