"""A second input distribution for the correctness gate: signed and heavy-tailed.

A problem's own inputs may hide a wrong kernel: KernelBench's `19_ReLU` draws `torch.rand`
(never negative), so returning the input unchanged passes; KernelBench PR #118 asks for
heavy-tailed inputs because "analytical" shortcuts pass the uniform or normal draws. After a
candidate passes on the problem's inputs, the gate runs it once more on the same shapes and
dtypes with every floating-point tensor replaced by a signed, heavy-tailed draw at the
original tensor's scale, and compares with the reference on those inputs.

The draw is a Gaussian scale mixture, `N(0, 1) * exp(0.5 * N(0, 1))`, times the original
tensor's root mean square (1 when that is zero): both signs, tails far heavier than a normal
(a one-in-a-million element is about 12x the scale, against 5x), magnitudes the problem's own
scale keeps within its dtype, so an honest kernel's rounding stays within tolerance.
Integer, boolean and non-tensor inputs are kept as they are. A problem whose domain excludes
such values (a logarithm, a square root) is recognised by its reference: when the reference's
output is not finite on the draw, the check is skipped and says why; a problem can also opt
out with `KERNELSCOPE_SECOND_DISTRIBUTION = False` in its reference module, which declares its
domain excludes inputs other than its own draws: its timed inputs are not perturbed either.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch

from kernelscope.kernels.gate import GateFailure, as_tensor_list, check_outputs
from kernelscope.kernels.input_changes import check_call, reference_first

OPT_OUT = "KERNELSCOPE_SECOND_DISTRIBUTION"
SEED = 7_000_003  # apart from the problem's own seeds (0, 1, 2, ...)
SCALE_SPREAD = 0.5  # sigma of the log-normal scale: the weight of the tails


def signed_heavy_tailed(inputs: tuple[Any, ...], seed: int = SEED) -> tuple[tuple[Any, ...], int]:
    """The inputs with every floating-point tensor redrawn (same shape, dtype, device,
    layout); also how many tensors were redrawn."""
    generator = torch.Generator(device="cpu").manual_seed(seed)
    drawn: list[Any] = []
    count = 0
    for value in inputs:
        if isinstance(value, torch.Tensor) and value.is_floating_point() and value.numel():
            original = value.detach().to(torch.float32)
            scale = float(original.pow(2).mean().sqrt())
            scale = scale if scale > 0 and scale == scale and scale != float("inf") else 1.0
            base = torch.randn(value.shape, generator=generator)
            spread = torch.exp(SCALE_SPREAD * torch.randn(value.shape, generator=generator))
            fresh = (base * spread * scale).to(dtype=value.dtype, device=value.device)
            if not value.is_contiguous():  # keep the problem's layout
                fresh = torch.empty_strided(
                    value.shape, value.stride(), dtype=value.dtype, device=value.device
                ).copy_(fresh)
            drawn.append(fresh.requires_grad_(value.requires_grad))
            count += 1
        else:
            drawn.append(value)
    return tuple(drawn), count


def wrong_on_another_draw(draw: str, found: str) -> str:
    """The one wording of a candidate right on the problem's own inputs (the gate's draws) and
    wrong on `draw` (this module's signed heavy-tailed one, the hidden audit's fresh seed)."""
    return f"right on the problem's own inputs, wrong on {draw} ({found})"


def domain_declared(module: Any) -> str | None:
    """Whether a reference module declares that its domain excludes inputs other than its own
    draws (`OPT_OUT = False`): then neither this check nor the timed calls' perturbation
    (kernels/timed_checks.py) runs. Says so, or None."""
    return f"the problem sets {OPT_OUT} = False" if getattr(module, OPT_OUT, True) is False else None


def declared_off(module: Any) -> str | None:
    """Why a reference module turned the check off (None: it did not)."""
    declared = domain_declared(module)
    return f"off: {declared}" if declared else None


def check_second_distribution(
    problem: Any,
    config: dict[str, Any],
    candidate: Callable[..., Any],
    tolerance: dict[str, Any] | None,
    rel_err: float | None,
    device: str,
    sync: Callable[[], None],
) -> str:
    """What the check found (passed, skipped and why, off and why); raises GateFailure
    `wrong_off_distribution` when the candidate is wrong on the draw, or raises on it."""
    off = problem.second_distribution_off()
    if off:
        return str(off)

    def draw() -> tuple[Any, ...]:
        return signed_heavy_tailed(problem.make_inputs(config, SEED, device))[0]

    first = [draw()]  # the reference's; the candidate's is drawn again if the reference changes one
    if not any(isinstance(v, torch.Tensor) and v.is_floating_point() for v in first[0]):
        return "skipped: no floating-point input to redraw"
    declared = getattr(problem, "inputs_in_result", False)  # (kernels.adapters.base.Problem's)
    try:  # a reference whose domain excludes the draw may raise on it (BCE, cholesky)
        run = reference_first(
            lambda: first.pop() if first else draw(),
            lambda xs: as_tensor_list(problem.reference(config, xs), "the reference"),
            declared,
        )
    except (MemoryError, torch.OutOfMemoryError):
        raise
    except Exception as exc:
        return (
            f"skipped: the reference raised on signed heavy-tailed inputs ({type(exc).__name__}: "
            f"{str(exc)[:300]}; its domain excludes them); the problem's own inputs decide"
        )
    inputs, references = run.inputs, run.references  # (kernels/input_changes.py: in-place references)
    if not all(bool(torch.isfinite(r).all()) for r in references if r.is_floating_point()):
        return (
            "skipped: the reference is not finite on signed heavy-tailed inputs (its domain excludes "
            "them); the problem's own inputs decide"
        )
    try:
        raw = candidate(*inputs)
        sync()
        outputs = as_tensor_list(raw, "the candidate")
        check_call(
            run,
            outputs,
            "(signed heavy-tailed inputs)",
            lambda outs, refs, views: check_outputs(
                outs, refs, views, tolerance, rel_err, layout=problem.layout_checked
            ),
        )
    except GateFailure as failure:
        if failure.kind != "wrong_result":
            raise
        raise GateFailure(
            "wrong_off_distribution",
            wrong_on_another_draw("signed heavy-tailed ones of the same shapes", failure.message)
            + "; a kernel must be right on every input the problem allows (a problem whose domain "
            f"excludes them sets {OPT_OUT} = False)",
        ) from None
    except Exception as exc:
        raise GateFailure(
            "wrong_off_distribution",
            "right on the problem's own inputs, raised on signed heavy-tailed ones: "
            f"{type(exc).__name__}: {exc}",
        ) from None
    return "passed: right on signed heavy-tailed inputs too"
