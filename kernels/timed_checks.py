"""Timed calls that are real calls (runner child only): the anti-cheat checks between timed
calls, and nothing else (the loop that times them, `Timer`, is kernels/timing.py).

Every timed call goes through `Timer.run`, which lets a `TimedCallChecks` (the candidate's) or a
`PerturbOnly` (the baseline's and parent's) act between calls, outside the timed region:

- before each call the inputs are *perturbed in place* (a few elements of every floating
  tensor swapped with others of the same tensor: same buffers, same value distribution, new
  values), so a candidate that caches its answer by input pointer or by input value returns a
  stale output, and one that skips work on repeated inputs has none. Integer and bool tensors
  are left alone: they are indices, offsets and masks, whose order is the problem's structure.
  A reference or baseline that raises on perturbed inputs (or a reference whose answer on
  them is not finite) gets them back as they were, and perturbation stops for the
  configuration (a note says so): the reference alone decides, never the candidate's answer;
- an input the reference changes in place (kernels/input_changes.py) is *restored* before
  every timed call, of the candidate and of the baseline, from a pristine copy (which the
  perturbation swaps instead), outside the timed region: SOL-ExecBench copies the original
  inputs into fresh tensors before every timed call (`ShiftingMemoryPoolAllocator
  .get_unique_args`), so each call does the whole work on the same values and none
  accumulates into what an earlier call left;
- a few calls chosen at random are *verified*: the reference's answer for exactly the inputs
  the call gets is computed before it (untimed, on copies of the inputs it changes), the
  output is compared with it afterwards, and the inputs must be unchanged by the call but
  those the reference changes, compared with the values it left in them; a wrong output is
  a wrong result (a kernel must handle every input the reference handles) unless there is
  evidence of a cheat (`_recheck`); the message says what fresh calls showed (`Seen`: k of n
  wrong, how many distinct outputs), and names a race only where they showed the output
  varying on the same inputs;
- at a random point a *hidden audit call* runs the candidate on fresh inputs (new buffers,
  new values) and checks it, untimed; a wrong output is a cheat only with evidence (an
  earlier call's output bit for bit, by a sampled fingerprint kept of every output on the
  timed inputs, that is the reference's answer for that call's inputs and says enough,
  `informative`; within the tolerance the reference's answer for the timed inputs at an
  earlier mark, `_stale`: the first timed call's, the previous one's, the last verified
  one's, where it was found right, the problem's own values, the reference run again there
  on the failure path only; wrong now on timed inputs it was found right on, by the gate or
  a verified call, and wrong the same way, bit for bit, on every call there, compared on the
  device), else the data-dependent bug or the race it looks like (docs/verdicts.md). Right or
  wrong by turns on the same inputs is no evidence: an honest kernel with a race (a missing
  barrier, an unordered reduction) is, with new wrong values each time. Only the check's own
  failure (GateFailure) is a wrong output: a harness error is raised as it is;
- the candidate must launch at least one Triton kernel in every timed call.
"""

from __future__ import annotations

import contextlib
import hashlib
import random
from collections.abc import Callable, Iterator, Sequence
from dataclasses import InitVar, dataclass, field, replace
from typing import TYPE_CHECKING, Any

import torch

from kernelscope.kernels.gate import GateFailure
from kernelscope.kernels.input_changes import (
    ReferenceRun,
    changed_in_place,
    check_call,
    copy_inputs,
    copy_value,
    map_tensors,
    part_of_result,
    reference_first,
    restore_value,
)
from kernelscope.kernels.integrity import Guard
from kernelscope.kernels.second_inputs import wrong_on_another_draw
from kernelscope.kernels.timing import Timed, TimedCheckFailure

if TYPE_CHECKING:
    from kernelscope.protocol.bench import ErrorKind

Swaps = list[tuple[torch.Tensor, list[int], list[int]]]  # (flat tensor, left, right)


def _distinct_picks(rng: random.Random, size: int, count: int) -> list[int]:
    if size <= 10**6:
        return rng.sample(range(size), count)
    picks: dict[int, None] = {}  # distinct, so that a swap is its own inverse
    while len(picks) < count:
        picks[rng.randrange(size)] = None
    return list(picks)


def _swap(flat: torch.Tensor, left: list[int], right: list[int]) -> None:
    at_left = torch.tensor(left, device=flat.device)
    at_right = torch.tensor(right, device=flat.device)
    with torch.no_grad():
        a, b = flat[at_left].clone(), flat[at_right].clone()
        flat[at_left] = b
        flat[at_right] = a


def perturb_(inputs: tuple[Any, ...], rng: random.Random, swaps: int = 8, undo: Swaps | None = None) -> bool:
    """Swap a few elements of every contiguous floating-point tensor input (or tensor in a list
    or tuple input) with others of the same tensor, in place (integer and bool tensors are
    indices, offsets, masks: their order is the problem's structure). Returns whether
    anything could be perturbed; `undo` receives the swaps, for `restore_`."""
    changed = False

    def perturb_one(value: torch.Tensor) -> None:
        nonlocal changed
        if value.numel() < 2 or not value.is_contiguous() or not value.is_floating_point():
            return
        flat = value.view(-1)
        count = min(swaps, flat.numel() // 2)
        picks = _distinct_picks(rng, flat.numel(), 2 * count)
        _swap(flat, picks[:count], picks[count:])
        if undo is not None:
            undo.append((flat, picks[:count], picks[count:]))
        changed = True

    for value in inputs:  # tensors inside lists and tuples too (a list of cache tensors)
        map_tensors(value, perturb_one)
    return changed


SAMPLED = 1024  # elements a fingerprint reads of each output
DISTINCT = 16  # distinct sampled values that make a non-floating output informative


def _sampled_bits(value: torch.Tensor) -> tuple[bytes, int]:
    """The bit patterns of up to SAMPLED evenly spaced elements of `value` (in its logical
    order, gathered where it is: no copy of the tensor, whatever its layout), on the host, and
    how many: a few KB. Any dtype (bool, complex, bf16, fp8), empty and 0-dim ones too."""
    value = value.detach()
    count = min(value.numel(), SAMPLED)
    if count == 0:
        return b"", 0
    positions = torch.arange(count, device=value.device) * (value.numel() // count)
    if value.dim() == 0:
        picked = value.reshape(1)
    elif value.is_contiguous():
        picked = value.view(-1)[positions]
    else:
        picked = value[torch.unravel_index(positions, value.shape)]
    return picked.cpu().contiguous().view(torch.uint8).numpy().tobytes(), count


def output_fingerprint(outputs: list[torch.Tensor]) -> str:
    """A cheap, bitwise fingerprint of a call's outputs: each tensor's dtype, shape, strides
    and the bit patterns of SAMPLED elements evenly spaced (no tolerance: a nearly constant
    honest output is not another call's). Equal for the same bits; outputs differing only at
    elements it does not read may share one, so a match is evidence only with the reference's
    say (`TimedCallChecks._replays`)."""
    hasher = hashlib.blake2b(digest_size=16)
    for value in outputs:
        hasher.update(f"{value.dtype}{tuple(value.shape)}{value.stride()}".encode())
        hasher.update(_sampled_bits(value)[0])
    return hasher.hexdigest()


STALE_ELEMENTS = 4  # elements on which a stale output must follow the earlier answer


def _tells_stale(
    outputs: list[torch.Tensor], earlier: list[torch.Tensor], current: list[torch.Tensor]
) -> bool:
    """Whether an output within the tolerance of an earlier answer says it is that answer: on at
    least STALE_ELEMENTS elements where the earlier answer and the current one differ, the
    output is at least four times closer to the earlier. Only memory of the earlier inputs puts
    it there; an honest error near the tolerance does not follow the earlier answer element by
    element, and a scalar (a loss, a norm) has one element, which proves nothing."""
    found = 0
    for out, old, new in zip(outputs, earlier, current, strict=False):
        if out.shape != old.shape or old.shape != new.shape or not out.is_floating_point():
            continue
        flat = [value.detach().reshape(-1) for value in (out, old, new)]
        for start in range(0, flat[0].numel(), _CHUNK):  # (float64 copies a chunk at a time)
            o, a, b = (value[start : start + _CHUNK].to(torch.float64) for value in flat)
            found += int(((a != b) & ((o - a).abs() * 4 <= (o - b).abs())).sum())
            if found >= STALE_ELEMENTS:
                return True
    return False


_CHUNK = 1 << 20


def informative(outputs: list[torch.Tensor]) -> bool:
    """Whether an output says enough that repeating an earlier one bit for bit is no chance: a
    floating-point (or complex) tensor whose sampled values are not all equal, or one with at
    least DISTINCT distinct sampled values. A bool, a small integer, an argmax, a constant: an
    honest kernel with a bug returns the same few outputs on every draw."""
    for value in outputs:
        bits, count = _sampled_bits(value)
        size = len(bits) // count if count else 1
        distinct = len({bits[i : i + size] for i in range(0, len(bits), size)})
        floating = value.is_floating_point() or value.is_complex()
        if distinct >= DISTINCT or (floating and (distinct > 1 or count == 1)):
            return True
    return False


def restore_(undo: Swaps) -> None:
    """The inputs as they were before the swaps `perturb_` recorded (each swap undone, last
    first), and the record emptied."""
    while undo:
        _swap(*undo.pop())


AUDIT_SEED = 10_000  # the hidden audit at timed call i draws with seed AUDIT_SEED + i
REPEATS = 4  # further fresh calls that must repeat a wrong output bit for bit: state, not a race

NOT_GAMED = (
    "nothing shows the timing gamed (not an earlier call's output bit for bit, nor its answer "
    "within the tolerance; not wrong the same way on every call on inputs it was found right on)"
)
VARIES = (
    "its output varies from call to call on the same inputs (a race: a missing barrier, an "
    f"unordered reduction, a read of memory not yet written), and {NOT_GAMED}"
)
LAZY = (
    "; called afresh on timed inputs it was found right on, it is wrong now, bit for bit the same "
    "output on {calls} calls: a lazy or stateful output"
)


@dataclass
class Seen:
    """What fresh calls on one input set showed: how many were made, how many were wrong, and
    how many distinct wrong outputs, bit for bit (a call that raised is one of its own)."""

    calls: int = 0
    wrong: int = 0
    distinct: int = 0

    def varies(self) -> bool:
        """Right and wrong ones, or wrong ones with other bits: the output varied on the same inputs."""
        return 0 < self.wrong < self.calls or self.distinct > 1

    def same_wrong(self) -> bool:
        """Wrong, bit for bit the same, on all 1 + REPEATS calls: a function of inputs and state."""
        return self.calls == 1 + REPEATS and self.wrong == self.calls and self.distinct == 1

    def __str__(self) -> str:
        if not self.wrong:
            return "right"
        outputs = "1 distinct output" if self.distinct == 1 else f"{self.distinct} distinct outputs"
        return f"wrong on {self.wrong} of {self.calls} calls ({outputs})"


def _bytes(value: torch.Tensor) -> torch.Tensor:
    return value.detach().contiguous().reshape(-1).view(torch.uint8)


def _same_bits(first: list[torch.Tensor], other: list[torch.Tensor]) -> bool:
    """Whether two calls' outputs are the same bits, NaNs included, compared where they are
    (on the device: no copy to the host)."""
    if not first or len(first) != len(other):
        return False
    for a, b in zip(first, other, strict=True):
        if a.dtype != b.dtype or a.shape != b.shape:
            return False
        if not torch.equal(_bytes(a), _bytes(b)):
            return False
    return True


UNPERTURBED_NOTE = (
    "the inputs could not be perturbed between timed calls (the reference raised on perturbed "
    "inputs or gave no finite answer: the problem's inputs have a structure, symmetry or order, "
    "that it relies on): timed outputs were checked on the problem's own values and by the "
    "hidden audit's fresh draw"
)


def declared_note(declared: str) -> str:
    """The note of a configuration whose timed inputs the problem declared off perturbation."""
    return (
        f"the inputs were not perturbed between timed calls ({declared}: its domain excludes inputs "
        "other than its own draws): timed outputs were checked on the problem's own values and by "
        "the hidden audit's fresh draw"
    )


@dataclass(eq=False)
class TimedCallChecks:
    """Between timed calls: perturb the inputs, verify sampled outputs, run the hidden audit.
    Of `calls` timed calls, `verify` (at random, never the first) have their outputs checked
    and one, at random, is audited."""

    inputs: tuple[Any, ...]
    reference: Callable[[tuple[Any, ...]], list[torch.Tensor]]
    fresh_inputs: Callable[[int], tuple[Any, ...]]
    candidate: Callable[..., Any]
    compare: Callable[[list[torch.Tensor], list[torch.Tensor], tuple[Any, ...]], object]
    outputs_of: Callable[[Any], list[torch.Tensor]]
    digest: Callable[[Any], str]
    guard: Guard
    rng: random.Random
    calls: InitVar[int]
    verify: InitVar[int] = 2
    checked: InitVar[Sequence[list[str]]] = ()  # digests of the input sets the gate found it right on
    sync: Callable[[], None] = lambda: None
    require_launches: bool = True
    inputs_in_result: bool = False  # the kind's adapter: changed inputs are part of the result
    domain_declared: str | None = None  # Problem.domain_declared(): no perturbation, and why
    perturb: bool = field(default=True, init=False)
    swaps: Swaps = field(default_factory=list, init=False)  # every swap since the inputs were made
    notes: list[str] = field(default_factory=list, init=False)
    verified: set[int] = field(init=False)
    audit_at: int = field(init=False)
    pristine: dict[int, Any] = field(init=False)  # inputs the reference changes in place
    _snapshot: ReferenceRun | None = field(default=None, init=False)
    checked_calls: int = field(default=0, init=False)
    audited: bool = field(default=False, init=False)
    # len(swaps) when the candidate was last found right on the timed inputs (0: as the problem
    # made them, where the gate checked that draw); None: never (KernelBench's timed seed 0 is
    # none of its trial seeds)
    right_at: int | None = field(default=None, init=False)
    # output_fingerprint of every output on timed inputs -> len(swaps) then (the first, where it repeats)
    outputs_seen: dict[str, int] = field(default_factory=dict, init=False)
    # len(swaps) at the first timed call, the previous one and the last verified one: the inputs
    # a stale output answers (a cache keyed by buffer, a last answer kept); ints, no copies
    marks: dict[str, int] = field(default_factory=dict, init=False)
    _at: int | None = field(default=None, init=False)  # the mark the inputs are `_rewound` to

    def __post_init__(self, calls: int, verify: int, checked: Sequence[list[str]]) -> None:
        upper = max(calls, 1)
        self.right_at = 0 if [self.digest(value) for value in self.inputs] in list(checked) else None
        self.verified = set(self.rng.sample(range(1, upper), min(verify, upper - 1))) if upper > 1 else {0}
        self.audit_at = self.rng.randrange(upper)
        self.pristine = changed_in_place(self.inputs, self.reference)
        if self.domain_declared:  # perturbed inputs are outside the domain the problem declares
            self.perturb = False
            self.notes.append(declared_note(self.domain_declared))

    def advance(self, index: int) -> None:
        """Before timed call `index`: perturb (the pristine copy of an input the reference
        changes, in its place), then restore the inputs the reference changes."""
        if index > 0 and self.perturb:
            perturbable = tuple(self.pristine.get(i, value) for i, value in enumerate(self.inputs))
            self.perturb = perturb_(perturbable, self.rng, undo=self.swaps)
        self.restore()

    def restore(self) -> None:
        """The inputs the reference changes in place back to their pristine values."""
        for index, value in self.pristine.items():
            restore_value(self.inputs[index], value)

    def before(self, index: int) -> None:
        self.advance(index)
        if index in self.verified:
            # The reference's answer for exactly these inputs, computed before the call (untimed):
            # one output kept (and copies of the inputs it changes), not a copy of every input.
            try:
                self._snapshot = self._expected()
            except Exception:
                if not self.unperturb():
                    raise
                self._snapshot = self._expected()

    def _timed_inputs(self) -> tuple[Any, ...]:
        """The inputs a timed call starts from: those the reference changes at their pristine
        (perturbed) values, the others as they are."""
        return tuple(self.pristine.get(i, value) for i, value in enumerate(self.inputs))

    def _expected(self) -> ReferenceRun | None:
        """The reference's run on the inputs a timed call starts from (on copies of those it
        changes); None when it changed another one (perturbed values taking another path)."""
        given = tuple(copy_value(v) if i in self.pristine else v for i, v in enumerate(self._timed_inputs()))
        before = [self.digest(value) for value in self.inputs]
        references = self.reference(given)
        if [self.digest(value) for value in self.inputs] != before:
            return None
        declared = self.inputs_in_result
        result = {
            i: given[i]
            for i in self.pristine
            if isinstance(given[i], torch.Tensor) and part_of_result(given[i], references, declared)
        }
        return ReferenceRun(self.inputs, references, before, result)

    def unperturb(self) -> bool:
        """The inputs back as the problem made them, perturbation off for the rest of the
        configuration, with the note saying so; False when nothing had been perturbed."""
        if not self.swaps:
            return False
        restore_(self.swaps)
        self.restore()
        self.right_at = 0 if self.right_at == 0 else None  # a perturbed draw it was right on is gone
        self.outputs_seen = {fp: mark for fp, mark in self.outputs_seen.items() if mark == 0}
        self.marks = {name: mark for name, mark in self.marks.items() if mark == 0}
        self._stop_perturbing()
        return True

    def unperturbed_on_error(self, phase: Callable[[], Timed]) -> Timed:
        """A timed phase of the baseline or parent; when it raises on perturbed inputs (a
        reference that validates its input, structure the problem relies on), it runs again on
        the inputs as they were, never perturbed again."""
        try:
            return phase()
        except Exception:
            if not self.unperturb():
                raise
        return phase()

    def _stop_perturbing(self) -> None:
        self.perturb = False
        self.swaps.clear()
        if UNPERTURBED_NOTE not in self.notes:
            self.notes.append(UNPERTURBED_NOTE)

    def after(self, index: int, output: Any) -> None:
        self.sync()
        found = self.guard.check(f"after timed call {index}")
        if found:
            raise TimedCheckFailure("cheat", found)
        earlier = self._seen(output)
        mark = len(self.swaps)
        if index in self.verified and self._snapshot is not None:
            run, self._snapshot = self._snapshot, None
            outputs = self.outputs_of(output)
            for position, value in enumerate(self.inputs):
                if position not in run.changed and self.digest(value) != run.before[position]:
                    raise TimedCheckFailure("cheat", f"timed call {index} modified its inputs in place")
            wrong = None
            try:
                self._check(outputs, run, f"in timed call {index}")
                self.right_at = mark
            except GateFailure as timed_error:  # a wrong output; a harness error is no verdict
                wrong = timed_error.with_traceback(None)  # its frames hold the comparison's temporaries
            if wrong is not None:  # (out of the except block, where the traceback is alive too)
                replayed = earlier != mark and self._replays(outputs, earlier)
                stale = None if replayed else self._stale(outputs, run.references, mark)
                del outputs
                self._recheck(index, run, wrong, replayed, stale)
            del run
            self.checked_calls += 1
            self.marks["verified"] = mark
        self.marks.setdefault("first", mark)
        self.marks["previous"] = mark

    def _seen(self, output: Any, timed: bool = True) -> int | None:
        """Where a call's output is, bit for bit, one the candidate returned before on timed
        inputs (in this configuration's timed calls and fresh calls), the mark (`len(swaps)`)
        of those inputs then; None: new. An output on the timed inputs (`timed`) is remembered."""
        try:
            fingerprint = output_fingerprint(self.outputs_of(output))
        except Exception:  # an output the checks reject where they look at it
            return None
        earlier = self.outputs_seen.get(fingerprint)
        if timed and earlier is None:
            self.outputs_seen[fingerprint] = len(self.swaps) if self._at is None else self._at
        return earlier

    def _replays(self, outputs: list[torch.Tensor], earlier: int | None) -> bool:
        """Whether a wrong output, bit for bit an earlier call's on the timed inputs as they were
        at mark `earlier`, is the reference's answer for those inputs: a replayed or cached
        output. Only for an output informative enough that an honest kernel's bug does not repeat
        it by chance (`informative`: a bool, a small integer, an argmax do)."""
        return earlier is not None and informative(outputs) and self._answer_at(earlier, outputs)

    def _stale(
        self, outputs: list[torch.Tensor], references: list[torch.Tensor], now: int | None = None
    ) -> int | None:
        """Where a wrong output is, within the tolerance, the reference's answer for the timed
        inputs as they were at an earlier mark (where a cache keyed by buffer or a kept last
        answer takes it from: the first timed call, the previous one, the last verified one,
        where it was last found right, the problem's own values), that mark: a stale output,
        noise added or not. `references`: the answer the output was found wrong against; `now`:
        the mark of the call's own inputs. Only for an informative output (`informative`), and
        only where the earlier answer tells (`_tells_stale`): an honest output off by a little
        more than the tolerance is, as often as not, within it of an answer that moved by less
        (a loss, a mean: a scalar the draws move little). The reference runs again there, the
        candidate does not."""
        if not informative(outputs):
            return None
        wanted = (
            self.marks.get("previous"),
            self.marks.get("first"),
            self.marks.get("verified"),
            self.right_at,
            0,
        )
        for mark in dict.fromkeys(m for m in wanted if m is not None and m != now and m <= len(self.swaps)):
            if self._answer_at(mark, outputs, follows=references):
                return mark
        return None

    def _answer_at(
        self, mark: int, outputs: list[torch.Tensor], follows: list[torch.Tensor] | None = None
    ) -> bool:
        """Whether `outputs` is, within the tolerance, the reference's answer for the timed inputs
        at `mark` (`_replays`), and, with `follows` (the answer it was found wrong against), one
        that follows it (`_tells_stale`: `_stale`). A method of its own so that answer is gone
        when it returns: `_stale`'s loop held each mark's run while the reference ran at the
        next (two outputs' worth at the peak)."""
        with self._reference_at(mark) as run:
            if run is None:
                return False
            try:
                self.compare(outputs, run.references, ())
            except GateFailure:
                return False
            return follows is None or _tells_stale(outputs, run.references, follows)

    def audit_point(self, index: int) -> None:
        """After a timed call (its output released): the hidden audit, once per configuration."""
        if index == self.audit_at and not self.audited:
            self.audited = True  # once per configuration: an interpreted call can take seconds
            self._audit(index)

    def _check(self, outputs: list[torch.Tensor], run: ReferenceRun, when: str) -> None:
        """The outputs and the inputs after a call, against the reference's run (raises)."""
        check_call(run, outputs, when, self.compare)

    def _recheck(
        self, index: int, run: ReferenceRun, timed_error: GateFailure, replayed: bool, stale: int | None
    ) -> None:
        """A timed output was wrong. A fresh call on copies of the inputs the call was given (the
        pristine values of those it may change) wrong too: the reference alone says whether the
        problem can take perturbed inputs (its answer on them is not finite: perturbation stops,
        the inputs put back). A kernel must handle every input the reference handles, so
        otherwise it is a wrong result, or a cheat where it repeats an earlier output bit for bit
        that was the answer there, is an earlier call's answer within the tolerance (`_stale`),
        or is wrong now, the same way every time, on timed inputs it was found right on (lazy,
        stateful). The message says what the fresh calls showed, and names a race only where
        they showed the output varying (`Seen.varies`): a race is right on some calls and wrong
        on others, and one right fresh call on new buffers shows no variation."""
        now = self._fresh_calls(run, 1)
        finite = all(torch.isfinite(value).all() for value in run.references if value.is_floating_point())
        if self.swaps and not finite and now.wrong:  # the reference's answer: the swaps broke the problem
            self.unperturb()  # later calls run on the problem's own values
            return
        head = f"timed call {index} returned a wrong output ({timed_error})"
        if replayed:
            raise TimedCheckFailure(
                "cheat",
                f"{head} that is, bit for bit, an earlier call's on other inputs, and the reference's "
                "answer there: a replayed or cached output",
            )
        if stale is not None:
            raise TimedCheckFailure("cheat", head + self._stale_words(stale))
        at = None if self.right_at is None else self._wrong_the_same_way(self.right_at)
        if at is not None and at.same_wrong():
            raise TimedCheckFailure("cheat", head + LAZY.format(calls=at.calls))
        if not now.wrong and self._keyed_by_buffer(run):
            raise TimedCheckFailure(
                "cheat",
                f"{head}; called again on the same input buffers it is wrong {REPEATS} times in a row, "
                f"and right on copies of them as often: its output follows which buffers it is given, "
                "not their values (an answer cached, or work skipped, by buffer)",
            )
        why = f"; called afresh on copies of its inputs it is {'wrong too' if now.wrong else 'right'}"
        if at is not None:
            why += f"; called afresh on timed inputs it was found right on, it is {at}"
        if now.varies() or (at is not None and at.varies()):
            why += f": {VARIES}"
        elif now.wrong and self.swaps and (at.wrong == 0 if at and self.right_at == 0 else self._right_at(0)):
            why += (
                "; right on the problem's own values, wrong on them with a few elements swapped, "
                "which the reference handles: a kernel must handle every input the reference does (a "
                "problem whose inputs have a structure, symmetry or order, says so by a reference that "
                "rejects inputs without it, or by the second distribution's opt-out)"
            )
        elif now.wrong and self.right_at is None:
            why += ": a bug the problem's own timing inputs reach (the inputs the gate checked did not)"
        else:
            why += f"; {NOT_GAMED}"
        raise TimedCheckFailure(timed_error.kind, head + why)

    def _keyed_by_buffer(self, run: ReferenceRun) -> bool:
        """Whether the output follows the timed inputs' buffers rather than their values: called
        on those very buffers (those it may change put back to their values first) it is wrong,
        and on copies of them right, REPEATS times each, in turn. A race is right or wrong by
        turns whatever buffers it is given (all eight so: p^4 (1-p)^4, under 0.4%); a kernel
        that skips its work, or returns a cached answer, for buffers it has seen is wrong on
        them every time."""
        for _ in range(REPEATS):
            self.restore()
            if self._right_on(self.inputs, run, owned=True):
                return False  # right on its own buffers
            if not self._right_on(self._timed_inputs(), run):
                return False  # wrong on copies too
        self.restore()
        return True

    def _stale_words(self, mark: int) -> str:
        where = "as the problem made them" if mark == 0 else "as an earlier timed call had them"
        return (
            f"; within the tolerance, it is the reference's answer for the timed inputs {where} "
            "(other values): a stale output, cached or kept from an earlier call"
        )

    @contextlib.contextmanager
    def _rewound(self, mark: int) -> Iterator[None]:
        """The inputs as they were when `len(self.swaps)` was `mark` (the later swaps undone,
        last first), and as they are again afterwards (a swap is its own inverse)."""
        later = self.swaps[mark:]
        for swap in reversed(later):
            _swap(*swap)
        self.restore()
        self._at = mark
        try:
            yield
        finally:
            self._at = None
            for swap in later:
                _swap(*swap)
            self.restore()

    @contextlib.contextmanager
    def _reference_at(self, mark: int) -> Iterator[ReferenceRun | None]:
        """The timed inputs as they were at `mark` (`_rewound`) and the reference's run on them;
        None where it raised there or says nothing there (`_expected`)."""
        with self._rewound(mark):
            try:
                run = self._expected()
            except Exception:  # the reference raised there
                run = None
            yield run

    def _right_at(self, mark: int) -> bool | None:
        """Whether a fresh call on the timed inputs as they were at `mark` is right (None: the
        reference says nothing there)."""
        with self._reference_at(mark) as run:
            return None if run is None else self._right_on(self._timed_inputs(), run)

    def _wrong_the_same_way(self, mark: int) -> Seen | None:
        """What fresh calls on the timed inputs as they were at `mark` show (`_fresh_calls`, up
        to 1 + REPEATS): wrong, bit for bit the same outputs (and inputs it changes) every time
        (`Seen.same_wrong`) is a kernel whose answer there is a function of its inputs and its
        state, not a race (right on some calls, wrong on others with new values each time).
        None where the reference says nothing there."""
        with self._reference_at(mark) as run:
            return None if run is None else self._fresh_calls(run, 1 + REPEATS)

    def _fresh_calls(self, run: ReferenceRun, limit: int) -> Seen:
        """Up to `limit` fresh calls on copies of the timed inputs as they are, judged by `run`;
        they stop at the first that is right or differs from the first wrong one (compared where
        they are, `_same_bits`: no copy to the host; the first wrong one kept meanwhile)."""
        seen, first = Seen(), None
        while seen.calls < limit:
            kept = self._fresh_call(self._timed_inputs(), run)
            seen.calls += 1
            if kept is None:
                break
            seen.wrong += 1
            if first is None:
                first, seen.distinct = kept, 1
                if not kept:  # it raised, or returned no tensors: nothing to repeat
                    break
            elif not _same_bits(first, kept):
                seen.distinct += 1
                break
        return seen

    def _right_on(self, inputs: tuple[Any, ...], run: ReferenceRun, owned: bool = False) -> bool:
        """Whether a fresh call on copies of `inputs` (on `inputs` themselves where `owned`: a
        draw made for it) is right by `run` (the reference's run on the same values), outputs
        and inputs alike."""
        return self._fresh_call(inputs, run, owned) is None

    def _fresh_call(
        self, inputs: tuple[Any, ...], run: ReferenceRun, owned: bool = False
    ) -> list[torch.Tensor] | None:
        """A fresh call as `_right_on` makes it: None where it is right, else its outputs and the
        inputs it may change, after the call ([] where it raised or returned no tensors). Only
        the check's own failure (GateFailure) is a wrong call: a harness error is raised."""
        fresh = inputs if owned else copy_inputs(inputs)
        again = ReferenceRun(fresh, run.references, [self.digest(value) for value in fresh], run.changed)
        try:
            output = self.candidate(*fresh)
            self.sync()
        except Exception:
            return []
        self._seen(output, timed=not owned)
        try:
            outputs = self.outputs_of(output)
        except GateFailure:
            return []
        try:
            self._check(outputs, again, "in a fresh call")
        except GateFailure:
            return outputs + [
                v for i, v in enumerate(fresh) if i in run.changed and isinstance(v, torch.Tensor)
            ]
        return None

    def _audit(self, index: int) -> None:
        """Fresh inputs, the reference first (kernels/input_changes.py: an input it changes in
        place is compared too, an input it leaves alone must stay as it was)."""
        run = reference_first(
            lambda: self.fresh_inputs(AUDIT_SEED + index), self.reference, self.inputs_in_result
        )
        with self.guard.launches.counting() as launches:
            output = self.candidate(*run.inputs)
            self.sync()
        earlier = self._seen(output, timed=False)
        if launches.count == 0 and self.require_launches:
            raise TimedCheckFailure(
                "no_kernel", "the hidden audit call inside the timed loop launched no Triton kernel"
            )
        try:
            check_call(run, self.outputs_of(output), "in the hidden audit", self.compare)
        except GateFailure as failure:  # its kind and message, not its traceback (holding the tensors)
            found: tuple[ErrorKind, str] | None = (failure.kind, failure.message)
        else:
            found = None
        if found is None:
            self.checked_calls += 1
            return
        kind, message = found
        head = f"the hidden audit call (fresh inputs, at timed call {index}) got a wrong output"
        if kind == "cheat":
            raise TimedCheckFailure("cheat", f"{head}: {message}")
        replayed = self._replays(self.outputs_of(output), earlier)
        stale = None if replayed else self._stale(self.outputs_of(output), run.references)
        output, run = None, replace(run, inputs=())  # the audit's output and inputs released first
        if replayed:
            raise TimedCheckFailure(
                "cheat",
                f"{head}: {message}; it is, bit for bit, an earlier call's output on other inputs and "
                "the reference's answer there: a replayed or cached output",
            )
        if stale is not None:
            raise TimedCheckFailure("cheat", f"{head}: {message}{self._stale_words(stale)}")
        at = None if self.right_at is None else self._wrong_the_same_way(self.right_at)
        if at is not None and at.same_wrong():
            raise TimedCheckFailure("cheat", f"{head}: {message}{LAZY.format(calls=at.calls)}")
        if self._right_again(index, run):
            raise TimedCheckFailure(
                kind, f"{head} ({message}); the same call on the same inputs made again is right: {VARIES}"
            )
        if at is not None and at.wrong:
            seen = f"called afresh on timed inputs it was found right on, it is {at}"
            raise TimedCheckFailure(
                kind, f"{head} ({message}); {seen}: {VARIES if at.varies() else NOT_GAMED}"
            )
        draw = f"a fresh draw of them (the hidden audit at timed call {index}, seed {AUDIT_SEED + index})"
        raise TimedCheckFailure(
            kind,
            wrong_on_another_draw(draw, message) + f"; {NOT_GAMED}, nor a race (right when the same "
            "call is made again): a bug the problem's own seeds did not reach",
        )

    def _right_again(self, index: int, run: ReferenceRun) -> bool:
        """Whether a call on the audit's draw made again (the same values, new buffers) is right:
        no evidence of a cheat (a race is right on some calls), but a wording: not a bug the
        draw reaches."""
        again = self.fresh_inputs(AUDIT_SEED + index)
        same = [self.digest(value) for value in again] == run.before
        return same and self._right_on(again, run, owned=True)


class PerturbOnly:
    """Between the baseline's (and parent's) timed calls: the same input perturbation the
    candidate's calls see, nothing checked."""

    def __init__(self, checks: Any) -> None:
        self.checks = checks

    def before(self, index: int) -> None:
        self.checks.advance(index)

    def after(self, index: int, output: Any) -> None:
        return None

    def audit_point(self, index: int) -> None:
        return None

    def restore(self) -> None:
        self.checks.restore()
