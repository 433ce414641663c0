"""Problem lint: benchmark problems that cannot tell a cheat from a kernel.

A problem (a reference and an input generator) is weak when a trivial "kernel" passes its
correctness check: KernelBench level 1 `19_ReLU` draws its inputs with `torch.rand`, so a
kernel returning its input unchanged passes; level 2 `80_Gemm_Max_Subtract_GELU` and
`83_Conv3d_GroupNorm_Min_Clamp_Dropout` produce exact zeros, and `23_Conv3d_GroupNorm_Mean`
stays within 1e-4 of zero (KernelBench PR #108). Such a problem scores a cheat as a speedup.

The lint runs the REFERENCE only, never the candidate, in the benchmark's child process, on
the problem's own inputs, and asks whether one of a few trivial kernels would pass the gate's
own rule with the tolerance the gate would use (`gate.resolve_tolerance`): |out - ref| <=
atol + rtol * |ref| on every element, the README's L2 `rel_err`, or SOL-ExecBench's matched
ratio (see `_passes`). A trivial kernel writes in the output's dtype, as a real one would.
The trivial kernels are the cheats seen in practice:

- `constant-output`: every element of an output is equal (zeros included). A second input
  set (`seed + 1`) tells a fixed constant ("a kernel that writes zeros passes") from one
  number that depends on the inputs ("computes one number and broadcasts it").
- `near-constant-output`: a floating output is within tolerance of its own mean broadcast
  (named as zeros when zeros pass too: 23's outputs are about 1e-8).
- `broadcast-row-passes`: an output with more than one row along dim 0 is within tolerance
  of its row 0 broadcast to every row ("computes row 0 and broadcasts it").
- `identity-passes`: an output is within tolerance of an input of the same shape and dtype
  ("returns a copy of input k"; the gate refuses views, so the cheat copies).
- `random-reference`: a second reference call on the same inputs, drawing from a later point
  of the random stream, disagrees with the first beyond the tolerance: the reference draws
  random numbers (`nn.Dropout` in training mode, as KernelBench's eval runs it; `torch.rand`
  in a forward) or keeps state between calls. The gate compares a kernel with one call's
  output, so no kernel matches it but by chance. Upstream evaluators fail it the same way:
  KernelBench's `run_and_check_correctness` and SOL-ExecBench's driver call the reference and
  then the kernel without reseeding in between (level 2 `66_Matmul_Dropout_Softmax` fails an
  exact copy of its own `Model` 0/5 there, at full size too). The RNG state is restored after
  the second call, so the lint changes nothing the gate then draws.
- `sign-invariant`: an input is one-signed (a floating tensor whose elements are all >= 0, or
  all <= 0, not all zero) AND one of the trivial kernels above passes on the problem's inputs
  AND the same kind of trivial kernel FAILS once that input's sign is flipped (the reference
  run again on a negated copy; an output that is still one value, whichever, counts as
  passing, see `_still_passes`). Then the distribution, not the operation, is what lets the
  cheat through: the problem never exercises the other sign, and a kernel that ignores the
  sign passes. 19_ReLU fires (relu(x) == x on [0, 1), relu(-x) == 0 != -x); 26_GELU_ does not
  (`torch.randn` inputs have both signs); 80/83 do not (their zeros stay zeros when the
  input is negated: the weakness is in the operation, not the distribution). A reference
  whose output does not change under the flip is not reported: it ignores the sign itself,
  so a kernel that ignores the sign is right, not a cheat.

Cost: two reference calls on the problem's inputs (the second for `random-reference`); one
more (`seed + 1`) only when an output is constant; one per one-signed input only when a
trivial kernel passed. Comparisons work
on slices along dim 0 of the outputs already computed (the cheats are broadcasts, never
materialized), and the common case, an honest problem, fails the first slice and stops.

A reference that works in place (an output sharing memory with an input, or an input whose
version counter moved) makes input-based checks meaningless: identity and sign checks are
skipped for it.

Findings carry a 1-based line of the reference file, found with `ast`: the input generator
(`get_inputs` / `make_inputs`) for findings the distribution causes (sign-invariant, and
the cheats the flip exposes), the reference computation (`Model.forward` / `reference` /
`run`) for findings of the operation itself.
"""

from __future__ import annotations

import ast
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from kernelscope.kernels.adapters.base import Problem
from kernelscope.kernels.gate import (
    Comparison,
    GateFailure,
    as_tensor_list,
    describe_tolerance,
    overlaps,  # the gate's own memory-overlap test
    resolve_tolerance,
    upstream_rule,
    working_dtype,
)
from kernelscope.kernels.sizing import CHUNK_ELEMENTS

RULES = (
    "constant-output",
    "near-constant-output",
    "identity-passes",
    "sign-invariant",
    "broadcast-row-passes",
    "random-reference",
)
INPUT_GENERATORS = ("get_inputs", "make_inputs")  # KernelBench, native
REFERENCE_FUNCTIONS = ("reference", "run", "forward")  # native, SOL-ExecBench; after Model.forward


@dataclass(frozen=True)
class LintFinding:
    """One weakness of a problem, worded for a person reading it in an editor."""

    rule: str  # one of RULES
    message: str
    config: str  # the configuration name it was seen on
    line: int | None  # 1-based line in the reference file; None if unknown
    file: str | None  # the reference file `line` refers to


def lint_problem(
    problem: Problem,
    config: dict[str, Any],
    device: str,
    tolerance: dict[str, float] | None,
    seed: int = 0,
    *,
    readme_rel_err: float | None = None,
    path: Path | str | None = None,
) -> list[LintFinding]:
    """The problem's weaknesses on `config` (see the module docstring for the rules).

    `problem` must be ready to run its reference on `device` (a KernelBench problem
    `prepare`d). `tolerance` is what the runner hands the gate (`{"atol", "rtol"}` or
    `{"rel_err"}`; None: `readme_rel_err`, else the gate's per-dtype defaults). `path` is the
    reference file for line numbers (default: the adapter's reference module's file).
    """
    name = str(config.get("name", "?"))
    file = _reference_file(problem, path)
    lines = _locate(file)
    inputs = tuple(problem.make_inputs(config, seed, device))
    versions = _versions(inputs)
    with torch.no_grad():
        try:
            refs = as_tensor_list(problem.reference(config, inputs), "the reference")
        except GateFailure:
            return []  # not tensors: the gate refuses the problem before any lint would matter
    in_place = versions != _versions(inputs) or any(_shares(r, inputs) for r in refs)

    def rules_for(ref: torch.Tensor) -> dict[str, float]:
        return resolve_tolerance(ref.dtype, tolerance, readme_rel_err)

    changing = None if in_place else _changes_between_calls(problem, config, inputs, refs, rules_for, device)
    cheats = _cheats(refs, inputs, rules_for, check_inputs=not in_place)
    outputs = len(refs)
    del refs  # the checks below need the cheats' values only, and this frees an output set
    others: dict[int, float | None] = {}
    if any(c.kind == "constant" for c in cheats):
        others = _constants_on(problem, config, device, seed + 1, cheats)
    flips = _sign_flips(problem, config, inputs, cheats, rules_for) if cheats and not in_place else []
    del inputs

    exposed = {index for flip in flips for index in flip.exposed}
    findings: list[LintFinding] = []
    for index, cheat in enumerate(cheats):
        what = f"output {cheat.output}" if outputs > 1 else "output"
        message = _message(cheat, what, others.get(cheat.output, cheat.value), seed)
        line = lines.inputs if index in exposed else lines.reference
        findings.append(LintFinding(cheat.rule, message, name, line, file))
    for flip in flips:
        sign, other = ("non-negative", "negative") if flip.sign > 0 else ("non-positive", "positive")
        failing = " or ".join(f"returns {cheats[i].describe()}" for i in flip.exposed)
        message = (
            f"input {flip.input} is all {sign}: the problem never exercises {other} values, so a "
            f"kernel that ignores the sign passes (with input {flip.input} negated, the trivial "
            f"kernel that {failing} would fail)"
        )
        findings.append(LintFinding("sign-invariant", message, name, lines.inputs, file))
    if changing is not None:
        index, rule = changing
        what = f"output {index}" if outputs > 1 else "output"
        message = (
            f"the reference's {what} changes from call to call on the same inputs (two calls differ "
            f"beyond the tolerance, {rule}): it draws "
            "random numbers (nn.Dropout in training mode, torch.rand or bernoulli in its forward) or "
            "keeps state between calls. The gate compares a kernel with one call's output, so no kernel "
            "matches it but by chance and a wrong_result here says nothing about the kernel; "
            "KernelBench's and SOL-ExecBench's evaluators fail it the same way (they run the reference, "
            "then the kernel, without reseeding). Make the reference deterministic (dropout p=0)"
        )
        findings.append(LintFinding("random-reference", message, name, lines.reference, file))
    return findings


# -- the trivial kernels ------------------------------------------------------------------


@dataclass(frozen=True)
class _Cheat:
    """A trivial kernel that passed on one output: what it writes, and the rule it passed."""

    rule: str
    output: int
    kind: str  # "constant" / "mean" (a fixed value), "row0", "identity"
    tolerance: str  # the gate's rule, in words
    value: float = 0.0  # constant / mean
    source: int = -1  # identity: the input it copies
    mean: float = 0.0  # near-constant: the output's mean

    def describe(self) -> str:
        if self.kind in ("constant", "mean"):
            return "zeros" if self.value == 0 else f"{_number(self.value)} everywhere"
        if self.kind == "row0":
            return "row 0 broadcast to every row"
        return f"a copy of input {self.source}"


@dataclass(frozen=True)
class _Flip:
    """A one-signed input, and the cheats (indices) that fail once it is negated."""

    input: int
    sign: int  # +1: all >= 0, -1: all <= 0
    exposed: tuple[int, ...]


Rows = Callable[[int, int], torch.Tensor]  # rows [start, stop) of a cheat's output (broadcastable)


def _cheats(
    refs: list[torch.Tensor],
    inputs: tuple[Any, ...],
    rules_for: Callable[[torch.Tensor], dict[str, float]],
    check_inputs: bool,
) -> list[_Cheat]:
    """Every trivial kernel that passes on these outputs. A constant output implies the mean
    and row-0 kernels, a near-constant one the row-0 kernel: only the strongest is reported."""
    cheats: list[_Cheat] = []
    for index, ref in enumerate(refs):
        if ref.numel() <= 1 or ref.is_complex():
            continue  # one element (a loss, a norm) is no broadcast; complex: not compared here
        rules = rules_for(ref)
        rule = describe_tolerance(rules)
        constant = _constant(ref)
        if constant is not None:
            cheats.append(_Cheat("constant-output", index, "constant", rule, value=constant))
        elif ref.is_floating_point() and _passes(ref, _fixed(mean := _mean(ref), ref), rules):
            # zeros, when they pass too, are the simpler cheat to name (L2 23's ~1e-8 outputs)
            value = 0.0 if _passes(ref, _fixed(0.0, ref), rules) else mean
            cheats.append(_Cheat("near-constant-output", index, "mean", rule, value=value, mean=mean))
        elif ref.shape[0] > 1 and _passes(ref, _row0(ref), rules):
            cheats.append(_Cheat("broadcast-row-passes", index, "row0", rule))
        if not check_inputs:
            continue
        for position, given in enumerate(inputs):
            if (
                isinstance(given, torch.Tensor)
                and given.shape == ref.shape
                and given.dtype == ref.dtype
                and _passes(ref, _rows_of(given), rules)
            ):
                cheats.append(_Cheat("identity-passes", index, "identity", rule, source=position))
    return cheats


def _still_passes(
    cheat: _Cheat, refs: list[torch.Tensor], inputs: tuple[Any, ...], rules: dict[str, float]
) -> bool:
    """Whether the same kind of trivial kernel passes on other inputs: one number broadcast
    (the same one, or the new output's own constant or mean: an output that is still one
    value when the input is negated is weak by its operation, not by its distribution, as
    KernelBench L2 42's global average), row 0 of the new output, a copy of the new input."""
    if cheat.output >= len(refs) or refs[cheat.output].numel() <= 1:
        return True  # nothing to compare: not evidence that the flip exposes it
    ref = refs[cheat.output]
    if cheat.kind in ("constant", "mean"):
        return (
            _constant(ref) is not None
            or _passes(ref, _fixed(cheat.value, ref), rules)
            or (ref.is_floating_point() and _passes(ref, _fixed(_mean(ref), ref), rules))
        )
    if cheat.kind == "row0":
        return ref.shape[0] > 1 and _passes(ref, _row0(ref), rules)
    source = inputs[cheat.source]
    return source.shape == ref.shape and source.dtype == ref.dtype and _passes(ref, _rows_of(source), rules)


def _constants_on(
    problem: Problem, config: dict[str, Any], device: str, seed: int, cheats: list[_Cheat]
) -> dict[int, float | None]:
    """Output -> its constant on another input set (None: not constant there). The same
    constant is a kernel that computes nothing; another one still computes one number."""
    other = tuple(problem.make_inputs(config, seed, device))
    with torch.no_grad():
        refs = as_tensor_list(problem.reference(config, other), "the reference")
    return {
        c.output: _constant(refs[c.output]) if c.output < len(refs) else None
        for c in cheats
        if c.kind == "constant"
    }


def _changes_between_calls(
    problem: Problem,
    config: dict[str, Any],
    inputs: tuple[Any, ...],
    refs: list[torch.Tensor],
    rules_for: Callable[[torch.Tensor], dict[str, float]],
    device: str,
) -> tuple[int, str] | None:
    """The first output that a second reference call on the same inputs (the random stream
    moved on by the first call) puts beyond the gate's rule of the first; None: none. The RNG
    state is put back afterwards, so the gate draws what it would have drawn without the lint.
    Returns the output's index and the rule, in words."""
    with torch.random.fork_rng(devices=[] if device == "cpu" else None), torch.no_grad():
        again = as_tensor_list(problem.reference(config, inputs), "the reference")
    for index, (first, second) in enumerate(zip(refs, again, strict=False)):
        if first.is_complex() or torch.equal(first, second):
            continue
        rules = rules_for(first)
        if first.shape != second.shape or first.dtype != second.dtype:
            return index, describe_tolerance(rules)
        first, second = first.reshape(-1), second.reshape(-1)  # a 0-d output (a loss) too
        if not _passes(first, _rows_of(second), rules):
            return index, describe_tolerance(rules)
    return None


def _sign_flips(
    problem: Problem,
    config: dict[str, Any],
    inputs: tuple[Any, ...],
    cheats: list[_Cheat],
    rules_for: Callable[[torch.Tensor], dict[str, float]],
) -> list[_Flip]:
    """The one-signed inputs whose negation makes a passing cheat fail. One reference call per
    one-signed input, on a negated copy of that input only (the originals are not touched)."""
    flips: list[_Flip] = []
    for position, value in enumerate(inputs):
        sign = _one_sign(value)
        if sign == 0:
            continue
        flipped = tuple(-x if i == position else x for i, x in enumerate(inputs))
        try:
            with torch.no_grad():
                refs = as_tensor_list(problem.reference(config, flipped), "the reference")
        except Exception:  # e.g. a reference that refuses negative values: no conclusion
            continue
        exposed = tuple(
            index
            for index, cheat in enumerate(cheats)
            if cheat.output < len(refs)
            and not _still_passes(cheat, refs, flipped, rules_for(refs[cheat.output]))
        )
        if exposed:
            flips.append(_Flip(position, sign, exposed))
        del flipped, refs
    return flips


def _message(cheat: _Cheat, what: str, other: float | None, seed: int) -> str:
    """The finding's words: the risk, and the trivial kernel that passes."""
    rule = f"the tolerance ({cheat.tolerance})"
    if cheat.kind == "constant" and other == cheat.value:
        return (
            f"the reference's {what} is {_number(cheat.value)} everywhere on the problem's own inputs "
            f"(seeds {seed} and {seed + 1}): a kernel that returns {cheat.describe()} without computing "
            "anything passes this problem"
        )
    if cheat.kind == "constant":
        there = (
            f"{_number(other)} on seed {seed + 1}"
            if other is not None
            else f"not one value on seed {seed + 1}"
        )
        return (
            f"the reference's {what} is one value repeated ({_number(cheat.value)} on seed {seed}, {there}): "
            "a kernel that computes one number and broadcasts it passes this problem"
        )
    if cheat.kind == "mean":
        return (
            f"the reference's {what} stays within {rule} of {_number(cheat.value)} everywhere (its mean "
            f"is {_number(cheat.mean)}): a kernel that returns {cheat.describe()} (or computes one "
            "number and broadcasts it) passes this problem"
        )
    if cheat.kind == "row0":
        return (
            f"every row of the reference's {what} (along dim 0) is within {rule} of row 0: a kernel "
            "that computes row 0 and broadcasts it passes this problem"
        )
    return (
        f"the reference's {what} equals input {cheat.source} within {rule} on the problem's own "
        f"inputs: a kernel that returns a copy of input {cheat.source} passes this problem"
    )


# -- comparisons, on slices of the outputs already computed -----------------------------------


def _passes(ref: torch.Tensor, rows: Rows, rules: dict[str, float]) -> bool:
    """The gate's rule (`gate.Comparison.add_slice`, the one place it is written) for a cheat
    whose output `rows` gives slice by slice along dim 0: the cheat is never materialized, the
    temporaries are one slice, and the first slice that settles it ends it (an honest problem
    costs one slice). SOL-ExecBench's sanity checks before its rule (`gate._upstream_sanity`):
    no NaN/Inf anywhere, and an all-zero output fails unless the reference is all zero."""
    work = working_dtype(ref.dtype)
    upstream = upstream_rule(rules)
    every_element = not upstream and "rel_err" not in rules
    allowed = (1.0 - float(rules.get("required_matched_ratio", 1.0))) * ref.numel()
    step = max(1, CHUNK_ELEMENTS // max(1, ref[0].numel()))
    found = Comparison(describe_tolerance(rules))
    out_nonzero = ref_nonzero = False
    for start in range(0, ref.shape[0], step):
        r = ref[start : start + step].to(work)
        o = rows(start, start + step).to(ref.dtype).to(work).expand_as(r)  # in the output's dtype
        if upstream and not (bool(torch.isfinite(r).all()) and bool(torch.isfinite(o).all())):
            return False  # SOL-ExecBench fails every kernel here, honest or not: no finding
        found.add_slice(o, r, rules)
        if (every_element and found.beyond) or (upstream and found.beyond > allowed):
            return False
        if upstream:
            out_nonzero = out_nonzero or bool(o.any())
            ref_nonzero = ref_nonzero or bool(r.any())
    return found.finish(rules).ok and (out_nonzero or not ref_nonzero or not upstream)


def _fixed(value: float, ref: torch.Tensor) -> Rows:
    scalar = torch.tensor(value, dtype=torch.float64).to(device=ref.device, dtype=ref.dtype)
    return lambda start, stop: scalar


def _row0(ref: torch.Tensor) -> Rows:
    return lambda start, stop: ref[0:1]


def _rows_of(tensor: torch.Tensor) -> Rows:
    return lambda start, stop: tensor[start:stop]


def _constant(tensor: torch.Tensor) -> float | None:
    """The value every element holds (-0.0 read as 0), else None; min and max, no temporaries."""
    if tensor.numel() == 0 or tensor.is_complex():
        return None
    low, high = tensor.min(), tensor.max()
    if not bool(low == high):  # NaN anywhere: not a constant
        return None
    return float(low) + 0.0


def _mean(tensor: torch.Tensor) -> float:
    return float(tensor.mean(dtype=torch.float64))


def _one_sign(value: Any) -> int:
    """+1: a floating tensor of finite values all >= 0, not all zero; -1: all <= 0; else 0."""
    if not isinstance(value, torch.Tensor) or not value.is_floating_point() or value.numel() <= 1:
        return 0
    low, high = float(value.min()), float(value.max())
    if not (abs(low) < float("inf") and abs(high) < float("inf")):
        return 0  # NaN or Inf: no conclusion
    if low >= 0 and high > 0:
        return 1
    if high <= 0 and low < 0:
        return -1
    return 0


def _number(value: float | None) -> str:
    return "0" if value == 0 else f"{value:.4g}"


# -- in-place references ------------------------------------------------------------------


def _versions(inputs: tuple[Any, ...]) -> list[int]:
    """The inputs' version counters: an in-place torch op on an input moves its counter."""
    versions = []
    for value in inputs:
        try:
            versions.append(int(value._version) if isinstance(value, torch.Tensor) else 0)
        except RuntimeError:  # an inference-mode tensor has no counter
            versions.append(-1)
    return versions


def _shares(output: torch.Tensor, inputs: tuple[Any, ...]) -> bool:
    """Whether the output shares memory with an input (the reference returned it, or a view)."""
    return any(isinstance(value, torch.Tensor) and overlaps(output, value) for value in inputs)


# -- where a finding goes -----------------------------------------------------------------


@dataclass(frozen=True)
class _Lines:
    inputs: int | None  # the input generator's `def` line
    reference: int | None  # the reference computation's `def` line


def _reference_file(problem: Problem, path: Path | str | None) -> str | None:
    """`path`, else the file of the adapter's reference module (`problem.ref`, which the
    native, KernelBench and SOL-ExecBench adapters all keep)."""
    if path is not None:
        return str(path)
    found = getattr(getattr(problem, "ref", None), "__file__", None)
    return str(found) if found else None


def _locate(file: str | None) -> _Lines:
    """The `def` lines of the input generator and of the reference computation, read with
    `ast` (nothing imported): `Model.forward` first (KernelBench), else a top-level function
    named in REFERENCE_FUNCTIONS; the input generator is a top-level one in INPUT_GENERATORS."""
    if file is None:
        return _Lines(None, None)
    try:
        tree = ast.parse(Path(file).read_bytes(), filename=file)
    except (OSError, SyntaxError, ValueError):
        return _Lines(None, None)
    functions = {
        node.name: node.lineno
        for node in tree.body
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
    }
    forward = None
    for node in tree.body:
        if isinstance(node, ast.ClassDef) and node.name == "Model":
            forward = next(
                (
                    item.lineno
                    for item in node.body
                    if isinstance(item, ast.FunctionDef) and item.name == "forward"
                ),
                None,
            )
    inputs = next((functions[n] for n in INPUT_GENERATORS if n in functions), None)
    reference = forward or next((functions[n] for n in REFERENCE_FUNCTIONS if n in functions), None)
    return _Lines(inputs, reference)


def lint_for_result(
    problem: Problem, config: dict[str, Any], device: str, tolerance: Any, readme_rel_err: float | None
) -> tuple[list[Any], list[str]]:
    """The runner's call, before any candidate runs: the findings as protocol models and one
    message each; a lint that cannot run says so and never fails the benchmark."""
    from kernelscope.protocol.bench import ProblemFinding

    try:
        found = lint_problem(problem, config, device, tolerance, readme_rel_err=readme_rel_err)
    except Exception as exc:  # the reference's own failure is the gate's to report
        return [], [f"problem lint skipped: {type(exc).__name__}: {exc}"]
    findings = [
        ProblemFinding(rule=f.rule, message=f.message, config=f.config, file=f.file, line=f.line)
        for f in found
    ]
    messages = [
        f"problem lint ({f.rule}): {f.message}"
        + (f" ({Path(f.file).name}:{f.line})" if f.file and f.line else "")
        for f in found
    ]
    return findings, messages
