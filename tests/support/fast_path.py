"""The CLI's fast `memory` path watched from a test (tests/cli: the fast path and the full CLI
must print the same, byte for byte)."""

from __future__ import annotations

import pytest

from kernelscope.daemon.cli import fast


def spy_on_fast_path(monkeypatch: pytest.MonkeyPatch) -> list[bool]:
    """`fast.memory` spied on: each call appends whether the fast path ran the command (False:
    it handed it to the full CLI); colour forced off, so that both paths print plain text."""
    original = fast.memory
    handled: list[bool] = []

    def spy(command: str, args: list[str]) -> int | None:
        code = original(command, args)
        handled.append(code is not None)
        return code

    monkeypatch.setattr(fast, "memory", spy)
    monkeypatch.delenv("FORCE_COLOR", raising=False)
    monkeypatch.delenv("TTY_COMPATIBLE", raising=False)
    return handled
