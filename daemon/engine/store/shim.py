"""`kernelscope exp shim DIR`: a drop-in `kernel_exp_dataclass.py` that forwards to kernelscope.

An existing skill that does `from kernel_exp_dataclass import create_experiment, ...` keeps
working unchanged, but its records go to the kernelscope store (concurrency-safe, indexed)
instead of a JSON file. The shim remembers where kernelscope is installed so it also works
from an interpreter that lacks it on its path.
"""

from __future__ import annotations

import site
from pathlib import Path

import kernelscope.daemon

SHIM_NAME = "kernel_exp_dataclass.py"

_TEMPLATE = '''"""kernel_exp_dataclass shim written by `kernelscope exp shim`.

Same API as the original kernel-exp-history helper (KernelExperiment, create_experiment,
get_experiment, list_experiments, top_experiments, update_experiment, delete_experiment);
records are stored in the kernelscope experiment database{db_note}.
top_experiments takes `kernelscope exp top`'s options (include_buggy, include_masked,
include_interpreter) and says what it left out in a LeftOutWarning (printed to stderr once).
"""

try:
    import kernelscope.daemon.expdb as _expdb
except ImportError:  # kernelscope lives in another environment: add it, with its .pth files
    import site as _site

    for _path in {site_dirs!r}:
        _site.addsitedir(_path)
    import kernelscope.daemon.expdb as _expdb

{db_line}
from kernelscope.daemon.expdb import (  # noqa: E402,F401
    KernelExperiment,
    LeftOutWarning,
    create_experiment,
    delete_experiment,
    get_experiment,
    list_experiments,
    top_experiments,
    update_experiment,
)

DB_PATH = None  # kept for scripts that read it; the database is kernelscope's
'''


def _site_dirs() -> list[str]:
    """Directories that make `kernelscope` importable: this interpreter's site-packages
    (which hold the editable-install hook, if any) and the installed package's parent."""
    dirs = {p for p in site.getsitepackages() if Path(p).is_dir()}
    installed_parent = Path(kernelscope.daemon.__file__).resolve().parents[2]
    if installed_parent.name in ("site-packages", "dist-packages"):
        dirs.add(str(installed_parent))
    return sorted(dirs)


def write_shim(directory: Path, db_url: str | None = None) -> Path:
    """Write the shim into `directory` (created if needed) and return its path."""
    from kernelscope.daemon.engine.memory.atomic_io import atomic_write_text

    directory.mkdir(parents=True, exist_ok=True)
    db_line = f"_expdb.use_database({db_url!r})" if db_url else ""
    db_note = f" at {db_url}" if db_url else " chosen by KERNELSCOPE_DB_URL or the kernelscope config"
    target = directory / SHIM_NAME
    atomic_write_text(target, _TEMPLATE.format(site_dirs=_site_dirs(), db_line=db_line, db_note=db_note))
    return target
