"""Finds the pieces of an optimization workspace and summarises it, without importing
kernel.py: README.md (targets), kernel.py (kernels, by ast), memory/ (iterations) and the
git repository the workspace lives in."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from kernelscope.daemon.engine.memory.core import MEMORY_DIR
from kernelscope.daemon.engine.memory.git_place import find_repository
from kernelscope.daemon.engine.memory.records import MemoryManager
from kernelscope.daemon.engine.workspace.discovery import is_optimization_workspace
from kernelscope.daemon.engine.workspace.kernel_scan import scan_kernel_file
from kernelscope.daemon.engine.workspace.readme import parse_readme_file
from kernelscope.protocol.vocabulary import KERNEL_FILE, WORKSPACE_README
from kernelscope.protocol.workspace import (
    KernelScan,
    ReadmeInfo,
    VersionSummary,
    WorkspaceProfile,
    WorkspaceSummary,
)

README_NAME = WORKSPACE_README
KERNEL_NAME = KERNEL_FILE


@dataclass
class Workspace:
    """One optimization workspace rooted at a directory."""

    root: Path

    def __post_init__(self) -> None:
        self.root = Path(self.root).expanduser().resolve()

    @property
    def readme_path(self) -> Path:
        return self.root / README_NAME

    @property
    def kernel_path(self) -> Path:
        return self.root / KERNEL_NAME

    @property
    def memory_dir(self) -> Path:
        return self.root / MEMORY_DIR

    @property
    def memory(self) -> MemoryManager:
        return MemoryManager(self.root)

    @property
    def git_root(self) -> Path | None:
        """The top of the repository holding the workspace (memory/git_place.py), or None."""
        repository = find_repository(self.root)
        return repository.toplevel if repository else None

    def is_optimization_workspace(self) -> bool:
        return is_optimization_workspace(self.root)

    def readme(self) -> ReadmeInfo:
        return parse_readme_file(self.readme_path)

    def kernels(self) -> KernelScan:
        return scan_kernel_file(self.kernel_path)

    def version_summaries(self, readme: ReadmeInfo | None = None) -> list[VersionSummary]:
        """Every version's row with the one score the lenses show: scored on the README's
        primary metric where a record has no latency (a bandwidth or TFLOP/s target)."""
        if readme is None and self.readme_path.is_file():
            readme = self.readme()
        return self.memory.summaries(readme.primary_kind if readme else None)

    def profile(self, readme: ReadmeInfo | None = None) -> WorkspaceProfile:
        """Its kind, targets from wherever they are stated, and who drives it."""
        from kernelscope.daemon.engine.workspace.kinds import profile

        if readme is None and self.readme_path.is_file():
            readme = self.readme()
        return profile(self.root, readme)

    def summary(self) -> WorkspaceSummary:
        """Everything at a glance; missing pieces become warnings, never exceptions."""
        warnings: list[str] = []
        if not self.root.is_dir():
            warnings.append(f"workspace {self.root} does not exist")
        # (one that is there but no regular file, a pipe or /dev/stdin, is read as unreadable: its
        # error names what it is, workspace_files.py)
        readme = self.readme() if os.path.lexists(self.readme_path) else None
        if readme is None:
            warnings.append(f"no {README_NAME} in {self.root}: targets and stop conditions unknown")
        else:
            warnings.extend(readme.warnings)
            warnings.extend(readme.errors)
        kernels = self.kernels() if self.kernel_path.is_file() else None
        if kernels is None:
            warnings.append(f"no {KERNEL_NAME} in {self.root}")
        elif kernels.error:
            warnings.append(f"{KERNEL_NAME}: {kernels.error.message}")
        versions = self.version_summaries(readme)
        warnings.extend(v.error for v in versions if v.error)
        git_root = self.git_root
        profile = self.profile(readme)
        if profile.supervisor is not None:
            warnings.append(
                f"driven by the {profile.supervisor.name} ({', '.join(profile.supervisor.evidence)}): "
                "kernelscope observes it; iterate, mask-half and restart refuse without --force"
            )
        return WorkspaceSummary(
            root=str(self.root),
            kind=profile.kind,
            profile=profile,
            readme_path=str(self.readme_path) if readme else None,
            kernel_path=str(self.kernel_path) if kernels else None,
            memory_dir=str(self.memory_dir) if self.memory_dir.is_dir() else None,
            git_root=str(git_root) if git_root else None,
            readme=readme,
            kernels=kernels,
            versions=versions,
            next_version=self.memory.next_version(),
            masked_count=sum(1 for v in versions if v.masked),
            unreadable_count=sum(1 for v in versions if v.error is not None),
            warnings=warnings,
        )
