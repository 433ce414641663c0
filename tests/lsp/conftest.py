"""Fixtures the LSP tests share: each test's private copy of the prepared folder
(tests/conftest.py's `prepared`, made once per test module)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.lsp.test_lsp import private_copy


@pytest.fixture
def folder(prepared: Path, tmp_path: Path) -> Path:
    return private_copy(prepared, tmp_path)
