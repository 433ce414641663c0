"""Where Helix's user is shown a command's markdown answer (engine/views/answer_files.py): a
file in the user's state directory, never in a workspace; the LSP side (tests/lsp/
test_workspace_folders.py) shows it or names it."""

from __future__ import annotations

from pathlib import Path

import pytest

from kernelscope.daemon.engine import WriteFailed
from kernelscope.daemon.engine.views.answer_files import write_answer


def test_a_markdown_answer_replaces_this_daemons_earlier_file_and_says_why_it_cannot(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A new name each time, the earlier answer of the same command about the same workspace
    removed, one about another workspace kept. An unwritable state directory is a WriteFailed
    naming it (Helix is shown that line), the earlier answer left."""
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    first = write_answer("/w/kernel_opt_a", "kernelscope.showHistory", "# one")
    other = write_answer("/w/kernel_opt_b", "kernelscope.showHistory", "# other")
    second = write_answer("/w/kernel_opt_a", "kernelscope.showHistory", "# two")
    assert first != second and not first.exists() and second.read_text() == "# two"
    assert other.read_text() == "# other"
    assert second.parent == tmp_path / "state" / "kernelscope" / "answers"
    (tmp_path / "blocked").write_text("a file where the state directory would be")
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "blocked"))
    with pytest.raises(WriteFailed, match=r"cannot write .*blocked/kernelscope/answers"):
        write_answer("/w/kernel_opt_a", "kernelscope.showHistory", "# three")
    assert second.read_text() == "# two"
