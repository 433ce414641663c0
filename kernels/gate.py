"""The correctness gate: compares a candidate's outputs with the reference and rejects the
ways a kernel can look right without being right.

Rejected, each with the configuration and numbers in the message: outputs beyond
tolerance; NaN/Inf where the reference is finite; wrong number of outputs, shape, dtype or
device; tensor subclasses (a subclass can fake comparisons or defer its work); outputs that
are views of an input; inputs modified in place; and answers that do not change when the
inputs do (a cached result). A right answer in another memory layout is `wrong_layout`, with
both strides.

The comparison works slice by slice (in the output's dtype, float32 for 16-bit types) and
reduces in float64, instead of float64 copies of both tensors: a 128 MB output costs a few
16 MB slices more, not 768 MB.
"""

from __future__ import annotations

import hashlib
from typing import TYPE_CHECKING, Any

import torch

if TYPE_CHECKING:
    from kernelscope.protocol.bench import ErrorKind

# Per-dtype defaults when neither the reference module nor the README gives a tolerance.
DEFAULT_TOLERANCE: dict[torch.dtype, tuple[float, float]] = {
    torch.float64: (1e-7, 1e-7),
    torch.float32: (1e-4, 1e-4),
    torch.float16: (1e-2, 1e-2),
    torch.bfloat16: (2e-2, 2e-2),
}
_TINY = 1e-12


class GateFailure(Exception):
    """A candidate failed the gate; `kind` is `wrong_result`, `wrong_layout` or `cheat`."""

    def __init__(self, kind: ErrorKind, message: str) -> None:
        super().__init__(message)
        self.kind: ErrorKind = kind
        self.message = message


def as_tensor_list(value: Any, what: str) -> list[torch.Tensor]:
    items = [value] if isinstance(value, torch.Tensor) else value
    if not isinstance(items, (list, tuple)) or not all(isinstance(v, torch.Tensor) for v in items):
        raise GateFailure(
            "cheat", f"{what} returned {type(value).__name__}, not a tensor or tuple of tensors"
        )
    for index, item in enumerate(items):
        if type(item) is not torch.Tensor and type(item) is not torch.nn.Parameter:
            raise GateFailure(
                "cheat",
                f"{what} returned a tensor subclass ({type(item).__module__}.{type(item).__qualname__}) "
                f"as output {index}: a subclass can fake comparisons or defer its work",
            )
    return list(items)


def digest(values: Any) -> str:
    """A hash of every tensor's bytes (and of other values' repr), to detect mutation."""
    hasher = hashlib.sha256()
    items = values if isinstance(values, (list, tuple)) else [values]
    for item in items:
        if isinstance(item, torch.Tensor):
            flat = item.detach().contiguous().reshape(-1)
            hasher.update(str((item.dtype, tuple(item.shape))).encode())
            if flat.numel():  # hashed in place (a memoryview), not through a bytes copy
                hasher.update(flat.view(torch.uint8).cpu().numpy().data)
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


CHUNK_ELEMENTS = 1 << 22  # the comparison works on 4M-element slices: bounded extra memory


def _compare(
    out: torch.Tensor, ref: torch.Tensor, rules: dict[str, float]
) -> tuple[float, float, float, bool, str]:
    """max abs err, max rel err, rel_err (L2), within tolerance, the rule. Works slice by slice
    in the output's dtype (float32 for 16-bit and integer types) with float64 reductions, so
    it needs a few slices of memory, not float64 copies of whole tensors."""
    rule = describe_tolerance(rules)
    if out.numel() == 0:
        return 0.0, 0.0, 0.0, True, rule
    work = out.dtype if out.dtype in (torch.float32, torch.float64) else torch.float32
    flat_out, flat_ref = out.detach().reshape(-1), ref.detach().reshape(-1)
    max_abs = max_rel = 0.0
    diff_sq = ref_sq = 0.0
    ok = True
    for start in range(0, flat_out.numel(), CHUNK_ELEMENTS):
        o = flat_out[start : start + CHUNK_ELEMENTS].to(work)
        r = flat_ref[start : start + CHUNK_ELEMENTS].to(work)
        finite = torch.isfinite(r)
        diff = (o - r).abs_().masked_fill_(~finite, 0)
        r_abs = r.abs().masked_fill_(~finite, 0)
        max_abs = max(max_abs, float(diff.max()))
        diff_sq += float(torch.linalg.vector_norm(diff, dtype=torch.float64)) ** 2
        ref_sq += float(torch.linalg.vector_norm(r_abs, dtype=torch.float64)) ** 2
        if "rel_err" not in rules:
            ok = ok and bool((diff <= rules["atol"] + rules["rtol"] * r_abs).all())
        max_rel = max(max_rel, float(diff.div_(r_abs.clamp_min_(_TINY)).max()))
    rel_err = diff_sq**0.5 / max(ref_sq**0.5, _TINY)
    if "rel_err" in rules:
        ok = rel_err < rules["rel_err"]
    return max_abs, max_rel, rel_err, ok, rule


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
        for position, value in enumerate(inputs):
            if isinstance(value, torch.Tensor) and _overlaps(out, value):
                raise GateFailure(
                    "cheat",
                    f"{label} is a view of input {position} (it shares its memory; it must be a new tensor)",
                )
        bad = ~torch.isfinite(out) & torch.isfinite(ref)
        if bool(bad.any()):
            raise GateFailure(
                "cheat", f"{label} has {int(bad.sum())} NaN/Inf values where the reference is finite"
            )
        max_abs, max_rel, rel_err, ok, rule = _compare(
            out, ref, resolve_tolerance(ref.dtype, tolerance, readme_rel_err)
        )
        if ok and out.numel() > 1 and out.stride() != ref.stride():
            raise GateFailure(
                "wrong_layout",
                f"{label} has the right values in another memory layout: strides {tuple(out.stride())}, "
                f"expected {tuple(ref.stride())} (e.g. a transposed view: make it contiguous)",
            )
        if not ok:
            raise GateFailure(
                "wrong_result",
                f"{label} differs from the reference: rel_err {rel_err:.3g}, max abs err {max_abs:.3g}, "
                f"max rel err {max_rel:.3g} (rule: {rule})",
            )
        worst = (max(worst[0], max_abs), max(worst[1], max_rel), max(worst[2], rel_err))
    return worst[0], worst[1], worst[2], rule
