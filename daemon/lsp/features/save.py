"""kernel.py changed (loop): a buffer opened (didOpen: an agent's first edit arrives this way)
or edited (didChange, debounced), saved (didSave), closed (didClose: the file is checked again),
or the file rewritten on disk by an agent or git (the watcher). Every text is checked against
every recorded version on a pool (no GPU time, no workspace code: it runs in untrusted
workspaces too) and the check's notices published in two steps:
the history's verdict at once, the static rules' findings when the text rests (a text they
will not read, too large or not parsing: its one notice, with the verdict); a saved text
identical to a recorded version is not benchmarked again, nor one that does not parse;
any other saved text is re-benchmarked, debounced, when the workspace is trusted (lsp/jobs.py, engine:
workflows/probe.py), and an untrusted workspace says once that it is not.

One save is reported twice (didSave, and the watcher seeing the file change), the second up to
seconds later on a loaded machine: a text already handled whose check or probe is still under
way, whose numbers are on screen, or whose handling ended with no probe to come (untrusted, does
not parse), is not handled or published again (a second probe would cancel the first and mark
its fresh numbers stale; an agent receives every publication since its edit).
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
from pathlib import Path
from typing import TYPE_CHECKING

from lsprotocol import types

from kernelscope.daemon.lsp import notify
from kernelscope.daemon.lsp.state import WorkspaceState
from kernelscope.protocol import workspace_files
from kernelscope.protocol.text_positions import python_text

if TYPE_CHECKING:
    from kernelscope.daemon.engine.views.diagnostics import Notice
    from kernelscope.daemon.engine.workspace.cache import WorkspaceCache
    from kernelscope.daemon.lsp.language_server import KernelscopeServer

log = logging.getLogger("kernelscope.lsp")
STATIC_REST_S = 0.05  # the static rules wait this long after a verdict (a newer text skips them)
# A record's verdict waits this long: an iteration's writes (memory file, store row, commit)
# make one check, and the lens request the record's refresh brings is answered first
# (benchmarks/refresh_bench.py --opened).
RECORD_REST_S = 0.25


def history_check(cache: WorkspaceCache, text: str) -> tuple[tuple[Notice, ...], bool]:
    """(pool) A text against every recorded version: its notices, and whether an identical
    recorded version makes the background benchmark unnecessary."""
    from kernelscope.daemon.engine.views.diagnostics import text_notices

    try:
        notices, identical = text_notices(cache.history(), text)
    except Exception:  # the check is best effort: a broken history never blocks a save
        log.exception("fingerprint check failed for %s", cache.root)
        return (), False
    return tuple(notices), identical


def verdict_check(cache: WorkspaceCache, text: str) -> tuple[tuple[Notice, ...], bool, Notice | None]:
    """(pool) history_check, and the one notice of a text the static rules will not read (too
    large, does not parse; None: they will): published with the verdict, so such a text's check
    publishes once, its final set, rather than an empty verdict first and the notice after."""
    from kernelscope.daemon.engine.views.diagnostics import unread_notice

    notices, identical = history_check(cache, text)
    try:
        unread = unread_notice(text)
    except Exception:  # best effort: the static step says it then
        log.exception("parse check failed for %s", cache.root)
        unread = None
    return notices, identical, unread


def static_check(cache: WorkspaceCache, text: str) -> tuple[Notice, ...]:
    """(pool) The static rules (KernelBench's and kernelscope's) on a text, each on its line."""
    from kernelscope.daemon.engine.views.diagnostics import static_notices

    try:
        framework, undeclared = cache.framework() is not None, cache.undeclared_triton(text)
        return tuple(static_notices(text, cache.kind(), framework=framework, undeclared=undeclared))
    except Exception:  # best effort, as the history's check
        log.exception("static check failed for %s", cache.root)
        return ()


def saved_text(ws: WorkspaceState) -> str:
    """kernel.py's text as it is on disk, line endings kept: an editor's didSave sends the
    buffer's text, CRLF for a CRLF file, and a copy read with universal newlines would be
    another text (a second check, an empty publication and, trusted, a second probe at every
    save). Without a leading byte order mark, as Python reads it (python_text): editors drop
    the mark of a UTF-8 file from the buffer (VS Code keeps it as the file's encoding) while
    the file's bytes hold it, and one save would be two texts (a second check and, trusted, a
    second probe). The one read of the file the save flow compares with the buffer's (which
    `check` and `kernel_changed` take as Python reads it too); OSError when it cannot be read
    (a named pipe or a device too: protocol/workspace_files.py)."""
    return python_text(workspace_files.read_bytes(ws.kernel_path).decode("utf-8", errors="replace"))


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", errors="replace")).hexdigest()


async def check(ls: KernelscopeServer, ws: WorkspaceState, text: str, publish: bool = True) -> bool | None:
    """Check `text` (once per text) and publish what the check says (publish=False: the
    caller publishes it with what it does next); None when a newer text arrived meanwhile
    (its check decides), else whether it is a recorded version's code.

    Two steps, each published when it is known: the history's verdict first (what this save
    is: a recorded version, near one, new code; it decides whether a probe runs), then the
    static rules' findings, which take as long again on a large file and decide nothing here.
    """
    text = python_text(text)  # (a buffer's: saved_text)
    digest = _digest(text)
    ws.text_arrived(text)  # (another text's notices are not published with this one's)
    if ws.checked != digest:
        again = text == ws.checked_text  # the history changed (history_changed): the lint still holds
        while True:
            ws.checked, ws.checked_text, ws.checked_notices = digest, text, None
            if not again:
                ws.checked_static = ()
            notices, identical, unread = await ls.off_loop(verdict_check, ws.cache, text)
            if ws.checked_text != text:
                return None  # a newer text's check started: it decides
            if ws.checked is not None:
                break
            # memory/ or the store changed while it ran (history_changed): the verdict is of
            # the history before; the same text is checked again, not dropped
        ws.checked_notices, ws.checked_identical = notices, identical
        ws.checked_extra = ()
        if not ws.settings.runs_on_save and ws.settings.bench_on_save and not ws.untrusted_said:
            from kernelscope.daemon.engine.views.diagnostics import untrusted_notice
            from kernelscope.protocol.settings import distrust

            # said once per session, as a diagnostic (the lens keeps saying it): by every
            # check until a publication carries it (WorkspaceState.notices_published)
            why = distrust(ls.state.user, ws.root, ls.state.trust_source)
            ws.checked_extra = (untrusted_notice(str(ws.root), why),) if why else ()
        if not again and unread is not None:
            ws.checked_static = (unread,)  # the rules will not read it: nothing to wait for
        elif not again:
            ls.jobs.spawn(_check_static(ls, ws, text))
    elif ws.untrusted_said:
        ws.checked_extra = ()  # a second report of the text: the one-time notice is not repeated
    while ws.checked_notices is None:  # the same text's check is under way (a second report)
        await asyncio.sleep(0.01)
        if ws.checked_text != text:  # (checked None: that check runs again, above)
            return None
    codes = ", ".join(n.code for n in ws.checked_notices)
    log.info("kernelscope check of %s: %s", ws.root.name, codes or "new code")
    if not _settle(ws, text):
        return None  # a newer text arrived (a save, the watcher) before this check ended: its check decides
    if publish:
        notify.workspace_changed(ls, ws)
    return ws.checked_identical


async def _check_static(ls: KernelscopeServer, ws: WorkspaceState, text: str) -> None:
    """The static rules on the text whose history verdict is out, once it rests
    (STATIC_REST_S): of a burst of saves (a checkout, an agent writing in steps, saves
    in a row) only the last text is linted, and no save's verdict waits behind the lint of
    the one before; published with the verdict. The text's verdict made again meanwhile (a
    record: `history_changed`) keeps them and publishes them with its own."""
    await asyncio.sleep(STATIC_REST_S)
    if ws.checked_text != text:
        return  # a newer text arrived: its check lints it
    static = await ls.off_loop(static_check, ws.cache, text)
    if ws.checked_text != text:
        return  # a newer text's check owns the diagnostics now
    ws.checked_static = static
    # (no notices: the verdict's publication said everything; not settled: a newer text arrived)
    if static and ws.checked_notices is not None and _settle(ws, text):
        notify.workspace_changed(ls, ws)


def history_changed(ls: KernelscopeServer, ws: WorkspaceState) -> None:
    """(loop) memory/ or the store changed: a record an agent wrote from its shell, a
    command's, an iteration's. The text last checked gets its verdict again once the writes
    rest (RECORD_REST_S: a burst of records is one check), not at its next edit: the text an
    agent just recorded is that recorded version, no longer "new code ... record it" (which
    asks for a second record, one version with two scores). A check under way runs again by
    itself (`check`); the static rules read no history and are not run again."""
    under_way = ws.checked is not None and ws.checked_notices is None
    ws.checked = None
    if ws.checked_text is not None and not under_way:
        ls.jobs.spawn(_verdict_again(ls, ws, ws.checked_text))


async def _verdict_again(ls: KernelscopeServer, ws: WorkspaceState, text: str) -> None:
    await asyncio.sleep(RECORD_REST_S)
    if ws.checked is not None or ws.checked_text != text or ws.arrived != text:
        return  # checked since (a record of the same burst), or a newer text's check is (or is to come)
    was_identical = ws.checked_identical
    identical = await check(ls, ws, text, publish=False)
    if identical is None:
        return  # a newer text arrived meanwhile: its check publishes
    if identical and not was_identical and _digest(text) == ws.kernel_digest:
        _recorded(ls, ws)  # the saved text has just become a recorded version
    notify.workspace_changed(ls, ws)


def _recorded(ls: KernelscopeServer, ws: WorkspaceState) -> None:
    """The saved text is a recorded version's: its background probe measures nothing new
    (cancelled; a benchmark the user asked for runs on) and the numbers on screen are the
    record's."""
    ls.jobs.cancel_pending_probe(ws)
    ls.jobs.cancel_running_probe(ws)
    ws.already_measured()


def _settle(ws: WorkspaceState, text: str) -> bool:
    """What the diagnostics say of `text` from now on: the verdict, the static findings, a
    one-time notice; nothing (False) once another text arrived (WorkspaceState.text_arrived):
    an older text's check ending after it must not put its verdict back."""
    if text != ws.arrived:
        return False
    ws.notices = (*(ws.checked_notices or ()), *ws.checked_static, *ws.checked_extra)
    ws.notices_text = text
    return True


async def kernel_changed(ls: KernelscopeServer, ws: WorkspaceState, text: str | None) -> None:
    """A saved text (didSave: the buffer's; the watcher's report of a rewrite on disk goes
    through on_disk_change): checked, then measured unless it is a recorded version's code."""
    if text is None:
        try:
            text = saved_text(ws)
        except OSError:
            return  # (gone, or no regular file: the watcher's rescan lets the workspace go)
    text = python_text(text)  # (the buffer's: saved_text)
    digest = _saved_text_arrived(ls, ws, text)
    if digest is None:
        if ws.notices_text != text and ws.checking_kernel != _digest(text):
            # Handled already, but what is published is another text's: the buffer's, typed
            # and put back (an undo, then a save within the typing rest, which cancels the
            # buffer's check). The saved text is the buffer's: its verdict, nothing more.
            await check(ls, ws, text)
        return
    notify.workspace_changed(ls, ws, "kernel")
    await _saved_text_checked(ls, ws, text, digest)


def _saved_text_arrived(ls: KernelscopeServer, ws: WorkspaceState, text: str) -> str | None:
    """(loop) A saved text reported: its digest when it is to be handled (checked, then
    measured or not), None when it was handled already (a second report, module docstring):
    its check or probe is under way, its numbers are on screen, or its handling ended with no
    probe to come (untrusted, does not parse: it stays "stale", and nothing will say more),
    whatever was checked since (a buffer typed on after the save shows its own verdict).
    From here on the numbers on screen and the previous text's notices are not this text's."""
    digest = _digest(text)
    if digest == ws.kernel_digest and (
        ws.checking_kernel == digest
        or not ws.stale
        or ls.jobs.probe_in_flight(ws)
        or ws.saved_handled == digest
    ):
        return None
    ws.kernel_digest = ws.checking_kernel = digest
    ws.saved_handled = None
    ws.kernel_edited()
    ws.text_arrived(text)
    return digest


async def _saved_text_checked(ls: KernelscopeServer, ws: WorkspaceState, text: str, digest: str) -> None:
    """The saved text that arrived (`digest`) checked, then measured unless it is a recorded
    version's code or does not parse; published with the probe's state. A second report of it
    is not handled again while this runs (`checking_kernel`, until the probe is scheduled) nor
    after (the probe in flight, or `saved_handled`: none will come)."""
    try:
        identical = await check(ls, ws, text, publish=False)  # published below, with the probe's state
        if ws.kernel_digest != digest:  # a newer saved text arrived meanwhile: its check decides
            return
        if identical is None:
            # The buffer, edited after this save, took the diagnostics over (its check
            # publishes); whether the saved text is measured is still this save's to decide.
            _, identical = await ls.off_loop(history_check, ws.cache, text)
            if ws.kernel_digest != digest:
                return
        if identical:  # already measured (or already failed): the numbers on screen are this code's
            _recorded(ls, ws)
        elif not await ls.off_loop(_parses, text):
            log.info("%s: kernel.py does not parse: not benchmarked", ws.root.name)  # does_not_parse says so
        else:
            ls.jobs.schedule_probe(ws)  # (none where saves are not measured: Jobs.schedule_probe)
        if ws.kernel_digest == digest and not ls.jobs.probe_in_flight(ws):
            ws.saved_handled = digest
    finally:
        if ws.checking_kernel == digest:
            ws.checking_kernel = None
    notify.workspace_changed(ls, ws)


def _parses(text: str) -> bool:
    """Whether a saved text is worth measuring: one that does not parse can only fail to import
    (the rule of the does_not_parse notice: no second parse before the diagnostics go out). One
    too large for the editor's parse is measured: the benchmark reads it in its own process."""
    from kernelscope.daemon.engine.views.diagnostics import parse_error
    from kernelscope.daemon.engine.workspace.kernel_scan import too_large

    return too_large(text) is not None or parse_error(text) is None


async def did_save(ls: KernelscopeServer, params: types.DidSaveTextDocumentParams) -> None:
    """Before any GPU time: the saved text against every recorded version (module docstring)."""
    ws = ls.kernel_workspace(params.text_document.uri)
    if ws is None:
        return
    ls.jobs.cancel_typing(ws.kernel_path)  # the buffer's text is saved: this save's check covers it
    document = ls.workspace.get_text_document(params.text_document.uri)
    await kernel_changed(ls, ws, params.text or document.source or None)


def did_open(ls: KernelscopeServer, params: types.DidOpenTextDocumentParams) -> None:
    """kernel.py opened (an agent's first edit arrives as didOpen with the edited text): the
    text is checked at once; what the lenses show and the history of a workspace no request
    needed yet are read now, in the background, once (an editor asks for lenses a moment
    after it opens a file: VS Code 375 ms, lsp-mode when idle)."""
    ws = ls.kernel_workspace(params.text_document.uri)
    if ws is None:
        return
    if not ws.warm_started:
        ws.warm_started = True
        ls.state.workers.submit(warm_workspace, ws.cache)
    ls.jobs.spawn(check(ls, ws, params.text_document.text))


def did_change(ls: KernelscopeServer, params: types.DidChangeTextDocumentParams) -> None:
    """kernel.py edited in the buffer: checked once the text rests (lsp/jobs.py `after_typing`)."""
    ws = ls.kernel_workspace(params.text_document.uri)
    if ws is None:
        return
    uri = params.text_document.uri

    def fire() -> None:
        text = ls.workspace.get_text_document(uri).source
        ls.jobs.spawn(check(ls, ws, text))

    ls.jobs.after_typing(ws.kernel_path, fire)


def did_close(ls: KernelscopeServer, params: types.DidCloseTextDocumentParams) -> None:
    """kernel.py closed in the editor (pygls drops its buffer): the file on disk is what is
    shown and checked from now on. A buffer closed unsaved, its edits discarded, left its
    diagnostics (a `does_not_parse`, a verdict) published, and checked again at every record,
    for a text that is nowhere; its last parse is forgotten (the saved file's counts)."""
    ws = ls.kernel_workspace(params.text_document.uri)
    if ws is None:
        return
    ls.jobs.cancel_typing(ws.kernel_path)
    ws.cache.buffer_parse.forget()
    try:
        text = saved_text(ws)
    except OSError:
        return  # (gone: the watcher's rescan lets the workspace go)
    ls.jobs.spawn(check(ls, ws, text))


def warm_workspace(cache: WorkspaceCache) -> None:
    """(pool) Once a workspace's kernel.py is open: read what its lenses show (the engine's
    modules, memory/, the store's digest: a few hundred ms that the first lens request would
    otherwise wait for, or wait on here), then build the history (seconds for a thousand
    versions, once), so hints answer from a built history."""
    import gc

    from kernelscope.daemon.engine.views.lens_text import workspace_texts

    try:
        workspace_texts(cache)
    except Exception:  # the lens request reads it again and reports what is wrong
        log.exception("could not read the lens texts of %s", cache.root)
    try:
        cache.history().warm()
    except Exception:  # hints are best effort: a broken history never takes the daemon down
        log.exception("could not build the history of %s", cache.root)
        return
    # The history of a thousand versions is hundreds of thousands of long-lived objects: left
    # in the collector's oldest generation, every full collection walks them all (a 20 ms
    # pause in 1-2% of hovers). Frozen, they are skipped until the next history change.
    gc.collect()
    gc.freeze()


def on_disk_change(ls: KernelscopeServer, root: Path, paths: set[str]) -> None:
    """From the watcher thread: an agent, git or an orchestrator changed files of a workspace
    (`paths` relative to it)."""

    def handle() -> None:
        from kernelscope.daemon.engine.workspace.cache import sources_of_paths

        sources = sources_of_paths(paths)
        if {"readme", "kernel"} & sources or "." in paths or root not in ls.state.workspaces:
            ls.state.rescan()  # (what makes a folder a workspace; "." the workspace itself went)
        ws = ls.state.workspaces.get(root)
        if ws is None:
            return
        text = digest = None
        if "kernel" in sources:  # an agent rewrote it: the same check as a save
            try:
                text = saved_text(ws)
            except OSError:
                text = None  # (gone: the rescan let the workspace go)
            # arrived before the publication below: the previous text's notices are not in it
            digest = _saved_text_arrived(ls, ws, text) if text is not None else None
            if text is not None and digest is None and sources == {"kernel"}:
                return  # a second report of a text handled already: what is published holds
        notify.workspace_changed(ls, ws, *sources)  # a record an agent wrote can make the text a recorded one
        if text is not None and digest is not None:
            ls.jobs.spawn(_saved_text_checked(ls, ws, text, digest))

    ls.state.on_loop(handle)
