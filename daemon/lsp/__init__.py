"""The LSP daemon: `kernelscope serve`. Thin feature modules over the engine."""
