"""The wheel installs into a fresh virtualenv and its three packages import from anywhere."""

from __future__ import annotations

import subprocess
import sys
import sysconfig
import zipfile
from pathlib import Path

import pytest

from tests.conftest import REPO_ROOT

REPO_ROOT = REPO_ROOT


@pytest.mark.slow
def test_wheel_installs_into_fresh_venv_and_imports(tmp_path: Path) -> None:
    dist = tmp_path / "dist"
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--no-deps",
            "--no-build-isolation",
            "-q",
            "-w",
            str(dist),
            str(REPO_ROOT),
        ],
        check=True,
        timeout=300,
    )
    (wheel,) = dist.glob("kernelscope-*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    for package in ("daemon", "protocol", "kernels"):
        assert f"kernelscope/{package}/__init__.py" in names
    assert "kernelscope/daemon/engine/memory/records.py" in names
    assert not any(name.startswith(("daemon/", "protocol/", "kernels/")) for name in names)

    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=300)
    python = venv / "bin" / "python"
    subprocess.run(
        [str(python), "-m", "pip", "install", "-q", "--no-deps", str(wheel)], check=True, timeout=300
    )
    # Dependencies come from this environment's site-packages (a .pth entry adds the
    # directory without running its .pth files, so the editable install stays invisible).
    venv_site = Path(
        subprocess.run(
            [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
            check=True,
            capture_output=True,
            text=True,
        ).stdout.strip()
    )
    (venv_site / "_test_deps.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")

    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    probe = (
        "import kernelscope.daemon, kernelscope.protocol, kernelscope.kernels, sys\n"
        "import kernelscope.daemon.engine.memory.records, kernelscope.daemon.cli.main\n"
        "for m in (kernelscope.daemon, kernelscope.protocol, kernelscope.kernels):\n"
        "    assert m.__file__.startswith(sys.prefix), m.__file__\n"
        "assert 'torch' not in sys.modules and 'triton' not in sys.modules\n"
        "print('ok')\n"
    )
    result = subprocess.run(
        [str(python), "-c", probe], cwd=elsewhere, capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "ok"
    script = subprocess.run(
        [str(venv / "bin" / "kernelscope"), "memory", "--help"],
        cwd=elsewhere,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert script.returncode == 0, script.stderr
    assert "mask-half" in script.stdout


def test_every_subpackage_is_listed_in_pyproject() -> None:
    """A package folder missing from [tool.setuptools] packages is missing from the wheel (it
    happened: daemon.engine.formats); every folder with an __init__.py must be listed."""
    import tomllib

    config = tomllib.loads((REPO_ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    roots = {folder: name for name, folder in config["package-dir"].items()}
    found = set()
    for folder, name in roots.items():
        for init in (REPO_ROOT / folder).rglob("__init__.py"):
            relative = init.parent.relative_to(REPO_ROOT / folder)
            found.add(".".join([name, *relative.parts]))
    assert found <= set(config["packages"]), sorted(found - set(config["packages"]))
