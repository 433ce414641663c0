"""The correctness gate: compares a candidate's outputs with the reference and rejects the
ways a kernel can look right without being right.

Rejected, each with the configuration and numbers in the message: outputs beyond
tolerance; NaN/Inf where the reference is finite; wrong number of outputs, shape, dtype,
strides or device; outputs that alias an input; inputs modified in place; and answers that
do not change when the inputs do (a cached result).
"""

from __future__ import annotations

import hashlib
from typing import Any

import torch

# Per-dtype defaults when neither the reference module nor the README gives a tolerance.
DEFAULT_TOLERANCE: dict[torch.dtype, tuple[float, float]] = {
    torch.float64: (1e-7, 1e-7),
    torch.float32: (1e-4, 1e-4),
    torch.float16: (1e-2, 1e-2),
    torch.bfloat16: (2e-2, 2e-2),
}
_TINY = 1e-12


class GateFailure(Exception):
    """A candidate failed the gate; `kind` is `wrong_result` or `cheat`."""

    def __init__(self, kind: str, message: str) -> None:
        super().__init__(message)
        self.kind = kind
        self.message = message


def as_tensor_list(value: Any, what: str) -> list[torch.Tensor]:
    if isinstance(value, torch.Tensor):
        return [value]
    if isinstance(value, (list, tuple)) and all(isinstance(v, torch.Tensor) for v in value):
        return list(value)
    raise GateFailure("cheat", f"{what} returned {type(value).__name__}, not a tensor or tuple of tensors")


def digest(values: Any) -> str:
    """A hash of every tensor's bytes (and of other values' repr), to detect mutation."""
    hasher = hashlib.sha256()
    items = values if isinstance(values, (list, tuple)) else [values]
    for item in items:
        if isinstance(item, torch.Tensor):
            flat = item.detach().contiguous().reshape(-1)
            hasher.update(str((item.dtype, tuple(item.shape))).encode())
            hasher.update(flat.view(torch.uint8).cpu().numpy().tobytes() if flat.numel() else b"")
        else:
            hasher.update(repr(item).encode())
    return hasher.hexdigest()


def clone_outputs(outputs: list[torch.Tensor]) -> list[torch.Tensor]:
    return [o.detach().clone() for o in outputs]


def _overlaps(a: torch.Tensor, b: torch.Tensor) -> bool:
    if a.device != b.device or a.numel() == 0 or b.numel() == 0:
        return False
    a_start = a.untyped_storage().data_ptr()
    b_start = b.untyped_storage().data_ptr()
    a_end = a_start + a.untyped_storage().nbytes()
    b_end = b_start + b.untyped_storage().nbytes()
    return a_start < b_end and b_start < a_end


def describe_tolerance(tolerance: dict[str, float]) -> str:
    if "rel_err" in tolerance:
        return f"rel_err < {tolerance['rel_err']:g}"
    return f"|out - ref| <= {tolerance['atol']:g} + {tolerance['rtol']:g} * |ref|"


def resolve_tolerance(
    dtype: torch.dtype, module_tolerance: dict[str, float] | None, readme_rel_err: float | None
) -> dict[str, float]:
    """Reference module's tolerance, else the README's rel_err threshold, else dtype defaults."""
    if module_tolerance:
        return dict(module_tolerance)
    if readme_rel_err is not None:
        return {"rel_err": readme_rel_err}
    atol, rtol = DEFAULT_TOLERANCE.get(dtype, (1e-1, 1e-1))
    return {"atol": atol, "rtol": rtol}


def check_outputs(
    outputs: list[torch.Tensor],
    references: list[torch.Tensor],
    inputs: tuple[Any, ...],
    tolerance: dict[str, float] | None,
    readme_rel_err: float | None,
) -> tuple[float, float, float, str]:
    """Raise GateFailure on any problem; return (max_abs_err, max_rel_err, rel_err, rule)."""
    if len(outputs) != len(references):
        raise GateFailure(
            "cheat", f"returned {len(outputs)} outputs, the reference returns {len(references)}"
        )
    worst = (0.0, 0.0, 0.0)
    rule = ""
    for index, (out, ref) in enumerate(zip(outputs, references, strict=True)):
        label = f"output {index}" if len(outputs) > 1 else "output"
        if tuple(out.shape) != tuple(ref.shape):
            raise GateFailure("cheat", f"{label} has shape {tuple(out.shape)}, expected {tuple(ref.shape)}")
        if out.dtype != ref.dtype:
            raise GateFailure("cheat", f"{label} has dtype {out.dtype}, expected {ref.dtype}")
        if out.device != ref.device:
            raise GateFailure("cheat", f"{label} is on {out.device}, expected {ref.device}")
        if out.numel() > 1 and out.stride() != ref.stride():
            raise GateFailure("cheat", f"{label} has strides {out.stride()}, expected {ref.stride()}")
        for position, value in enumerate(inputs):
            if isinstance(value, torch.Tensor) and _overlaps(out, value):
                raise GateFailure("cheat", f"{label} aliases input {position} (it must be a new tensor)")
        finite_ref = torch.isfinite(ref)
        bad = ~torch.isfinite(out) & finite_ref
        if bool(bad.any()):
            raise GateFailure(
                "cheat", f"{label} has {int(bad.sum())} NaN/Inf values where the reference is finite"
            )
        out64 = out.detach().double()
        ref64 = ref.detach().double()
        diff = (out64 - ref64).abs()
        diff = torch.where(finite_ref, diff, torch.zeros_like(diff))
        max_abs = float(diff.max()) if diff.numel() else 0.0
        max_rel = float((diff / ref64.abs().clamp_min(_TINY)).max()) if diff.numel() else 0.0
        ref_norm = float(torch.linalg.vector_norm(torch.where(finite_ref, ref64, 0.0)))
        rel_err = float(torch.linalg.vector_norm(diff)) / max(ref_norm, _TINY) if diff.numel() else 0.0
        rules = resolve_tolerance(ref.dtype, tolerance, readme_rel_err)
        rule = describe_tolerance(rules)
        if "rel_err" in rules:
            ok = rel_err < rules["rel_err"]
        else:
            ok = bool((diff <= rules["atol"] + rules["rtol"] * ref64.abs()).all())
        if not ok:
            raise GateFailure(
                "wrong_result",
                f"{label} differs from the reference: rel_err {rel_err:.3g}, max abs err {max_abs:.3g}, "
                f"max rel err {max_rel:.3g} (rule: {rule})",
            )
        worst = (max(worst[0], max_abs), max(worst[1], max_rel), max(worst[2], rel_err))
    return worst[0], worst[1], worst[2], rule
