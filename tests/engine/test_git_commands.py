"""What kernelscope hands git. A record names its commit (`git_commit_hash`), and whoever
wrote the record chose the text: one that git would read as an option must never reach a git
command line (`git show --output=FILE` writes FILE; the editor's background probe reads that
field on every save). And the commits made for the user carry the user's identity."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from kernelscope.daemon.engine import DataError
from kernelscope.daemon.engine.workflows.git import Git, is_revision


def _repo(tmp_path: Path) -> tuple[Git, Path]:
    ws = tmp_path / "ws"
    ws.mkdir()
    kernel = ws / "kernel.py"
    kernel.write_text("x = 1\n")
    subprocess.run(["git", "init", "-q"], cwd=ws, check=True)
    git = Git(ws)
    git.commit_paths([kernel], "v0")
    return git, kernel


def test_a_revision_that_git_would_read_as_an_option_writes_nothing(tmp_path: Path) -> None:
    git, kernel = _repo(tmp_path)
    head = git.head()
    assert head is not None and git.show_file(head, kernel) == "x = 1\n"
    kernel.write_text("x = 2\n")
    assert "+x = 2" in git.diff_file(head, kernel)
    hostile = f"--output={tmp_path / 'written'}"
    assert git.show_file(hostile, kernel) is None
    assert git.diff_file(hostile, kernel) == ""
    with pytest.raises(DataError, match="not a git revision"):
        git.restore_file(hostile, kernel)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ws"]  # (before: written:kernel.py, written)
    assert kernel.read_text() == "x = 2\n"


@pytest.mark.parametrize(
    ("commit", "usable"),
    [
        ("0123abc", True),
        ("HEAD~1", True),
        ("v1", True),
        ("-p", False),
        ("", False),
        ("a b", False),
        ("a\0b", False),
    ],
)
def test_which_revisions_are_put_on_a_command_line(commit: str, usable: bool) -> None:
    assert is_revision(commit) is usable


def _repo_with_no_identity(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A repository (kernel.py, nothing committed) where git knows no user: no global or system
    config, no GIT_AUTHOR_*/GIT_COMMITTER_* in the environment (a fresh CI machine)."""
    empty = tmp_path / "gitconfig"
    empty.write_text("")
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(empty))
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")
    for role in ("AUTHOR", "COMMITTER"):
        for part in ("NAME", "EMAIL"):
            monkeypatch.delenv(f"GIT_{role}_{part}", raising=False)
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "kernel.py").write_text("x = 1\n")
    subprocess.run(["git", "init", "-q"], cwd=ws, check=True)
    return ws


@pytest.mark.parametrize("configured", [True, False])
def test_commits_carry_the_users_identity_where_one_is_configured(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, configured: bool
) -> None:
    """kernelscope's own identity only stands in where git has none (a fresh CI machine);
    before, it overrode the user's user.name/user.email on every iteration's commit."""
    ws = _repo_with_no_identity(tmp_path, monkeypatch)
    if configured:
        subprocess.run(["git", "config", "user.name", "Real User"], cwd=ws, check=True)
        subprocess.run(["git", "config", "user.email", "real@example.com"], cwd=ws, check=True)
    git = Git(ws)
    commit = git.commit_paths([ws / "kernel.py"], "v0")
    author = git.run("log", "-1", "--format=%an <%ae> / %cn <%ce>", commit)
    expected = "Real User <real@example.com>" if configured else "kernelscope <kernelscope@localhost>"
    assert author == f"{expected} / {expected}"


def test_a_commit_of_given_bytes_stands_while_another_git_command_holds_the_index(tmp_path: Path) -> None:
    """The commit of the measured text is made from its own index; the user's index locked by
    another git command (an editor's git integration) at that moment must not turn a made
    commit into an error that has iterate remove the record it names."""
    git, kernel = _repo(tmp_path)
    kernel.write_text("x = 3  # edited after the measurement\n")
    lock = tmp_path / "ws" / ".git" / "index.lock"
    lock.write_text("")
    try:
        commit = git.commit_files([kernel], "v1", {kernel: b"x = 2\n"})
    finally:
        lock.unlink()
    assert git.head() == commit and git.show_file(commit, kernel) == "x = 2\n"
    assert kernel.read_text() == "x = 3  # edited after the measurement\n"


@pytest.mark.parametrize("how", ["timeout", "signal"])
def test_a_git_command_that_dies_silently_says_why(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, how: str
) -> None:
    """A git that hangs past the timeout (killed) or is killed by a signal prints nothing: the
    error said "git commit -q --only failed in WS: " and no reason (seen once under load)."""
    from kernelscope.daemon.engine.workflows import git as git_module

    git, kernel = _repo(tmp_path)
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    fake = bin_dir / "git"
    fake.write_text("#!/bin/sh\nexec sleep 30\n" if how == "timeout" else "#!/bin/sh\nkill -9 $$\n")
    fake.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}:{os.environ['PATH']}")
    monkeypatch.setattr(git_module, "GIT_TIMEOUT_S", 0.5)
    kernel.write_text("x = 2\n")
    with pytest.raises(DataError) as raised:
        git.run("commit", "-q", "-m", "v1")
    said = str(raised.value)
    assert ("no answer in 0.5 s, stopped" if how == "timeout" else "killed by signal 9") in said, said


def test_commits_of_two_workspaces_of_one_repository_at_once_keep_each_others_files(tmp_path: Path) -> None:
    """Two workspaces of one repository (kernels/a, kernels/b: iterations of each, from the
    daemon and an agent's CLI) committing at the same moment: a commit whose temporary index
    was read from HEAD before the other's commit moved it made a tree without the other's
    files (HEAD silently dropped them), or failed with "cannot lock ref 'HEAD'". kernelscope's
    commits of one repository take turns (Git.committing)."""
    import threading

    repo = tmp_path / "repo"
    folders = [repo / "kernels" / name for name in ("a", "b")]
    for folder in folders:
        folder.mkdir(parents=True)
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    (repo / "README.md").write_text("kernels\n")
    Git(repo).commit_paths([repo / "README.md"], "init")
    errors: list[str] = []

    def commit_in(folder: Path) -> None:
        git = Git(folder)
        for n in range(12):
            record = folder / f"v{n}.json"
            record.write_text(f"{n}\n")
            try:
                git.commit_files([record], f"V{n}: {folder.name}", {})
            except DataError as exc:
                errors.append(str(exc))

    threads = [threading.Thread(target=commit_in, args=(folder,)) for folder in folders]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(120)
    assert errors == []
    tree = Git(repo).run("ls-tree", "-r", "--name-only", "HEAD").split()
    assert sorted(tree) == sorted(
        ["README.md", *(f"kernels/{name}/v{n}.json" for name in ("a", "b") for n in range(12))]
    )


def test_a_failed_kernels_side_ref_made_while_a_commit_moves_head_holds_only_the_kernel(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An iteration keeping its failed kernel on a side ref while another writer commits (a
    restart's mask, an iteration of another workspace of the repository): the side commit's
    tree was read from HEAD, and its parent read from HEAD again after the other commit moved
    it, so the failed kernel's commit undid that commit's files beside its parent. The side
    ref is written under the commit lock, as every other kernelscope git write is: the other
    commit waits for it (a hook holds the side ref's write between its tree and its parent
    until the other commit has either committed or found the lock held)."""
    import threading

    from kernelscope.daemon.engine.memory import atomic_io
    from kernelscope.daemon.engine.workflows.git import COMMIT_LOCK_NAME

    git, kernel = _repo(tmp_path)
    record = tmp_path / "ws" / "v1.json"
    record.write_text("{}\n")
    settled = threading.Event()  # the other commit made, or waiting for the lock
    flock = atomic_io._flock

    def other_commit() -> None:
        try:
            Git(tmp_path / "ws").commit_paths([record], "partial restart: masked v1")
        finally:
            settled.set()

    other = threading.Thread(target=other_commit)

    def noting_a_wait(path: Path, timeout: float) -> int:
        if threading.current_thread() is other and path.name == COMMIT_LOCK_NAME:
            try:
                return flock(path, 0)
            except DataError:  # held: the side ref's write goes first
                settled.set()
        return flock(path, timeout)

    monkeypatch.setattr(atomic_io, "_flock", noting_a_wait)
    run = git.run

    def between_tree_and_parent(*args: str, **kwargs: object) -> str:
        out = run(*args, **kwargs)  # type: ignore[arg-type]
        if args[0] == "write-tree":
            other.start()
            assert settled.wait(60)
        return out

    monkeypatch.setattr(git, "run", between_tree_and_parent)
    side = git.store_on_side_ref(kernel, "refs/kernelscope/failed/v2", "V2: FAIL", b"x = 'failed'\n")
    other.join(60)
    changed = git.run("diff", "--name-only", f"{side}~1", side).split()
    assert changed == ["kernel.py"], changed
    assert "v1.json" in git.run("ls-tree", "--name-only", "HEAD").split()


# -- where a workspace's git is: one rule (memory/git_place.py), whoever asks ----------------


def _git(cwd: Path, *args: str) -> str:
    env = {k: v for k, v in os.environ.items() if k != "GIT_DIR"}
    return subprocess.run(
        ["git", *args], cwd=cwd, env=env, capture_output=True, text=True, check=True
    ).stdout.strip()


def _situation(tmp_path: Path, where: str) -> tuple[Path, Path | None]:
    """A workspace (`where` it sits in git) and the git directory git itself names for it."""
    top = tmp_path / "repo"
    top.mkdir()
    (top / "a.txt").write_text("a\n")
    _git(top, "init", "-q")
    _git(top, "add", "a.txt")
    _git(top, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", "a")
    ws = top / "kernels" / "deep" / "vector_add"
    if where == "top":
        ws = top
    elif where == "worktree":
        ws = tmp_path / "episode"
        _git(top, "worktree", "add", "-q", str(ws))
    elif where == "submodule":  # its .git is a file naming ../.git/modules/<name>
        _git(top, "-c", "protocol.file.allow=always", "submodule", "add", "-q", str(top), "sub")
        ws = top / "sub"
    else:
        ws.mkdir(parents=True)
    if where == "empty .git folder":  # (a tool's leftover): git passes over it, to the top's
        (ws / ".git").mkdir()
    if where == "worktree moved away":  # a .git file naming no git directory: git stops there
        (ws / ".git").write_text(f"gitdir: {tmp_path / 'gone'}\n")
        return ws, None
    return ws, Path(_git(ws, "rev-parse", "--absolute-git-dir"))


@pytest.mark.parametrize(
    "where", ["top", "nested", "worktree", "submodule", "empty .git folder", "worktree moved away"]
)
def test_every_reader_names_the_git_directory_git_names(tmp_path: Path, where: str) -> None:
    """The locks (lock_dir_of), the commits' lock and recovery (Git.git_dir), the history
    (gitdata.repo_paths), the workspace's summary and a Ray probe's shared folder all ask
    git_place.find_repository. The locks went into an empty .git folder while git committed
    into the repository above it, and into the repository above a worktree whose git
    directory had gone, where git refuses to work."""
    from kernelscope.daemon.engine.history import gitdata
    from kernelscope.daemon.engine.memory.atomic_io import lock_dir_of
    from kernelscope.daemon.engine.workspace.workspace import Workspace

    ws, named = _situation(tmp_path, where)
    assert Git(ws).git_dir() == named
    paths = gitdata.repo_paths(ws)
    if named is None:
        assert lock_dir_of(ws) == ws / "memory" and paths is None and Workspace(ws).git_root is None
        return
    assert named in lock_dir_of(ws).parents
    assert paths is not None and paths.git_dir == named
    assert paths.toplevel == Path(_git(ws, "rev-parse", "--show-toplevel")) == Workspace(ws).git_root
    assert paths.common_dir == (ws / _git(ws, "rev-parse", "--git-common-dir")).resolve()
    assert paths.prefix == _git(ws, "rev-parse", "--show-prefix")


def test_a_git_dir_in_the_environment_moves_no_commit_away_from_the_locks(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """GIT_DIR exported (a git hook running kernelscope, a shell set up for another repository):
    the locks and the restart's "in git" read the workspace's own .git, but every git command
    followed GIT_DIR: the commit landed in the other repository."""
    _, kernel = _repo(tmp_path)
    ws = tmp_path / "ws"
    other = tmp_path / "other"
    other.mkdir()
    _git(other, "init", "-q")
    monkeypatch.setenv("GIT_DIR", str(other / ".git"))
    kernel.write_text("x = 2\n")
    commit = Git(ws).commit_paths([kernel], "v1")
    assert Git(ws).git_dir() == ws / ".git"
    monkeypatch.delenv("GIT_DIR")
    assert _git(ws, "rev-parse", "HEAD") == commit
    assert subprocess.run(["git", "rev-parse", "-q", "--verify", "HEAD"], cwd=other).returncode != 0


def test_the_history_of_a_workspace_outside_git_starts_no_git(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The history key is read at every cursor move: outside git it ran `git rev-parse` each
    time (the answer "no repository" was not kept, so that a later `git init` is seen)."""
    from kernelscope.daemon.engine.history import gitdata

    ws = tmp_path / "ws"
    (ws / "memory").mkdir(parents=True)
    started: list[object] = []
    real = subprocess.Popen

    def counting(*args: object, **kwargs: object) -> object:
        started.append(args[0])
        return real(*args, **kwargs)  # type: ignore[call-overload]

    monkeypatch.setattr(subprocess, "Popen", counting)
    first = gitdata.history_key(ws, ws / "memory")
    assert gitdata.history_key(ws, ws / "memory") == first and first[0] == "no-git"
    assert started == []
    monkeypatch.setattr(subprocess, "Popen", real)
    _git(ws, "init", "-q")
    assert gitdata.history_key(ws, ws / "memory")[0] != "no-git"  # a later git init is seen


def _vector_add(tmp_path: Path) -> Path:
    import shutil

    from tests.conftest import EXAMPLES

    ws = tmp_path / "ws"
    shutil.copytree(EXAMPLES / "vector_add", ws)
    _git(ws, "init", "-q")
    return ws


def _iterate(ws: Path) -> object:
    from kernelscope.daemon.engine.workflows.iterate import IterateOptions, run_iteration

    db = str(ws.parent / "exp.sqlite")
    options = IterateOptions(
        action_category="x", action_description="x", mode="interpreter", seeds=1, db_url=db
    )
    return run_iteration(ws, options)


def test_iterate_in_a_repository_git_refuses_says_why(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A repository owned by another user (a container's mounted volume): git refuses it. The
    locks and a restart took it for git; iterate said "not a git repository: run git init"."""
    ws = _vector_add(tmp_path)
    monkeypatch.setenv("GIT_TEST_ASSUME_DIFFERENT_OWNER", "1")  # git's own switch for this case
    with pytest.raises(DataError, match="dubious ownership") as raised:
        _iterate(ws)
    assert "git init" not in str(raised.value) and "safe.directory" in str(raised.value)


def test_iterate_where_git_cannot_start_says_so(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """No git program on PATH: FileNotFoundError escaped from the repository check."""
    ws = _vector_add(tmp_path)
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    with pytest.raises(DataError, match=r"could not start git for .*: no git program on PATH"):
        _iterate(ws)


def test_a_ceiling_directory_stops_kernelscope_where_it_stops_git(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """GIT_CEILING_DIRECTORIES above a nested workspace: git finds no repository there, and
    neither do the locks, the history or the commits (before, the file rule walked past it)."""
    from kernelscope.daemon.engine.history import gitdata
    from kernelscope.daemon.engine.memory.atomic_io import lock_dir_of

    ws, _ = _situation(tmp_path, "nested")
    monkeypatch.setenv("GIT_CEILING_DIRECTORIES", str(tmp_path / "repo"))
    assert subprocess.run(["git", "rev-parse", "--git-dir"], cwd=ws, capture_output=True).returncode != 0
    assert Git(ws).git_dir() is None and not Git(ws).is_repository()
    assert lock_dir_of(ws) == ws / "memory" and gitdata.repo_paths(ws) is None
    monkeypatch.setenv("GIT_CEILING_DIRECTORIES", str(ws))  # the workspace itself: still looked above
    assert Git(ws).git_dir() == Path(_git(ws, "rev-parse", "--absolute-git-dir"))


def test_git_settings_passed_in_the_environment_reach_kernelscopes_commits(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """CI and containers set git's configuration in the environment (GIT_CONFIG_COUNT /
    GIT_CONFIG_KEY_n, what `git -c` passes on as GIT_CONFIG_PARAMETERS): they name no other
    repository, and the commit carries that identity, not kernelscope's stand-in."""
    ws = _repo_with_no_identity(tmp_path, monkeypatch)
    monkeypatch.setenv("GIT_CONFIG_COUNT", "1")
    monkeypatch.setenv("GIT_CONFIG_KEY_0", "user.name")
    monkeypatch.setenv("GIT_CONFIG_VALUE_0", "Alice Env")
    monkeypatch.setenv("GIT_CONFIG_PARAMETERS", "'user.email'='alice@example.com'")
    git = Git(ws)
    commit = git.commit_paths([ws / "kernel.py"], "v0")
    assert git.run("log", "-1", "--format=%an <%ae>", commit) == "Alice Env <alice@example.com>"
