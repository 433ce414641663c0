"""Helix for the editor tests, from Debian's archive into REPO/.cache/helix-<suite>/ once.

Debian ships Helix as `hx` (trixie: 25.01.1; sid: 25.07.1 in December 2026, and whatever
Helix sid ships later: the test reads the version and runs the checks that version supports,
so an upload to sid is tested, not a failure), built against glibc 2.39 or later,
newer than bookworm's (2.36, this machine's and CI's). It runs here under the loader of its own
suite's libc6, with that suite's libc6 and libgcc-s1 extracted beside it: the argv this returns
starts the loader on hx with their library path (the processes hx starts, the language server
among them, run with the system's loader and libraries). Filenames and SHA-256 sums come from
the suite's Packages.xz (deb.debian.org keeps only each suite's current packages: a pinned
older version would vanish from it)."""

from __future__ import annotations

import hashlib
import lzma
import platform
import shutil
import subprocess
import urllib.request
from pathlib import Path

from tests.conftest import REPO_ROOT, missing_tool

MIRROR = "https://deb.debian.org/debian"
SUITES = ("trixie", "sid")  # a stable release's Helix (25.01.1) and the newest Debian ships
PACKAGES = ("hx", "libc6", "libgcc-s1")
LIBS = "usr/lib/x86_64-linux-gnu"


def _download(url: str) -> bytes:
    with urllib.request.urlopen(url, timeout=300) as answer:
        data: bytes = answer.read()
    return data


def _entries(suite: str) -> dict[str, dict[str, str]]:
    """The suite's Packages entries of PACKAGES, by package name."""
    text = lzma.decompress(_download(f"{MIRROR}/dists/{suite}/main/binary-amd64/Packages.xz")).decode()
    found: dict[str, dict[str, str]] = {}
    for stanza in text.split("\n\n"):
        fields = dict(
            line.split(": ", 1) for line in stanza.splitlines() if ": " in line and not line.startswith(" ")
        )
        if fields.get("Package") in PACKAGES:
            found[fields["Package"]] = fields
    missing = set(PACKAGES) - set(found)
    assert not missing, f"Debian {suite} lists no {', '.join(sorted(missing))}"
    return found


def _install(suite: str, target: Path) -> None:
    entries = _entries(suite)
    partial = target.with_name(target.name + ".partial")
    shutil.rmtree(partial, ignore_errors=True)
    partial.mkdir(parents=True)
    for name in PACKAGES:
        entry = entries[name]
        deb = _download(f"{MIRROR}/{entry['Filename']}")
        digest = hashlib.sha256(deb).hexdigest()
        assert digest == entry["SHA256"], (
            f"{entry['Filename']}: sha256 {digest}, Packages says {entry['SHA256']}"
        )
        path = partial / Path(entry["Filename"]).name
        path.write_bytes(deb)
        subprocess.run(["dpkg-deb", "-x", str(path), str(partial)], check=True, timeout=300)
        path.unlink()
    shutil.rmtree(target, ignore_errors=True)
    partial.rename(target)


def helix(suite: str) -> tuple[list[str], tuple[int, ...]]:
    """The argv prefix that runs the Helix of Debian `suite` (one of SUITES), fetched on first
    use, and its version; HELIX_RUNTIME set to the package's runtime (hx run by the loader
    cannot find it itself)."""
    if platform.machine() != "x86_64" or shutil.which("dpkg-deb") is None:
        missing_tool("dpkg-deb on x86_64 (Helix comes from Debian's amd64 archive)", "a Debian amd64 machine")
    root = REPO_ROOT / ".cache" / f"helix-{suite}"
    if not (root / "usr" / "bin" / "hx").exists():
        _install(suite, root)
    argv = [
        "env",
        f"HELIX_RUNTIME={root / 'usr' / 'lib' / 'hx' / 'runtime'}",
        str(root / LIBS / "ld-linux-x86-64.so.2"),
        "--library-path",
        str(root / LIBS),
        str(root / "usr" / "bin" / "hx"),
    ]
    shown = subprocess.run([*argv, "--version"], capture_output=True, text=True, timeout=60)
    said = shown.stdout.split()
    assert len(said) >= 2 and said[0] == "helix", (shown.stdout, shown.stderr)
    return argv, tuple(int(part) for part in said[1].split(".") if part.isdigit())
