"""The hidden audit's verdict (kernels/timed_checks.py): a wrong output on its fresh draw is a `cheat`
only with evidence that the candidate games the timing (an earlier call's output bit for bit, a
right answer when called again, a wrong one now on inputs it was found right on); a plain
data-dependent bug is a wrong result, worded as the second distribution words it. A wrong
verified timed call: perturbation stops only where the reference says so; otherwise a wrong
result (or a cheat, with the same evidence)."""

from __future__ import annotations

import random
import re
import weakref
from contextlib import nullcontext
from types import SimpleNamespace
from typing import Any

import pytest
import torch

from kernelscope.kernels import gate
from kernelscope.kernels.timed_checks import (
    AUDIT_SEED,
    PerturbOnly,
    TimedCallChecks,
    declared_note,
    output_fingerprint,
)
from kernelscope.kernels.timing import TimedCheckFailure
from tests.support.cheat_kernels import (
    new_garbage_after_gate,
    object_cache_stale_noise,
    stale_last_answer_noise,
    zeros_every_third,
)

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
    """Timer.run's order of checks around each call, without the clock; the audit alone decides
    (no verified calls); the gate checked the timed draw (seed 0), as native problems' gates do."""
    checks = checks_for(
        candidate, draw(0), draw, lambda xs: [xs[0] * 2], calls=calls, verify=0, rng=0, gate_checked=True
    )
    run_loop(checks, candidate, calls)


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
    assert (
        "bit for bit, an earlier call's output on other inputs and the reference's answer there: "
        "a replayed or cached output" in caught.value.message
    )


def test_a_lazy_candidate_is_still_a_cheat() -> None:
    calls = [0]

    def lazy(x: torch.Tensor) -> torch.Tensor:  # right for its first calls only, then a step skipped
        calls[0] += 1
        return x * 2 if calls[0] <= 2 else x * 3

    with pytest.raises(TimedCheckFailure) as caught:
        timed_loop(lazy, calls=6)
    assert caught.value.kind == "cheat" and "a lazy or stateful output" in caught.value.message


def checks_for(
    candidate: Any,
    inputs: tuple[Any, ...],
    draw_inputs: Any,
    reference: Any,
    *,
    calls: int,
    verify: int,
    rng: int,
    gate_checked: bool,
    declared: str | None = None,
) -> TimedCallChecks:
    return TimedCallChecks(
        inputs,
        reference=reference,
        fresh_inputs=draw_inputs,
        candidate=candidate,
        compare=lambda outs, refs, xs: gate.check_outputs(outs, refs, xs, None, None),
        outputs_of=lambda value: gate.as_tensor_list(value, "the candidate"),
        digest=gate.digest,
        guard=GUARD,  # type: ignore[arg-type]
        rng=random.Random(rng),
        calls=calls,
        verify=verify,
        checked=[[gate.digest(value) for value in inputs]] if gate_checked else [],
        domain_declared=declared,
    )


def run_loop(checks: TimedCallChecks, candidate: Any, calls: int) -> None:
    for index in range(calls):
        checks.before(index)
        checks.after(index, candidate(*checks.inputs))
        checks.audit_point(index)


def kernelbench_like_draw(seed: int) -> tuple[torch.Tensor]:
    """The timing's set is seed 0, which the gate's seeds (KernelBench's trial seeds) do not
    include; seed 0 and the audit's seed reach values >= 50, the gate's seeds do not."""
    generator = torch.Generator().manual_seed(seed)
    return (torch.rand(256, generator=generator) * (100.0 if seed == 0 or seed >= AUDIT_SEED else 1.0),)


def clamps_large_values(x: torch.Tensor) -> torch.Tensor:  # a bug only values >= 50 show
    return torch.where(x < 50, x * 2, x)


@pytest.mark.parametrize("rng", range(4))
def test_a_bug_on_unchecked_timed_inputs_is_a_wrong_result_not_a_cheat(rng: int) -> None:
    # The gate never checked the timed set: "wrong now on the timed inputs" is no evidence of laziness.
    checks = checks_for(
        clamps_large_values,
        kernelbench_like_draw(0),
        kernelbench_like_draw,
        lambda xs: [xs[0] * 2],
        calls=10,
        verify=2,
        rng=rng,
        gate_checked=False,
    )
    with pytest.raises(TimedCheckFailure) as caught:
        run_loop(checks, clamps_large_values, 10)
    assert caught.value.kind == "wrong_result", caught.value.message


def symmetric_draw(seed: int) -> tuple[torch.Tensor, torch.Tensor]:
    """A symmetric matrix (the perturbation breaks the symmetry) and a vector; the audit's seed
    reaches values >= 50."""
    generator = torch.Generator().manual_seed(seed)
    m = torch.rand(16, 16, generator=generator) * (100.0 if seed >= AUDIT_SEED else 1.0)
    return ((m + m.T) / 2, torch.rand(16, generator=generator))


def uses_symmetry(a: torch.Tensor, x: torch.Tensor) -> torch.Tensor:  # A^T x: A is symmetric
    return a.T @ x


@pytest.mark.parametrize("rng", range(4))
def test_a_structure_relying_kernel_with_a_data_dependent_bug_is_a_wrong_result(rng: int) -> None:
    def buggy(a: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
        out = uses_symmetry(a, x)
        return torch.where(out < 50, out, out * 0.5)

    checks = checks_for(
        buggy,
        symmetric_draw(0),
        symmetric_draw,
        lambda xs: [xs[0] @ xs[1]],
        calls=10,
        verify=2,
        rng=rng,
        gate_checked=True,
    )
    with pytest.raises(TimedCheckFailure) as caught:
        run_loop(checks, buggy, 10)
    assert caught.value.kind == "wrong_result", caught.value.message


@pytest.mark.parametrize("rng", range(3))
def test_a_kernel_relying_on_a_structure_the_problem_does_not_declare_is_a_wrong_result(rng: int) -> None:
    # Right on the problem's own (symmetric) values, wrong with a few elements swapped, which the
    # reference handles: a wrong result, never a reason to stop perturbing (a cache wrong on
    # purpose would turn it off). KernelBench's real 13/14 kernels that exploit the structure
    # already fail the gate's second distribution.
    checks = checks_for(
        uses_symmetry, symmetric_draw(0), symmetric_draw, lambda xs: [xs[0] @ xs[1]],
        calls=10, verify=2, rng=rng, gate_checked=True,
    )  # fmt: skip
    with pytest.raises(TimedCheckFailure) as caught:
        run_loop(checks, uses_symmetry, 10)
    assert caught.value.kind == "wrong_result", caught.value.message
    assert (
        "right on the problem's own values, wrong on them with a few elements swapped" in caught.value.message
    )


@pytest.mark.parametrize("rng", range(3))
def test_a_problem_declaring_its_domain_is_not_perturbed(rng: int) -> None:
    # KERNELSCOPE_SECOND_DISTRIBUTION = False: the problem's domain excludes other inputs, the
    # perturbed ones too; a kernel relying on its structure passes, checked on its own values.
    inputs = symmetric_draw(0)
    checks = checks_for(
        uses_symmetry, inputs, symmetric_draw, lambda xs: [xs[0] @ xs[1]],
        calls=10, verify=2, rng=rng, gate_checked=True, declared="the problem sets X = False",
    )  # fmt: skip
    run_loop(checks, uses_symmetry, 10)
    assert not checks.perturb and not checks.swaps and checks.checked_calls == 3
    assert checks.notes == [declared_note("the problem sets X = False")]
    assert all(torch.equal(a, b) for a, b in zip(inputs, symmetric_draw(0), strict=True))


class ValueCache:
    """The reviewer's cheat: a content-keyed cache that answers the cached inputs from memory and
    is wrong on purpose (new bits every time) on a permutation of them, the harness's swaps."""

    def __init__(self) -> None:
        self.key: tuple[torch.Tensor, ...] = ()
        self.out = torch.empty(0)

    def __call__(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        if self.key and torch.equal(a, self.key[0]) and torch.equal(b, self.key[1]):
            return self.out.clone()
        if self.key and all(
            torch.equal(x.flatten().sort().values, y) for x, y in zip((a, b), self.key[2:], strict=True)
        ):
            return self.out * (1 + 1e-2 * torch.rand(()))
        out = a @ b
        if not self.key:
            self.key = (a.clone(), b.clone(), a.flatten().sort().values, b.flatten().sort().values)
            self.out = out.clone()
        return out


def matmul_draw(seed: int) -> tuple[torch.Tensor, torch.Tensor]:
    generator = torch.Generator().manual_seed(seed)
    return (torch.rand(32, 32, generator=generator), torch.rand(32, 32, generator=generator))


@pytest.mark.parametrize("gate_checked", [True, False])
@pytest.mark.parametrize("rng", range(4))
def test_a_cache_wrong_on_purpose_on_perturbed_inputs_does_not_pass(rng: int, gate_checked: bool) -> None:
    cache = ValueCache()
    checks = checks_for(
        cache, matmul_draw(0), matmul_draw, lambda xs: [xs[0] @ xs[1]],
        calls=40, verify=3, rng=rng, gate_checked=gate_checked,
    )  # fmt: skip
    with pytest.raises(TimedCheckFailure) as caught:
        run_loop(checks, cache, 40)
    assert caught.value.kind in ("wrong_result", "cheat"), caught.value.message


def sorted_draw(seed: int) -> tuple[torch.Tensor]:
    generator = torch.Generator().manual_seed(seed)
    return (torch.sort(torch.rand(64, generator=generator)).values,)


def gaps(xs: tuple[torch.Tensor, ...]) -> list[torch.Tensor]:  # not finite where the order is broken
    return [torch.sqrt(xs[0][1:] - xs[0][:-1])]


@pytest.mark.parametrize("rng", range(3))
def test_a_reference_not_finite_on_perturbed_inputs_stops_perturbation_and_puts_them_back(rng: int) -> None:
    def clamped_gaps(x: torch.Tensor) -> torch.Tensor:  # right for sorted inputs, the problem's own
        return torch.sqrt((x[1:] - x[:-1]).clamp_min(0))

    inputs = sorted_draw(0)
    checks = checks_for(
        clamped_gaps, inputs, sorted_draw, gaps, calls=10, verify=2, rng=rng, gate_checked=True
    )
    run_loop(checks, clamped_gaps, 10)
    assert checks.notes and not checks.perturb
    assert torch.equal(inputs[0], sorted_draw(0)[0])  # later calls ran on the problem's own values


@pytest.mark.parametrize("rng", range(3))
def test_a_kernel_wrong_on_the_timed_inputs_does_not_pass(rng: int) -> None:
    def only_seed_zero_large(seed: int) -> tuple[torch.Tensor]:  # the audit's draw misses the bug
        generator = torch.Generator().manual_seed(seed)
        return (torch.rand(256, generator=generator) * (100.0 if seed == 0 else 1.0),)

    checks = checks_for(
        clamps_large_values,
        only_seed_zero_large(0),
        only_seed_zero_large,
        lambda xs: [xs[0] * 2],
        calls=10,
        verify=2,
        rng=rng,
        gate_checked=False,
    )
    with pytest.raises(TimedCheckFailure) as caught:
        run_loop(checks, clamps_large_values, 10)
    assert caught.value.kind == "wrong_result", caught.value.message
    assert "wrong too" in caught.value.message


def test_a_lazy_kernel_is_a_cheat_where_the_gate_checked_the_timed_inputs() -> None:
    calls = [0]

    def lazy(x: torch.Tensor) -> torch.Tensor:  # right for the gate's calls, then a step skipped
        calls[0] += 1
        return x * 2 if calls[0] <= 2 else x * 3

    inputs = draw(0)
    checks = checks_for(
        lazy, inputs, draw, lambda xs: [xs[0] * 2], calls=6, verify=2, rng=0, gate_checked=True
    )
    with pytest.raises(TimedCheckFailure) as caught:
        run_loop(checks, lazy, 6)
    assert caught.value.kind == "cheat" and "a lazy or stateful output" in caught.value.message


def test_a_stale_output_at_the_audit_is_a_cheat_bit_for_bit() -> None:
    # Computes on its first call, then returns its last result while its plan says so: the
    # reviewer's escape (stale at the audit and when called again, computing on the third call).
    last: list[torch.Tensor] = []
    plan = iter([False, False, False])  # the timed call 1, the audit, the same call again

    def stale(x: torch.Tensor) -> torch.Tensor:
        if not last or next(plan, True):
            last[:] = [x * 2]
        return last[0].clone()

    inputs = draw(0)
    checks = checks_for(
        stale, inputs, draw, lambda xs: [xs[0] * 2], calls=6, verify=0, rng=3, gate_checked=False
    )
    assert checks.audit_at >= 1  # the audit's output is an earlier perturbation's
    with pytest.raises(TimedCheckFailure) as caught:
        run_loop(checks, stale, 6)
    assert caught.value.kind == "cheat", caught.value.message
    assert "bit for bit" in caught.value.message


def test_the_audit_s_output_and_inputs_are_released_before_its_evidence_calls() -> None:
    # The second call on the audit's draw (made again) must not find the first one's output and
    # inputs still held: at a large size they would double the audit's memory.
    held: list[weakref.ref[torch.Tensor]] = []
    alive_at_second_call: list[bool] = []

    def clamps_and_watches(x: torch.Tensor) -> torch.Tensor:
        out = clamps_large_values(x)
        if float(x.max()) >= 50:  # the audit's draw (the timed inputs stay below 1)
            if held:
                alive_at_second_call.append(any(ref() is not None for ref in held))
            held.extend([weakref.ref(x), weakref.ref(out)])
        return out

    with pytest.raises(TimedCheckFailure) as caught:
        timed_loop(clamps_and_watches)
    assert caught.value.kind == "wrong_result", caught.value.message
    assert alive_at_second_call == [False]


def all_negative_draw(seed: int) -> tuple[torch.Tensor]:
    """Every value negative; the audit's fresh draw puts its only positive one last."""
    x = torch.rand(64, generator=torch.Generator().manual_seed(seed)) - 1.5
    if seed >= AUDIT_SEED:
        x[-1] = 5.0
    return (x,)


def last_column_large_draw(seed: int) -> tuple[torch.Tensor]:
    x = torch.rand(1, 4, generator=torch.Generator().manual_seed(seed))
    if seed >= AUDIT_SEED:
        x[:, -1] = 2.0
    return (x,)


@pytest.mark.parametrize("rng", range(4))
@pytest.mark.parametrize(
    ("draw_inputs", "reference", "candidate"),
    [
        # an honest "any positive?" (bool) and argmax (int64), each skipping the last element: the
        # same few possible outputs on every draw, so matching an earlier one bit for bit is no replay
        (
            all_negative_draw,
            lambda xs: [(xs[0] > 0).any().reshape(1)],
            lambda x: (x[:-1] > 0).any().reshape(1),
        ),
        (last_column_large_draw, lambda xs: [xs[0].argmax(dim=1)], lambda x: x[:, :-1].argmax(dim=1)),
    ],
    ids=["bool", "argmax"],
)
def test_a_low_entropy_output_repeating_an_earlier_one_is_a_wrong_result(
    draw_inputs: Any, reference: Any, candidate: Any, rng: int
) -> None:
    checks = checks_for(
        candidate, draw_inputs(0), draw_inputs, reference, calls=10, verify=2, rng=rng, gate_checked=True
    )
    with pytest.raises(TimedCheckFailure) as caught:
        run_loop(checks, candidate, 10)
    assert caught.value.kind == "wrong_result", caught.value.message


def test_an_earlier_output_that_was_not_the_answer_there_is_no_replay() -> None:
    # Honest, with a bug every draw reaches the same way (a few outputs never written, the rest
    # right): bit for bit the same wrong output on the problem's own values and on the audit's
    # draw only where the answer is the same; here it is not, and the first timed output was
    # already wrong there: no replay of an earlier input set's answer.
    def half_zero(x: torch.Tensor) -> torch.Tensor:
        return torch.cat([torch.zeros(128), (x * 2)[128:] * 0 + torch.arange(128.0)])

    checks = checks_for(
        half_zero, draw(0), draw, lambda xs: [xs[0] * 2], calls=4, verify=0, rng=0, gate_checked=False
    )
    with pytest.raises(TimedCheckFailure) as caught:
        run_loop(checks, half_zero, 4)
    assert caught.value.kind == "wrong_result", caught.value.message


def every_dtype() -> dict[str, torch.Tensor]:
    cases = {
        "bool": torch.tensor([True, False, True]),
        "complex64": torch.randn(5, dtype=torch.complex64),
        "bf16": torch.randn(5, dtype=torch.bfloat16),
        "0-dim": torch.tensor(1.5),
        "non-contiguous": torch.randn(6, 6)[:, ::2],
        "transposed": torch.randn(4, 8).T,
        "int64": torch.arange(7),
    }
    for name in ("float8_e4m3fn", "float8_e5m2"):
        if hasattr(torch, name):
            cases[name] = torch.randn(5).to(getattr(torch, name))
    for dtype in (torch.float32, torch.bfloat16, torch.bool, torch.complex64, *[
        getattr(torch, n) for n in ("float8_e4m3fn",) if hasattr(torch, n)
    ]):  # fmt: skip
        cases[f"empty {dtype}"] = torch.empty(0, 3, dtype=dtype)
    return cases


@pytest.mark.parametrize("name", list(every_dtype()))
def test_the_output_fingerprint_takes_every_dtype_and_layout(name: str) -> None:
    value = every_dtype()[name]
    same = (
        value.clone()
        if value.dim() < 2
        else torch.empty_strided(value.shape, value.stride(), dtype=value.dtype)
    )
    if value.dim() >= 2:
        same.copy_(value)
    assert output_fingerprint([value]) == output_fingerprint([same])  # the same bits, shape and layout
    if value.numel():
        other = torch.zeros_like(value) if value.dtype != torch.bool else ~value
        assert output_fingerprint([value]) != output_fingerprint([other])


def racy(seed: int, wrong: float = 0.2) -> Any:
    """An honest kernel with a race (a missing barrier): wrong on about `wrong` of its calls, a
    few elements read before they were written, new garbage every time; seeded, so that each
    seed's run is the same run every time."""
    rng = random.Random(seed)
    generator = torch.Generator().manual_seed(seed)

    def candidate(x: torch.Tensor) -> torch.Tensor:
        out = x * 2
        if rng.random() < wrong:
            lost = torch.randint(0, out.numel(), (4,), generator=generator)
            out[lost] = torch.rand(4, generator=generator) * 7
        return out

    return candidate


@pytest.mark.parametrize("verify", [0, 3])  # the hidden audit alone, and verified timed calls too
@pytest.mark.parametrize("seed", [*range(12), 44])  # 44: the one of 0-59 the old rule called lazy
def test_a_racy_honest_kernel_is_never_called_a_cheat(seed: int, verify: int) -> None:
    # Right on some calls and wrong on others, the same inputs or not: "right when called again"
    # and "wrong now on inputs it was found right on" are what a race does, no evidence of gamed
    # timing. The old rules called 9 of these 26 runs `cheat` (4 fresh calls right, 4 audits
    # right when made again, 1 lazy).
    candidate = racy(seed)
    checks = checks_for(
        candidate, draw(0), lambda s: draw(s % AUDIT_SEED), lambda xs: [xs[0] * 2],
        calls=20, verify=verify, rng=seed, gate_checked=True,
    )  # fmt: skip
    try:
        run_loop(checks, candidate, 20)
    except TimedCheckFailure as failure:
        assert failure.kind == "wrong_result", failure.message
        if (
            "made again is right" in failure.message
            or "a fresh call on the same inputs is right" in failure.message
        ):
            assert "its output varies from call to call on the same inputs" in failure.message


def runner_loop(checks: TimedCallChecks, candidate: Any, calls: int, rounds: int = 2) -> None:
    """kernels/runner.py's order: a baseline phase (perturbing too, nothing checked) before each
    candidate phase, so the candidate's first timed call is on inputs perturbed since the gate."""
    others = PerturbOnly(checks)
    for _ in range(rounds):
        for index in range(calls):
            others.before(index)
            others.restore()
        run_loop(checks, candidate, calls)


@pytest.mark.parametrize("seed", range(6))
def test_a_buffer_keyed_cache_with_noise_is_a_cheat(seed: int) -> None:
    # Its stale answer plus noise inside the tolerance: never an earlier output bit for bit, but
    # within the tolerance the reference's answer for the inputs of its first timed call.
    candidate = object_cache_stale_noise(seed)
    checks = checks_for(
        candidate, draw(0), draw, lambda xs: [xs[0] * 2], calls=4, verify=2, rng=seed, gate_checked=True
    )
    with pytest.raises(TimedCheckFailure) as caught:
        runner_loop(checks, candidate, 4)
    assert caught.value.kind == "cheat", caught.value.message
    assert "a stale output" in caught.value.message


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("verify", [0, 2])
def test_a_stale_last_answer_with_noise_is_a_cheat(seed: int, verify: int) -> None:
    # Right on the gate's calls and the first timed one, then that answer plus noise.
    candidate = stale_last_answer_noise(seed, computed=1)
    checks = checks_for(
        candidate, draw(0), draw, lambda xs: [xs[0] * 2], calls=6, verify=verify, rng=seed, gate_checked=True
    )
    with pytest.raises(TimedCheckFailure) as caught:
        runner_loop(checks, candidate, 6)
    assert caught.value.kind == "cheat", caught.value.message
    assert "a stale output" in caught.value.message


@pytest.mark.parametrize("seed", range(6))
def test_no_race_is_named_where_no_variation_was_seen(seed: int) -> None:
    # Zeros on every third call: deterministic, so a wrong_result (nothing in the output is
    # evidence), and the fresh calls show no output varying on the same inputs unless they do.
    candidate = zeros_every_third(seed)
    checks = checks_for(
        candidate, draw(0), draw, lambda xs: [xs[0] * 2], calls=8, verify=3, rng=seed, gate_checked=True
    )
    with pytest.raises(TimedCheckFailure) as caught:
        runner_loop(checks, candidate, 8)
    message = caught.value.message
    assert caught.value.kind == "wrong_result", message
    if "varies from call to call" in message:  # only where calls on the same inputs showed it
        seen = re.search(r"wrong on (\d+) of (\d+) calls \((\d+) distinct", message)
        varied = seen is not None and (seen[1] != seen[2] or seen[3] != "1")
        assert varied or "made again is right" in message, message


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("verify", [0, 2])
def test_new_garbage_after_the_gate_claims_nothing_false(seed: int, verify: int) -> None:
    # Right where the gate checked the timed inputs (and on the first timed call), then new values every call: a wrong_result
    # (an honest kernel leaving its output unwritten does the same), and its message must not
    # say the gate's inputs did not reach the bug: it was right on them.
    candidate = new_garbage_after_gate(seed, computed=1)
    checks = checks_for(
        candidate, draw(0), draw, lambda xs: [xs[0] * 2], calls=6, verify=verify, rng=seed, gate_checked=True
    )
    with pytest.raises(TimedCheckFailure) as caught:
        runner_loop(checks, candidate, 6)
    message = caught.value.message
    assert caught.value.kind == "wrong_result", message
    assert "the inputs the gate checked did not" not in message and "seeds did not reach" not in message
    assert "found right on" in message and "distinct outputs" in message, message


def test_an_error_in_the_compare_surfaces_rather_than_becoming_a_label() -> None:
    # A TypeError from the harness's own comparison must surface as an error (the runner reports
    # it as the kernel's `exception`, with a hint that the harness may be at fault:
    # kernels/fault_origin.py), not become "wrong the same way on 5 calls" (the right output,
    # digested every time).
    def buggy_compare(outs: Any, refs: Any, xs: Any) -> None:
        raise TypeError("harness bug: unsupported operand")

    inputs = draw(0)
    checks = replace_compare(
        checks_for(
            lambda x: x * 2, inputs, draw, lambda xs: [xs[0] * 2], calls=3, verify=2, rng=0, gate_checked=True
        ),
        buggy_compare,
    )
    checks.audited = True
    with pytest.raises(TypeError, match="harness bug"):
        run_loop(checks, lambda x: x * 2, 3)


def replace_compare(checks: TimedCallChecks, compare: Any) -> TimedCallChecks:
    checks.compare = compare
    return checks


def test_repeated_fresh_calls_compare_outputs_on_the_device() -> None:
    # The lazy check's fresh calls: their outputs are compared where they are (torch.equal with
    # the first one kept), never read whole to the host by gate.digest.
    outputs: list[weakref.ref[torch.Tensor]] = []
    digested: list[bool] = []
    calls = [0]

    def lazy(x: torch.Tensor) -> torch.Tensor:
        calls[0] += 1
        out = x * 2 if calls[0] <= 1 else x * 3
        outputs.append(weakref.ref(out))
        return out

    def spying_digest(value: Any) -> str:
        flat = value if isinstance(value, (list, tuple)) else [value]
        stack, found = list(flat), False
        while stack:
            item = stack.pop()
            if isinstance(item, (list, tuple)):
                stack.extend(item)
            elif isinstance(item, torch.Tensor):
                found = found or any(ref() is item for ref in outputs)
        digested.append(found)
        return gate.digest(value)

    checks = checks_for(
        lazy, draw(0), draw, lambda xs: [xs[0] * 2], calls=6, verify=2, rng=0, gate_checked=True
    )
    checks.digest = spying_digest
    with pytest.raises(TimedCheckFailure) as caught:
        run_loop(checks, lazy, 6)
    assert caught.value.kind == "cheat", caught.value.message
    assert not any(digested)


def randn_pair(seed: int) -> tuple[torch.Tensor, torch.Tensor]:
    generator = torch.Generator().manual_seed(seed)
    return torch.randn(4156, generator=generator), torch.randn(4156, generator=generator)


def mse_dropping_its_tail(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """An honest loss kernel with a bug: its grid is n // 128 blocks, not cdiv, so the last
    partial block (60 of 4156 elements) is left out; a little more than the tolerance wrong on
    some draws, right within it on others."""
    body = (a.numel() // 128) * 128
    return ((a[:body] - b[:body]) ** 2).sum() / a.numel()


@pytest.mark.parametrize("seed", range(10))
def test_an_honest_loss_a_little_more_than_the_tolerance_off_is_no_stale_output(seed: int) -> None:
    # A scalar the draws and the swaps move by less than the tolerance: wrong by a little more
    # than it, it is within the tolerance of an earlier answer as often as not, which proves
    # nothing. Before `_tells_stale`, 3 of these 10 runs were `cheat` ("a stale output"); the
    # reviewer's 40 seeds: 22 (20 calls) and 34 (the runner's order).
    def reference(xs: tuple[torch.Tensor, ...]) -> list[torch.Tensor]:
        return [((xs[0] - xs[1]) ** 2).mean()]

    checks = replace_compare(
        checks_for(
            mse_dropping_its_tail, randn_pair(0), randn_pair, reference,
            calls=20, verify=3, rng=seed, gate_checked=True,
        ),
        lambda outs, refs, xs: gate.check_outputs(outs, refs, xs, {"atol": 1e-2, "rtol": 1e-2}, None),
    )  # fmt: skip
    try:
        run_loop(checks, mse_dropping_its_tail, 20)
    except TimedCheckFailure as failure:
        assert failure.kind == "wrong_result", failure.message


def test_a_stale_search_holds_one_reference_run_at_a_time() -> None:
    # `_stale` runs the reference again at up to five earlier marks; its loop kept the last run
    # alive while the next was computed: two reference outputs at once, +348 MB at the peak on a
    # 256 MB output. Each run's outputs must be gone before the next reference call.
    alive: list[weakref.ref[torch.Tensor]] = []
    held_at_call: list[int] = []

    def reference(xs: Any) -> list[torch.Tensor]:
        held_at_call.append(sum(ref() is not None for ref in alive))
        out = xs[0] * 2
        alive.append(weakref.ref(out))
        return [out]

    checks = checks_for(
        lambda x: x * 2, draw(0), draw, reference, calls=4, verify=4, rng=0, gate_checked=True
    )
    run_loop(checks, lambda x: x * 2, 4)  # right every call: marks first, previous, verified, 0
    alive.clear()
    held_at_call.clear()
    unrelated = [torch.rand(256, generator=torch.Generator().manual_seed(7))]  # no mark's answer
    assert checks._stale(unrelated, [checks.inputs[0] * 2]) is None
    assert len(held_at_call) >= 2, held_at_call  # several marks were tried
    assert held_at_call == [0] * len(held_at_call), held_at_call


def test_a_wrong_timed_call_s_comparison_is_released_before_the_reference_runs_again() -> None:
    # The GateFailure of a wrong verified call kept its traceback, whose frames hold what the
    # comparison had made when it raised (SOL-ExecBench's sanity check: float copies of the
    # output and the reference, masks), through `_stale`'s reruns of the reference and the
    # fresh calls. Here the comparison's temporary is a tensor of its own frame.
    temporaries: list[weakref.ref[torch.Tensor]] = []
    held_at_call: list[int] = []

    def compare(outs: Any, refs: Any, xs: Any) -> Any:
        scratch = torch.empty(256)  # what a comparison holds while it runs
        temporaries.append(weakref.ref(scratch))
        return gate.check_outputs(outs, refs, xs, None, None)

    def reference(xs: Any) -> list[torch.Tensor]:
        held_at_call.append(sum(ref() is not None for ref in temporaries))
        return [xs[0] * 2]

    calls = [0]

    def wrong_from_the_third(x: torch.Tensor) -> torch.Tensor:
        calls[0] += 1
        return x * 2 if calls[0] <= 2 else x * 2 + 1

    checks = checks_for(
        wrong_from_the_third, draw(0), draw, reference, calls=4, verify=4, rng=0, gate_checked=True
    )
    replace_compare(checks, compare)
    with pytest.raises(TimedCheckFailure):
        run_loop(checks, wrong_from_the_third, 4)
    assert len(held_at_call) > 4, held_at_call  # the reference ran again after the wrong call
    assert not any(held_at_call), held_at_call
