"""Fixtures the LSP tests share: the prepared folder (`make_workspace`: two recorded versions,
their experiments, a foreign workspace), made once per test module, and each test's private copy
of it."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.lsp.test_lsp import make_workspace, private_copy


@pytest.fixture(scope="module")
def prepared(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("lsp")
    make_workspace(root)
    return root


@pytest.fixture
def folder(prepared: Path, tmp_path: Path) -> Path:
    return private_copy(prepared, tmp_path)
