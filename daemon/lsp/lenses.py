"""Code lenses: a summary above each kernel, and at the top of kernel.py the target vs best,
action lenses, and the state of a running benchmark.

The expensive parts are cached per workspace and per source, so a save (which only marks
the numbers stale) does not re-read 1,000 memory files: `memory` (file lens, scores) is
dropped when memory/ or README.md change, `store` when experiments are written, `kernels`
when kernel.py changes. Rendering the lens list from the cache is cheap.

When memory/ changes, the rebuild is incremental too: the daemon's scan re-reads only the
files that changed (memory.py, incremental reads) and hands back the same entry objects for
the others, so each version's score is computed once and kept while its entry, v0 and the
README's target kind stay the same; the store's per-kernel digest (`kernel_stats`, updated by
each write) is read, never recomputed, through one store object per database.
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
    from kernelscope.daemon.engine.lens_text import file_lens

    ws = state.workspace
    readme = ws.readme() if ws.readme_path.is_file() else None
    entries = ws.memory.scan()  # once for both the file lens and the per-kernel scores
    return file_lens(ws, entries, readme), _scores(state, entries, readme)


SCORES_MEMO = "_scores_by_entry"  # survives invalidate("memory"): it checks itself


def _scores(state: WorkspaceState, entries: list[Any], readme: Any) -> list[Any]:
    """`lens_text.memory_scores(entries, readme)`, computing only the versions whose entry is
    new (a version's score depends on its own record, v0's and the README's target kind)."""
    from kernelscope.daemon.engine.lens_text import memory_scores

    base = next((e for e in entries if e.number == 0 and e.record is not None), None)
    kind = readme.primary_kind if readme else None
    memo = state.cache.get(SCORES_MEMO)
    if memo is None or memo[0] is not base or memo[1] != kind:
        memo = (base, kind, {})  # v0 or the target changed: every score changes
    known: dict[int, tuple[Any, Any]] = memo[2]
    readable = [e for e in entries if e.record is not None]
    fresh = [e for e in readable if known.get(id(e), (None,))[0] is not e]
    if fresh:
        # memory_scores takes v0 from the list it is given: give it v0 with the new entries
        with_base = fresh if base is None or base in fresh else [base, *fresh]
        for entry, score in zip(with_base, memory_scores(with_base, readme), strict=True):
            known[id(entry)] = (entry, score)
    state.cache[SCORES_MEMO] = (base, kind, {id(e): known[id(e)] for e in readable})
    return [known[id(e)][1] for e in readable]


_stores: dict[str | None, Any] = {}


def _store(state: WorkspaceState) -> dict[str, Any]:
    from kernelscope.daemon.engine.store import ExperimentStore, StoreError

    try:
        store = _stores.get(state.settings.db_url)
        if store is None:  # one per database: its engine, pool and schema check are kept
            store = _stores[state.settings.db_url] = ExperimentStore(state.settings.db_url)
        return {s.kernel: s for s in store.kernel_summaries(str(state.root))}
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
    from_memory: str | None = None  # the same text for every kernel without experiments

    def text(name: str) -> str:
        nonlocal from_memory
        summary = summaries.get(name)
        if summary is not None and summary.runs:
            return kernel_lens(summary, scores)
        if from_memory is None:
            from_memory = kernel_lens(None, scores)
        return from_memory

    return {k.name: prefix + text(k.name) for k in scan.kernels}


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
