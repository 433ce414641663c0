"""The table behind a tried-values inlay hint (engine/views/tried_table.py): made by the engine,
once per history state; the LSP side (tests/lsp/test_lsp_history.py) only wraps it as markup."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

from kernelscope.daemon.engine.views import tried_table
from kernelscope.protocol.history import ScoreValue, TriedHint, TriedValue


def test_the_tried_table_is_made_once_per_history_state(monkeypatch: Any) -> None:
    score = ScoreValue(value=3.2, kind="speedup", versus="v0")
    tried = TriedHint(
        key="launch:add_kernel#0:BLOCK_SIZE",
        label="BLOCK_SIZE",
        kind="launch",
        kernel="add_kernel",
        line=8,
        character=40,
        end_line=8,
        end_character=44,
        value="1024",
        values=[
            TriedValue(value="256", versions=["v1"], passed=1, best_version="v1", best_score=score),
            TriedValue(value="1024", versions=["v2", "v3"], passed=1, failed=1, current=True),
        ],
        hint="tried: 256 3.20x v1",
    )
    state = SimpleNamespace(memo={})
    service = SimpleNamespace(history=lambda check=True: state)
    made: list[str] = []
    real = tried_table._table
    monkeypatch.setattr(tried_table, "_table", lambda t: made.append(t.key) or real(t))
    text = tried_table.tried_markdown(service, tried)
    assert text.startswith("**BLOCK_SIZE**\n\n| value | versions | passed | failed | best |")
    assert f"| 256 | v1 | 1 | 0 | {score.text()} |" in text and "| 1024 (here) | v2, v3 | 1 | 1 | - |" in text
    assert tried_table.tried_markdown(service, tried) == text and len(made) == 1  # kept
    state.memo = {}  # a new history state (a version recorded): made again
    tried_table.tried_markdown(service, tried)
    assert len(made) == 2
