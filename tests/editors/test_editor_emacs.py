"""The Emacs configurations in a real `emacs --batch` (Debian's emacs-nox 28, elpa-lsp-mode 8,
elpa-eglot 1.9): lsp-mode (code lenses, a command, lens overlays) and eglot (hover carries the
facts); then kernel.py rewritten on disk while open and the buffer reloaded (`revert-buffer` as
M-x runs it, `auto-revert-mode`): still served, lenses (or hover) follow the kernel, an edit +
save re-benchmarks. On a workspace with a git history, in both clients: blame in hover, the values
already tried as inlay hints in the buffer, 'identical to v0' on saving v0's code (no benchmark),
and `kernelscope-compare`. Skipped when Emacs is missing (CI installs it)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import (
    REPO_ROOT,
    VECTOR_ADD_STOP,
    editor_history_session,
    editor_session,
    root_rule_folders,
    unreadable_stop_condition,
    vector_add_history_kernels,
)

pytestmark = pytest.mark.slow
EMACS = shutil.which("emacs")
EMACS_DIR = REPO_ROOT / "editor-clients" / "emacs"


def run_emacs(script: str, tmp_path: Path, session=editor_session, **extra_env: str) -> dict:
    assert EMACS is not None, "CI must install emacs-nox, elpa-lsp-mode and elpa-eglot"
    _, out, env = session(tmp_path, KS_EL=str(EMACS_DIR / "kernelscope.el"), HOME=str(tmp_path), **extra_env)
    proc = subprocess.run(
        [EMACS, "--batch", "-Q", "-l", str(EMACS_DIR / "tests" / script)],
        env=env,
        capture_output=True,
        text=True,
        timeout=420,
    )
    results = json.loads(out.read_text())
    # (the error's own line first: a batch backtrace's tail is the call stack, not the message)
    said = [line[:300] for line in proc.stderr.splitlines() if "error" in line.lower()][:5]
    assert proc.returncode == 0 and "error" not in results, (said, proc.stderr[-2000:], results)
    assert "Unknown notification" not in proc.stderr, proc.stderr[-2000:]
    return results


needs_emacs = pytest.mark.skipif(EMACS is None and not os.environ.get("CI"), reason="emacs is not installed")


@needs_emacs
def test_lsp_mode(tmp_path: Path) -> None:
    results = run_emacs("batch-test.el", tmp_path)
    assert results["initialized"] is True
    assert "best 1.22x v4 | latest 1.22x v4 | 5 runs, 1 failed" in results["lenses"]
    assert any(t.startswith("target bandwidth >= 4.32TB/s") for t in results["lenses"])
    assert results["mask_best"] == "v4"
    assert results["lens_overlays"] >= 2  # lsp-lens-mode drew them
    assert results["kernel_lens_line"] == 7  # above `@triton.jit` of add_kernel
    # the kernel lens clicked shows the history (before: the daemon's answer was dropped)
    shown = results["lens_click"]
    assert shown and shown["read_only"] and "| v4 |" in shown["text"], shown

    # kernel.py rewritten on disk (the kernel moved down), the buffer reloaded, edited, saved
    revert, auto_revert = results["reloads"]
    for reload, line in ((revert, 7 + 3), (auto_revert, 7 + 3 + 2)):
        assert reload["buffer_has_rewrite"] and reload["served"] and reload["still_served"], reload
        assert reload["lens_moved"], (reload["reload"], line, reload["lenses"])
        assert reload["edited"] and reload["probed"], reload  # the save set off a background probe
        probe = [
            item["text"] for item in reload["lenses_after_save"] if item["text"].startswith("last probe:")
        ]
        assert probe and probe[0].startswith(f"last probe: {reload['verdict']}"), (reload["reload"], probe)
        assert "(stale)" not in probe[0].split("|")[0], probe
    assert not revert["passed"]  # that save broke the kernel: the probe ran the saved text


@needs_emacs
def test_eglot_hover(tmp_path: Path) -> None:
    results = run_emacs("eglot-test.el", tmp_path)
    assert results["connected"] is True
    assert results["hover"].startswith("**add_kernel**: 5 experiments")
    assert "| v4 | 1.22x | PASS |" in results["hover"]  # record_rules.format_score: two decimals
    # reverted after a rewrite that moved the kernel down 3 lines: still managed, and the
    # hover is found on the kernel's new line (def add_kernel: line 9 -> 12)
    assert results["managed_after_revert"] is True
    assert results["hover_line_after_revert"] == 12
    assert results["hover_after_revert"].startswith("**add_kernel**: 5 experiments")
    assert results["probed"] is True and not results["probe_passed"]  # the broken save was probed
    # eglot has no lenses: M-x kernelscope-command runs the daemon's commands (before: none could
    # be run from Emacs with eglot) with the buffer's workspace, a JSON object after C-u
    vocabulary = json.loads((REPO_ROOT / "editor-clients" / "commands.json").read_text())
    assert results["command_offered"] == sorted(vocabulary["commands"])
    assert results["mask_dry_run"] == {"dry_run": True, "best": "v4"}, results["mask_dry_run"]
    # mask-half asks first, through eglot's own window/showMessageRequest handler (before: it
    # masked at once): Cancel wrote nothing, Mask masked the version the question named
    cancelled, masked = results["mask_cancel"], results["mask_mask"]
    assert "Mask v" in cancelled["question"] and "Kept: v4 as the best" in cancelled["question"], cancelled
    assert cancelled["declined"] is True and cancelled["masked"] is None, cancelled
    named = masked["question"].split("Mask ")[1].split()[0]
    assert masked["masked"] == [named] and masked["declined"] is None, masked
    records = (tmp_path / "kernel_opt_vector_add" / "memory").glob("v*.json")
    assert [r.stem for r in records if json.loads(r.read_text())["masked"]] == [named]
    history = results["history_buffer"]
    assert history["name"] == "*kernelscope showHistory*" and history["read_only"] is True, history
    assert "| v4 |" in history["text"], history["text"]
    assert "versions" in (results["refused"] or ""), results["refused"]  # the daemon's refusal, said
    assert results["job_message"] == "kernelscope benchmark: done"  # a user's job says how it ended


@needs_emacs
@pytest.mark.parametrize("client", ["lsp-mode", "eglot"])
def test_history_hints_and_compare(tmp_path: Path, client: str) -> None:
    """Neither Debian's lsp-mode 8.0.0 nor eglot 1.9 has inlay hints: kernelscope.el draws them."""
    v0 = tmp_path / "v0_kernel.py"
    v0.write_text(vector_add_history_kernels()["v0"])
    results = run_emacs("hints-test.el", tmp_path, editor_history_session, KS_CLIENT=client, KS_V0=str(v0))
    assert results["served"] is True
    assert results["hover"] and results["hover"].startswith("introduced in v1"), results["hover"]

    # the values already tried, as the buffer shows them at the launch line
    tried = results["tried"]
    assert tried and tried.startswith("tried (latency ratio vs v0): "), results["hints"]
    assert "1024 1.00x v0" in tried and "4096" in tried, tried
    if not results["client_inlay_hints"]:  # drawn by kernelscope.el
        assert results["kernelscope_hints_mode"] is True
        assert results["hint_overlay_category"] == "kernelscope-hint"

    # v0's code saved again: said at once, not benchmarked again
    identical = results[
        "identical"
    ]  # eglot's flymake shows it as "kernelscope [already_tried]: identical ..."
    assert identical and "identical to v0" in identical and "not benchmarked" in identical, results[
        "diagnostics"
    ]
    assert results["tried_after_save"], "the hints were not redrawn after the save"
    assert results["jobs_finished_after_save"] == 0
    if client == "eglot" and not results["client_inlay_hints"]:  # kernelscope.el asked for refreshes
        assert results["inlay_refreshes"] > 0

    assert results["served_after_revert"] and results["tried_after_revert"]  # M-x revert-buffer: redrawn

    assert results["offered_versions"] == ["v0", "v1", "v2", "v3", "v4"]
    assert results["interactive_compare"] == "*kernelscope compare v0..v4*"  # M-x, the defaults taken
    assert results["compare_buffer"] == "*kernelscope compare v0..v4*"
    assert results["compare_read_only"] is True
    text = results["compare_text"]
    assert "## v0 → v4" in text, text[:500]
    assert "-    add_kernel[grid](x, y, out, n_elements, BLOCK_SIZE=1024)" in text, text
    assert "v9" in results["compare_unknown"], results["compare_unknown"]
    assert "not in an optimization workspace" in results["compare_outside"]
    assert "no kernelscope daemon serves" in results["compare_unserved"]


@needs_emacs
def test_finds_a_workspace_the_server_would_serve(tmp_path: Path) -> None:
    """The server's rule, not kernel.py + memory/ alone: a README with a ```kernelscope block
    and no memory/ yet is a workspace; a folder with only kernel.py is not."""
    assert EMACS is not None
    fresh, plain = root_rule_folders(tmp_path)
    form = (
        f'(princ (json-encode (list (kernelscope-root "{fresh}/sub/x.py") '
        f'(kernelscope-root "{plain}/kernel.py"))))'
    )
    proc = subprocess.run(
        [
            EMACS,
            "--batch",
            "-Q",
            "-l",
            str(EMACS_DIR / "kernelscope.el"),
            "--eval",
            "(require 'json)",
            "--eval",
            form,
        ],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "HOME": str(tmp_path / "home")},
    )
    assert json.loads(proc.stdout) == [f"{fresh}/", None], proc.stderr[-2000:]


@needs_emacs
def test_eglot_starts_the_daemon_only_in_a_workspace(tmp_path: Path) -> None:
    """kernelscope.el's eglot entry comes first for python-mode: in an ordinary Python project
    M-x eglot starts the user's own server (before: kernelscope's daemon, for every project).
    The same in Emacs 29's python-ts-mode (a stand-in here: Emacs 28 has none), which does not
    derive from python-mode (before: kernel.py in python-ts-mode got the user's server)."""
    assert EMACS is not None
    fresh, _ = root_rule_folders(tmp_path)
    (tmp_path / "app").mkdir()
    form = (
        "(progn (require 'package) "
        '(add-to-list (quote package-directory-list) "/usr/share/emacs/site-lisp/elpa") '
        "(package-initialize) (require 'eglot) (require 'json) "
        '(define-derived-mode python-ts-mode prog-mode "Python") '  # Emacs 29's, not a python-mode
        '(add-to-list (quote eglot-server-programs) (quote ((python-mode python-ts-mode) . ("my-pylsp")))) '
        f'(load "{EMACS_DIR / "kernelscope.el"}") '
        "(princ (json-encode (mapcar (lambda (mode) (vconcat (mapcar (lambda (file) (find-file file) (funcall mode) "
        "(let ((guess (eglot--guess-contact))) (vector (symbol-name (nth 2 guess)) (car (nth 3 guess))))) "
        f'(list "{tmp_path}/app/app.py" "{fresh}/kernel.py")))) (list (quote python-mode) (quote python-ts-mode))))))'
    )
    proc = subprocess.run(
        [EMACS, "--batch", "-Q", "--eval", form],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "HOME": str(tmp_path / "home")},
    )
    assert json.loads(proc.stdout) == 2 * [
        [["eglot-lsp-server", "my-pylsp"], ["kernelscope-eglot-server", "kernelscope"]],
    ], (
        proc.stdout,
        proc.stderr[-2000:],
    )


@needs_emacs
def test_installed_alone_reads_the_rule_from_its_daemon_command(tmp_path: Path) -> None:
    """kernelscope.el copied outside the checkout (no ../commands.json) with the daemon run as
    `python -m kernelscope.daemon.lsp`: the rule comes from the CLI module beside it (before:
    `<python> schema --commands` failed silently and no buffer was ever served); a command that
    cannot give the rule is said in a message."""
    assert EMACS is not None
    fresh, _ = root_rule_folders(tmp_path)
    alone = tmp_path / "site-lisp" / "kernelscope"
    alone.mkdir(parents=True)
    shutil.copy(EMACS_DIR / "kernelscope.el", alone / "kernelscope.el")
    found = {}
    for name, cmd in (
        ("module", [sys.executable, "-m", "kernelscope.daemon.lsp"]),
        ("broken", [str(tmp_path / "no-such-kernelscope"), "serve"]),
    ):
        command = " ".join(json.dumps(word) for word in cmd)
        proc = subprocess.run(
            [
                EMACS,
                "--batch",
                "-Q",
                "-l",
                str(alone / "kernelscope.el"),
                "--eval",
                f"(setq kernelscope-command (list {command}))",
                "--eval",
                f'(princ (or (kernelscope-root "{fresh}/sub/x.py") "none"))',
            ],
            capture_output=True,
            text=True,
            timeout=60,
            env={**os.environ, "HOME": str(tmp_path / "home")},
        )
        found[name] = (proc.stdout, proc.stderr[-2000:])
    assert found["module"][0] == f"{fresh}/", found
    assert found["broken"][0] == "none", found
    assert "cannot read the daemon workspace rule" in found["broken"][1], found


@needs_emacs
def test_the_default_options_keep_the_trust_of_the_users_config_file(
    tmp_path: Path, users_own_files: Path
) -> None:
    """The README says trust lives in ~/.config/kernelscope/config.toml, where every editor and
    agent reads it. kernelscope.el's default initialization options sent `:trusted :json-false`,
    which replaces the file's list: in Emacs no workspace the file trusted was re-benchmarked,
    and the notice's advice (add it to the file) did nothing. The default, as Emacs encodes it,
    now leaves the file's trust in force."""
    from kernelscope.daemon.lsp.configuration import apply_initialization_options
    from kernelscope.daemon.lsp.state import ServerState
    from kernelscope.protocol.settings import trusts

    assert EMACS is not None, "CI must install emacs-nox"
    encoded = subprocess.run(
        [EMACS, "--batch", "-Q", "-l", str(EMACS_DIR / "kernelscope.el"), "--eval",
         "(progn (require 'json) (princ (json-encode kernelscope-initialization-options)))"],
        capture_output=True, text=True, timeout=60, env={**os.environ, "HOME": str(tmp_path)},
    )  # fmt: skip
    assert encoded.returncode == 0, encoded.stderr[-2000:]
    ws = tmp_path / "kernel_opt_mine"
    users_own_files.write_text(f'trusted = ["{tmp_path}/kernel_opt_*"]\n')
    state, warnings = ServerState(), []
    apply_initialization_options(state, json.loads(encoded.stdout or "null"), warnings.append)
    assert trusts(state.user.trusted, ws), (encoded.stdout, state.user.trusted, warnings)
    assert state.trust_source == "config file"


@needs_emacs
@pytest.mark.parametrize("mode", ["markdown-mode", "fundamental-mode"])
@pytest.mark.parametrize("client", ["lsp-mode", "eglot"])
def test_readme_warnings(tmp_path: Path, client: str, mode: str) -> None:
    """A workspace's README.md is served, in markdown-mode or (no markdown-mode installed) in
    fundamental-mode (before: lsp-mode's client activated for `.py` files only and eglot had no
    entry, so the daemon's README warnings reached no Emacs user): a stop condition written
    `4,32TB/s` is a warning on its line; kernel.py opened next is served by the same daemon;
    fixed in the buffer the warning goes, saved it stays gone, reverted it is still served
    (before: lsp-mode lost a fundamental-mode README on M-x revert-buffer). With eglot the user's own
    markdown server is still the guess for any other markdown file, in the workspace or not,
    and no other markdown buffer joins the daemon."""

    def broken(session_tmp: Path, **extra_env: str) -> tuple[Path, Path, dict[str, str]]:
        ws, out, env = editor_session(session_tmp, **extra_env)
        readme = ws / "README.md"
        unreadable_stop_condition(readme)
        (ws / "plans").mkdir()
        (ws / "plans" / "notes.md").write_text("# notes\n")
        (session_tmp / "notes").mkdir()
        (session_tmp / "notes" / "README.md").write_text(readme.read_text())
        return ws, out, {**env, "KS_PLAIN_README": str(session_tmp / "notes" / "README.md")}

    line = (
        (REPO_ROOT / "examples" / "vector_add" / "README.md").read_text().splitlines().index(VECTOR_ADD_STOP)
    )
    results = run_emacs("readme-test.el", tmp_path, broken, KS_CLIENT=client, KS_README_MODE=mode)
    ws = tmp_path / "kernel_opt_vector_add"
    assert results["mode"] == mode and results["served"] is True, results
    if client == "eglot":
        assert results["guess"] == ["kernelscope-eglot-server", sys.executable], results  # KS_CMD
    assert results["shown"] and results["warning"]["line"] == line, results
    assert results["readme_hints_mode"] is None, results  # kernel.py's hints only
    assert results["kernel_served"] and results["same_server"], results
    if client == "eglot":
        for other in ("notes", "plain"):
            assert results[other] == {"guess": ["eglot-lsp-server", "my-marksman"], "managed": None}, results
    assert results["cleared"] and results["published_after_save"], results
    assert results["after_save"] == [] and results["still_served"], results
    # M-x revert-buffer runs the mode again (before: lsp-mode lost a fundamental-mode README)
    assert results["mode_after_revert"] == mode and results["served_after_revert"], results
    assert VECTOR_ADD_STOP in (ws / "README.md").read_text()  # the save wrote the fixed line


def git_workspace_with_notes(session_tmp: Path, **extra_env: str) -> tuple[Path, Path, dict[str, str]]:
    """The vector-add workspace as one eglot project (a git repository) with plans/notes.md."""
    ws, out, env = editor_session(session_tmp, **extra_env)
    (ws / "plans").mkdir()
    (ws / "plans" / "notes.md").write_text("# notes\n")
    subprocess.run(["git", "init", "-q", str(ws)], check=True)
    return ws, out, env


@needs_emacs
@pytest.mark.parametrize("scenario", ["daemon-first", "readme-starts", "ensure", "churn"])
def test_eglot_readme_beside_the_users_markdown_server(tmp_path: Path, scenario: str) -> None:
    """eglot, your own markdown server ("my-marksman") serving the workspace's markdown files.
    daemon-first: M-x eglot in the README while kernel.py's daemon runs (as the README docs say)
    started a second daemon (every save benchmarked twice) and offered to shut my-marksman down
    for the project; the README now joins the running daemon, my-marksman keeps notes.md.
    readme-starts: M-x eglot in the README starts the daemon, the README moves to it.
    ensure: eglot-ensure on markdown-mode-hook started the daemon from the README (which then
    took python-mode for the whole project from your Python server); it only joins a running one.
    churn: the README opened with the daemon running was sent didOpen twice (normal-mode's
    passing fundamental-mode step, then markdown-mode), no didClose between."""
    results = run_emacs("readme-eglot-test.el", tmp_path, git_workspace_with_notes, KS_SCEN=scenario)
    assert "asked" not in results, results  # eglot's own question never comes
    if scenario in ("daemon-first", "readme-starts"):
        assert results["readme_before"] == "my-marksman", results
        assert results["readme"] == "kernelscope" and results["kernel"] == "kernelscope", results
        assert results["same_server"] is True and results["daemons"] == 1, results
        assert results["notes"] == "my-marksman" and results["marksman_live"] == 1, results
        assert results["sent"] == ["my-marksman didClose", "kernelscope didOpen"], results
    elif scenario == "ensure":
        assert results["readme_first"] == "my-marksman" and results["daemons_first"] == 0, results
        assert results["kernel"] == "kernelscope" and results["notes"] == "my-marksman", results
        assert results["readme"] == "kernelscope" and results["same_server"] is True, results
        assert results["daemons"] == 1, results
    else:
        assert results["mode"] == "markdown-mode" and results["mode_then"] == "fundamental-mode", results
        assert results["readme_markdown"] == "kernelscope" and results["readme"] == "kernelscope", results
        assert results["sent"] == ["kernelscope didOpen", "kernelscope didClose", "kernelscope didOpen"], (
            results
        )
        assert results["daemons"] == 1, results
