"""Code lenses: a summary above each kernel, and at the top of kernel.py the target vs best,
action lenses, and the state of a running benchmark.

The expensive parts are cached per workspace and per source, so a save (which only marks
the numbers stale) does not re-read 1,000 memory files: `memory` (file lens, scores) is
dropped when memory/ or README.md change, `store` when experiments are written, `kernels`
when kernel.py changes. Rendering the lens list from the cache is cheap.
"""

from __future__ import annotations

from typing import Any

from lsprotocol import types

from kernelscope.daemon.lsp.state import WorkspaceState


def _lens(line: int, title: str, command: str, arguments: list[object]) -> types.CodeLens:
    zero = types.Position(line=max(line, 0), character=0)
    return types.CodeLens(
        range=types.Range(start=zero, end=zero),
        command=types.Command(title=title, command=command, arguments=arguments),
    )


def _cached(state: WorkspaceState, key: str, compute: Any) -> Any:
    if key not in state.cache:
        state.cache[key] = compute()
    return state.cache[key]


def _memory(state: WorkspaceState) -> tuple[str, Any]:
    from kernelscope.daemon.engine.lens_text import file_lens, memory_scores

    ws = state.workspace
    readme = ws.readme() if ws.readme_path.is_file() else None
    entries = ws.memory.scan()  # once for both the file lens and the per-kernel scores
    return file_lens(ws, entries, readme), memory_scores(entries, readme)


def _store(state: WorkspaceState) -> dict[str, Any]:
    from kernelscope.daemon.engine.store import ExperimentStore, StoreError

    try:
        return {s.kernel: s for s in ExperimentStore(state.settings.db_url).kernel_summaries(str(state.root))}
    except StoreError:
        return {}


def kernel_summaries(state: WorkspaceState) -> dict[str, str]:
    """Kernel name -> one-line summary (shared by lenses, inlay hints and hover)."""
    return _cached(state, "summaries", lambda: _kernel_summaries(state))


def _kernel_summaries(state: WorkspaceState) -> dict[str, str]:
    from kernelscope.daemon.engine.lens_text import kernel_lens

    scan = _cached(state, "kernels", state.workspace.kernels)
    _, scores = _cached(state, "memory", lambda: _memory(state))
    summaries = _cached(state, "store", lambda: _store(state))
    prefix = "(stale) " if state.stale else ""
    return {k.name: prefix + kernel_lens(summaries.get(k.name), scores) for k in scan.kernels}


def code_lenses(state: WorkspaceState) -> list[types.CodeLens]:
    return _cached(state, "lenses", lambda: _code_lenses(state))


def _code_lenses(state: WorkspaceState) -> list[types.CodeLens]:
    folder = str(state.root)
    args: list[object] = [{"workspace": folder}]
    file_text, _ = _cached(state, "memory", lambda: _memory(state))
    lenses = [
        _lens(0, file_text, "kernelscope.showHistory", args),
        _lens(0, "Run iteration", "kernelscope.runIteration", args),
        _lens(0, "Mask half & restart", "kernelscope.restart", args),
        _lens(0, "Benchmark now", "kernelscope.benchmark", args),
    ]
    job = state.job
    if job is None and state.last_outcome is not None and state.last_outcome[1] == "cancelled":
        lenses.insert(0, _lens(0, f"{state.last_outcome[0]} cancelled", "kernelscope.benchmark", args))
    if job is not None:
        total = f"/{job.total_configs}" if job.total_configs else ""
        lenses.insert(
            0, _lens(0, f"{job.kind}: {job.done_configs}{total} configs", "kernelscope.cancel", args)
        )
    elif state.probe is not None:
        probe = state.probe
        verdict = "PASS" if probe.passed else f"FAIL ({probe.error.kind if probe.error else 'gate'})"
        against = "reference" if probe.baseline == "reference" else "last passing"
        score = f" {probe.score:.2f}x vs {against}" if probe.score is not None else ""
        if probe.verdict == "no measurable change":
            score += " (no measurable change)"
        elif probe.score is not None and not probe.comparable:
            score += " (not comparable)"
        stale = " (stale)" if state.stale else ""
        lenses.insert(
            0, _lens(0, f"last probe: {verdict}{score} [{probe.mode}]{stale}", "kernelscope.benchmark", args)
        )
    scan = _cached(state, "kernels", state.workspace.kernels)
    texts = kernel_summaries(state)
    for kernel in scan.kernels:
        lenses.append(
            _lens(
                kernel.decorator_line - 1,
                texts.get(kernel.name, ""),
                "kernelscope.showHistory",
                [{"workspace": folder, "kernel": kernel.name}],
            )
        )
    return lenses
