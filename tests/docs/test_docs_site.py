"""The front door and the documentation site (issue #23, item 7): README.md stays short and
holds the two set-up commands and the way onto PATH; the site builds strictly, its generated
reference pages hold every command and setting, and a broken link fails the build."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import REPO_ROOT

MKDOCS = [sys.executable, "-m", "mkdocs"]
README = (REPO_ROOT / "README.md").read_text()


def test_readme_is_a_front_door() -> None:
    assert len(README.splitlines()) <= 200
    assert "scripts/demo.sh" in README and "scripts/test.sh" in README
    assert 'export PATH="$PWD/.venv/bin:$PATH"' in README
    for banned in ("MISSED", "not done yet", "| p50"):
        assert banned not in README, banned


def test_the_exit_statuses_the_readme_and_reference_state_are_what_the_cli_does(cli) -> None:  # type: ignore[no-untyped-def]
    """The same bad value is a usage error to both commands, but `bench` exits 2 for it (its
    own documented contract: `bench --help`, docs/harness.md; scripts tell it apart from a
    gate's 3 and a kernel's own statuses) and `iterate` 1. The README's sentence said `1` for
    every command and left out bench's `4` (a resource cap): both pages name the exception."""
    assert cli("bench", "--mode", "banana").exit_code == 2
    assert cli("iterate", "--mode", "banana", "-a", "x", "-d", "y").exit_code == 1
    reference = (REPO_ROOT / "docs" / "reference" / "cli.md").read_text()
    for page, text in (("README.md", README), ("docs/reference/cli.md", reference)):
        at = text.index("usage error")
        paragraph = " ".join(text[text.rindex("\n\n", 0, at) : text.index("\n\n", at)].split())
        assert re.search(r"`1`( on a)? usage error \(`bench`: `2`", paragraph), (page, paragraph)
        assert re.search(r"`4`[^`]* resource cap", paragraph), (page, paragraph)


def test_every_readme_link_resolves() -> None:
    for target in re.findall(r"\]\(([^)#]+)(?:#[^)]*)?\)", README):
        if "://" not in target:
            assert (REPO_ROOT / target).exists(), target


SOURCE_PATH = re.compile(
    r"\b(?:tests|benchmarks|scripts|daemon|kernels|protocol|editor-clients|examples)/[\w./-]+"
)


def test_every_source_path_the_docs_name_exists() -> None:
    """A reader follows `daemon/lsp/...` or `tests/...` from the docs into the source: each such
    path names a file or folder of the checkout, from the root or from the page's own folder
    (an editor client's README names its own `tests/`); `*` stands for any name."""
    pages = [
        REPO_ROOT / "README.md",
        REPO_ROOT / "SECURITY.md",
        *(REPO_ROOT / "docs").rglob("*.md"),
        *(REPO_ROOT / "editor-clients").glob("*/README.md"),
    ]
    missing = []
    for page in pages:
        for path in set(SOURCE_PATH.findall(page.read_text(encoding="utf-8"))):
            path = path.rstrip(".")
            if not any(list(base.glob(path)) for base in (REPO_ROOT, page.parent)):
                missing.append(f"{page.relative_to(REPO_ROOT)}: {path}")
    assert not missing, missing


def build(config: Path, site: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*MKDOCS, "build", "--strict", "-f", str(config), "--site-dir", str(site)],
        capture_output=True,
        text=True,
        cwd=config.parent,
        env={"NO_MKDOCS_2_WARNING": "1", "PATH": "/usr/bin:/bin"},
        timeout=300,
    )


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Path:
    site = tmp_path_factory.mktemp("site")
    done = build(REPO_ROOT / "mkdocs.yml", site)
    assert done.returncode == 0, done.stderr[-3000:]
    return site


def _text(page: Path) -> str:
    return re.sub(r"<[^>]+>", " ", page.read_text())


def test_cli_reference_holds_every_command_and_option(built: Path) -> None:
    from kernelscope.daemon.cli.main import COMMANDS, resolve_command

    page = _text(built / "reference" / "cli" / "index.html")
    for name in COMMANDS:
        command = resolve_command(name)
        assert f"kernelscope {name}" in page, name
        for param in command.params:
            for opt in param.opts if param.param_type_name == "option" else []:
                assert opt in page, (name, opt)
    assert "kernelscope memory mask-half" in page and "--rep-ms" in page


def test_settings_reference_holds_every_setting(built: Path) -> None:
    from kernelscope.protocol.settings import FOLDER_KEYS, USER_KEYS, camel_key

    page = _text(built / "reference" / "settings" / "index.html")
    for key in USER_KEYS | FOLDER_KEYS:
        assert camel_key(key) in page, key


def test_a_broken_link_fails_the_build(tmp_path: Path) -> None:
    copy = tmp_path / "repo"
    shutil.copytree(REPO_ROOT / "docs", copy / "docs")
    for name in ("mkdocs.yml", "README.md", "SECURITY.md"):
        shutil.copy(REPO_ROOT / name, copy / name)
    for name in ("scripts", "protocol", "kernels", "daemon", "editor-clients"):  # read only
        (copy / name).symlink_to(REPO_ROOT / name)
    assert build(copy / "mkdocs.yml", tmp_path / "ok").returncode == 0
    page = copy / "docs" / "memory.md"
    page.write_text(page.read_text() + "\nSee [the gone page](no-such-page.md).\n")
    failed = build(copy / "mkdocs.yml", tmp_path / "broken")
    assert failed.returncode != 0 and "no-such-page.md" in failed.stderr, failed.stderr[-2000:]
