"""The correctness gate: compares a candidate's outputs with the reference and rejects the
ways a kernel can look right without being right.

Rejected, each with the configuration and numbers in the message: outputs beyond
tolerance (integer and bool outputs must be exact unless the reference module says otherwise);
NaN/Inf where the reference is finite, and a reference's NaN or infinity not reproduced (NaN
must be NaN, +inf must be +inf); wrong number of outputs, shape, dtype or device; tensor
subclasses (a subclass can fake comparisons or defer its work); outputs that
are views of an input; inputs modified in place; and answers that do not change when the
inputs do (a cached result). A right answer in another memory layout is `wrong_layout`, with
both strides, where the problem's contract asks for the reference's layout (`layout=True`;
KernelBench and SOL-ExecBench compare values only).

The comparison works slice by slice (in the output's dtype, float32 for 16-bit types, int64
for integer and bool outputs) and reduces in float64, instead of float64 copies of both
tensors: a 128 MB output costs a few 16 MB slices more, not 768 MB.
"""

from __future__ import annotations

import hashlib
from typing import TYPE_CHECKING, Any

import torch

from kernelscope.kernels.sizing import CHUNK_ELEMENTS

if TYPE_CHECKING:
    from kernelscope.protocol.bench import ErrorKind

# Per-dtype defaults when neither the reference module nor the README gives a tolerance.
DEFAULT_TOLERANCE: dict[torch.dtype, tuple[float, float]] = {
    torch.float64: (1e-7, 1e-7),
    torch.float32: (1e-4, 1e-4),
    torch.float16: (1e-2, 1e-2),
    torch.bfloat16: (2e-2, 2e-2),
}
# Integer and bool outputs: exact unless the reference module gives a tolerance (a loose float
# bound would pass an off-by-one kernel; a README's rel_err is written for floating outputs).
EXACT: dict[str, float] = {"atol": 0.0, "rtol": 0.0}
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
    """A hash of every tensor's bytes, in lists and tuples at any depth (a list of cache
    tensors), and of other values' repr, to detect mutation."""
    hasher = hashlib.sha256()
    _hash_into(hasher, values if isinstance(values, (list, tuple)) else [values])
    return hasher.hexdigest()


def _hash_into(hasher: Any, items: list[Any] | tuple[Any, ...]) -> None:
    for item in items:
        if isinstance(item, torch.Tensor):
            flat = item.detach().contiguous().reshape(-1)
            hasher.update(str((item.dtype, tuple(item.shape))).encode())
            if flat.numel():  # hashed in place (a memoryview), not through a bytes copy
                hasher.update(flat.view(torch.uint8).cpu().numpy().data)
        elif isinstance(item, (list, tuple)):
            hasher.update(f"{type(item).__name__}[{len(item)}]".encode())
            _hash_into(hasher, item)
        else:
            hasher.update(repr(item).encode())


def clone_outputs(outputs: list[torch.Tensor]) -> list[torch.Tensor]:
    return [o.detach().clone() for o in outputs]


def overlaps(a: torch.Tensor, b: torch.Tensor) -> bool:
    if a.device != b.device or a.numel() == 0 or b.numel() == 0:
        return False
    a_start = a.untyped_storage().data_ptr()
    b_start = b.untyped_storage().data_ptr()
    a_end = a_start + a.untyped_storage().nbytes()
    b_end = b_start + b.untyped_storage().nbytes()
    return a_start < b_end and b_start < a_end


UPSTREAM_KEYS = ("required_matched_ratio", "max_error_cap", "allow_negative_inf")


def upstream_rule(tolerance: dict[str, float] | None) -> bool:
    """SOL-ExecBench's rule applies (the tolerance carries its `required_matched_ratio`)."""
    return bool(tolerance) and "required_matched_ratio" in (tolerance or {})


def exact_dtype(dtype: torch.dtype) -> bool:
    """Integer and bool dtypes: their values are compared exactly by default."""
    return not dtype.is_floating_point and not dtype.is_complex


def describe_tolerance(tolerance: dict[str, float]) -> str:
    if tolerance == EXACT:
        return "out == ref (exact)"
    if "rel_err" in tolerance:
        return f"rel_err < {tolerance['rel_err']:g}"
    bound = f"|out - ref| <= {tolerance['atol']:g} + {tolerance['rtol']:g} * |ref|"
    if upstream_rule(tolerance):
        cap = tolerance.get("max_error_cap")
        return (
            f"{bound} on >= {tolerance['required_matched_ratio']:g} of elements"
            + (f", max abs err <= {cap:g}" if cap is not None else "")
            + (", -inf allowed where the reference has it" if tolerance.get("allow_negative_inf") else "")
            + " (SOL-ExecBench)"
        )
    return bound


def resolve_tolerance(
    dtype: torch.dtype, module_tolerance: dict[str, float] | None, readme_rel_err: float | None
) -> dict[str, float]:
    """Reference module's tolerance, else the README's rel_err threshold (floating outputs only),
    else dtype defaults: exact for integer and bool outputs."""
    if module_tolerance:
        return dict(module_tolerance)
    if exact_dtype(dtype):
        return dict(EXACT)
    if readme_rel_err is not None:
        return {"rel_err": readme_rel_err}
    atol, rtol = DEFAULT_TOLERANCE.get(dtype, (1e-1, 1e-1))
    return {"atol": atol, "rtol": rtol}


class Comparison:
    """One output against its reference: the errors, how many elements broke the bound, and
    the verdict of the rule in force. Built slice by slice (`add_slice`), settled by `finish`."""

    def __init__(self, rule: str) -> None:
        self.rule = rule
        self.max_abs = self.max_rel = self.rel_err = 0.0
        self.beyond = 0  # elements outside atol + rtol * |ref| (or with a non-finite error)
        self.counted = 0  # elements compared (upstream drops the -inf pairs it allows)
        self.diff_sq = self.ref_sq = 0.0  # the L2 norms' running sums, in float64
        self.ok = True

    @property
    def matched_ratio(self) -> float:
        return 1.0 if self.counted == 0 else min(1.0, max(0.0, 1.0 - self.beyond / self.counted))

    def add_slice(self, o: torch.Tensor, r: torch.Tensor, rules: dict[str, float]) -> None:
        """One slice of an output and its reference, both already in the working dtype. The
        rule's one place: the problem lint asks it of its trivial kernels too. Its temporaries
        are three slices of the working dtype and one of bools (`sizing.COMPARISON_BYTES_PER_ELEMENT`).
        Integer slices (int64) are told equal or not exactly, and measured in float64."""
        upstream = upstream_rule(rules)
        unequal = None
        if exact_dtype(r.dtype):  # exact where float64 would round int64 beyond 2**53
            unequal = o != r
            o, r = o.to(torch.float64), r.to(torch.float64)
        ignored = torch.isfinite(r).logical_not_()  # where the reference is not finite
        if upstream and rules.get("allow_negative_inf"):
            both = (o == float("-inf")) & (r == float("-inf"))
            ignored &= both.logical_not()
            o, r = o.masked_fill(both, 0), r.masked_fill(both, 0)
            self.counted += o.numel() - int(both.sum())
            del both
        else:
            self.counted += o.numel()
        diff = (o - r).abs_().masked_fill_(ignored, 0)
        r_abs = r.abs().masked_fill_(ignored, 0)
        del ignored
        self.max_abs = max(self.max_abs, float(diff.max()))
        self.diff_sq += float(torch.linalg.vector_norm(diff, dtype=torch.float64)) ** 2
        self.ref_sq += float(torch.linalg.vector_norm(r_abs, dtype=torch.float64)) ** 2
        if "rel_err" not in rules:
            bound = r_abs.mul(rules["rtol"]).add_(rules["atol"])
            within = diff <= bound  # a NaN error is beyond
            if unequal is not None:  # a zero bound means equal, not "within float64's rounding"
                within &= unequal.logical_not_() | (bound > 0)
            self.beyond += int(within.logical_not_().sum())
            del bound, within
        floor = float(rules["atol"]) if upstream else _TINY
        self.max_rel = max(self.max_rel, float(diff.div_(r_abs.clamp_min_(floor)).max()))

    def finish(self, rules: dict[str, float]) -> Comparison:
        """The verdict of the rule in force, once every slice is in."""
        self.rel_err = self.diff_sq**0.5 / max(self.ref_sq**0.5, _TINY)
        if "rel_err" in rules:
            self.ok = self.rel_err < rules["rel_err"]
        elif upstream_rule(rules):
            cap = rules.get("max_error_cap")
            self.ok = self.matched_ratio >= rules["required_matched_ratio"] and (
                cap is None or self.max_abs <= cap
            )
        else:
            self.ok = self.beyond == 0
        return self


def working_dtype(dtype: torch.dtype) -> torch.dtype:
    """The comparison's dtype: the output's for float32/float64, int64 for integer and bool
    outputs (exact; float32 would make int64 values past 2**24 equal), float32 for the rest."""
    if exact_dtype(dtype):
        return torch.int64
    return dtype if dtype in (torch.float32, torch.float64) else torch.float32


def _compare(out: torch.Tensor, ref: torch.Tensor, rules: dict[str, float]) -> Comparison:
    """The comparison, slice by slice in the output's dtype (float32 for 16-bit types, int64
    for integer and bool ones) with float64 reductions, so it needs a few slices of memory, not
    float64 copies of whole tensors. kernelscope's rule: every element within the bound (or the
    L2 rel_err under the README's threshold). SOL-ExecBench's (core/bench/correctness.py compute_error_stats):
    at least `required_matched_ratio` of the elements within the bound, the max abs error not
    above `max_error_cap`, relative errors with `max_atol` as the denominator's floor, the
    positions where both are -inf dropped when `allow_negative_inf`."""
    found = Comparison(describe_tolerance(rules))
    if out.numel() == 0:
        return found
    work = working_dtype(out.dtype)
    flat_out, flat_ref = out.detach().reshape(-1), ref.detach().reshape(-1)
    for start in range(0, flat_out.numel(), CHUNK_ELEMENTS):
        found.add_slice(
            flat_out[start : start + CHUNK_ELEMENTS].to(work),
            flat_ref[start : start + CHUNK_ELEMENTS].to(work),
            rules,
        )
    return found.finish(rules)


def _upstream_sanity(label: str, out: torch.Tensor, ref: torch.Tensor, rules: dict[str, float]) -> None:
    """SOL-ExecBench's checks before the element rule (check_tensor_sanity): any NaN or Inf in
    either tensor fails, even in the same place (only -inf in both is excused, and only with
    `allow_negative_inf`); an all-zero output fails when the reference is not all zero."""
    o, r = out.detach().float(), ref.detach().float()
    bad_o, bad_r = ~torch.isfinite(o), ~torch.isfinite(r)
    if rules.get("allow_negative_inf"):
        both = (o == float("-inf")) & (r == float("-inf"))
        bad_o, bad_r = bad_o & ~both, bad_r & ~both
    if bool(bad_o.any()) or bool(bad_r.any()):
        nan = bool(torch.isnan(o).any()) or bool(torch.isnan(r).any())
        where = "the output" if bool(bad_o.any()) else "the reference"
        raise GateFailure(
            "wrong_result",
            f"{label}: {where} has {'NaN' if nan else 'Inf'} values; SOL-ExecBench fails any non-finite "
            "value (allow_negative_inf excuses only -inf in both)",
        )
    if o.numel() and float(torch.linalg.vector_norm(r)) > 0 and float(torch.linalg.vector_norm(o)) == 0:
        raise GateFailure(
            "wrong_result", f"{label} is all zeros and the reference is not (SOL-ExecBench's all-zeros check)"
        )


def _check_non_finite(label: str, out: torch.Tensor, ref: torch.Tensor) -> None:
    """kernelscope's rule for non-finite values, slice by slice: NaN/Inf where the reference is
    finite fails, and so does a reference's NaN or infinity the output does not reproduce (NaN
    must be NaN, +inf must be +inf). The comparison itself skips those positions. An honest
    kernel that overflows fails here too: `wrong_result`, not `cheat`."""
    if exact_dtype(out.dtype):
        return
    flat_out, flat_ref = out.detach().reshape(-1), ref.detach().reshape(-1)
    new_values = missed = 0
    for start in range(0, flat_out.numel(), CHUNK_ELEMENTS):
        o, r = flat_out[start : start + CHUNK_ELEMENTS], flat_ref[start : start + CHUNK_ELEMENTS]
        finite_r = torch.isfinite(r)
        new_values += int((torch.isfinite(o).logical_not_() & finite_r).sum())
        same = (o == r) | (torch.isnan(o) & torch.isnan(r))
        missed += int((finite_r.logical_or_(same)).logical_not_().sum())
    if new_values:
        raise GateFailure(
            "wrong_result", f"{label} has {new_values} NaN/Inf values where the reference is finite"
        )
    if missed:
        raise GateFailure(
            "wrong_result",
            f"{label} differs from the reference at {missed} positions where the reference is NaN or "
            "Inf (NaN must be NaN, an infinity the same infinity)",
        )


def check_outputs(
    outputs: list[torch.Tensor],
    references: list[torch.Tensor],
    inputs: tuple[Any, ...],
    tolerance: dict[str, float] | None,
    readme_rel_err: float | None,
    upstream: dict[str, Any] | None = None,
    layout: bool = True,
) -> tuple[float, float, float, str]:
    """Raise GateFailure on any problem; return (max_abs_err, max_rel_err, rel_err, rule).
    `layout`: the right values in strides other than the reference's are `wrong_layout`.
    Under SOL-ExecBench's rule `upstream` (a dict) receives both verdicts, the worst matched
    ratio and, when kernelscope's every-element rule would fail what upstream passes, why."""
    if len(outputs) != len(references):
        raise GateFailure(  # (an honest kernel gets these wrong too: a wrong result, not a cheat)
            "wrong_result", f"returned {len(outputs)} outputs, the reference returns {len(references)}"
        )
    worst = (0.0, 0.0, 0.0)
    rule = ""
    for index, (out, ref) in enumerate(zip(outputs, references, strict=True)):
        label = f"output {index}" if len(outputs) > 1 else "output"
        if tuple(out.shape) != tuple(ref.shape):
            raise GateFailure(
                "wrong_result", f"{label} has shape {tuple(out.shape)}, expected {tuple(ref.shape)}"
            )
        if out.dtype != ref.dtype:
            raise GateFailure("wrong_result", f"{label} has dtype {out.dtype}, expected {ref.dtype}")
        if out.device != ref.device:
            raise GateFailure("cheat", f"{label} is on {out.device}, expected {ref.device}")
        for position, value in enumerate(inputs):
            if isinstance(value, torch.Tensor) and overlaps(out, value):
                raise GateFailure(
                    "cheat",
                    f"{label} is a view of input {position} (it shares its memory; it must be a new tensor)",
                )
        rules = resolve_tolerance(ref.dtype, tolerance, readme_rel_err)
        if upstream_rule(rules):
            _upstream_sanity(label, out, ref, rules)
        else:
            _check_non_finite(label, out, ref)
        found = _compare(out, ref, rules)
        rule = found.rule
        if layout and found.ok and out.numel() > 1 and out.stride() != ref.stride():
            raise GateFailure(
                "wrong_layout",
                f"{label} has the right values in another memory layout: strides {tuple(out.stride())}, "
                f"expected {tuple(ref.stride())} (e.g. a transposed view: make it contiguous)",
            )
        if upstream_rule(rules) and upstream is not None:
            _record_upstream(upstream, label, found, rules)
        if not found.ok:
            beyond = (
                f", {found.beyond} of {found.counted} elements beyond the bound "
                f"(matched {found.matched_ratio:.4f})"
                if "rel_err" not in rules
                else ""
            )
            if upstream_rule(rules) and found.beyond == 0:
                beyond += "; kernelscope's every-element rule alone would pass it, SOL-ExecBench's decides"
            raise GateFailure(
                "wrong_result",
                f"{label} differs from the reference: rel_err {found.rel_err:.3g}, max abs err "
                f"{found.max_abs:.3g}, max rel err {found.max_rel:.3g}{beyond} (rule: {rule})",
            )
        worst = (max(worst[0], found.max_abs), max(worst[1], found.max_rel), max(worst[2], found.rel_err))
    return worst[0], worst[1], worst[2], rule


def _record_upstream(
    upstream: dict[str, Any], label: str, found: Comparison, rules: dict[str, float]
) -> None:
    """Both verdicts for the worst output so far (protocol.bench.UpstreamVerdict's fields)."""
    strict = found.beyond == 0
    ratio = min(found.matched_ratio, upstream.get("matched_ratio", 1.0))
    upstream.update(
        passed=upstream.get("passed", True) and found.ok,
        kernelscope_passed=upstream.get("kernelscope_passed", True) and strict,
        matched_ratio=ratio,
        required_matched_ratio=float(rules["required_matched_ratio"]),
        max_error_cap=rules.get("max_error_cap"),
        allow_negative_inf=bool(rules.get("allow_negative_inf")),
    )
    if found.ok and not strict:
        share = 100 * found.beyond / found.counted
        upstream["note"] = (
            f"{label}: {found.beyond} of {found.counted} elements ({share:.2g}%) are beyond "
            f"{rules['atol']:g} + {rules['rtol']:g} * |ref|: "
            "kernelscope's every-element rule fails it, SOL-ExecBench's rule (matched "
            f"{found.matched_ratio:.4f} >= {rules['required_matched_ratio']:g}) passes it and decides here"
        )
