"""The PostgreSQL store broker: CLI processes share one warm driver and connection.

What must hold: calls through the broker store exactly what a direct connection stores; a
client killed mid-write releases the goal's lock; a broker that dies is `store_unavailable`
and the next call starts another; only a private folder of this user's ever holds a socket;
a different libpq environment gets a broker of its own; an idle broker exits.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from loopx.model.errors import StoreUnavailable
from loopx.store import broker_client, broker_wire
from loopx.store.postgres import PostgresStore
from loopx.store.select import open_store
from tests import pg
from tests.conftest import run_cli
from tests.test_store_contract import envelope

G = "g"
REPO = Path(__file__).resolve().parent.parent


def cli(root: Path, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    """A real `loopx` process (the broker serves processes, not this test's threads)."""
    return subprocess.run(
        [sys.executable, "-m", "loopx", *args, "--root", str(root)],
        capture_output=True,
        text=True,
        env=dict(os.environ, **env),
        check=False,
        timeout=60,
    )


def broker(url: str) -> dict[str, object]:
    return broker_client.status(url)


def wait_for(condition: object, seconds: float = 10.0) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if callable(condition) and condition():
            return True
        time.sleep(0.02)
    return False


def hold_the_lock(project: Path) -> subprocess.Popen[str]:
    """A process that opens the goal's write through the broker and never finishes it
    (returned once it holds the lock; the caller kills it)."""
    holder = (
        "import sys, time; from pathlib import Path; from loopx.store.select import open_store;"
        f"s = open_store(Path({str(project)!r}));"
        f"cm = s.writing({G!r}); w = cm.__enter__(); print('locked', flush=True); time.sleep(60)"
    )
    proc = subprocess.Popen(
        [sys.executable, "-c", holder], stdout=subprocess.PIPE, text=True, env=os.environ.copy()
    )
    assert proc.stdout is not None and proc.stdout.readline().strip() == "locked"
    return proc


@pytest.fixture
def project(tmp_path: Path, pg_empty: str, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("LOOPX_STORE", pg_empty)
    monkeypatch.setenv("LOOPX_NOW", "2026-03-01T12:00:00Z")  # the same bytes either way
    monkeypatch.delenv("LOOPX_PG_BROKER", raising=False)
    root = tmp_path / "proj"
    assert run_cli(["init", "--root", str(root)]).exit_code == 0
    return root


def test_cli_processes_share_one_broker_and_store_what_a_direct_connection_does(
    project: Path, pg_empty: str
) -> None:
    steps = [
        ("goal", "create", "--goal-id", G, "--title", "T", "--objective", "O"),
        ("todo", "add", "--goal-id", G, "--title", "one", "--todo-id", "one"),
        ("todo", "claim", "--goal-id", G, "--todo-id", "one", "--agent-id", "a"),
    ]
    pids = set()
    for n, step in enumerate(steps):
        done = cli(project, *step, "--operation-id", f"op-{n}-{step[1]}")
        assert done.returncode == 0, done.stderr
        found = broker(pg_empty)
        assert found["running"], "the first call started the broker"
        pids.add(found["pid"])
    assert len(pids) == 1, "every later call used the same broker"
    brokered = PostgresStore(pg_empty).raw(G)

    # The same calls on a direct connection (the broker off) store the same bytes.
    pg.reset(pg_empty)
    for n, step in enumerate(steps):
        done = cli(project, *step, "--operation-id", f"op-{n}-{step[1]}", LOOPX_PG_BROKER="0")
        assert done.returncode == 0, done.stderr
    direct = PostgresStore(pg_empty).raw(G)
    assert brokered.count(b"\n") == 3 and brokered == direct

    status = cli(project, "store", "broker", "--format", "json")
    assert status.returncode == 0 and '"running": true' in status.stdout


def test_the_cli_process_does_not_import_the_driver(project: Path) -> None:
    code = (
        "import sys; from pathlib import Path; from loopx.store.select import open_store;"
        f"s = open_store(Path({str(project)!r})); s.goal_ids();"
        "print(type(s).__name__, 'psycopg' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["BrokeredStore", "False"]


def test_a_client_killed_mid_write_releases_the_goal(project: Path, pg_empty: str) -> None:
    proc = hold_the_lock(project)
    try:
        store = open_store(project)
        appended: list[int] = []

        def write() -> None:
            with store.writing(G) as writer:
                appended.extend(e["seq"] for e in writer.append([envelope(1, G)]))

        blocked = threading.Thread(target=write, daemon=True)
        blocked.start()
        blocked.join(0.5)
        assert blocked.is_alive(), "the goal is locked while the other client holds it"
        proc.send_signal(signal.SIGKILL)
        blocked.join(15)
        assert not blocked.is_alive() and appended == [1], "the kill released the lock"
        store.close()
    finally:
        proc.kill()
        proc.communicate()


def _broker_killed_under(project: Path, url: str) -> tuple[broker_client.BrokeredStore, int]:
    """A brokered store that has made a call, its broker SIGKILLed: the next call on it is
    store_unavailable (checked here). Returns the store and the dead broker's pid."""
    store = open_store(project)
    assert isinstance(store, broker_client.BrokeredStore)
    assert store.goal_ids() == []
    first = broker(url)["pid"]
    assert isinstance(first, int)
    os.kill(first, signal.SIGKILL)
    assert wait_for(lambda: not pg.alive(first))
    with pytest.raises(StoreUnavailable) as caught:
        store.goal_ids()
    assert caught.value.code == "store_unavailable"
    return store, first


def test_a_broker_that_dies_is_store_unavailable_and_the_next_call_starts_another(
    project: Path, pg_empty: str
) -> None:
    store, first = _broker_killed_under(project, pg_empty)
    done = cli(project, "goal", "create", "--goal-id", G, "--title", "T", "--objective", "O")
    assert done.returncode == 0, done.stderr
    second = broker(pg_empty)["pid"]
    assert isinstance(second, int) and second != first
    assert PostgresStore(pg_empty).exists(G)


def test_writes_from_several_processes_through_one_broker_stay_gap_free(
    project: Path, pg_empty: str, tmp_path: Path
) -> None:
    worker = REPO / "tests" / "pg_worker.py"
    roots = []
    for n in range(4):
        host = tmp_path / f"host{n}"
        assert run_cli(["init", "--root", str(host)]).exit_code == 0
        roots.append(host)
    procs = [
        subprocess.Popen(
            [sys.executable, str(worker), str(host), G, f"agent{n}", "40"],
            stdout=subprocess.PIPE,
            text=True,
            cwd=REPO,
            env=dict(os.environ, PYTHONPATH=str(REPO)),
        )
        for n, host in enumerate(roots)
    ]
    time.sleep(0.3)
    for host in roots:
        (host / "go").touch()
    counts = [int(p.communicate(timeout=120)[0]) for p in procs]
    assert counts == [40, 40, 40, 40]
    with PostgresStore(pg_empty) as direct:
        report = direct.verify(G)
        seqs = [e["seq"] for e in direct.read(G).events]
    assert report.ok and seqs == list(range(1, 161))


def test_a_newer_schema_is_refused_through_the_broker(project: Path, pg_url: str) -> None:
    conn = pg.admin(pg_url)
    conn.execute("INSERT INTO loopx_schema (version, name) VALUES (%s, 'from the future')", (999,))
    try:
        done = cli(project, "status")
        assert done.returncode == 8 and "store_schema_newer" in done.stderr
        assert "Traceback" not in done.stderr
    finally:
        conn.execute("DELETE FROM loopx_schema WHERE version = 999")
    assert cli(project, "status").returncode == 0, "the next session checks the schema again"


def test_a_folder_others_may_enter_never_holds_a_socket(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, pg_empty: str
) -> None:
    runtime = tmp_path / "runtime"
    runtime.mkdir(mode=0o700)
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(runtime))
    fallback = tmp_path / "fallback-{uid}"
    monkeypatch.setattr(broker_wire, "FALLBACK", str(fallback))
    (runtime / "loopx").mkdir(mode=0o700)
    assert broker_wire.private_dir() == runtime / "loopx"

    (runtime / "loopx").chmod(0o755)  # others may enter
    assert broker_wire.private_dir() is None
    os.rmdir(runtime / "loopx")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir(mode=0o700)
    (runtime / "loopx").symlink_to(elsewhere)  # a link, even to a private folder
    assert broker_wire.private_dir() is None

    runtime.chmod(0o777)  # a runtime folder anyone may write: the fallback is used
    target = Path(str(fallback).format(uid=os.getuid()))
    assert broker_wire.private_dir() == target and (target.stat().st_mode & 0o777) == 0o700
    target.chmod(0o770)
    assert broker_wire.private_dir() is None
    store = broker_client.connect(pg_empty, root=None, cache_dir=None)
    assert store is None, "no private folder: the caller connects directly"
    assert not list(tmp_path.rglob("*.sock"))


def test_each_libpq_environment_and_the_switch(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, project: Path
) -> None:
    folder = tmp_path / "f"
    url = "postgresql://postgres@127.0.0.1/db"
    monkeypatch.delenv("PGAPPNAME", raising=False)
    plain = broker_wire.socket_path(url, folder)
    monkeypatch.setenv("PGAPPNAME", "other")
    assert broker_wire.socket_path(url, folder) != plain
    monkeypatch.setenv("PGPASSWORD", "hunter2secret")
    assert "hunter2secret" not in str(broker_wire.socket_path(url, folder))
    assert broker_wire.socket_path(url + "2", folder) != plain
    monkeypatch.setenv("LOOPX_PG_BROKER", "0")
    assert isinstance(open_store(project), PostgresStore)
    done = cli(project, "store", "broker", "--format", "json")
    assert done.returncode == 0 and '"enabled": false' in done.stdout


def test_an_idle_broker_exits_and_removes_its_socket(
    project: Path, pg_empty: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("LOOPX_BROKER_IDLE", "0.5")
    monkeypatch.setenv("PGAPPNAME", "idle-test")  # a broker of its own
    store = open_store(project)
    assert isinstance(store, broker_client.BrokeredStore)
    store.goal_ids()
    found = broker(pg_empty)
    pid, sock = found["pid"], Path(str(found["socket"]))
    assert isinstance(pid, int) and sock.exists()
    store.close()
    assert wait_for(lambda: not pg.alive(pid)), "the broker left after its idle time"
    assert not sock.exists()


def test_store_broker_stop_and_the_file_store(project: Path, pg_empty: str, tmp_path: Path) -> None:
    assert cli(project, "status").returncode == 0
    pid = broker(pg_empty)["pid"]
    assert isinstance(pid, int)
    done = cli(project, "store", "broker", "--stop")
    assert done.returncode == 0 and "asked to stop" in done.stdout
    assert wait_for(lambda: not pg.alive(pid))
    files = tmp_path / "files"
    assert run_cli(["init", "--root", str(files)], env={"LOOPX_STORE": "file"}).exit_code == 0
    plain = cli(files, "store", "broker", LOOPX_STORE="file")
    assert plain.returncode == 0 and "file store" in plain.stdout


def test_processes_starting_at_once_share_the_one_broker_that_wins(
    project: Path, pg_empty: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PGAPPNAME", "race-test")  # no broker yet for this environment
    assert not broker(pg_empty)["running"]
    code = (
        "import os; from pathlib import Path; from loopx.store.select import open_store;"
        f"s = open_store(Path({str(project)!r})); s.goal_ids();"
        "print(type(s).__name__, s._sock.getpeername())"
    )
    procs = [
        subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
        for _ in range(4)
    ]
    outs = {p.communicate(timeout=60)[0].strip() for p in procs}
    found = broker(pg_empty)
    assert outs == {f"BrokeredStore {found['socket']}"}, "all four went through one socket"
    assert [p.returncode for p in procs] == [0, 0, 0, 0]
    assert broker_client.stop(pg_empty)["stopped"]


def test_a_client_queued_as_the_broker_stops_is_answered(pg_empty: str) -> None:
    """A client that connected just as the broker decided to stop (idle, or SIGTERM) — queued,
    not yet accepted — is answered, not reset (a reset is `store_unavailable` to a CLI call);
    and the socket's name is gone before the broker waits for its sessions, so no client can
    queue behind it meanwhile."""
    import shutil
    import socket
    import tempfile

    from loopx.store.broker import Broker

    folder = Path(tempfile.mkdtemp(prefix="lx-", dir="/tmp"))
    path = folder / "b.sock"
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    server.bind(str(path))
    server.listen(8)
    client = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    client.settimeout(20)
    client.connect(str(path))  # queued: the broker has not accepted it
    stopping = Broker(pg_empty, server, path)
    stopping.stop.set()
    serving = threading.Thread(target=stopping.serve)
    serving.start()
    try:
        broker_wire.send(client, {"op": "goal_ids", "args": {}})
        answer = broker_wire.receive(client)
        assert answer is not None and answer[0] == {"ok": True, "value": []}
        assert not path.exists(), "no new client can queue behind a stopping broker"
    finally:
        client.close()
        serving.join(20)
        server.close()
        shutil.rmtree(folder, ignore_errors=True)
    assert not serving.is_alive()


def test_the_socket_name_follows_all_the_code_a_broker_runs() -> None:
    """A broker left running (up to its idle time) by other code of the same version — a
    development checkout — must not serve a client: its socket's name hashes every loopx
    module the broker runs (the ledger codec and the stamping writer among them), found
    here by importing what a broker imports in a fresh process."""
    code = (
        "import sys; import loopx.store.broker as b; import loopx.store.postgres;"
        "print('\\n'.join(sorted(m.__file__ for n, m in list(sys.modules.items())"
        " if n.startswith('loopx') and getattr(m, '__file__', None))))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    ran = {Path(line).resolve() for line in done.stdout.split()}
    hashed = {p.resolve() for p in broker_wire.code_files()}
    assert ran and ran <= hashed, sorted(str(p) for p in ran - hashed)


def test_a_long_running_process_outlives_its_broker(project: Path, pg_empty: str) -> None:
    """The MCP server and `loopx serve` keep one store for their whole life: when its broker
    goes (killed, or `loopx store broker --stop`), the call in flight is store_unavailable,
    and the next call reaches a broker again (started if need be) instead of failing for as
    long as the process lives."""
    store, first = _broker_killed_under(project, pg_empty)
    assert store.goal_ids() == []
    second = broker(pg_empty)["pid"]
    assert isinstance(second, int) and second != first
    store.close()


def test_a_stopped_broker_rolls_back_a_write_still_open_after_its_grace(
    project: Path, pg_empty: str
) -> None:
    """`loopx store broker --stop` while a client holds a goal's lock and never finishes: the
    broker waits its grace for the session, then exits; the transaction is rolled back (the
    lock goes with it), so a direct writer gets the goal, and nothing of the holder's lands."""
    proc = hold_the_lock(project)
    try:
        pid = broker(pg_empty)["pid"]
        assert isinstance(pid, int) and broker_client.stop(pg_empty)["stopped"]
        assert wait_for(lambda: not pg.alive(pid), 20), "the broker left after its grace"
        with PostgresStore(pg_empty) as direct, direct.writing(G) as writer:
            assert writer.cursor.seq == 0
            assert [e["seq"] for e in writer.append([envelope(1, G)])] == [1]
    finally:
        proc.kill()
        proc.communicate()


def test_a_call_over_the_message_cap_is_refused_before_sending(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = open_store(project)
    assert isinstance(store, broker_client.BrokeredStore)
    monkeypatch.setattr(broker_wire, "MAX_PAYLOAD", 16)
    with pytest.raises(StoreUnavailable) as caught:
        store.put_blob(b"x" * 17)
    assert "LOOPX_PG_BROKER=0" in caught.value.message
    assert store.goal_ids() == [], "the session is still usable: nothing was sent"
    store.close()


def test_a_fifo_where_the_broker_log_goes_means_no_broker_never_a_hang(
    project: Path, pg_empty: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PGAPPNAME", "fifo-test")  # a broker of its own, not started yet
    folder = broker_wire.private_dir()
    assert folder is not None
    log = broker_wire.socket_path(pg_empty, folder).with_suffix(".log")
    os.mkfifo(log)
    try:
        store = open_store(project)
        assert isinstance(store, PostgresStore), "no broker: the process connects itself"
        assert store.goal_ids() == []
        store.close()
    finally:
        log.unlink()
