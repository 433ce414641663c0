"""Readers for the workspace formats found in the field, kept apart from the core memory
manager: which kind of workspace a folder is (`kinds`), and what today's atrex supervisor
records beyond the seed's fields (`atrex`: experiments, open directions, pivots and carried
numbers, the running episode, episode journals, who owns the workspace). Read-only: nothing
here writes into a workspace."""
