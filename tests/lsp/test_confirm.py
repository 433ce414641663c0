"""A click that masks half of the memory asks first. The lens "Mask half & restart" (and the
editors' palette mask-half and restart) send `"confirm": true`; the server then asks the person
through `window/showMessageRequest`, with the one question the engine builds from the mask-half
dry run, and writes nothing, nor starts an agent, unless they pick the affirmative action.
Scripts that leave `confirm` out are not asked (tests/lsp/test_lsp.py covers them)."""

from __future__ import annotations

import re
import shutil
import sys
from pathlib import Path
from typing import Any

import pytest
import pytest_lsp
from lsprotocol import types
from pytest_lsp import ClientServerConfig
from pytest_lsp.client import captured_exception_key

from tests.conftest import EXAMPLES, NO_TORCH_SERVER
from tests.support.bench_fixtures import jobs_folder
from tests.support.locks import a_restart_running
from tests.support.lsp_client import KernelscopeClient, make_client, no_job_starts, start_session, wait_for

pytestmark = pytest.mark.slow
JOBS, DAEMON_ENV = jobs_folder()
CONFIG = ClientServerConfig(client_factory=make_client, server_command=NO_TORCH_SERVER, server_env=DAEMON_ENV)
OPTIONS = {"trusted": False, "agent": f"{sys.executable} -c \"print('agent says hello')\""}
# examples/vector_add: v4 is the best and the latest passing version; v1, v2, v3 are candidates


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    shutil.copytree(EXAMPLES / "vector_add", tmp_path / "folder" / "kernel_opt_vector_add")
    return tmp_path / "folder"


@pytest_lsp.fixture(params=["visual_studio_code", "neovim"], config=CONFIG)
async def client(lsp_client: KernelscopeClient, request: pytest.FixtureRequest, folder: Path):
    """An editor that answers the question with `lsp_client.reply(params)`, recording it."""
    lsp_client.asked: list[types.ShowMessageRequestParams] = []  # type: ignore[misc]

    @lsp_client.feature(types.WINDOW_SHOW_MESSAGE_REQUEST)
    def on_question(params: types.ShowMessageRequestParams) -> types.MessageActionItem | None:
        lsp_client.asked.append(params)  # type: ignore[attr-defined]
        return lsp_client.reply(params)  # type: ignore[attr-defined,no-any-return]

    await start_session(lsp_client, folder, OPTIONS, request.param)
    yield
    await lsp_client.shutdown_session()


@pytest_lsp.fixture(config=CONFIG)
async def mute_client(lsp_client: KernelscopeClient, folder: Path):
    """An editor without window/showMessageRequest (it answers MethodNotFound)."""
    await start_session(lsp_client, folder, OPTIONS)
    yield
    await lsp_client.shutdown_session()


@pytest_lsp.fixture(config=CONFIG)
async def agentless_client(lsp_client: KernelscopeClient, folder: Path):
    """An editor that would say yes, whose settings name an agent that is not installed."""
    lsp_client.asked: list[types.ShowMessageRequestParams] = []  # type: ignore[misc]

    @lsp_client.feature(types.WINDOW_SHOW_MESSAGE_REQUEST)
    def on_question(params: types.ShowMessageRequestParams) -> types.MessageActionItem:
        lsp_client.asked.append(params)  # type: ignore[attr-defined]
        return yes(params)

    await start_session(lsp_client, folder, {**OPTIONS, "agent": "no-such-agent-ks --run {brief}"})
    yield
    await lsp_client.shutdown_session()


def memory_bytes(client: KernelscopeClient) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in (client.folder / "kernel_opt_vector_add" / "memory").iterdir()}


async def restart_lens(client: KernelscopeClient) -> types.Command:
    uri = (client.folder / "kernel_opt_vector_add" / "kernel.py").as_uri()
    found = await client.text_document_code_lens_async(
        types.CodeLensParams(text_document=types.TextDocumentIdentifier(uri=uri))
    )
    return next(
        lens.command for lens in found or [] if lens.command and lens.command.title == "Mask half & restart"
    )


async def run(client: KernelscopeClient, command: types.Command | str, params: dict | None = None) -> Any:
    name, arguments = (
        (command, [params]) if isinstance(command, str) else (command.command, command.arguments)
    )
    return await client.workspace_execute_command_async(
        types.ExecuteCommandParams(command=name, arguments=arguments)
    )


def yes(params: types.ShowMessageRequestParams) -> types.MessageActionItem:
    return (params.actions or [])[0]


async def test_the_restart_lens_asks_first(client: KernelscopeClient) -> None:
    lens = await restart_lens(client)
    ws = str((client.folder / "kernel_opt_vector_add").resolve())
    assert lens.command == "kernelscope.restart"
    assert list(lens.arguments or []) == [{"workspace": ws, "confirm": True}]


@pytest.mark.parametrize("answer", ["cancel", "dismissed"])
async def test_no_or_a_dismissed_question_writes_nothing_and_starts_nothing(
    client: KernelscopeClient, answer: str
) -> None:
    client.reply = lambda params: (params.actions or [])[-1] if answer == "cancel" else None  # type: ignore[attr-defined]
    before = memory_bytes(client)
    declined = await run(client, await restart_lens(client))
    assert declined["declined"] is True, declined
    asked = client.asked[-1]  # type: ignore[attr-defined]
    assert declined["question"] == asked.message
    assert [a.title for a in asked.actions or []] == ["Mask & restart", "Cancel"]
    # the question names what is masked, what is kept and why, and the agent it would launch
    assert re.search(r"^Mask v[123] \(1 of 3 candidate versions\) and launch a fresh agent \(", asked.message)
    assert "for up to 60 min, from v5" in asked.message, asked.message
    # (the rule every surface's best follows: memory/scores.py BY_SCORE)
    assert "Kept: v4 as the best and the latest passing version (highest score vs v0 among versions" in (
        asked.message
    )
    assert "(not drawn)" in asked.message and "v0, the baseline, is never masked" in asked.message
    await run(client, "kernelscope.maskHalf", {"workspace": declined["workspace"], "confirm": True})
    assert len(client.asked) == 2 and client.asked[-1].actions[0].title == "Mask"  # type: ignore[attr-defined]
    await no_job_starts(client)
    assert not client.finished
    assert memory_bytes(client) == before


async def test_yes_masks_what_was_asked_and_starts_the_agent(client: KernelscopeClient) -> None:
    client.reply = yes  # type: ignore[attr-defined]
    ws = client.folder / "kernel_opt_vector_add"
    masked = await run(client, "kernelscope.maskHalf", {"workspace": str(ws), "confirm": True})
    asked = re.match(r"Mask (v\d) ", client.asked[-1].message)  # type: ignore[attr-defined]
    assert asked and masked["masked"] == [asked.group(1)], (client.asked[-1].message, masked)  # type: ignore[attr-defined]
    assert '"masked": true' in (ws / "memory" / f"{asked.group(1)}.json").read_text()
    # two candidates left: the restart masks the one its question names, and launches the agent
    started = await run(client, await restart_lens(client))
    assert started["kind"] == "restart", started
    named = re.match(r"Mask (v\d) \(1 of 2 candidate", client.asked[-1].message)  # type: ignore[attr-defined]
    await wait_for(lambda: bool(client.finished), timeout=60)
    report = client.finished[-1]["result"]
    assert named and report["mask"]["masked"] == [named.group(1)], report["mask"]
    assert any("[agent] agent says hello" in m.message for m in client.log_messages)
    # a dry run, or a call without confirm (a script that asked already), is not asked
    count = len(client.asked)  # type: ignore[attr-defined]
    await run(client, "kernelscope.maskHalf", {"workspace": str(ws), "confirm": True, "dryRun": True})
    assert len(client.asked) == count  # type: ignore[attr-defined]


async def test_an_editor_that_cannot_ask_is_refused_and_nothing_is_written(
    mute_client: KernelscopeClient,
) -> None:
    before = memory_bytes(mute_client)
    for command in (await restart_lens(mute_client), "kernelscope.maskHalf"):
        params = {"workspace": str(mute_client.folder / "kernel_opt_vector_add"), "confirm": True}
        with pytest.raises(Exception, match="window/showMessageRequest") as refused:
            await run(mute_client, command, params)
        assert "nothing was masked" in str(refused.value)
    await no_job_starts(mute_client)
    assert memory_bytes(mute_client) == before
    # its MethodNotFound answers are what this test is about, not a fault of the test client
    mute_client._pytest_item.stash[captured_exception_key] = None  # type: ignore[union-attr]


async def test_a_restart_whose_agent_is_not_installed_is_refused_before_the_question(
    agentless_client: KernelscopeClient,
) -> None:
    """Nobody is asked a question whose yes then fails: the agent's program is looked up first."""
    before = memory_bytes(agentless_client)
    with pytest.raises(Exception, match="'no-such-agent-ks' is not an executable program"):
        await run(agentless_client, await restart_lens(agentless_client))
    assert agentless_client.asked == []  # type: ignore[attr-defined]
    await no_job_starts(agentless_client)
    assert not agentless_client.finished
    assert memory_bytes(agentless_client) == before
    agentless_client._pytest_item.stash[captured_exception_key] = None  # type: ignore[union-attr]


async def test_a_yes_after_memory_changed_masks_nothing(client: KernelscopeClient) -> None:
    """The yes runs the dry run's seed again; memory/ changed while the question was open (here
    the person masked the named version by hand meanwhile), so that seed would now mask other
    versions than the ones the person agreed to: refused, and nothing more is masked."""
    import json

    ws = client.folder / "kernel_opt_vector_add"

    def mask_it_then_say_yes(params: types.ShowMessageRequestParams) -> types.MessageActionItem:
        named = re.match(r"Mask (v\d) ", params.message)
        assert named, params.message
        path = ws / "memory" / f"{named.group(1)}.json"
        record = json.loads(path.read_text())
        path.write_text(json.dumps({**record, "masked": True}, indent=2))
        return yes(params)

    client.reply = mask_it_then_say_yes  # type: ignore[attr-defined]
    with pytest.raises(Exception, match="memory/ changed while the question was open") as refused:
        await run(client, "kernelscope.maskHalf", {"workspace": str(ws), "confirm": True})
    assert "nothing was masked" in str(refused.value)
    masked = [p.name for p in (ws / "memory").glob("v*.json") if json.loads(p.read_text()).get("masked")]
    assert len(masked) == 1, masked  # the person's own, no other


async def test_a_restart_running_in_another_process_is_named_before_the_question(
    client: KernelscopeClient,
) -> None:
    """A restart started from the CLI (another process) while its agent works: the editor
    asked "Mask & restart?" and the yes failed 5 s later, and its maskHalf replaced the
    running restart's mark, taking its agent's version (found by the review). Both are refused
    before the question, naming the running restart; nothing is written."""
    ws = client.folder / "kernel_opt_vector_add"
    before = memory_bytes(client)
    with a_restart_running(ws):
        for command, action in (
            (await restart_lens(client), "restart"),
            ("kernelscope.maskHalf", "mask half of the memory"),
        ):
            params = {"workspace": str(ws), "confirm": True}
            with pytest.raises(Exception, match=f"is running in this workspace .*refusing to {action}"):
                await run(client, command, params)
        # a restart not asked about (a script) is refused alike, before its job starts (the
        # engine's one preflight, off the event loop; a job was started, then failed)
        with pytest.raises(Exception, match=r"is running in this workspace .*refusing to restart"):
            await run(client, "kernelscope.restart", {"workspace": str(ws)})
    await no_job_starts(client)
    assert not client.finished
    assert client.asked == []  # type: ignore[attr-defined]
    assert memory_bytes(client) == before
    client._pytest_item.stash[captured_exception_key] = None  # type: ignore[attr-defined]
