"""One rule for the runs of masked versions (daemon/engine/workspace/masked.py): every surface
that tells a kernel's run count, failures, best or latest leaves them out and counts them apart.
Before, after a mask-half the lens above a kernel counted them (`5 runs`) while
`kernelscope exp summary` left them out (`4`): the same kernel, two numbers."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from kernelscope.daemon import expdb
from kernelscope.daemon.engine.memory.scores import memory_scores
from kernelscope.daemon.engine.store import ExperimentStore
from kernelscope.daemon.engine.views import history_table
from kernelscope.daemon.engine.views.lens_text import kernel_lens, workspace_texts
from kernelscope.daemon.engine.workspace.cache import WorkspaceCache
from kernelscope.daemon.engine.workspace.workspace import Workspace
from kernelscope.protocol.experiment import KernelExperiment
from tests.conftest import EXAMPLES, write_record

SCORES = {"v0": 1.0, "v1": 1.16, "v2": 1.1, "v3": None, "v4": 1.22}


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    """examples/vector_add (v0-v4, v3 failed its gate) with one experiment per version, then
    v2 masked as the demo's mask-half does (neither the best nor the latest)."""
    root = tmp_path / "kernel_opt_vector_add"
    shutil.copytree(EXAMPLES / "vector_add", root)
    store = ExperimentStore(str(tmp_path / "exp.sqlite"))
    store.import_experiments(
        [
            KernelExperiment(
                id=f"{number:016x}",
                change_summary=f"attempt {version}",
                score=score,
                status="done" if score is not None else "failed",
                workspace=str(root),
                kernels=["add_kernel"],
                memory_version=version,
            )
            for number, (version, score) in enumerate(SCORES.items())
        ]
    )
    store.close()
    Workspace(root).memory.set_masked(["v2"], masked=True)
    return root


def test_every_surface_counts_the_runs_of_masked_versions_apart(ws: Path, cli) -> None:  # type: ignore[no-untyped-def]
    db = str(ws.parent / "exp.sqlite")
    store = ExperimentStore(db)
    cache = WorkspaceCache(ws, lambda: store)
    # the lens (and the inlay hint, the same text): it said `5 runs` where the summary said 4
    lens = workspace_texts(cache)[1]["add_kernel"]
    assert lens == "best 1.22x v4 | latest 1.22x v4 | 4 runs (+1 masked), 1 failed", lens
    # hover: the same count; v2's row stays, marked, for a person
    table = history_table.history(cache, "add_kernel").markdown
    assert table.startswith("**add_kernel**: 4 experiments (+1 masked)"), table
    assert "| v2 | 1.10x | done (masked) |" in table, table
    # the CLI and the Python API an agent calls
    shown = cli("exp", "summary", "-w", str(ws), "--db", db, "--json").json()
    assert [(s["runs"], s["masked_runs"], s["failures"], s["best_version"]) for s in shown] == [
        (4, 1, 1, "v4")
    ]
    assert "4 (+1 masked)" in cli("exp", "summary", "-w", str(ws), "--db", db).stdout
    every = cli("exp", "summary", "-w", str(ws), "--db", db, "--json", "--include-masked").json()
    assert [(s["runs"], s["masked_runs"]) for s in every] == [(5, 0)]
    expdb.use_database(db)
    try:
        assert [(s.runs, s.masked_runs) for s in expdb.kernel_summaries(str(ws))] == [(4, 1)]
    finally:
        expdb.use_database(None)
    store.close()


def test_a_masked_best_is_named_by_no_surface_and_an_unmask_brings_it_back(ws: Path, cli) -> None:  # type: ignore[no-untyped-def]
    """Masking v4 too (the best and latest): the lens and the summary name v1 best and the
    failed v3 latest, with the same counts; the digest is read through memory/'s masks, so an
    unmask is seen with no store write."""
    db = str(ws.parent / "exp.sqlite")
    store = ExperimentStore(db)
    cache = WorkspaceCache(ws, lambda: store)
    Workspace(ws).memory.set_masked(["v4"], masked=True)
    lens = workspace_texts(cache)[1]["add_kernel"]
    assert lens == "best 1.16x v1 | latest FAILED v3 | 3 runs (+2 masked), 1 failed", lens
    shown = cli("exp", "summary", "-w", str(ws), "--db", db, "--json").json()
    assert [(s["runs"], s["masked_runs"], s["best_version"], s["latest_version"]) for s in shown] == [
        (3, 2, "v1", "v3")
    ]
    Workspace(ws).memory.set_masked(["v2", "v4"], masked=False)
    cache.changed("memory")
    assert workspace_texts(cache)[1]["add_kernel"] == "best 1.22x v4 | latest 1.22x v4 | 5 runs, 1 failed"
    store.close()


def test_the_memory_records_lens_counts_masked_versions_apart(ws: Path) -> None:
    """A workspace without experiments: the records' lens leaves a masked version out of the
    runs as it leaves it out of best and latest (it said `4 runs` with v2 masked, v1-v4; the
    baseline v0 is a run too, as in the store's lens: the test below)."""
    workspace = Workspace(ws)
    lens = kernel_lens(None, memory_scores(workspace.memory.scan(), workspace.readme()))
    assert lens == "best 1.22x v4 | latest 1.22x v4 | 4 runs (+1 masked), 1 failed", lens


@pytest.mark.parametrize("masks", [[], ["v1", "v4"]])
def test_the_store_and_the_records_alone_show_the_same_runs(ws: Path, masks: list[str]) -> None:
    """The baseline's run is a run on every surface. The same history (one experiment per
    version) read with the store and from the records alone (no store, or a store without
    this workspace) gives one lens and one hover count. Before, the records' lens left v0 out:
    `3 runs (+1 masked)` where the store's said 4 and hover said `4 experiments`, and with v1
    and v4 masked too `best -` where the store's named the baseline, `best 1.00x v0`."""
    if masks:  # the fixture masked v2
        Workspace(ws).memory.set_masked(masks, masked=True)
    store = ExperimentStore(str(ws.parent / "exp.sqlite"))
    other = ExperimentStore(str(ws.parent / "other.sqlite"))
    caches = [WorkspaceCache(ws, opener) for opener in (lambda: store, lambda: None, lambda: other)]
    lenses = [workspace_texts(cache)[1]["add_kernel"] for cache in caches]
    expected = {
        (): "best 1.22x v4 | latest 1.22x v4 | 4 runs (+1 masked), 1 failed",
        ("v1", "v4"): "best 1.00x v0 | latest FAILED v3 | 2 runs (+3 masked), 1 failed",
    }[tuple(masks)]
    assert lenses == [expected] * 3, lenses
    headings = [history_table.history(cache, "add_kernel").markdown.splitlines()[0] for cache in caches]
    runs = expected.split(" | ")[2].split(",")[0].replace("runs", "experiments")
    assert headings == [f"**add_kernel**: {runs}"] * 3, headings
    store.close()
    other.close()


def masked_in_two_workspaces(tmp_path: Path, db_url: str, scores: list[float]) -> tuple[Path, Path]:
    """Workspaces a (v2 masked, v4) and b (v1 masked, v2: masked in a, not in b, so hidden per
    workspace, not per version), and one whose folder is gone (v1 masked there: deleted, or on
    another machine, so shown as before), an experiment each in the store, and one recorded
    under no workspace; `scores` in that order (a/v2, a/v4, b/v1, b/v2, gone/v1, none). (a, b)."""
    a, b, gone = tmp_path / "a", tmp_path / "b", tmp_path / "gone"
    write_record(a, 2, masked=True)
    write_record(a, 4)
    write_record(b, 1, masked=True)
    write_record(b, 2)
    write_record(gone, 1, masked=True)
    rows = [(a, "v2"), (a, "v4"), (b, "v1"), (b, "v2"), (gone, "v1")]
    store = ExperimentStore(db_url)
    store.import_experiments(
        [
            KernelExperiment(
                id=f"{n:016x}",
                change_summary=f"{ws.name} {v}",
                score=score,
                workspace=str(ws),
                memory_version=v,
            )
            for n, ((ws, v), score) in enumerate(zip(rows, scores[:5], strict=True))
        ]
        + [KernelExperiment(id="f" * 16, change_summary="no workspace", score=scores[5], memory_version="v2")]
    )
    store.close()
    shutil.rmtree(gone)
    return a, b


def test_exp_top_hides_each_workspace_s_masked_versions_without_a_workspace_too(  # type: ignore[no-untyped-def]
    tmp_path: Path, db_url: str, cli
) -> None:
    """A restarted agent that ranks the whole store (`exp top` with no -w, the Python API's
    `top_experiments()`, the editor's command with no workspace) saw the experiments its
    partial restart hid: the masks are read per row's workspace, when its folder is here. Before,
    the masked A/v2 and B/v1 were ranked and nothing said that -w had hidden anything."""
    a, b = masked_in_two_workspaces(tmp_path, db_url, [1.1, 1.22, 2.0, 1.5, 3.0, 0.9])

    def top(*args: str) -> tuple[list[str], str]:
        shown = cli("exp", "top", "--db", db_url, "--json", *args)
        assert shown.exit_code == 0, shown
        return [f"{Path(r['workspace']).name}/{r['memory_version']}" for r in shown.json()], shown.stderr

    ranked, said = top()
    assert ranked == ["gone/v1", "b/v2", "a/v4", "/v2"], ranked
    assert "2 experiments of masked memory versions left out" in said and "--include-masked" in said, said
    ranked, said = top("--include-masked")
    assert ranked == ["gone/v1", "b/v1", "b/v2", "a/v4", "a/v2", "/v2"] and "masked" not in said, (
        ranked,
        said,
    )
    ranked, said = top("-w", str(a))  # the same words with a workspace
    assert ranked == ["a/v4"] and "1 experiment of masked memory versions left out" in said, said
    assert "a v4" in cli("exp", "top", "--db", db_url).stdout  # a table, and the count on stdout
    assert "2 experiments of masked memory versions left out" in cli("exp", "top", "--db", db_url).stdout
    expdb.use_database(db_url)
    try:
        # the API says it too, in the CLI's words with its own option (a warning: stderr, once)
        note = "2 experiments of masked memory versions left out .* include_masked=True shows them"
        with pytest.warns(expdb.LeftOutWarning, match=note):
            assert [r["change_summary"] for r in expdb.top_experiments()] == [
                "gone v1",
                "b v2",
                "a v4",
                "no workspace",
            ]
        assert len(expdb.top_experiments(include_masked=True)) == 6
        with pytest.warns(expdb.LeftOutWarning, match="1 experiment of masked memory versions left out"):
            assert [r["change_summary"] for r in expdb.top_experiments(workspace=str(b))] == ["b v2"]
    finally:
        expdb.use_database(None)


def test_a_kernel_whose_runs_are_all_masked_shows_its_own_figures(ws: Path, cli) -> None:  # type: ignore[no-untyped-def]
    """A second kernel, `scale_kernel`, ran only in v2 (masked by the fixture). The store's
    summary of it is 0 runs (+1 masked); the lens threw that row away (it has no runs) and
    showed the memory records' text of the whole workspace, `best 1.22x v4 | latest 1.22x v4 |
    4 runs (+1 masked), 1 failed`, while hover and `exp summary` said 0 (+1 masked)."""
    kernel = ws / "kernel.py"
    kernel.write_text(
        kernel.read_text() + "\n\n@triton.jit\ndef scale_kernel(x_ptr, n, BLOCK: tl.constexpr):\n    pass\n"
    )
    db = str(ws.parent / "exp.sqlite")
    store = ExperimentStore(db)
    store.import_experiments(
        [
            KernelExperiment(
                id="e" * 16,
                change_summary="scale in v2",
                score=1.3,
                workspace=str(ws),
                kernels=["scale_kernel"],
                memory_version="v2",
            )
        ]
    )
    cache = WorkspaceCache(ws, lambda: store)
    lenses = workspace_texts(cache)[1]
    assert lenses["scale_kernel"] == "best - | latest - | 0 runs (+1 masked), 0 failed", lenses
    assert lenses["add_kernel"] == "best 1.22x v4 | latest 1.22x v4 | 4 runs (+1 masked), 1 failed", lenses
    heading = history_table.history(cache, "scale_kernel").markdown.splitlines()[0]
    assert heading == "**scale_kernel**: 0 experiments (+1 masked)", heading
    shown = cli("exp", "summary", "-w", str(ws), "--db", db, "--json").json()
    assert {s["kernel"]: (s["runs"], s["masked_runs"]) for s in shown} == {
        "add_kernel": (4, 1),
        "scale_kernel": (0, 1),
    }
    store.close()


@pytest.mark.parametrize("with_store", [True, False])
def test_everything_masked_the_baseline_too_is_counted_alike(ws: Path, with_store: bool, cli) -> None:  # type: ignore[no-untyped-def]
    """Every version masked, v0 included (allowed on request): the lens, hover's heading and
    `exp summary` name no best or latest and count 0 runs (+5 masked), with the store's
    summary as from the records alone."""
    Workspace(ws).memory.set_masked(["v0", "v1", "v3", "v4"], masked=True, allow_baseline=True)
    db = str(ws.parent / "exp.sqlite")
    store = ExperimentStore(db)
    cache = WorkspaceCache(ws, (lambda: store) if with_store else (lambda: None))
    lens = workspace_texts(cache)[1]["add_kernel"]
    assert lens == "best - | latest - | 0 runs (+5 masked), 0 failed", lens
    heading = history_table.history(cache, "add_kernel").markdown.splitlines()[0]
    assert heading == "**add_kernel**: 0 experiments (+5 masked)", heading
    if with_store:
        shown = cli("exp", "summary", "-w", str(ws), "--db", db, "--json").json()
        assert [(s["runs"], s["masked_runs"], s["best_version"], s["latest_version"]) for s in shown] == [
            (0, 5, None, None)
        ]
        assert "0 (+5 masked)" in cli("exp", "summary", "-w", str(ws), "--db", db).stdout
    store.close()


def test_exp_list_and_failures_hide_masked_versions_as_top_does(tmp_path: Path, db_url: str, cli) -> None:  # type: ignore[no-untyped-def]
    """`exp list` and `exp failures` without -w showed the experiments of every workspace's
    masked versions (only -w hid that workspace's) and, with -w, said nothing of what they
    left out: the rule `exp top` follows (masked.hidden_experiments) now holds for all three,
    with the same message."""
    a, _ = masked_in_two_workspaces(tmp_path, db_url, [0.5] * 6)  # regressive: failures all

    def shown(command: str, *args: str) -> tuple[list[str], str]:
        result = cli("exp", command, "--db", db_url, "--json", *args)
        assert result.exit_code == 0, result
        found = result.json()
        found = found if isinstance(found, list) else [e for group in found.values() for e in group]
        return sorted(f"{Path(r['workspace']).name}/{r['memory_version']}" for r in found), result.stderr

    for command in ("list", "failures"):
        names, said = shown(command)
        assert names == ["/v2", "a/v4", "b/v2", "gone/v1"], (command, names)
        assert "2 experiments of masked memory versions left out" in said, (command, said)
        names, said = shown(command, "--include-masked")
        assert names == ["/v2", "a/v2", "a/v4", "b/v1", "b/v2", "gone/v1"] and "masked" not in said, (
            command,
            names,
            said,
        )
        names, said = shown(command, "-w", str(a))
        assert names == ["a/v4"] and "1 experiment of masked memory versions left out" in said, (
            command,
            said,
        )
        table = cli("exp", command, "--db", db_url).stdout
        assert "2 experiments of masked memory versions left out" in table, (command, table)
    # a limit shows fewer rows; the count is of every experiment left out
    names, said = shown("list", "--limit", "1")
    assert len(names) == 1 and "2 experiments of masked memory versions left out" in said, said


def _with_interpreter_runs(tmp_path: Path, db_url: str) -> Path:
    """`masked_in_two_workspaces` plus an interpreter run in a masked (v2) and in a shown (v4)
    version of its first workspace, which it returns."""
    a, _ = masked_in_two_workspaces(tmp_path, db_url, [0.5] * 6)
    store = ExperimentStore(db_url)
    for n, version in enumerate(("v2", "v4")):
        store.create_experiment(
            KernelExperiment(
                id=f"e{n:015x}",
                change_summary=f"a {version} cpu",
                score=0.5,
                workspace=str(a),
                memory_version=version,
                metrics={"mode": "interpreter"},
            )
        )
    store.close()
    return a


def test_exp_failures_reads_the_store_once_and_counts_what_it_left_out_alike(  # type: ignore[no-untyped-def]
    tmp_path: Path, db_url: str, cli
) -> None:
    """`exp failures` read the store twice when masks hid something (the rows without the
    masked versions, then every row again to count those left out; a review: 1.48 s against
    1.07 s at 10,000 experiments), and once more for the versions whose masks to read. One read
    now, the hidden ones counted among its rows: the same rows and the same counts, interpreter
    runs of masked and unmasked versions included."""
    import re

    from sqlalchemy import event
    from sqlalchemy.engine import Engine

    a = _with_interpreter_runs(tmp_path, db_url)
    reads: list[str] = []

    def spy(conn, cursor, statement: str, *args) -> None:  # type: ignore[no-untyped-def]
        if re.search(r"\bFROM experiments\b", statement):
            reads.append(statement)

    event.listen(Engine, "before_cursor_execute", spy)
    try:
        for args, names, interpreter, masked in (
            ((), ["/v2", "a/v4", "b/v2", "gone/v1"], "1 interpreter run left out", "2 experiments of masked"),
            (
                ("--include-interpreter",),
                ["/v2", "a/v4", "a/v4", "b/v2", "gone/v1"],
                None,
                "3 experiments of masked",
            ),
            (("-w", str(a)), ["a/v4"], "1 interpreter run left out", "1 experiment of masked"),
            (
                ("--include-masked",),
                ["/v2", "a/v2", "a/v4", "b/v1", "b/v2", "gone/v1"],
                "2 interpreter runs",
                None,
            ),
        ):
            reads.clear()
            result = cli("exp", "failures", "--db", db_url, "--json", *args)
            assert result.exit_code == 0, result
            assert len(reads) == 1, (args, reads)
            found = sorted(
                f"{Path(r['workspace']).name}/{r['memory_version']}"
                for group in result.json().values()
                for r in group
            )
            assert found == names, (args, found)
            assert (interpreter in result.stderr) if interpreter else ("interpreter" not in result.stderr), (
                result
            )
            assert (masked in result.stderr) if masked else ("masked" not in result.stderr), result
    finally:
        event.remove(Engine, "before_cursor_execute", spy)


def test_one_run_is_a_run_not_runs(ws: Path) -> None:
    """v1-v4 masked, v0 the one run left: the lens said `1 runs (+4 masked)` and hover
    `1 experiments (+4 masked)`."""
    Workspace(ws).memory.set_masked(["v1", "v3", "v4"], masked=True)
    store = ExperimentStore(str(ws.parent / "exp.sqlite"))
    for cache in (WorkspaceCache(ws, lambda: store), WorkspaceCache(ws, lambda: None)):
        lens = workspace_texts(cache)[1]["add_kernel"]
        assert lens == "best 1.00x v0 | latest 1.00x v0 | 1 run (+4 masked), 0 failed", lens
        heading = history_table.history(cache, "add_kernel").markdown.splitlines()[0]
        assert heading == "**add_kernel**: 1 experiment (+4 masked)", heading
    store.close()


def test_the_exp_commands_count_one_experiment_as_one(ws: Path, cli) -> None:  # type: ignore[no-untyped-def]
    """`exp list` titled one row `1 experiments`, and the masked count read `1 experiment(s)`:
    the plural rule of the lenses (engine.counted) words them now."""
    db = str(ws.parent / "exp.sqlite")
    listed = cli("exp", "list", "-w", str(ws), "--db", db, "--text", "attempt v4")
    assert listed.exit_code == 0, listed
    assert listed.stdout.startswith("1 experiment\n"), listed.stdout
    said = cli("exp", "list", "-w", str(ws), "--db", db).stdout
    assert "1 experiment of masked memory versions left out" in said, said


def test_which_versions_are_masked_is_read_by_one_rule_whatever_the_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """What masked_versions_at (the `exp` commands) reads agrees with a scan (the lens, hover),
    and an odd folder hides nothing instead of failing (three findings of a review): a record
    marked masked that the record model rejects was masked for `exp` and not for the lens
    (`4 (+1 masked)` beside `5 runs`); a memory/ that cannot be read (a path too long) raised
    through `exp show`, `exp list -w` and `exp summary -w`; and a relative workspace was read
    from the current folder."""
    import json

    from kernelscope.daemon.engine.workspace.masked import masked_versions, masked_versions_at

    ws = tmp_path / "kernel_opt_vector_add"
    shutil.copytree(EXAMPLES / "vector_add", ws)
    record = ws / "memory" / "v2.json"
    data = json.loads(record.read_text())
    record.write_text(json.dumps({**data, "masked": True, "timestamp": ["2024-01-01"]}))
    assert masked_versions_at(ws) == masked_versions(Workspace(ws).memory.scan()) == set()
    record.write_text(json.dumps({**data, "masked": True}))
    assert masked_versions_at(ws) == masked_versions(Workspace(ws).memory.scan()) == {"v2"}
    assert masked_versions_at(tmp_path / ("x" * 300)) == set()
    monkeypatch.chdir(tmp_path)
    assert masked_versions_at(ws.name) == set()  # relative: not the current folder's


def test_a_ranking_reads_only_the_versions_its_rows_name(ws: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Without a workspace, hiding masked versions read every record file of every workspace
    in the store at each `exp top/list/failures` (a review measured 12,000 files for 300
    workspaces of 40 versions: 0.56 s against 0.22 s with --include-masked); only the versions
    the matching experiments name are read now, and they are hidden just the same."""
    from kernelscope.daemon.engine.memory import core
    from kernelscope.daemon.engine.workspace.masked import hidden_experiments

    store = ExperimentStore(str(ws.parent / "exp.sqlite"))
    read: list[str] = []
    real = core.read_file

    def counted(number: int, path: Path) -> core.RawFile:
        read.append(path.name)
        return real(number, path)

    monkeypatch.setattr(core, "read_file", counted)
    assert hidden_experiments(store) == {str(ws): {"v2"}}
    assert sorted(read) == [f"v{n}.json" for n in range(5)]  # every version has an experiment
    read.clear()
    assert hidden_experiments(store, memory_version="v2") == {str(ws): {"v2"}}
    assert read == ["v2.json"], read  # the rows name v2 alone
    read.clear()
    assert hidden_experiments(store, memory_version="v1") == {str(ws): set()} and read == ["v1.json"]
    store.close()


def test_the_python_api_s_failures_leave_out_and_say_what_exp_failures_does(  # type: ignore[no-untyped-def]
    tmp_path: Path, db_url: str, cli
) -> None:
    """`expdb.failures()` dropped the interpreter runs without a word (on a machine without a
    GPU: every run, so `{}` groups read as "nothing failed") while `exp failures` said
    "N interpreter runs left out", showed the experiments of masked versions that the CLI
    hides, and took no `include_masked`. One engine function now answers both (the same rows,
    the same counts), and the API says what it left out in a LeftOutWarning with its option."""
    import warnings

    a = _with_interpreter_runs(tmp_path, db_url)
    expdb.use_database(db_url)
    try:
        for args, keywords in (
            ((), {}),
            (("--include-interpreter",), {"include_interpreter": True}),
            (("-w", str(a)), {"workspace": str(a)}),
            (("--include-masked",), {"include_masked": True}),
            (
                ("--include-masked", "--include-interpreter"),
                {"include_masked": True, "include_interpreter": True},
            ),
        ):
            result = cli("exp", "failures", "--db", db_url, "--json", *args)
            assert result.exit_code == 0, result
            by_cli = {k: sorted(r["id"] for r in v) for k, v in result.json().items()}
            with warnings.catch_warnings(record=True) as said:
                warnings.simplefilter("always")
                by_api = {k: sorted(r.id for r in v) for k, v in expdb.failures(**keywords).items()}
            assert by_api == by_cli, (args, by_api, by_cli)
            notes = [str(w.message) for w in said if issubclass(w.category, expdb.LeftOutWarning)]
            cli_notes = [line for line in result.stderr.splitlines() if "left out" in line]
            assert len(notes) == len(cli_notes), (args, notes, cli_notes)
            for note, cli_note in zip(notes, cli_notes, strict=True):  # the CLI's words, its own option
                assert note.split(" (")[0] in cli_note, (args, note, cli_note)
                assert "=True shows them" in note, note
        with pytest.warns(expdb.LeftOutWarning) as said:
            expdb.failures()
        assert sorted(str(w.message) for w in said) == [
            "1 interpreter run left out (CPU timings do not rank; include_interpreter=True shows them)",
            "2 experiments of masked memory versions left out (a partial restart hid their experience; "
            "include_masked=True shows them)",
        ], said
    finally:
        expdb.use_database(None)
