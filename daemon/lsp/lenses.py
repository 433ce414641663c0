"""Code lenses: a summary above each kernel, and at the top of kernel.py the target vs best,
action lenses, and the state of a running benchmark."""

from __future__ import annotations

from lsprotocol import types

from kernelscope.daemon.engine.lens_text import file_lens, kernel_lens, memory_scores
from kernelscope.daemon.engine.store import ExperimentStore, StoreError
from kernelscope.daemon.lsp.state import WorkspaceState


def _lens(line: int, title: str, command: str, arguments: list[object]) -> types.CodeLens:
    zero = types.Position(line=max(line, 0), character=0)
    return types.CodeLens(
        range=types.Range(start=zero, end=zero),
        command=types.Command(title=title, command=command, arguments=arguments),
    )


def kernel_summaries(state: WorkspaceState) -> dict[str, str]:
    """Kernel name -> one-line summary (shared by lenses, inlay hints and hover)."""
    if "summaries" not in state.cache:
        state.cache["summaries"] = _kernel_summaries(state)
    return state.cache["summaries"]


def _kernel_summaries(state: WorkspaceState) -> dict[str, str]:
    ws = state.workspace
    scan = ws.kernels()
    readme = ws.readme() if ws.readme_path.is_file() else None
    scores = memory_scores(ws.memory.scan(), readme)
    try:
        summaries = {
            s.kernel: s for s in ExperimentStore(state.settings.db_url).kernel_summaries(str(ws.root))
        }
    except StoreError:
        summaries = {}
    prefix = "(stale) " if state.stale else ""
    return {k.name: prefix + kernel_lens(summaries.get(k.name), scores) for k in scan.kernels}


def code_lenses(state: WorkspaceState) -> list[types.CodeLens]:
    if "lenses" not in state.cache:
        state.cache["lenses"] = _code_lenses(state)
    return state.cache["lenses"]


def _code_lenses(state: WorkspaceState) -> list[types.CodeLens]:
    ws = state.workspace
    folder = str(ws.root)
    args: list[object] = [{"workspace": folder}]
    lenses = [
        _lens(0, file_lens(ws), "kernelscope.showHistory", args),
        _lens(0, "Run iteration", "kernelscope.runIteration", args),
        _lens(0, "Mask half & restart", "kernelscope.restart", args),
        _lens(0, "Benchmark now", "kernelscope.benchmark", args),
    ]
    job = state.job
    if job is not None:
        total = f"/{job.total_configs}" if job.total_configs else ""
        lenses.insert(
            0, _lens(0, f"{job.kind}: {job.done_configs}{total} configs", "kernelscope.cancel", args)
        )
    elif state.probe is not None:
        probe = state.probe
        verdict = "PASS" if probe.passed else f"FAIL ({probe.error.kind if probe.error else 'gate'})"
        score = (
            f" {probe.score:.2f}x vs {'reference' if probe.baseline == 'reference' else 'last passing'}"
            if (probe.score is not None)
            else ""
        )
        stale = " (stale)" if state.stale else ""
        lenses.insert(
            0, _lens(0, f"last probe: {verdict}{score} [{probe.mode}]{stale}", "kernelscope.benchmark", args)
        )
    scan = ws.kernels()
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
