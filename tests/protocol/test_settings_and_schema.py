"""Settings parsing (camelCase, strict, defaults kept on error) and `kernelscope schema`."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kernelscope.protocol.settings import (
    Distrust,
    FolderSettings,
    Settings,
    UserSettings,
    distrust,
    settings_from,
    trust_source,
    trusts,
)


def test_settings_camel_case_and_unknown_keys() -> None:
    settings = settings_from(
        {"dbUrl": "/tmp/x.sqlite", "benchOnSave": False, "seeds": 4, "colour": "red"}, Settings()
    )
    assert settings.db_url == "/tmp/x.sqlite" and settings.bench_on_save is False and settings.seeds == 4
    assert settings.trusted is False  # off unless the client says the workspace is trusted
    # whole numbers as JSON may spell them
    assert settings_from({"seeds": 3.0, "timeoutS": 60}, Settings()).seeds == 3


@pytest.mark.parametrize(
    "bad,field",
    [
        ({"trusted": "yes"}, "trusted"),
        ({"workspaceTrusted": "yes"}, "workspace_trusted"),
        ({"seeds": 0}, "seeds"),
        ({"mode": "fast"}, "mode"),
        ({"debounceMs": "abc"}, "debounce_ms"),
        ({"timeoutS": -1}, "timeoutS"),
        # a wrong type is refused, not coerced into another value than the user's (true was 1
        # seed, 2.7 two, "900" a timeout)
        ({"seeds": True}, "seeds"),
        ({"seeds": 2.7}, "seeds"),
        ({"debounceMs": "400"}, "debounce_ms"),
        ({"timeoutS": "900"}, "timeout_s"),
        ({"timeoutS": True}, "timeout_s"),
        ({"memoryLimitMb": 512.5}, "memory_limit_mb"),
        # text is text: a list was the command "['claude', '-p']", a number the program "3"
        ({"agent": ["claude", "-p"]}, "agent"),
        ({"python": 3}, "python"),
        # a trusted pattern is absolute (a relative one would follow the daemon's working
        # directory) and has no `**` (it promises a depth that `*` never spans)
        ({"trusted": ["kernel_opt_*"]}, "'kernel_opt_\\*' is not an absolute path"),
        ({"trusted": ["."]}, "not an absolute path"),
        ({"trusted": ["~/work/**"]}, "`\\*\\*` is not supported"),
    ],
)
def test_invalid_settings_name_the_field(bad: dict, field: str) -> None:
    with pytest.raises(ValueError, match=field):
        settings_from(bad, Settings())


def test_a_trusted_glob_matches_one_folder_level(tmp_path: Path) -> None:
    """`~/work/*` trusts the workspaces directly in ~/work, not a repository cloned deeper
    (~/work/a/b/kernel_opt_x), as a shell glob reads it: `*` never spans a `/`."""
    work = tmp_path / "work"
    mine, cloned = work / "kernel_opt_mine", work / "a" / "b" / "kernel_opt_cloned"
    for folder in (mine, cloned):
        folder.mkdir(parents=True)
    assert trusts([f"{work}/*"], mine) and trusts([f"{work}/kernel_opt_?ine"], mine)
    assert not trusts([f"{work}/*"], cloned)
    assert not trusts([f"{work}/kernel_opt_*"], cloned)
    assert trusts([f"{work}/*/*/kernel_opt_*"], cloned)  # one `*` per folder level
    assert trusts([str(cloned)], cloned) and not trusts([str(work)], cloned)


@pytest.mark.parametrize(
    "trusted,window,expected",
    [
        (True, None, None),  # an editor without a workspace trust of its own: `trusted` decides
        (True, True, None),
        (True, False, Distrust(window=True, setting=None)),  # a restricted window: nothing runs
        (False, True, Distrust(window=False, setting="config file")),  # a trusted window grants nothing
        (False, False, Distrust(window=True, setting="config file")),
    ],
)
def test_the_editors_workspace_trust_can_only_refuse(
    tmp_path: Path, trusted: bool, window: bool | None, expected: Distrust | None
) -> None:
    user = UserSettings(trusted=trusted, workspace_trusted=window)
    assert distrust(user, tmp_path) == expected
    assert Settings.compose(user, FolderSettings(), tmp_path).trusted is (expected is None)  # the same rule


def test_trust_comes_from_the_editor_only_when_it_sends_a_list_that_stands() -> None:
    assert trust_source({"trusted": ["/srv/kernel_opt_*"]}) == "editor settings"
    assert trust_source({"trusted": False}) == "editor settings"
    assert trust_source({"workspaceTrusted": True, "dbUrl": "/x"}) is None
    assert trust_source({"trusted": ["kernel_opt_*"]}) is None  # refused: the file's trust stays


def test_schema_lists_every_command(cli) -> None:  # type: ignore[no-untyped-def]
    result = cli("schema")
    assert result.exit_code == 0
    document = json.loads(result.stdout)
    assert set(document["commands"]) == {
        "kernelscope.maskHalf",
        "kernelscope.unmask",
        "kernelscope.recordExperiment",
        "kernelscope.runIteration",
        "kernelscope.restart",
        "kernelscope.benchmark",
        "kernelscope.showHistory",
        "kernelscope.topExperiments",
        "kernelscope.cancel",
        "kernelscope.compare",
    }
    assert "dryRun" in document["commands"]["kernelscope.maskHalf"]["params"]["properties"]
    assert "benchOnSave" in document["settings"]["properties"]
