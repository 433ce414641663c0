"""Problem sizes: shrinking a reference module's size constants (`--problem-size`) and
refusing, before anything is allocated, a problem that cannot fit the memory cap.

Why this exists: KernelBench problems are written at full GPU size (level 1 GELU is
4096 x 393216 fp32, 6.4 GB per tensor). Run as they are under the CPU interpreter or a memory
cap, such a problem allocated for a minute and was then killed by the cap with no word
about its size. Now the sizes are measured on the meta device first (shapes and dtypes, no
storage) and the harness's footprint is computed from them, so the refusal comes within
seconds and names the size, the cap and the constants that `--problem-size` can shrink.

Runs in the runner's child process only (it imports torch).
"""

from __future__ import annotations

import ast
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kernelscope.protocol.sizes import SizeError

# The comparison (`gate.Comparison.add_slice`) works on slices of 4M elements of the output;
# its temporaries per element of a slice: three of the working dtype (at most float64) and a
# bool, or a 16-bit output's float32 copies beside them. Problem lint slices the same way.
CHUNK_ELEMENTS = 1 << 22
COMPARISON_BYTES_PER_ELEMENT = 3 * 8 + 1


def comparison_bytes(elements: int) -> int:
    """The comparison's working memory beside the tensors it compares (the largest output's
    `elements`): one slice's temporaries."""
    return COMPARISON_BYTES_PER_ELEMENT * min(elements, CHUNK_ELEMENTS)


_HOOK = "__kernelscope_problem_size__"


def integer_constants(module: Any) -> dict[str, int]:
    """The module-level integer constants a `--problem-size` may set (for error messages)."""
    return {
        name: value
        for name, value in vars(module).items()
        if not name.startswith("_") and isinstance(value, int) and not isinstance(value, bool)
    }


def describe_constants(module: Any) -> str:
    constants = integer_constants(module)
    if not constants:
        return "it has no module-level integer constants"
    return "its integer constants: " + ", ".join(f"{k}={v}" for k, v in constants.items())


class _Override(ast.NodeTransformer):
    """Wraps the value of every top-level `NAME = ...` (or `NAME: T = ...`) whose name is
    overridden in a call to the hook, which records the original value and returns the new
    one. Later constants derived from it (`input_shape = (num_classes,)`) follow."""

    def __init__(self, names: set[str]) -> None:
        self.names = names

    def _wrap(self, name: str, value: ast.expr) -> ast.expr:
        return ast.Call(
            func=ast.Name(id=_HOOK, ctx=ast.Load()), args=[ast.Constant(value=name), value], keywords=[]
        )

    def visit_Module(self, node: ast.Module) -> ast.Module:
        for statement in node.body:  # top level only: a function's locals are not sizes
            if (
                isinstance(statement, ast.Assign)
                and len(statement.targets) == 1
                and isinstance(statement.targets[0], ast.Name)
                and statement.targets[0].id in self.names
            ):
                statement.value = self._wrap(statement.targets[0].id, statement.value)
            elif (
                isinstance(statement, ast.AnnAssign)
                and isinstance(statement.target, ast.Name)
                and statement.target.id in self.names
                and statement.value is not None
            ):
                statement.value = self._wrap(statement.target.id, statement.value)
        return ast.fix_missing_locations(node)


def exec_with_sizes(module: Any, path: Path, sizes: dict[str, int]) -> None:
    """Execute `path` into `module` with the integer constants in `sizes` replaced.

    The replacement happens where the module assigns the constant, not afterwards, so
    constants computed from it at import time follow. A name the module does not assign at
    its top level, or assigns something other than an integer, is a SizeError."""
    tree = _Override(set(sizes)).visit(ast.parse(path.read_bytes(), filename=str(path)))
    originals: dict[str, Any] = {}

    def hook(name: str, original: Any) -> Any:
        originals[name] = original
        return sizes[name]

    namespace = vars(module)
    namespace[_HOOK] = hook
    try:
        exec(compile(tree, str(path), "exec"), namespace)
    finally:
        namespace.pop(_HOOK, None)
    unknown = sorted(set(sizes) - set(originals))
    if unknown:
        raise SizeError(
            f"--problem-size {', '.join(unknown)}: {path.name} assigns no such module-level "
            f"constant ({describe_constants(module)})"
        )
    for name, original in originals.items():
        if not isinstance(original, int) or isinstance(original, bool):
            raise SizeError(
                f"--problem-size {name}: {path.name} sets {name} to {type(original).__name__} "
                f"{original!r}, not an integer; set the integer constants it is computed from "
                f"({describe_constants(module)})"
            )


# -- what the harness will hold ----------------------------------------------------------


@dataclass(frozen=True)
class ProblemSizes:
    """One seed's tensors, measured on the meta device (bytes)."""

    input_bytes: int
    inputs: str  # e.g. "1 tensor 4096x393216 float32"
    output_bytes: int
    largest_output_elements: int  # the comparison upcasts one output at a time to float64
    param_bytes: int  # parameters and buffers of one model
    notes: list[str] = field(default_factory=list)  # what was assumed, and why
    changed_bytes: int = 0  # inputs the reference changes in place: the timing keeps pristine copies


def _tensors(value: Any) -> list[Any]:
    import torch

    if isinstance(value, torch.Tensor):
        return [value]
    if isinstance(value, (list, tuple)):
        return [item for part in value for item in _tensors(part)]
    if isinstance(value, dict):
        return [item for part in value.values() for item in _tensors(part)]
    return []


def _nbytes(tensors: list[Any]) -> int:
    return sum(t.numel() * t.element_size() for t in tensors)


def _describe(tensors: list[Any]) -> str:
    if not tensors:
        return "no tensors"
    shapes = ", ".join("x".join(str(d) for d in t.shape) or "scalar" for t in tensors[:4])
    more = f" and {len(tensors) - 4} more" if len(tensors) > 4 else ""
    dtypes = "/".join(sorted({str(t.dtype).replace("torch.", "") for t in tensors}))
    return f"{len(tensors)} tensor{'s' if len(tensors) > 1 else ''} {shapes}{more} {dtypes}"


def meta_sizes(
    get_inputs: Callable[[], Any],
    get_init_inputs: Callable[[], Any],
    model_cls: Any,
    cast: Callable[[Any], Any],
    dtype: Any,
) -> ProblemSizes:
    """Build the inputs and the reference model under `torch.device("meta")` (shapes, dtypes,
    no storage; `cast` applies the precision as the harness will) and run the model's forward
    there for the output size. Raises when the inputs cannot be built on the meta device (the
    caller then skips the check); a forward that does not run there (an op without a meta
    kernel, a data-dependent shape) only makes the output size an assumption."""
    import torch

    notes: list[str] = []
    with torch.device("meta"), torch.no_grad():
        inputs = [cast(x) for x in get_inputs()]
        init_inputs = [cast(x) for x in get_init_inputs()]
        in_tensors = _tensors(inputs)
        param_bytes = 0
        out_tensors: list[Any] | None = None
        changed: list[Any] = []
        try:
            model = model_cls(*init_inputs).to(dtype=dtype)
            param_bytes = _nbytes([*model.parameters(), *model.buffers()])
            versions = [[t._version for t in _tensors(x)] for x in inputs]
            out_tensors = _tensors(model(*inputs))
            changed = [  # an in-place op bumps a tensor's version, on the meta device too
                x
                for x, seen in zip(inputs, versions, strict=True)
                if [t._version for t in _tensors(x)] != seen
            ]
        except Exception as exc:  # the estimate stays useful without the output's size
            notes.append(
                f"the reference model did not run on the meta device ({type(exc).__name__}: "
                f"{str(exc)[:120]}); its output is assumed as large as its largest input"
            )
    if out_tensors is None or not out_tensors:
        largest = max(in_tensors, key=lambda t: t.numel() * t.element_size(), default=None)
        out_tensors = [largest] if largest is not None else []
    return ProblemSizes(
        input_bytes=_nbytes(in_tensors),
        inputs=_describe(in_tensors),
        output_bytes=_nbytes(out_tensors),
        largest_output_elements=max((t.numel() for t in out_tensors), default=0),
        param_bytes=param_bytes,
        notes=notes,
        changed_bytes=_nbytes(_tensors(changed)),
    )


@dataclass(frozen=True)
class Footprint:
    """The most the harness holds at once, as (what, bytes) parts that add up to `total`."""

    parts: list[tuple[str, int]]

    @property
    def total(self) -> int:
        return sum(size for _, size in self.parts)

    def explain(self) -> str:
        return "; ".join(f"{what}: {gb(size)}" for what, size in self.parts if size)


def gb(size: float) -> str:
    """Decimal units, as tensor sizes are usually quoted (6.44 GB for 4096 x 393216 fp32)."""
    return f"{size / 1e9:.2f} GB" if size >= 1e8 else f"{size / 1e6:.1f} MB"


def harness_footprint(
    sizes: ProblemSizes, seeds: int, models: int, timing_input_sets: int, interpreter: bool = False
) -> Footprint:
    """What `runner._Runner.run_config` holds at its peak, from one seed's sizes:

    - the gate (one seed at a time, digests kept instead of earlier seeds' outputs): one
      input set, the reference's and the candidate's outputs, and the comparison's slices;
    - the timing (one input set shared by baseline, candidate and parent, perturbed in place):
      the hidden audit's fresh input set beside it, with its output and the reference's, and
      a pristine copy of each input the reference changes in place (kernels/input_changes.py);
    - every model's parameters (reference, candidate, baseline when it is a kernel);
    - under the CPU interpreter, Triton's own working copies while a kernel runs: about two
      of each launch's tensors (measured: a plain reference + candidate call of a ReLU holds
      7 tensors, 3 of them its own).

    So the peak is two input sets and two outputs whatever the number of seeds or timed
    sets (`seeds` and `timing_input_sets` no longer add to it). Keep it in step with the
    runner: `tests/kernels/test_kernelbench.py` checks it against a measured peak.
    """
    del seeds, timing_input_sets  # the runner keeps digests, not copies, of both
    slices = comparison_bytes(sizes.largest_output_elements)
    parts = [
        (
            f"2 x {gb(sizes.input_bytes)} of inputs (the timed set and the hidden audit's fresh one)",
            2 * sizes.input_bytes,
        ),
        (
            f"2 x {gb(sizes.output_bytes)} of outputs (the candidate's and the reference's)",
            2 * sizes.output_bytes,
        ),
        (
            f"{gb(sizes.changed_bytes)} of pristine copies of the inputs the reference changes in place "
            "(restored before every timed call)",
            sizes.changed_bytes,
        ),
        ("the comparison's working slices", slices),
        (f"{models} x {gb(sizes.param_bytes)} of parameters ({models} models)", models * sizes.param_bytes),
    ]
    if interpreter:
        launch = sizes.input_bytes + sizes.output_bytes
        parts.append(
            (f"the Triton interpreter's copies of a launch's tensors (2 x {gb(launch)})", 2 * launch)
        )
    return Footprint(parts)


def resident_bytes() -> int:
    """This process's resident memory now (the runtime: torch, triton, the modules)."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return 0


def refusal(
    footprint: Footprint, available: int, where: str, inputs: str, hint: str, used: int = 0
) -> str | None:
    """The message refusing the problem, or None when it fits in `available` bytes."""
    if footprint.total + used <= available:
        return None
    runtime = f"; the runtime already holds {gb(used)}" if used else ""
    return (
        f"the problem needs about {gb(footprint.total)}, more than {where}. Its inputs are {inputs}; "
        f"the harness holds at once {footprint.explain()}{runtime}. Shrink it with "
        f"--problem-size NAME=VALUE ({hint}) or raise the cap (fewer --seeds would not help: the "
        "harness keeps digests, not copies, of earlier seeds)"
    )


def check_memory(
    problem: Any, mode: str, seeds: int, timing_input_sets: int, cap_mb: int | None
) -> tuple[str | None, list[str]]:
    """Refuse a problem that cannot fit, before any of its tensors exists.

    Returns (the refusal message or None, notes for the result). Problems without an
    `estimate_sizes()` (the native contract: `make_inputs` takes a device but usually draws
    on the CPU first) are not checked; the memory cap's watchdog still stops them. On the
    CPU the footprint is checked against the cap (`--memory-cap-mb`, from the launcher's
    `--memory-limit-mb`; no cap, no check). On a GPU the footprint is checked against the
    device's free memory, and one input set plus the parameters (drawn on the CPU, then
    moved) against the cap."""
    estimate = getattr(problem, "estimate_sizes", None)
    if estimate is None:
        return None, []
    try:
        sizes: ProblemSizes = estimate()
    except Exception as exc:
        return None, [
            "the memory check was skipped: the problem's inputs could not be built on the meta "
            f"device ({type(exc).__name__}: {str(exc)[:200]})"
        ]
    models = int(getattr(problem, "model_count", 2))
    footprint = harness_footprint(sizes, seeds, models, timing_input_sets, interpreter=mode == "interpreter")
    hint = describe_constants(problem.ref) if hasattr(problem, "ref") else "see the reference module"
    cap = cap_mb * 1024 * 1024 if cap_mb else None
    cap_text = f"the {cap_mb} MB memory cap ({gb(cap or 0)}, --memory-limit-mb)"
    inputs = f"{sizes.inputs} ({gb(sizes.input_bytes)})"
    message = None
    if mode == "gpu":
        import torch

        free, _total = torch.cuda.mem_get_info()
        message = refusal(footprint, free, f"the GPU's {gb(free)} of free memory", inputs, hint)
        if message is None and cap is not None:
            host = Footprint(
                [
                    ("1 input set, drawn on the CPU", sizes.input_bytes),
                    ("the parameters of a model built on the CPU", sizes.param_bytes),
                ]
            )
            message = refusal(host, cap, cap_text, inputs, hint, used=resident_bytes())
    elif cap is not None:
        message = refusal(footprint, cap, cap_text, inputs, hint, used=resident_bytes())
    return message, list(sizes.notes)
