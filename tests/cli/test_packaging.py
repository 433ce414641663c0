"""The wheel installs into a fresh virtualenv and its three packages import from anywhere."""

from __future__ import annotations

import os
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


def _stub_venv(tmp_path: Path, pip_answers: str) -> tuple[Path, dict[str, str]]:
    """A venv whose python is a stub: `-m pip install` answers as `pip_answers` (a shell case
    body over "$*"), every call logged; `-c` (the import check) succeeds. No GPU on PATH."""
    venv = tmp_path / "venv"
    (venv / "bin").mkdir(parents=True)
    stub = venv / "bin" / "python"
    stub.write_text(
        "#!/usr/bin/env bash\n"
        f'echo "$*" >> {tmp_path}/calls\n'
        'case "$*" in\n'
        '  "-m pip install -q --upgrade pip") exit 0 ;;\n'
        f"{pip_answers}\n"
        "  -c*) exit 0 ;;\n"
        "esac\n"
    )
    stub.chmod(0o755)
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "nvidia-smi").write_text("#!/bin/sh\nexit 1\n")  # a machine without a GPU
    (bin_dir / "nvidia-smi").chmod(0o755)
    env = {
        **os.environ,
        "PATH": f"{bin_dir}:{os.environ['PATH']}",
        "KERNELSCOPE_VENV": str(venv),
        "TORCH_CPU_INDEX": "https://torch-cpu.invalid/whl/cpu",
    }
    env.pop("KERNELSCOPE_TORCH", None)
    return venv, env


NO_CPU_BUILD = {  # pip's words when no index it asked has torch==2.13.0+cpu
    "plain": "ERROR: No matching distribution found for torch==2.13.0+cpu",
    "with a constraint": "Additionally, some packages in these conflicts have no matching distributions "
    "available for your environment:\\n    torch\\n\\nTo fix this you could try to:",
}


@pytest.mark.skipif(sys.platform != "linux", reason="the +cpu build is Linux's")
@pytest.mark.parametrize("words", NO_CPU_BUILD.values(), ids=NO_CPU_BUILD.keys())
def test_without_a_gpu_the_cpu_build_of_torch_comes_from_pytorchs_cpu_index_when_pip_has_none(
    tmp_path: Path, words: str
) -> None:
    """PyPI's torch==2.13.0 for Linux is the CUDA build (~2.7 GB with its nvidia-* wheels): the
    bootstrap asks for the +cpu build, and where pip's indexes lack it (PyPI does), PyTorch's CPU
    index, never before (a machine that cannot reach it is not kept waiting)."""
    venv, env = _stub_venv(
        tmp_path,
        '  *--extra-index-url*) echo "Successfully installed torch-2.13.0+cpu"; exit 0 ;;\n'
        '  "-m pip install"*) printf "%b\\n" "' + words + '"; exit 1 ;;',
    )
    run = subprocess.run(
        ["bash", str(REPO_ROOT / "scripts" / "bootstrap.sh"), "bench"],
        env=env,
        capture_output=True,
        text=True,
    )
    assert run.returncode == 0, run.stderr
    installs = [
        c for c in (tmp_path / "calls").read_text().splitlines() if "pip install" in c and "-q" not in c
    ]
    assert installs[0].startswith("-m pip install torch==2.13.0+cpu -e ")
    assert "--extra-index-url" not in installs[0]
    assert (
        installs[1]
        == "-m pip install --extra-index-url https://torch-cpu.invalid/whl/cpu "
        + installs[0][len("-m pip install ") :]
    )
    assert "taking it from https://torch-cpu.invalid/whl/cpu" in run.stderr
    assert (venv / ".kernelscope-installed").is_file()


@pytest.mark.skipif(sys.platform != "linux", reason="the +cpu build is Linux's")
@pytest.mark.parametrize("missing", ["triton==9", "torchvision==0.99"])
def test_an_install_that_fails_for_another_reason_is_not_retried(tmp_path: Path, missing: str) -> None:
    venv, env = _stub_venv(
        tmp_path,
        f'  "-m pip install"*) echo "ERROR: No matching distribution found for {missing}"; exit 1 ;;',
    )
    run = subprocess.run(
        ["bash", str(REPO_ROOT / "scripts" / "bootstrap.sh"), "bench"],
        env=env,
        capture_output=True,
        text=True,
    )
    assert run.returncode == 1
    assert "pip install failed" in run.stderr and missing in run.stderr
    installs = [
        c for c in (tmp_path / "calls").read_text().splitlines() if "pip install" in c and "-q" not in c
    ]
    assert len(installs) == 1
    assert not (venv / ".kernelscope-installed").exists()
