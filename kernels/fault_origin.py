"""What an exception the runner caught says: the kernel's `exception` (FAIL, exit 3) once any
of the problem's files has been read, and `harness_error` (no verdict) only before.

Whose code raised cannot be told soundly from a traceback: a kernel's exception need carry no
frame of the problem's files (an entry point that is a C function or a `functools.partial`, a
function compiled under another file name, one imported from a module outside the workspace,
an exception class that hides its `__traceback__`), and a kernel's own fault can surface in
the harness after its frame returned (an output the harness cannot read, a meta or sparse
tensor; on a GPU an illegal memory access, reported at the harness's next synchronize). Each of
those, counted the harness's, turned a failing kernel into no verdict. So the one sound line is
time: nothing a kernel does can reach what runs before the harness first reads its files (the
run's settings: mode, environment, sizes). An exception there is `harness_error`
(`before_the_problem`), unless it has a frame of the problem's files (a workspace module that
shadows one the harness imports, as `torch.py`); any later one (the static rules read the
source, the import runs it, then every configuration, the summary) is the kernel's
`exception`, as a kernel's always was.

Where its traceback has no frame of the problem's files (`ProblemCode`), its message says
kernelscope's harness may be at fault and how to report it (protocol/bench.py's
HARNESS_MAY_BE_AT_FAULT, which `bench` recognises to print the traceback's last frames): a
hint for the reader, never the verdict.
"""

from __future__ import annotations

import argparse
import os
import traceback
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from kernelscope.protocol.bench import BenchError, BenchResult, ErrorKind

# Frames of a traceback kept: the innermost (where it failed) when the harness may be at fault
# or is, else the outermost (the kernel's call), as the runner always kept.
LAST_FRAMES = 8
KERNEL_FRAMES = 8


class ProblemCode:
    """The files whose frames are the problem's: every file under the workspace, and the
    candidate, baseline, parent and reference files wherever they are. A pseudo-file name
    (`<string>`, `<frozen importlib._bootstrap>`) is no file: it is nobody's."""

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
            if filename.startswith("<") or not os.path.isabs(filename):  # relative: cwd's guess
                known = False
            else:
                real = os.path.realpath(filename)
                known = real in self._files or real.startswith(self._root)
            self._known[filename] = known
        return known

    def raised_in(self, exc: BaseException) -> bool:
        """Whether a frame of `exc`'s traceback, or of the exception it was raised from, is in
        the problem's files (False where the exception will not say: it decides only a hint)."""
        seen: set[int] = set()
        current: BaseException | None = exc
        try:
            while current is not None and id(current) not in seen:
                seen.add(id(current))
                for frame, _ in traceback.walk_tb(current.__traceback__):
                    if self._owns(frame.f_code.co_filename):
                        return True
                current = current.__cause__
        except Exception:
            return False
        return False


def classify(exc: BaseException, declared: bool = False) -> ErrorKind:
    """The kind of an exception the problem's code may have raised: memory, a problem's
    declared unsupported input (`bench_kind`, only where `declared`: the adapter's input
    building raised it before the candidate was called for that configuration; any class can
    carry the attribute, so elsewhere it is the kernel's), a Triton compile error, else the
    kernel's `exception`. Never a no-verdict kind for the harness: see the module's docstring."""
    memory: tuple[type[BaseException], ...] = (MemoryError,)
    try:
        from torch.cuda import OutOfMemoryError

        memory = (MemoryError, OutOfMemoryError)
    except Exception:  # a workspace's `torch.py` shadowing torch (`before_the_problem`)
        pass
    if isinstance(exc, memory):
        return "out_of_memory"
    if isinstance(exc, RuntimeError) and any(
        text in _text(exc).lower() for text in ("can't allocate memory", "out of memory")
    ):
        return "out_of_memory"
    if (
        declared and getattr(type(exc), "bench_kind", None) == "unsupported"
    ):  # e.g. a workload the adapter cannot run
        return "unsupported"
    module = type(exc).__module__ or ""
    if module.startswith("triton.compiler") or type(exc).__name__ in (
        "CompilationError",
        "CompileTimeAssertionFailure",
    ):
        return "compile"
    return "exception"


def _text(exc: BaseException) -> str:
    """`str(exc)`, which a kernel's exception class may make raise."""
    try:
        return str(exc)
    except Exception:
        return "<its str() raised>"


def error_of(
    exc: BaseException, code: ProblemCode, config: str | None = None, declared: bool = False
) -> BenchError:
    """The classified error of an exception the runner caught after it read the problem's
    files, named by `config` where one was running; with no frame of the problem's files, its
    message says the harness may be at fault and it keeps the innermost frames."""
    from kernelscope.protocol.bench import HARNESS_MAY_BE_AT_FAULT, BenchError

    kind = classify(exc, declared)
    message = f"{config}: " if config else ""
    message += f"{type(exc).__name__}: {_text(exc)}"
    frames = KERNEL_FRAMES
    if kind == "exception" and not code.raised_in(exc):
        message += f" ({HARNESS_MAY_BE_AT_FAULT})"
        frames = -LAST_FRAMES
    return BenchError(kind=kind, message=message, config=config, traceback=_traceback(exc, frames))


def _traceback(exc: BaseException, frames: int) -> str:
    try:
        return "".join(traceback.format_exception(type(exc), exc, exc.__traceback__, limit=frames))
    except Exception:  # a traceback the exception will not give
        return f"{type(exc).__name__} (its traceback could not be read)"


def unfinished(args: argparse.Namespace, exc: Exception) -> BenchResult:
    """The result of a run an exception stopped outside any configuration, after the problem's
    files were read (the import, the summary): the kernel's `exception`, not a run that ended
    without a result (which the launcher reads as `exception` too, with nothing to show)."""
    return _stopped(args, error_of(exc, ProblemCode.of(args)))


def before_the_problem(args: argparse.Namespace, exc: Exception) -> BenchResult:
    """The result of a run an exception stopped before the harness read any of the problem's
    files: kernelscope's own failure (`harness_error`, no verdict), to be reported; unless a
    frame of the problem's files is on it. The runner starts with the workspace first on
    `sys.path`, so a workspace file named as a module the harness imports first (`torch.py`)
    runs before the problem is read: its exception is the workspace's (`unfinished`)."""
    from kernelscope.protocol.bench import HARNESS_FAILED, BenchError

    try:
        ours = ProblemCode.of(args).raised_in(exc)
    except Exception:  # arguments the code's files cannot be read from: the harness's fault
        ours = False
    if ours:
        return unfinished(args, exc)
    message = (
        f"kernelscope's harness failed before it read the problem's files: {type(exc).__name__}: {_text(exc)}"
    )
    error = BenchError(
        kind="harness_error", message=f"{message} ({HARNESS_FAILED})", traceback=_traceback(exc, -LAST_FRAMES)
    )
    return _stopped(args, error)


def _stopped(args: argparse.Namespace, error: BenchError) -> BenchResult:
    from kernelscope.protocol.bench import BenchResult

    return BenchResult(
        status="error",
        passed=False,
        mode="interpreter" if os.environ.get("TRITON_INTERPRET") == "1" else "gpu",
        workspace=str(args.workspace.resolve()),
        candidate=str(args.candidate.resolve()),
        baseline=args.baseline,
        entry_point=args.entry,
        error=error,
    )
