"""Tables of the experiment store (SQLAlchemy Core); their versioned migrations are in
migrations.py."""

from __future__ import annotations

from sqlalchemy import (
    Boolean,
    Column,
    Float,
    Index,
    Integer,
    MetaData,
    String,
    Table,
    Text,
)

metadata = MetaData()

schema_version = Table(
    "schema_version",
    metadata,
    Column("id", Integer, primary_key=True),
    Column("version", Integer, nullable=False),
)

experiments = Table(
    "experiments",
    metadata,
    Column("seq", Integer, primary_key=True, autoincrement=True),
    Column("id", String(64), nullable=False, unique=True),
    Column("pid", String(64), nullable=False, default=""),
    Column("created_at", String(40), nullable=False),
    Column("change_summary", String(200), nullable=False, default=""),
    Column("detailed_description", Text, nullable=False, default=""),
    Column("code_change", Text, nullable=False, default=""),
    Column("raw_result", Text, nullable=False, default=""),
    Column("score", Float, nullable=True),
    Column("operator_sig", Text, nullable=False, default=""),
    Column("dtype_sig", String(200), nullable=False, default=""),
    Column("env", Text, nullable=False, default=""),
    Column("base_commit", String(200), nullable=False, default=""),
    Column("profiling_info", Text, nullable=False, default=""),
    Column("is_buggy", Boolean, nullable=False, default=False),
    Column("error_message", Text, nullable=False, default=""),
    Column("status", String(16), nullable=False, default="new"),
    Column("workspace", Text, nullable=False, default=""),
    Column("memory_version", String(32), nullable=True),
    Column("kernels_json", Text, nullable=False, default="[]"),
    Column("metrics_json", Text, nullable=False, default="{}"),
    Column("tags_json", Text, nullable=False, default="[]"),
    Index("ix_experiments_top", "is_buggy", "score"),
    Index("ix_experiments_operator", "operator_sig", "is_buggy", "score"),
    Index("ix_experiments_pid", "pid"),
    Index("ix_experiments_workspace", "workspace", "created_at"),
)

# One row per (experiment, kernel) so per-kernel queries use an index, not JSON.
experiment_kernels = Table(
    "experiment_kernels",
    metadata,
    Column("exp_seq", Integer, nullable=False),
    Column("workspace", Text, nullable=False),
    Column("kernel", String(200), nullable=False),
    Index("ix_kernels_lookup", "workspace", "kernel", "exp_seq"),
    Index("ix_kernels_exp", "exp_seq"),
)


# Per (workspace, kernel) digest kept current inside every write transaction, so the code
# lens query is a primary-key lookup instead of a scan of the kernel's history.
kernel_stats = Table(
    "kernel_stats",
    metadata,
    Column("workspace", Text, primary_key=True),
    Column("kernel", String(200), primary_key=True),
    Column("runs", Integer, nullable=False),
    Column("failures", Integer, nullable=False),
    Column("best_seq", Integer, nullable=True),
    Column("best_score", Float, nullable=True),
    Column("latest_seq", Integer, nullable=False),
    Column("latest_created", String(40), nullable=False),
)
