"""The harness's own libraries, torch and triton, imported for the runner: when the interpreter
a benchmark runs with lacks one, that is a setup error (NOT RUN, exit 2) saying which and how to
install it, not a verdict on the kernel (an `exception` FAIL from the runner's traceback, or a
`compile` FAIL when the candidate's own `import triton` was the first to fail)."""

from __future__ import annotations

import sys
from typing import Any

# the README's set-up words (scripts/bootstrap.sh installs these)
INSTALL = (
    "install them into it: kernelscope's bench extra (torch, triton, numpy) and, without an NVIDIA "
    "GPU, the CPU build of torch (torch==2.13.0+cpu on Linux, from https://download.pytorch.org/whl/cpu; "
    "torch==2.13.0 on macOS), as scripts/bootstrap.sh does; or run the benchmark with an interpreter "
    "that has them (--python, KERNELSCOPE_BENCH_PYTHON, or the editor's python setting)"
)


class MissingLibrary(RuntimeError):
    """torch or triton cannot be imported by the runner's interpreter (the runner reports a
    RuntimeError from choosing the mode as a setup error)."""


def _missing(name: str, exc: ImportError) -> MissingLibrary:
    return MissingLibrary(
        f"{sys.executable} cannot import {name} ({exc}): the benchmark harness needs torch and triton "
        f"in the interpreter it runs with; {INSTALL}"
    )


def import_torch() -> Any:
    try:
        import torch
    except ImportError as exc:
        raise _missing("torch", exc) from None
    return torch


def triton_version() -> str:
    """triton's version; `unavailable: ...` when importing it fails other than as missing."""
    try:
        import triton
    except ImportError as exc:
        raise _missing("triton", exc) from None
    except Exception as exc:  # reported, not fatal
        return f"unavailable: {exc}"
    return str(triton.__version__)
