"""kernelscope's backend: the engine (workspace, memory, store, workflows), the CLI and
the LSP server. The daemon process never imports torch or triton."""
