"""The `kernelscope` command line: one module per command group, all calling the engine."""
