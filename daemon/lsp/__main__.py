"""`python -m kernelscope.daemon.lsp`: the server on stdio (what `kernelscope serve` runs)."""

from kernelscope.daemon.lsp.server import serve

serve()
