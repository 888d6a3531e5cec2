"""`loopx scan` keeps the ledger's forbidden strings between runs, in the private partition."""

from __future__ import annotations

import os
import threading
from pathlib import Path

from loopx.build import scancache
from loopx.engine import goals, todos
from loopx.store.filestore import FileStore
from tests.conftest import make_ctx, run_cli


def _project(tmp_path: Path) -> tuple[Path, Path]:
    root = tmp_path / "p"
    root.mkdir()
    assert run_cli(["init", "--root", str(root)]).exit_code == 0
    ctx = make_ctx(FileStore(root), agent="maintainer")
    goals.create_goal(ctx, "g", title="Team goal", objective="Quietly renegotiate the vendor deal")
    folder = tmp_path / "pages"
    folder.mkdir()
    (folder / "a.html").write_text("<p>Nothing to see here.</p>\n")
    return root, folder


def test_cache_is_reused_and_follows_the_ledger(tmp_path: Path) -> None:
    root, folder = _project(tmp_path)
    assert run_cli(["scan", str(folder), "--root", str(root)]).exit_code == 0
    cache = root / ".loopx/private/cache/scan/forbidden.json"
    assert cache.is_file()
    store = FileStore(root)
    cached = scancache.load_forbidden(root)
    assert cached is not None and "Quietly renegotiate the vendor deal" in cached[1].texts

    # A new team todo changes the ledger: the next scan looks for its text too.
    ctx = make_ctx(store, agent="maintainer")
    todos.add_todo(ctx, "g", title="Sign the exclusive supplier contract", todo_id="deal")
    (folder / "b.html").write_text("<p>Sign the exclusive supplier contract</p>\n")
    found = run_cli(["scan", str(folder), "--root", str(root)])
    assert found.exit_code == 7 and "non-public-text" in found.stdout


def test_a_planted_cache_is_never_followed(tmp_path: Path) -> None:
    root, folder = _project(tmp_path)
    elsewhere = tmp_path / "elsewhere.json"
    elsewhere.write_text('{"key": [], "texts": [], "ids": []}')
    cache = root / ".loopx/private/cache/scan/forbidden.json"
    cache.parent.mkdir(parents=True)
    cache.symlink_to(elsewhere)
    (folder / "c.html").write_text("<p>Quietly renegotiate the vendor deal</p>\n")
    found = run_cli(["scan", str(folder), "--root", str(root)])
    assert found.exit_code == 7  # the link was not read as the (empty) forbidden set
    assert elsewhere.read_text() == '{"key": [], "texts": [], "ids": []}'


def test_a_planted_fifo_never_hangs_the_scan(tmp_path: Path) -> None:
    root, folder = _project(tmp_path)
    cache = root / ".loopx/private/cache/scan/forbidden.json"
    cache.parent.mkdir(parents=True)
    os.mkfifo(cache)
    loaded: list[object] = []
    reader = threading.Thread(
        target=lambda: loaded.append(scancache.load_forbidden(root)),
        daemon=True,
    )
    reader.start()
    reader.join(10)
    hung = reader.is_alive()
    if hung:  # blocked opening the FIFO: release it before failing
        os.close(os.open(cache, os.O_WRONLY | os.O_NONBLOCK))
        reader.join(10)
    assert not hung and loaded == [None]
    assert run_cli(["scan", str(folder), "--root", str(root)]).exit_code == 0
    assert cache.is_file()  # the FIFO was replaced by the rebuilt cache, never read
