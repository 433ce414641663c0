"""Store errors. They subclass the built-in exceptions the original raised (ValueError for a
duplicate id or bad value, KeyError for a missing id), so callers written against the seed's
API keep catching them, and KernelscopeError so the CLI maps them to exit statuses."""

from __future__ import annotations

from kernelscope.daemon.engine import DataError, UsageError, WriteFailed


class StoreError(DataError):
    """The database cannot be used (not a database, newer schema, unreachable server)."""

    kind = "store"


class StoreWriteFailed(StoreError, WriteFailed):
    """A write transaction failed for lack of space; it was rolled back."""

    kind = WriteFailed.kind  # what the user acts on: free space (StoreError's kind comes first)


class InvalidExperiment(UsageError, ValueError):
    """A record or update that fails validation; nothing was written."""


class InvalidQuery(UsageError, ValueError):
    """An unknown filter or a bad filter value."""


class InvalidImportFile(DataError, ValueError):
    """A file to import that cannot be read, is not JSON (lines), or holds an invalid record:
    invalid data (exit 2); nothing was imported."""


class NotAWorkspace(DataError, ValueError):
    """A workspace to file an experiment under that is not an optimization workspace on this
    machine (store/recorded_workspace.py): invalid data (exit 2, as every command's "not a
    workspace"), a ValueError for the seed's callers, as its other bad values; nothing written."""


class ExperimentNotFound(DataError, KeyError):
    """No experiment with that id."""

    def __str__(self) -> str:  # KeyError would repr() the message
        return str(self.args[0]) if self.args else "experiment not found"


class DuplicateExperiment(DataError, ValueError):
    """An experiment with that id already exists (the original raised ValueError too)."""
