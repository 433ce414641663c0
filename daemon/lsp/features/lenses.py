"""textDocument/codeLens (pool; an answer the cache still holds is given on the loop): the
file's target line and the workflow actions at the top of kernel.py, the running job or the
latest probe, and a summary above each kernel. The texts are views/lens_text.py's; what they
are made of, and the answer itself, are kept by the workspace cache."""

from __future__ import annotations

from typing import TYPE_CHECKING

from lsprotocol import types

from kernelscope.daemon.lsp.features import Document
from kernelscope.daemon.lsp.state import WorkspaceView

if TYPE_CHECKING:
    from kernelscope.daemon.engine.workspace.cache import Source

# (title, command, arguments beyond the workspace): the restart masks half of memory/ and launches
# an agent on one click, so its lens asks the person first (`confirm`: protocol/lsp.WritesAfterAsking)
Lens = tuple[str, str, dict[str, object]]
WRITES: tuple[Lens, ...] = (
    ("Run iteration", "kernelscope.runIteration", {}),
    ("Mask half & restart", "kernelscope.restart", {"confirm": True}),
)
READS: tuple[Lens, ...] = (("Benchmark now", "kernelscope.benchmark", {}),)


def _lens(
    line: int, title: str, command: str, arguments: list[object], tooltip: str | None = None
) -> types.CodeLens:
    zero = types.Position(line=max(line, 0), character=0)
    return types.CodeLens(
        range=types.Range(start=zero, end=zero),
        command=types.Command(title=title, command=command, arguments=arguments, tooltip=tooltip),
    )


def file_text(view: WorkspaceView) -> str:
    from kernelscope.daemon.engine.views import lens_text

    return lens_text.workspace_texts(view.cache)[0]


def kernel_texts(view: WorkspaceView) -> dict[str, str]:
    """Kernel name -> one-line summary (shared by lenses, inlay hints and hover)."""
    from kernelscope.daemon.engine.views import lens_text

    texts = lens_text.workspace_texts(view.cache)[1]
    return {name: f"(stale) {text}" for name, text in texts.items()} if view.stale else texts


SOURCES: tuple[Source, ...] = ("kernel", "memory", "readme", "store", "supervisor")


def _live(doc: Document) -> tuple[object, ...]:
    """What the lenses show of the daemon's live state and of the editor's buffer (where
    its kernels are as it is typed): no cache source tracks them."""
    view = doc.view
    trust = (view.settings.bench_on_save, view.settings.runs_on_save)
    return (view.job, view.probe, view.stale, view.last_outcome, trust, doc.buffer)


def kept_lenses(doc: Document) -> list[types.CodeLens] | None:
    """(loop) The answer kept from an earlier request, if nothing it shows changed since."""
    kept: list[types.CodeLens] | None = doc.view.cache.peek("lenses", SOURCES, _live(doc))
    return kept


def code_lens(doc: Document, params: types.CodeLensParams) -> list[types.CodeLens]:
    """Kept by the workspace cache while the sources and the live fields they show are the
    same: an editor asks again after every refresh, 50 kernels are 300 protocol objects."""
    return doc.view.cache.get("lenses", SOURCES, lambda: _code_lens(doc), _live(doc))


def _code_lens(doc: Document) -> list[types.CodeLens]:
    from kernelscope.daemon.engine.views import lens_text

    view = doc.view
    args: list[object] = [{"workspace": str(view.root)}]
    # (every stop condition in full for a client that passes a Command's tooltip on; VS Code's
    # vscode-languageclient 9 copies title, command and arguments only: the kernel's hover,
    # its Stop conditions section, is where every client shows them)
    tooltip = lens_text.file_tooltip(view.cache)
    lenses = [_lens(0, file_text(view), "kernelscope.showHistory", args, tooltip)]
    writes = () if view.cache.supervised() else WRITES  # an orchestrator's workspace: kernelscope observes
    root = str(view.root)
    lenses += [
        _lens(0, title, command, [{"workspace": root, **more}]) for title, command, more in (*writes, *READS)
    ]
    if view.job is None and view.last_outcome is not None and view.last_outcome[1] == "cancelled":
        cancelled = lens_text.cancelled_text(view.last_outcome[0])
        lenses.insert(0, _lens(0, cancelled, "kernelscope.benchmark", args))
    if view.job is not None:
        lenses.insert(0, _lens(0, lens_text.job_text(*view.job), "kernelscope.cancel", args))
    elif view.probe is not None:
        lenses.insert(
            0, _lens(0, lens_text.probe_text(view.probe, view.stale), "kernelscope.benchmark", args)
        )
    if view.settings.bench_on_save and not view.settings.runs_on_save:
        lenses.insert(0, _lens(0, lens_text.UNTRUSTED, "kernelscope.benchmark", args))
    texts = kernel_texts(view)
    saved = view.cache.kernels()  # (saved text that does not parse: the last kernels that did)
    mark = f"(kernel.py does not parse: {saved.error.message}) " if saved.error is not None else ""
    # where the kernels are in the editor's buffer (unsaved lines above one move its lens)
    for kernel in doc.kernels() if doc.buffer is not None else saved.kernels:
        lenses.append(
            _lens(
                kernel.decorator_line - 1,
                mark + texts.get(kernel.name, ""),
                "kernelscope.showHistory",
                [{"workspace": str(view.root), "kernel": kernel.name}],
            )
        )
    return lenses
