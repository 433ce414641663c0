"""How sure a number is, and what the comparison does, without running a benchmark: the
verdict against the run's own A/A noise band, the lenses that show it, the sliced comparison
(same figures as a float64 one, on fp32 and fp16), wrong layouts and input perturbation."""

from __future__ import annotations

import json
import random
import shutil
from pathlib import Path

import pytest
import torch

from kernelscope.daemon.engine.memory.scores import memory_scores
from kernelscope.daemon.engine.views.lens_text import kernel_lens
from kernelscope.daemon.engine.workspace.workspace import Workspace
from kernelscope.kernels import gate
from kernelscope.kernels.timed_checks import (
    UNPERTURBED_NOTE,
    PerturbOnly,
    TimedCallChecks,
    perturb_,
    restore_,
)
from kernelscope.kernels.timing import Timed
from kernelscope.protocol.stats import verdict_of
from tests.conftest import EXAMPLES


@pytest.mark.parametrize(
    "score,ci,band,expected",
    [
        (1.01, (0.99, 1.03), (0.97, 1.04), "no measurable change"),  # inside the band
        (1.03, (1.01, 1.05), (0.97, 1.04), "no measurable change"),  # the band alone decides
        (0.96, (0.95, 0.97), (0.95, 1.05), "no measurable change"),  # a slowdown inside it
        (1.05, (0.99, 1.10), (0.98, 1.02), "no measurable change"),  # interval holds 1.0
        (1.30, (1.25, 1.35), (0.97, 1.03), "faster"),
        (0.70, (0.66, 0.74), (0.97, 1.03), "slower"),
    ],
)
def test_verdict_against_the_noise_band(score: float, ci: tuple, band: tuple, expected: str) -> None:
    assert verdict_of(score, ci, band) == expected


def test_kernel_lens_says_no_measurable_change(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    shutil.copytree(EXAMPLES / "vector_add", ws)
    record = json.loads((ws / "memory" / "v4.json").read_text())
    record["kernelscope"] = {"verdict": "no measurable change", "noise_band": [0.97, 1.03]}
    (ws / "memory" / "v4.json").write_text(json.dumps(record))
    workspace = Workspace(ws)
    text = kernel_lens(None, memory_scores(workspace.memory.scan(), workspace.readme()))
    assert "latest 1.22x v4 (no measurable change)" in text


def _float64_figures(out: torch.Tensor, ref: torch.Tensor) -> tuple[float, float, float]:
    """What the comparison computed before it worked in slices: float64 copies of both."""
    o, r = out.double(), ref.double()
    diff = (o - r).abs()
    return float(diff.max()), float((diff / r.abs().clamp_min(1e-12)).max()), float(diff.norm() / r.norm())


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16])
def test_sliced_comparison_matches_float64(monkeypatch: pytest.MonkeyPatch, dtype: torch.dtype) -> None:
    monkeypatch.setattr(gate, "CHUNK_ELEMENTS", 1000)  # several slices
    torch.manual_seed(0)
    ref = torch.randn(4321).to(dtype)
    out = (ref.float() + 1e-3 * torch.randn(4321)).to(dtype)
    found = gate._compare(out, ref, {"rel_err": 0.01})
    expected = _float64_figures(out, ref)
    assert found.ok and found.counted == 4321
    assert found.max_abs == pytest.approx(expected[0], rel=1e-3)
    assert found.max_rel == pytest.approx(expected[1], rel=1e-3)
    assert found.rel_err == pytest.approx(expected[2], rel=1e-3)


def test_transposed_right_answer_is_wrong_layout() -> None:
    ref = torch.arange(12.0).reshape(3, 4)
    out = ref.t().contiguous().t()  # the same values, column-major
    with pytest.raises(gate.GateFailure) as failure:
        gate.check_outputs([out], [ref], (), None, None)
    assert (
        failure.value.kind == "wrong_layout"
        and "(1, 3)" in failure.value.message
        and "(4, 1)" in failure.value.message
    )
    wrong = out * 2
    with pytest.raises(gate.GateFailure) as failure:
        gate.check_outputs([wrong], [ref], (), None, None)
    assert failure.value.kind == "wrong_result"


def test_subclass_output_is_a_cheat() -> None:
    class Lazy(torch.Tensor):
        pass

    with pytest.raises(gate.GateFailure, match="tensor subclass"):
        gate.as_tensor_list(torch.ones(3).as_subclass(Lazy), "the candidate")


def test_perturbation_keeps_buffers_and_values_changes_order() -> None:
    x = torch.arange(1000.0)
    pointer, values = x.data_ptr(), sorted(x.tolist())
    before = x.clone()
    assert perturb_((x, 3, torch.ones(5, dtype=torch.bool)), random.Random(1))
    assert x.data_ptr() == pointer and sorted(x.tolist()) == values  # same buffer, same multiset
    assert not torch.equal(x, before)


def test_perturbation_leaves_integer_tensors_alone_and_is_undone() -> None:
    offsets, indices = torch.arange(0, 400, 4), torch.randint(0, 50, (400,))
    weight = torch.randn(50, 8)
    kept = (offsets.clone(), indices.clone(), weight.clone())
    swaps: list = []
    rng = random.Random(3)
    for _ in range(5):
        assert perturb_((indices, offsets, weight), rng, undo=swaps)
    assert torch.equal(offsets, kept[0]) and torch.equal(indices, kept[1])  # CSR structure intact
    assert not torch.equal(weight, kept[2])
    restore_(swaps)
    assert torch.equal(weight, kept[2]) and swaps == []


def test_perturbation_reaches_tensors_inside_list_and_tuple_inputs() -> None:
    """A candidate caching on a list input's tensor (a list of KV-cache slots) must see it
    perturbed like a top-level tensor, and restored after."""
    cache, nested = torch.arange(1000.0), torch.arange(500.0)
    kept = (cache.clone(), nested.clone())
    swaps: list = []
    assert perturb_(([cache, (nested, 3)], torch.arange(4)), random.Random(2), undo=swaps)
    assert not torch.equal(cache, kept[0]) and not torch.equal(nested, kept[1])
    restore_(swaps)
    assert torch.equal(cache, kept[0]) and torch.equal(nested, kept[1])


def _sorted_only(xs: tuple) -> list[torch.Tensor]:  # type: ignore[type-arg]
    (x,) = xs
    if not bool((x[1:] >= x[:-1]).all()):
        raise ValueError("the input must be sorted")  # a reference that validates its input
    return [x.cumsum(0)]


def _checks(x: torch.Tensor) -> TimedCallChecks:
    return TimedCallChecks(
        (x,),
        reference=_sorted_only,
        fresh_inputs=lambda seed: (torch.arange(100.0),),
        candidate=lambda x: x.cumsum(0),
        compare=lambda outs, refs, xs: gate.check_outputs(outs, refs, xs, None, None),
        outputs_of=lambda value: gate.as_tensor_list(value, "the candidate"),
        digest=gate.digest,
        guard=None,  # type: ignore[arg-type]
        rng=random.Random(0),
        calls=6,
        verify=5,
    )


def test_a_reference_that_raises_on_perturbed_inputs_gets_them_back() -> None:
    x = torch.arange(100.0)
    checks = _checks(x)
    for index in range(6):
        checks.before(index)
    assert torch.equal(x, torch.arange(100.0)) and not checks.perturb
    assert checks.notes == [UNPERTURBED_NOTE]


def test_a_baseline_that_raises_on_perturbed_inputs_runs_again_unperturbed() -> None:
    x = torch.arange(100.0)
    checks = _checks(x)
    PerturbOnly(checks).before(1)  # the baseline's phase perturbs as the candidate's does
    assert not bool((x[1:] >= x[:-1]).all())
    phases: list[int] = []

    def baseline_phase() -> Timed:
        phases.append(1)
        _sorted_only((x,))
        return Timed(samples_ms=[1.0])

    assert checks.unperturbed_on_error(baseline_phase).samples_ms == [1.0]
    assert len(phases) == 2 and torch.equal(x, torch.arange(100.0)) and checks.notes == [UNPERTURBED_NOTE]


def test_calls_per_phase_are_estimated_again_for_each_configuration(monkeypatch: pytest.MonkeyPatch) -> None:
    """A problem hands every configuration the same function object; on a (simulated) CUDA clock
    the small configuration's call count must not be reused for the large one."""
    from kernelscope.kernels.timing import Timer

    clock = [0.0]

    class FakeEvent:
        def __init__(self, enable_timing: bool = True) -> None:
            self.t = 0.0

        def record(self) -> None:
            self.t = clock[0]

        def elapsed_time(self, other: FakeEvent) -> float:
            return other.t - self.t

    monkeypatch.setattr(torch.cuda, "Event", FakeEvent)
    monkeypatch.setattr(torch.cuda, "synchronize", lambda *a, **k: None)
    cost = [0.0]

    def kernel_fn() -> None:
        clock[0] += cost[0]

    timer = Timer("gpu", guard=None, reps=3, warmup_ms=25.0, rep_ms=100.0, graph=False)  # type: ignore[arg-type]
    found = []
    for per_call_ms in (0.01, 2.0):  # n=98304, then n=16777216
        cost[0] = per_call_ms
        timer.new_configuration()  # as the runner's time_ab does for every configuration
        found.append(timer._gpu_calls(kernel_fn, id(kernel_fn), lambda: None))
    assert found[0] == 1000 and 45 <= found[1] <= 50  # ~rep_ms / 2 ms, not 1000 calls of 2 ms


def test_gpu_warm_up_calls_restore_an_input_the_reference_changes(monkeypatch: pytest.MonkeyPatch) -> None:
    """The GPU loop's warm-up calls (the call-count estimate before the timed calls) start, as
    the timed calls do, from the pristine value of an input the reference accumulates into:
    none adds to what an earlier call left. Only CUDA's clock and L2 flush are replaced (no
    GPU here); the warm-up and timed calls are Timer.run's own."""
    from contextlib import nullcontext
    from types import SimpleNamespace

    from kernelscope.kernels.timing import Timer

    class FakeEvent:
        def __init__(self, enable_timing: bool = True) -> None:
            pass

        def record(self) -> None:
            pass

        def elapsed_time(self, other: FakeEvent) -> float:
            return 5.0  # 5 calls in 5 ms: a few warm-up calls, then 10 timed ones

    monkeypatch.setattr(torch.cuda, "Event", FakeEvent)
    monkeypatch.setattr(torch.cuda, "synchronize", lambda *a, **k: None)
    acc, rows = torch.zeros(4), torch.ones(4)

    def reference(xs: tuple) -> list[torch.Tensor]:  # type: ignore[type-arg]
        xs[0].add_(xs[1])  # accumulates into its first input, as moe_index_add does
        return [xs[0]]

    started_from: list[float] = []

    def candidate(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        started_from.append(float(a.sum()))
        return a.add_(b)

    checks = TimedCallChecks(
        (acc, rows),
        reference=reference,
        fresh_inputs=lambda seed: (torch.zeros(4), torch.ones(4)),
        candidate=candidate,
        compare=lambda outs, refs, xs: gate.check_outputs(outs, refs, xs, None, None),
        outputs_of=lambda value: gate.as_tensor_list(value, "the candidate"),
        digest=gate.digest,
        guard=None,  # type: ignore[arg-type]
        rng=random.Random(0),
        calls=10,
        verify=0,
    )
    checks.perturb = False  # one value to start from: the pristine zeros
    guard = SimpleNamespace(launches=SimpleNamespace(counting=lambda: nullcontext(SimpleNamespace(count=1))))
    timer = Timer("gpu", guard=guard, reps=3, warmup_ms=3.0, rep_ms=10.0, graph=False)  # type: ignore[arg-type]
    monkeypatch.setattr(timer, "_flush_l2", lambda: None)
    timed = timer.run(candidate, (acc, rows), PerturbOnly(checks))
    assert len(timed.samples_ms) == 10 and len(started_from) == 1 + 5 + 3 + 10  # warm-up, then timed
    assert started_from == [0.0] * len(started_from)  # every call from the pristine zeros
