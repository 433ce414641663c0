"""Whose fault an exception is: the problem's code (the candidate, the baseline, the parent, the
reference, any file of the workspace) or kernelscope's own harness.

Every call the harness makes into the problem's code goes through a function of one of its files
(the entry point, the reference, `make_inputs`, a Model's `forward`), so an exception raised
there, or anywhere under it (in torch, in triton), carries a frame of that file in its
traceback. One with no such frame was raised by the harness on its own: a bug in kernelscope (a
timed check, input generation, the result's summary), which says nothing about the kernel.
Reported as the kernel's `exception` it read "the kernel is wrong" (FAIL, exit 3) with the
traceback only in `--json`; it is `harness_error`, no verdict (protocol/bench.py's table says
the word and the exit status), its last frames kept and a request to report it in the message.

`raise ... from exc` passes the fault on (the frames of `__cause__` count); an exception raised
while handling another (`__context__` only) is the handler's own: a harness that fails while
reporting a kernel's exception has a bug of its own.

Where an entry point is no Python function of the problem's files (`kernel_fn = torch.add`), its
exception has no frame of them and is counted the harness's: no verdict rather than a wrong one.
"""

from __future__ import annotations

import argparse
import os
import traceback
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from kernelscope.protocol.bench import BenchError, BenchResult, ErrorKind

# Frames of a harness error's traceback kept (the innermost: where the harness failed).
HARNESS_FRAMES = 8
KERNEL_FRAMES = 8  # a kernel's exception: the outermost, as the runner always kept
REPORT = (
    "a bug in kernelscope's harness, not a verdict on the kernel: please report it to kernelscope's "
    "maintainers with this traceback (`kernelscope bench --json` has it in error.traceback)"
)


class ProblemCode:
    """The files whose frames are the problem's: every file under the workspace, and the
    candidate, baseline, parent and reference files wherever they are."""

    def __init__(self, workspace: Path, files: list[Path | None]) -> None:
        self._root = os.path.realpath(workspace) + os.sep
        self._files = {os.path.realpath(path) for path in files if path is not None}
        self._known: dict[str, bool] = {}

    @classmethod
    def of(cls, args: argparse.Namespace) -> ProblemCode:
        """The runner's arguments' files (`--baseline reference` names no file)."""
        baseline = None if args.baseline == "reference" else Path(args.baseline)
        reference = args.reference or args.workspace / "reference.py"
        return cls(args.workspace, [args.candidate, baseline, args.parent, reference])

    def _owns(self, filename: str) -> bool:
        known = self._known.get(filename)
        if known is None:
            real = os.path.realpath(filename)
            known = self._known[filename] = real in self._files or real.startswith(self._root)
        return known

    def raised_in(self, exc: BaseException) -> bool:
        """Whether a frame of `exc`'s traceback, or of the exception it was raised from, is
        in the problem's files."""
        seen: set[int] = set()
        current: BaseException | None = exc
        while current is not None and id(current) not in seen:
            seen.add(id(current))
            for frame, _ in traceback.walk_tb(current.__traceback__):
                if self._owns(frame.f_code.co_filename):
                    return True
            current = current.__cause__
        return False


def classify(exc: BaseException, code: ProblemCode) -> ErrorKind:
    """The kind of an exception the runner caught: memory, the problem's own declared kinds
    (`bench_kind`: an input it cannot build), a Triton compile error, then the kernel's
    `exception` or, with no frame of the problem's code, `harness_error`."""
    import torch

    if isinstance(exc, (MemoryError, torch.cuda.OutOfMemoryError)):
        return "out_of_memory"
    if isinstance(exc, RuntimeError) and any(
        text in str(exc).lower() for text in ("can't allocate memory", "out of memory")
    ):
        return "out_of_memory"
    bench_kind = getattr(exc, "bench_kind", None)  # e.g. an input the problem cannot build
    if bench_kind == "unsupported":
        return "unsupported"
    if bench_kind == "setup":
        return "setup"
    module = type(exc).__module__ or ""
    if module.startswith("triton.compiler") or type(exc).__name__ in (
        "CompilationError",
        "CompileTimeAssertionFailure",
    ):
        return "compile"
    return "exception" if code.raised_in(exc) else "harness_error"


def error_of(exc: BaseException, code: ProblemCode, config: str | None = None) -> BenchError:
    """The classified error of an exception the runner caught, named by `config` where one
    was running; a harness error keeps its innermost frames and asks to be reported."""
    from kernelscope.protocol.bench import BenchError

    kind = classify(exc, code)
    said = f"{type(exc).__name__}: {exc}"
    where = f"{config}: " if config else ""
    if kind == "harness_error":
        message = f"{where}kernelscope's harness failed with {said} -- {REPORT}"
        frames = -HARNESS_FRAMES
    else:
        message, frames = f"{where}{said}", KERNEL_FRAMES
    tb = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__, limit=frames))
    return BenchError(kind=kind, message=message, config=config, traceback=tb)


def unfinished(args: argparse.Namespace, exc: Exception) -> BenchResult:
    """The result of a run an exception stopped outside any configuration (the runner's own
    set-up and summary): without it the child exited without a result, which the launcher
    reads as the kernel's `exception`."""
    from kernelscope.protocol.bench import BenchResult

    return BenchResult(
        status="error",
        passed=False,
        mode="interpreter" if os.environ.get("TRITON_INTERPRET") == "1" else "gpu",
        workspace=str(args.workspace.resolve()),
        candidate=str(args.candidate.resolve()),
        baseline=args.baseline,
        entry_point=args.entry,
        error=error_of(exc, ProblemCode.of(args)),
    )
