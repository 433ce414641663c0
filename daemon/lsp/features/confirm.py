"""A command that masks memory, sent with `"confirm": true` (the lens "Mask half & restart";
the editors' palette commands; protocol/lsp.WritesAfterAsking): the person is asked first,
through `window/showMessageRequest`, the engine's question (views/confirm.py). Their yes runs
the command with the dry run's seed, so what is masked is what they were asked about; a no, a
dismissed question (null) or an editor that cannot ask writes nothing and starts no job.
Calls without `confirm` (the CLI, scripts, agents, Helix's typed commands) are not asked."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from lsprotocol import types
from pygls.exceptions import JsonRpcInvalidParams

if TYPE_CHECKING:
    from kernelscope.daemon.lsp.language_server import KernelscopeServer


async def ask_first(ls: KernelscopeServer, params: Any) -> tuple[Any, dict[str, Any] | None]:
    """(loop) The params to run the command with, or, when the person did not agree, the
    command's answer (protocol/lsp.Declined). InvalidParams when the editor cannot ask."""
    from kernelscope.protocol.lsp import Declined

    question = await ls.off_loop(ls.commands.question, params)
    if question is None:  # it would write nothing (a dry run, nothing to mask): nothing to ask
        return params.model_copy(update={"confirm": False}), None
    request = types.ShowMessageRequestParams(
        type=types.MessageType.Warning,
        message=question.text,
        actions=[types.MessageActionItem(title=question.yes), types.MessageActionItem(title=question.no)],
    )
    try:
        answer = await ls.window_show_message_request_async(request)
    except Exception as exc:  # an editor without window/showMessageRequest (its error), or gone
        raise JsonRpcInvalidParams(
            message=f"confirm: the editor did not answer window/showMessageRequest ({exc}): nothing "
            "was masked. Ask the person yourself and send the command without confirm, or run "
            "`kernelscope memory mask-half` / `kernelscope restart`"
        ) from None
    if answer is None or answer.title != question.yes:
        return params, Declined(workspace=question.workspace, question=question.text).model_dump()
    confirmed = params.model_copy(update={"confirm": False, "seed": question.seed})
    changed = question.changed(await ls.off_loop(ls.commands.question, confirmed))
    if changed is not None:
        raise JsonRpcInvalidParams(message=f"confirm: {changed}")
    return confirmed, None
