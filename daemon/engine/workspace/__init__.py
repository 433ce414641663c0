"""What a folder is and what it states: the workspace and its summary (workspace.py), its
README's targets and stop conditions (readme.py), the kernels in kernel.py by AST (kernel_scan),
its kind and targets digest by the one kinds rule (kinds.py, over protocol/kinds.py), the files
of today's atrex supervisor and who owns the workspace (atrex.py), and the user's own config
file (user_config). Read-only: nothing here writes into a workspace."""
