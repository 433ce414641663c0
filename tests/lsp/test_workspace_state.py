"""What a workspace's lens says about the code on screen (daemon/lsp/state.py): a probe's
result is this code's only while kernel.py still holds the text the probe measured."""

from __future__ import annotations

from pathlib import Path

import pytest

from kernelscope.daemon.lsp.state import WorkspaceState
from kernelscope.protocol.bench import BenchResult


def _result(score: float) -> BenchResult:
    return BenchResult(
        status="ok",
        passed=True,
        mode="interpreter",
        workspace="/ws",
        candidate="/ws/kernel.py",
        baseline="reference",
        entry_point="kernel_fn",
        score=score,
    )


def _unused_cache() -> object:
    raise AssertionError("the transitions read no file")


@pytest.fixture
def ws(tmp_path: Path) -> WorkspaceState:
    return WorkspaceState(tmp_path, _unused_cache)  # type: ignore[arg-type]


def test_a_probe_of_the_text_on_disk_is_shown_as_current(ws: WorkspaceState) -> None:
    ws.kernel_digest = "a"
    ws.kernel_edited()
    ws.probe_finished(_result(1.5), measured="a")
    assert ws.probe is not None and ws.probe.score == 1.5 and not ws.stale


def test_an_older_texts_probe_ending_after_a_new_save_is_not_shown_as_current(ws: WorkspaceState) -> None:
    """Probe P of text A runs; B is saved (its check and debounce under way); P ends: B's lens
    keeps its stale mark and the numbers of the probe before, not A's as B's."""
    ws.kernel_digest = "a"
    ws.probe_finished(_result(1.1), measured="a")
    ws.kernel_digest = "b"
    ws.kernel_edited()
    ws.probe_finished(_result(2.0), measured="a")
    assert ws.stale and ws.probe is not None and ws.probe.score == 1.1


def test_an_older_texts_probe_after_a_revert_to_a_recorded_version_is_dropped(ws: WorkspaceState) -> None:
    """A save that puts a recorded version's code back says the numbers on screen are that
    version's; the probe of the text before it, ending later, does not overwrite them."""
    ws.kernel_digest = "new-code"
    ws.kernel_edited()
    ws.kernel_digest = "recorded-v3"
    ws.already_measured()
    ws.probe_finished(_result(2.0), measured="new-code")
    assert ws.probe is None and not ws.stale


def test_a_benchmark_started_before_any_save_counts_for_the_unchanged_file(ws: WorkspaceState) -> None:
    ws.probe_finished(_result(0.9), measured=None)  # the kernelscope.benchmark command, nothing saved
    assert ws.probe is not None and ws.probe.score == 0.9 and not ws.stale
