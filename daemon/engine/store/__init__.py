"""The experiment store: KernelExperiment records on SQLite (default) or PostgreSQL."""

from kernelscope.daemon.engine.store.config import resolve_db_url
from kernelscope.daemon.engine.store.errors import (
    ExperimentNotFound,
    InvalidExperiment,
    InvalidQuery,
    NotAWorkspace,
    StoreError,
)
from kernelscope.daemon.engine.store.store import ExperimentStore

__all__ = [
    "ExperimentNotFound",
    "ExperimentStore",
    "InvalidExperiment",
    "InvalidQuery",
    "NotAWorkspace",
    "StoreError",
    "resolve_db_url",
]
