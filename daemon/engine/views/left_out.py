"""What a ranking or a listing of the experiment store left out, in the words every surface
says it: the CLI (`exp top`, `list`, `failures`: after the answer, on stderr under --json) and
the Python API (`expdb.top_experiments`: a warning, which Python prints to stderr once). Without
them an empty answer reads as "nothing was tried": on a machine without a GPU every run is the
Triton interpreter's, and none ranks. One sentence per reason; each surface names its own
option (`option("include_interpreter")`: `--include-interpreter` for the CLI,
`include_interpreter=True` for Python)."""

from __future__ import annotations

from collections.abc import Callable

from kernelscope.daemon.engine import counted


def left_out_notes(option: Callable[[str], str], interpreter: int = 0, masked: int = 0) -> list[str]:
    """The notes for `interpreter` Triton-interpreter runs (CPU timings, no GPU figures) and
    `masked` experiments of masked memory versions left out; none for a count of 0."""
    notes = []
    if interpreter > 0:
        notes.append(
            f"{counted(interpreter, 'interpreter run')} left out (CPU timings do not rank; "
            f"{option('include_interpreter')} shows them)"
        )
    if masked > 0:
        notes.append(
            f"{counted(masked, 'experiment')} of masked memory versions left out (a partial restart hid "
            f"their experience; {option('include_masked')} shows them)"
        )
    return notes
