"""One experiment store per user: finding a workspace's experiments that live in another store
and bringing them into the one in use.

`kernelscope iterate` writes the URL of the store it recorded in into each memory record
(`kernelscope.store`); demos before the one-store rule wrote a store beside the workspace
(`<folder>/experiments.sqlite`). A workspace whose experiments are elsewhere says so (lens,
`kernelscope workspace`), and `kernelscope workspace` imports them: nothing is dropped, and
nothing in the workspace is written (only the user's store).
"""

from __future__ import annotations

from pathlib import Path

from kernelscope.daemon.engine.store.config import normalize_url, public_url
from kernelscope.daemon.engine.store.errors import StoreError
from kernelscope.daemon.engine.store.store import ExperimentStore

LEGACY_DEMO_STORE = "experiments.sqlite"


def recorded_stores(root: Path, records: list[dict[str, object]]) -> list[str]:
    """Store URLs the workspace's records name, and a legacy demo store beside it."""
    found: list[str] = []
    for raw in records:
        block = raw.get("kernelscope")
        url = block.get("store") if isinstance(block, dict) else None
        if isinstance(url, str) and url and url not in found:
            found.append(url)
    legacy = root.parent / LEGACY_DEMO_STORE
    if legacy.is_file():
        url = normalize_url(str(legacy))
        if url not in found:
            found.append(url)
    return found


def elsewhere(root: Path, records: list[dict[str, object]], current: ExperimentStore) -> dict[str, int]:
    """Other stores holding experiments of this workspace that the current store lacks:
    URL -> how many."""
    counts: dict[str, int] = {}
    have = {e.id for e in current.list_experiments(workspace=str(root))}
    for url in recorded_stores(root, records):
        try:
            if public_url(url) == public_url(current.url) or "***" in url:
                continue  # the store in use, or one whose password was (rightly) not recorded
            # Read-only, and only if it exists: a URL in a record may name a teammate's home or
            # a file inside the workspace, and showing a workspace creates nothing.
            other = ExperimentStore(url, read_only=True)
            missing = [e for e in other.list_experiments(workspace=str(root)) if e.id not in have]
        except (StoreError, OSError):
            continue  # gone, unreachable, or not a store: nothing to bring
        if missing:
            counts[url] = len(missing)
    return counts


def adopt(root: Path, records: list[dict[str, object]], current: ExperimentStore) -> dict[str, int]:
    """Import into `current` every experiment of this workspace found in another store:
    URL -> how many were imported."""
    imported: dict[str, int] = {}
    for url in elsewhere(root, records, current):
        found = ExperimentStore(url, read_only=True).list_experiments(workspace=str(root))
        imported[url] = current.import_experiments(found)["inserted"]
    return imported
