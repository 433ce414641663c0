"""Fixtures of the agent tests (test_claude_code.py, test_codex.py) and of test_editor_helix.py."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.demo_workspace import build_demo


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """`kernelscope demo` once per test file (the real workflows record v0..v3 under the
    interpreter); each test works in a copy."""
    return build_demo(tmp_path_factory.mktemp("demo"))
