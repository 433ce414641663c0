"""Keeps `kernel_stats` (runs, failures, best and latest per workspace kernel) current.

Inserts update it incrementally with one upsert per kernel; updates and deletes, which can
lower a best score, recompute the affected kernels from their history. Both happen inside
the caller's write transaction, so the digest never disagrees with the rows it summarises.
"""

from __future__ import annotations

import importlib
from collections.abc import Iterable, Mapping
from typing import Any

from sqlalchemy import Connection, and_, bindparam, case, delete, func, insert, or_, select, tuple_

from kernelscope.daemon.engine.store.schema import experiment_kernels, experiments, kernel_stats

E = experiments.c
K = experiment_kernels.c
S = kernel_stats.c
_FAILED_STATUSES = ("failed", "timeout")
_upserts: dict[str, Any] = {}


def is_failure(is_buggy: bool, status: str) -> bool:
    return bool(is_buggy) or status in _FAILED_STATUSES


def upsert_statement(dialect: str) -> Any:
    """INSERT ... ON CONFLICT DO UPDATE that folds one new experiment into a kernel's digest."""
    if dialect not in _upserts:
        # the dialect's own module, imported when first asked (a SQLite daemon never loads
        # PostgreSQL's, 20 ms and its memory on the first lens)
        module = importlib.import_module(
            "sqlalchemy.dialects." + ("sqlite" if dialect == "sqlite" else "postgresql")
        )
        stmt = module.insert(kernel_stats)
        new = stmt.excluded
        better = and_(new.best_seq.is_not(None), or_(S.best_score.is_(None), new.best_score >= S.best_score))
        newer = new.latest_created >= S.latest_created
        _upserts[dialect] = stmt.on_conflict_do_update(
            index_elements=[S.workspace, S.kernel],
            set_={
                "runs": S.runs + new.runs,
                "failures": S.failures + new.failures,
                "best_seq": case((better, new.best_seq), else_=S.best_seq),
                "best_score": case((better, new.best_score), else_=S.best_score),
                "latest_seq": case((newer, new.latest_seq), else_=S.latest_seq),
                "latest_created": case((newer, new.latest_created), else_=S.latest_created),
            },
        )
    return _upserts[dialect]


def record_insert(conn: Connection, seq: int, row: dict[str, Any], kernels: Iterable[str]) -> None:
    """Fold a newly inserted experiment into the digest of each of its kernels."""
    usable = not row["is_buggy"] and row["score"] is not None
    params = [
        {
            "workspace": row["workspace"],
            "kernel": kernel,
            "runs": 1,
            "failures": int(is_failure(row["is_buggy"], row["status"])),
            "best_seq": seq if usable else None,
            "best_score": row["score"] if usable else None,
            "latest_seq": seq,
            "latest_created": row["created_at"],
        }
        for kernel in kernels
    ]
    if params:
        conn.execute(upsert_statement(conn.dialect.name), params)


def affected_pairs(conn: Connection, seqs: Iterable[int]) -> set[tuple[str, str]]:
    seq_list = list(seqs)
    if not seq_list:
        return set()
    rows = conn.execute(select(K.workspace, K.kernel).where(K.exp_seq.in_(seq_list))).all()
    return {(w, k) for w, k in rows}


# Memory versions whose experiments a read leaves out: a set, for the rows of one workspace;
# workspace -> its versions, for rows of many (each workspace's own masks, workspace/masked.py)
Hidden = Iterable[str] | Mapping[str, Iterable[str]]


def not_versions(versions: Hidden) -> list[Any]:
    """The condition that leaves out experiments of these memory versions (a workspace's
    masked ones: a restarted agent must not see their experience); none for none. Its twin
    for rows already read is workspace/masked.is_hidden (`exp failures` reads the store once
    and counts what it leaves out among the rows): a change here changes that one too."""
    if isinstance(versions, Mapping):
        pairs = sorted((workspace, v) for workspace, found in versions.items() for v in set(found))
        pair = tuple_(E.workspace, E.memory_version)
        return [or_(E.memory_version.is_(None), pair.not_in(pairs))] if pairs else []
    hidden = sorted(set(versions))
    return [or_(E.memory_version.is_(None), E.memory_version.not_in(hidden))] if hidden else []


def compute_digest(
    conn: Connection, workspace: str, kernel: str, hidden_versions: Iterable[str] = ()
) -> dict[str, Any] | None:
    """A kernel's digest computed from its history, leaving out `hidden_versions` (None when
    it has no experiments)."""
    rows = conn.execute(
        select(E.seq, E.score, E.is_buggy, E.status, E.created_at)
        .select_from(experiment_kernels.join(experiments, E.seq == K.exp_seq))
        .where(and_(K.workspace == workspace, K.kernel == kernel), *not_versions(hidden_versions))
        .order_by(E.seq)
    ).all()
    if not rows:
        return None
    best = None
    latest = rows[0]
    for row in rows:
        if not row.is_buggy and row.score is not None and (best is None or row.score >= best.score):
            best = row
        if row.created_at >= latest.created_at:
            latest = row
    return {
        "workspace": workspace,
        "kernel": kernel,
        "runs": len(rows),
        "failures": sum(1 for r in rows if is_failure(r.is_buggy, r.status)),
        "best_seq": best.seq if best else None,
        "best_score": best.score if best else None,
        "latest_seq": latest.seq,
        "latest_created": latest.created_at,
    }


def recompute(conn: Connection, pairs: Iterable[tuple[str, str]]) -> None:
    """Rebuild the digest of the given (workspace, kernel) pairs from their history."""
    for workspace, kernel in pairs:
        conn.execute(delete(kernel_stats).where(and_(S.workspace == workspace, S.kernel == kernel)))
        digest = compute_digest(conn, workspace, kernel)
        if digest is not None:
            conn.execute(insert(kernel_stats).values(**digest))


def all_pairs(conn: Connection) -> list[tuple[str, str]]:
    return [(w, k) for w, k in conn.execute(select(K.workspace, K.kernel).distinct()).all()]


def recompute_all(conn: Connection) -> None:
    recompute(conn, all_pairs(conn))


def summaries_without(
    conn: Connection, workspace: str, hidden_versions: Iterable[str]
) -> list[dict[str, Any]]:
    """The fields of the workspace's `KernelSummary` rows recomputed from its history without
    the experiments of `hidden_versions` (the digest counts every experiment), each with the
    number of runs left out (`masked_runs`); a kernel whose runs are all hidden has a row of
    0 runs and no best or latest."""
    hidden = sorted(set(hidden_versions))
    left_out: dict[str, int] = dict(
        conn.execute(
            select(K.kernel, func.count())
            .select_from(experiment_kernels.join(experiments, E.seq == K.exp_seq))
            .where(K.workspace == workspace, E.memory_version.in_(hidden))
            .group_by(K.kernel)
        ).all()
    )
    kernels = conn.execute(select(K.kernel).where(K.workspace == workspace).distinct().order_by(K.kernel))
    digests = [(kernel, compute_digest(conn, workspace, kernel, hidden)) for (kernel,) in kernels.all()]
    seqs = {d[key] for _, d in digests if d for key in ("best_seq", "latest_seq")} - {None}
    found = conn.execute(select(E.seq, E.id, E.score, E.memory_version, E.status).where(E.seq.in_(seqs)))
    rows = {row.seq: row for row in found.all()}
    summaries = []
    for kernel, digest in digests:
        best = rows.get(digest["best_seq"]) if digest else None
        latest = rows[digest["latest_seq"]] if digest else None
        summaries.append(
            {
                "kernel": kernel,
                "runs": digest["runs"] if digest else 0,
                "failures": digest["failures"] if digest else 0,
                "masked_runs": left_out.get(kernel, 0),
                "best_id": best.id if best else None,
                "best_score": best.score if best else None,
                "best_version": best.memory_version if best else None,
                "latest_id": latest.id if latest else None,
                "latest_score": latest.score if latest else None,
                "latest_version": latest.memory_version if latest else None,
                "latest_status": latest.status if latest else None,
            }
        )
    return summaries


def summary_query() -> Any:
    """The digest of a workspace's kernels with their best and latest experiments (the store
    builds it once: building a SELECT with aliases costs more than running it)."""
    best = experiments.alias("best")
    latest = experiments.alias("latest")
    return (
        select(
            kernel_stats.c.kernel,
            kernel_stats.c.runs,
            kernel_stats.c.failures,
            best.c.id.label("best_id"),
            best.c.score.label("best_score"),
            best.c.memory_version.label("best_version"),
            latest.c.id.label("latest_id"),
            latest.c.score.label("latest_score"),
            latest.c.memory_version.label("latest_version"),
            latest.c.status.label("latest_status"),
        )
        .select_from(
            kernel_stats.outerjoin(best, best.c.seq == kernel_stats.c.best_seq).outerjoin(
                latest, latest.c.seq == kernel_stats.c.latest_seq
            )
        )
        .where(kernel_stats.c.workspace == bindparam("workspace"))
        .order_by(kernel_stats.c.kernel)
    )
