"""Where the last text of kernel.py that parsed is placed in a text that does not parse
(daemon/engine/workspace/last_parse.py): what the lenses, hints and hover show mid-edit."""

from __future__ import annotations

from kernelscope.daemon.engine.workspace.last_parse import LastParse

PARSED = """import triton
import triton.language as tl

@triton.jit
def k1(x):
    pass

@triton.jit
def k2(x):
    y = 1
    return y
"""


def test_a_kernel_typed_above_another_does_not_take_its_lens() -> None:
    """A new kernel typed above k2 begins with the same `@triton.jit` as k2; the line map
    matched k2's decorator to the new one, so k2's lens (drawn above its decorator) went to the
    half-typed kernel while its `def` was placed right."""
    typing = PARSED.replace("@triton.jit\ndef k2", "@triton.jit\ndef k3(x\n\n@triton.jit\ndef k2")
    last = LastParse()
    assert last.scan(PARSED)[0].error is None
    scan, moved = last.scan(typing)
    assert scan.error is not None and moved is not None
    lines = typing.splitlines()
    placed = {
        k.name: (lines[k.decorator_line - 1], lines[k.def_line - 1], k.def_line - k.decorator_line)
        for k in scan.kernels
    }
    assert placed == {"k1": ("@triton.jit", "def k1(x):", 1), "k2": ("@triton.jit", "def k2(x):", 1)}


def test_a_kernel_whose_name_is_being_typed_stays_below_its_decorator() -> None:
    """k2's `def` line being typed (its name half typed): placed below its unchanged decorator;
    a line there that is no `def` at all places nothing."""
    last = LastParse()
    last.scan(PARSED)
    scan, _ = last.scan(PARSED.replace("def k2(x):", "def k(x:"))
    assert [(k.name, k.def_line) for k in scan.kernels] == [("k1", 5), ("k2", 9)]
    scan, _ = last.scan(PARSED.replace("def k2(x):", "x = (1"))
    assert [k.name for k in scan.kernels] == ["k1"]
