"""Reading the daemon's settings from the client, by who may set what (protocol/settings.py).

- `initializationOptions` are the user's: they set `UserSettings` and the folder defaults.
- `workspace/configuration` answers and `didChangeConfiguration` payloads are the folder's
  (editors fill them from workspace files such as `.vscode/settings.json`): only
  `FolderSettings` keys are read; `trusted`, `python`, `rayAddress`, `dbUrl` and any unknown
  key there are ignored and logged once per folder and key, unless it repeats what
  `initializationOptions` said (Helix answers with the table it sent as those: no warning at
  every start for the user's own `trusted`).

The daemon never waits on the client without a limit: a client that answers
`workspace/configuration` with null, garbage or not at all leaves the defaults in place
after `CONFIGURATION_TIMEOUT_S`.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from pathlib import Path
from typing import Any

from lsprotocol import types
from pygls.lsp.server import LanguageServer

from kernelscope.daemon.lsp.state import ServerState, WorkspaceState
from kernelscope.protocol.settings import (
    FolderSettings,
    folder_settings_from,
    snake_key,
    trust_source,
    user_settings_from,
)

log = logging.getLogger("kernelscope.lsp")
CONFIGURATION_TIMEOUT_S = 3.0
Warn = Callable[[str], None]


def _section(raw: Any) -> dict[str, Any] | None:
    """The `kernelscope` section of a client's settings object (or the object itself)."""
    if not isinstance(raw, dict):
        return None
    data = raw.get("kernelscope", raw)
    return data if isinstance(data, dict) else None


def apply_initialization_options(state: ServerState, raw: Any, warn: Warn) -> None:
    """The user's settings: their config file (`~/.config/kernelscope/config.toml`, the user's
    own, never a file in a workspace), then `initializationOptions` over it (editors that send
    none, such as Claude Code's LSP plugins, get the file's; `state.trust_source` says which gave
    `trusted`). Invalid ones keep the defaults."""
    from kernelscope.daemon.engine import KernelscopeError
    from kernelscope.daemon.engine.workspace.user_config import config_path, user_config

    try:
        from_file = user_config()
    except KernelscopeError as exc:
        warn(f"kernelscope: {exc}; ignoring the config file")
        from_file = {}
    # The file's store is the one resolve_db_url picks, as for every CLI command (after
    # KERNELSCOPE_DB_URL, a relative path from the config's folder): not an explicit setting.
    from_file = {k: v for k, v in from_file.items() if not (isinstance(k, str) and snake_key(k) == "db_url")}
    try:
        state.user, state.folder_defaults, dropped = user_settings_from(from_file)
        for problem in dropped:
            warn(f"kernelscope: config file {config_path()}: {problem}; the other settings are kept")
    except ValueError as exc:
        warn(f"kernelscope: invalid settings in the config file ({exc}); keeping the defaults")
    data = _section(raw) or {}
    state.user_said = data
    try:
        state.user, state.folder_defaults, dropped = user_settings_from(
            data, state.user, state.folder_defaults
        )
        state.trust_source = trust_source(data) or "config file"
        for problem in dropped:
            warn(f"kernelscope: initializationOptions: {problem}; the other settings are kept")
    except ValueError as exc:
        warn(f"kernelscope: invalid settings ({exc}); keeping the defaults")
    log.info(
        "user settings (config file, then initializationOptions): %s; folder defaults: %s",
        state.user,
        state.folder_defaults,
    )


def _folder_settings(
    state: ServerState, where: str, raw: Any, base: FolderSettings, warn: Warn
) -> FolderSettings:
    data = _section(raw)
    if data is None:
        if raw is not None:
            _log_once(
                state,
                where,
                "(answer)",
                f"ignored a malformed configuration answer for {where}: {raw!r:.200}",
            )
        return base
    try:
        folder, ignored = folder_settings_from(data, base, state.user_said)
    except ValueError as exc:
        warn(f"kernelscope: invalid settings for {where} ({exc}); keeping the previous values")
        return base
    for key in ignored:
        _log_once(
            state,
            where,
            key,
            f"ignored '{key}' from the configuration of {where}: a folder may set only "
            "benchOnSave, mode, seeds, debounceMs and blameInlay (trust, interpreter, executor, store and "
            "caps come from the user's settings)",
        )
    return folder


def _log_once(state: ServerState, where: str, key: str, message: str) -> None:
    if (where, key) not in state.ignored_keys_logged:
        state.ignored_keys_logged.add((where, key))
        log.warning(message)


def apply_change_payload(state: ServerState, raw: Any, warn: Warn) -> None:
    """A `didChangeConfiguration` payload: folder defaults only (it carries workspace values)."""
    if isinstance(raw, dict) and raw:
        state.folder_defaults = _folder_settings(
            state, "didChangeConfiguration", raw, state.folder_defaults, warn
        )
    for ws in state.workspaces.values():
        state.set_folder_settings(ws, state.folder_defaults)


async def load_folder_configuration(
    ls: LanguageServer, state: ServerState, warn: Warn, workspaces: list[WorkspaceState] | None = None
) -> None:
    """Each workspace's folder settings (or only these `workspaces`': new ones, the others
    keep theirs meanwhile) from `workspace/configuration` (section `kernelscope`), bounded by
    CONFIGURATION_TIMEOUT_S; any failure keeps the folder defaults."""
    asked = list(state.workspaces.values()) if workspaces is None else workspaces
    for ws in asked:
        state.set_folder_settings(ws, state.folder_defaults)
    caps = ls.client_capabilities.workspace if ls.client_capabilities else None
    if not (caps and caps.configuration) or not asked:
        return
    roots: list[Path] = [ws.root for ws in asked]
    params = types.ConfigurationParams(
        items=[types.ConfigurationItem(scope_uri=root.as_uri(), section="kernelscope") for root in roots]
    )
    try:
        values = await asyncio.wait_for(ls.workspace_configuration_async(params), CONFIGURATION_TIMEOUT_S)
    except asyncio.TimeoutError:
        log.warning(
            "workspace/configuration got no answer in %.0f s: folder defaults kept", CONFIGURATION_TIMEOUT_S
        )
        return
    except Exception as exc:  # a client that answers badly keeps the defaults
        log.warning("workspace/configuration failed (%s): folder defaults kept", exc)
        return
    if not isinstance(values, (list, tuple)):
        log.warning("workspace/configuration answered %r, not a list: folder defaults kept", values)
        return
    for root, value in zip(roots, values, strict=False):
        folder_ws = state.workspaces.get(root)
        if folder_ws is not None:
            state.set_folder_settings(
                folder_ws, _folder_settings(state, str(root), value, state.folder_defaults, warn)
            )
