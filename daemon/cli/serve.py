"""`kernelscope serve` and `kernelscope schema`."""

from __future__ import annotations

import json
from typing import Annotated, Any

import typer


def serve_command(
    tcp: Annotated[bool, typer.Option("--tcp", help="Listen on 127.0.0.1 instead of stdio.")] = False,
    port: Annotated[int, typer.Option("--port", min=1, max=65535)] = 2087,
) -> None:
    """Run the LSP daemon (stdio by default; --tcp binds 127.0.0.1 only)."""
    from kernelscope.daemon.lsp.server import serve

    serve(tcp=tcp, port=port)


def _camel_properties(schema: dict) -> dict:
    """Settings travel in camelCase (dbUrl, benchOnSave...), as editors write them."""
    from kernelscope.protocol.settings import camel_key

    schema["properties"] = {camel_key(k): v for k, v in schema.get("properties", {}).items()}
    return schema


def commands_document() -> dict[str, Any]:
    """What clients need to call the daemon, from the one vocabulary (protocol/vocabulary.py):
    command names, the job kind each starts and whether it takes `confirm` (the server asks
    the person before it writes; `decline` is the title of the question's action that writes
    nothing), the notification and request names. Written to
    editor-clients/commands.json (`kernelscope schema --commands`), which clients read instead
    of hand-copied names; tests/test_vocabulary.py keeps the file current."""
    from kernelscope.protocol.lsp import CONFIRMS
    from kernelscope.protocol.vocabulary import (
        COMMANDS,
        DECLINE,
        JOB_FINISHED,
        JOB_KINDS,
        WORKSPACE_RULE,
        WORKSPACES_REQUEST,
    )

    return {
        "commands": {
            name: {"job": kind, "confirm": name in CONFIRMS}
            for name, (_model, _method, kind) in COMMANDS.items()
        },
        "decline": DECLINE,
        "jobKinds": list(JOB_KINDS),
        "notifications": {"jobFinished": JOB_FINISHED},
        "requests": {"workspaces": WORKSPACES_REQUEST},
        "workspaceRule": WORKSPACE_RULE,
    }


def schema_command(
    commands: Annotated[
        bool,
        typer.Option(
            "--commands", help="Print only the command and job names (editor-clients/commands.json)."
        ),
    ] = False,
) -> None:
    """Print the JSON Schema of every command's parameters and result, and the settings."""
    if commands:
        print(json.dumps(commands_document(), indent=2))
        return
    from pydantic import TypeAdapter

    from kernelscope.protocol.lsp import COMMAND_MODELS, JOB_RESULTS, JobFinished, Settings, WorkspacesResult
    from kernelscope.protocol.settings import FolderSettings, UserSettings

    document = {
        "commands": {
            name: {
                "params": params.model_json_schema(by_alias=True),
                "result": TypeAdapter(result).json_schema(by_alias=True),
            }
            for name, (params, result) in COMMAND_MODELS.items()
        },
        "notifications": {
            "kernelscope/jobFinished": {
                "schema": JobFinished.model_json_schema(by_alias=True),
                "results": {kind: TypeAdapter(model).json_schema() for kind, model in JOB_RESULTS.items()},
            }
        },
        "requests": {"kernelscope/workspaces": {"result": WorkspacesResult.model_json_schema()}},
        "settings": _camel_properties(TypeAdapter(Settings).json_schema()),
        # Who may set what: user settings only from initializationOptions or the user's
        # config file; folder settings also from workspace/configuration.
        "userSettings": _camel_properties(TypeAdapter(UserSettings).json_schema()),
        "folderSettings": _camel_properties(TypeAdapter(FolderSettings).json_schema()),
    }
    print(json.dumps(document, indent=2))
