"""textDocument/hover (pool): on a kernel's name its experiment history as a Markdown table,
aligned text for a client that draws none (views/history_table.py), on any line who introduced
it and what it bought (blame)."""

from __future__ import annotations

from lsprotocol import types

from kernelscope.daemon.lsp.features import Document
from kernelscope.daemon.lsp.features.hints import blame_markdown


def hover(doc: Document, params: types.HoverParams) -> types.Hover | None:
    from kernelscope.daemon.engine.views.history_table import kernel_history

    position = doc.from_client(params.position)
    kernels = doc.kernels()
    blame = blame_markdown(doc.view, position.line, doc.text)
    value = blame
    for kernel in kernels:
        start, end = kernel.name_column, kernel.name_column + len(kernel.name)
        if position.line == kernel.def_line - 1 and start <= position.character <= end:
            names = [k.name for k in kernels]
            table = kernel_history(doc.view.cache, kernel.name, names, doc.draws_tables).markdown
            value = table + (f"\n\n---\n{blame}" if blame else "")
            break
    if value is None:
        return None
    return types.Hover(contents=types.MarkupContent(kind=types.MarkupKind.Markdown, value=value))
