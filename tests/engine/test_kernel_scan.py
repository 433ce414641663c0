"""Kernel discovery in kernel.py by parsing, under every import style; its lines as editors count them."""

from __future__ import annotations

from pathlib import Path

import pytest

from kernelscope.daemon.engine.workspace.kernel_scan import scan_kernel_source
from kernelscope.protocol.text_positions import source_lines

SOURCE = """
import triton
import triton as tr
import triton.language as tl
from triton import jit as J, heuristics
from triton.runtime.jit import jit as runtime_jit
import functools


@triton.jit
def plain(x_ptr):
    pass


@tr.autotune(configs=[tr.Config({"BLOCK": 64})], key=["n"])
@tr.jit
def tuned(x_ptr, n, BLOCK: tl.constexpr):
    pass


@heuristics({"EVEN": lambda args: args["n"] % 2 == 0})
@J(do_not_specialize=["n"])
def heuristic(x_ptr, n):
    pass


@runtime_jit
def via_runtime(x):
    pass


@functools.lru_cache
def not_a_kernel():
    pass


def wrapper(x):
    return plain[(1,)](x)
"""


def test_finds_every_kernel_under_any_alias() -> None:
    scan = scan_kernel_source(SOURCE)
    assert scan.error is None
    names = [k.name for k in scan.kernels]
    assert names == ["plain", "tuned", "heuristic", "via_runtime"]
    plain, tuned, heuristic, via_runtime = scan.kernels
    assert (plain.decorator_line, plain.def_line) == (10, 11)
    assert (tuned.decorator_line, tuned.def_line) == (15, 17)
    assert tuned.autotuned and tuned.decorators == ["triton.autotune", "triton.jit"]
    assert heuristic.decorators == ["triton.heuristics", "triton.jit"]
    assert via_runtime.decorators == ["triton.runtime.jit.jit"]
    assert plain.name_column == 4
    assert SOURCE.splitlines()[plain.def_line - 1][plain.name_column :].startswith("plain")


def test_syntax_error_reports_the_line() -> None:
    scan = scan_kernel_source("import triton\n\n@triton.jit\ndef broken(:\n    pass\n")
    assert scan.kernels == []
    assert scan.error is not None and scan.error.line == 4
    assert "line 4" in scan.error.message


def test_nul_bytes_are_an_error_not_a_crash() -> None:
    scan = scan_kernel_source("x = 1\x00\n")
    assert scan.error is not None


def test_same_name_jit_from_other_library_is_not_a_kernel() -> None:
    scan = scan_kernel_source("from numba import jit\n\n@jit\ndef f():\n    pass\n")
    assert scan.kernels == []


@pytest.mark.parametrize(
    ("text", "lines"),
    [
        ("a\nb\n", ["a", "b"]),
        ("a\r\nb", ["a", "b"]),
        ("a\x0c\nb\n", ["a\x0c", "b"]),  # a form feed ends no line (str.splitlines: 3 lines)
        ("a\u2028b\n", ["a\u2028b"]),
        ("\ufeffa\nb\n", ["a", "b"]),  # a byte order mark is no character of line 1
        ("", []),
    ],
)
def test_source_lines_are_counted_as_editors_the_parser_and_git_count_them(
    text: str, lines: list[str]
) -> None:
    assert source_lines(text) == lines


def test_a_kernel_py_starting_with_a_byte_order_mark_is_scanned_as_python_reads_it(tmp_path: Path) -> None:
    """Python imports a file that starts with a UTF-8 BOM; the scan finds its kernels at the
    same lines and columns as without it (editors do not count the mark either)."""
    from kernelscope.daemon.engine.workspace.kernel_scan import scan_kernel_file

    path = tmp_path / "kernel.py"
    path.write_bytes(b"\xef\xbb\xbf" + SOURCE.lstrip("\n").encode())
    scan = scan_kernel_file(path)
    plain = scan_kernel_source(SOURCE.lstrip("\n"))
    assert scan.error is None, scan.error
    assert [(k.name, k.def_line, k.name_column) for k in scan.kernels] == [
        (k.name, k.def_line, k.name_column) for k in plain.kernels
    ]
    assert scan.kernels[0].def_line == 10


def test_one_text_is_parsed_once_whatever_path_names_it(monkeypatch: pytest.MonkeyPatch) -> None:
    """The lens scans the saved file by its path, the diagnostics and hover the editor's buffer
    by none: at a save both are the same text, which was parsed twice (~20 ms each on the event
    loop for a 1,000-line kernel.py). Each answer still names its own path."""
    import ast

    from kernelscope.daemon.engine.workspace import kernel_scan

    source = "import triton\n\n@triton.jit\ndef once_k(x):\n    pass\n\nbroken = 1\n# unique 7f3a\n"
    parses = []
    real_parse = ast.parse
    monkeypatch.setattr(kernel_scan.ast, "parse", lambda *a, **k: parses.append(1) or real_parse(*a, **k))
    by_path = scan_kernel_source(source, "/ws/kernel.py")
    by_none = scan_kernel_source(source)
    assert len(parses) == 1
    assert (by_path.path, by_none.path) == ("/ws/kernel.py", "kernel.py")
    assert [k.name for k in by_path.kernels] == [k.name for k in by_none.kernels] == ["once_k"]
    bad = "def broken(:\n# unique 91c2\n"
    errors = scan_kernel_source(bad, "/ws/kernel.py").error, scan_kernel_source(bad).error
    assert len(parses) == 2 and errors[0] is not None and errors[1] is not None
    assert (errors[0].path, errors[1].path) == ("/ws/kernel.py", "kernel.py")
