"""What a store broker and its clients share: where its socket lives, and the framing.

A PostgreSQL CLI process pays for importing the driver (about 0.1 s of CPU) and for a new
server backend on every call. The broker (`loopx/store/broker.py`) is a per-user process
that keeps both warm and serves the `Store` calls of short-lived loopx processes over a Unix
socket (`loopx/store/broker_client.py`). It is an optimisation only: whenever its socket
cannot be used safely, a client connects to the database itself.

The socket lives in a folder only this user can enter — `$XDG_RUNTIME_DIR/loopx` when that
is a private folder of this user's, else `/tmp/loopx-<uid>` — checked on every use (owned by
this user, mode 0700, not a link). Its name is a hash of everything that decides what the
broker would connect to and how it answers: the store URL, every `PG*` variable (libpq's
password, service file, host …: two users of different credentials never share a broker),
and loopx's version and all the code a broker runs (`code_files`: an upgraded loopx, or a
changed checkout, never talks to an older broker). The name shows none of them.

A message is a JSON header (orjson) and a byte payload, each length-prefixed.
"""

from __future__ import annotations

import hashlib
import os
import stat
import struct
from pathlib import Path
from typing import Any

import orjson

from loopx.store.ledger import Cursor

PROTOCOL = 1
IDLE_SECONDS = 600  # a broker with no client for this long exits (LOOPX_BROKER_IDLE)
# A header carries a goal's events at most (a whole ledger: a write's tail, an import's
# append), a payload a ledger's bytes or a blob: both within the cap of a ledger read.
MAX_HEADER = 1 << 30
MAX_PAYLOAD = 1 << 30
FALLBACK = "/tmp/loopx-{uid}"  # the broker folder where XDG_RUNTIME_DIR is not private
_LENGTHS = struct.Struct(">II")


def enabled() -> bool:
    """Whether short-lived processes use a broker (`LOOPX_PG_BROKER=0` turns it off)."""
    return os.environ.get("LOOPX_PG_BROKER", "1").strip().lower() not in ("0", "off", "no")


def idle_seconds() -> float:
    try:
        return max(0.1, float(os.environ.get("LOOPX_BROKER_IDLE", IDLE_SECONDS)))
    except ValueError:
        return float(IDLE_SECONDS)


def private_dir() -> Path | None:
    """This user's broker folder, created if missing; None when it is not private (then no
    broker is used)."""
    uid = os.getuid()
    runtime = os.environ.get("XDG_RUNTIME_DIR", "")
    if runtime.startswith("/") and _private(Path(runtime), uid, parent=True):
        base = Path(runtime) / "loopx"
    else:
        base = Path(FALLBACK.format(uid=uid))
    try:
        os.mkdir(base, 0o700)
    except FileExistsError:
        pass
    except OSError:
        return None
    return base if _private(base, uid) else None


def _private(path: Path, uid: int, *, parent: bool = False) -> bool:
    """A real folder (not a link) owned by `uid` that nobody else may write (nor, for the
    broker's own folder, enter)."""
    try:
        st = os.lstat(path)
    except OSError:
        return False
    others = 0o022 if parent else 0o077
    return stat.S_ISDIR(st.st_mode) and st.st_uid == uid and not st.st_mode & others


def code_files() -> list[Path]:
    """The modules a broker runs: the store layer (the broker, `PostgresStore`, the ledger
    codec and stamping writer), the errors and ids it answers with, the base of its records
    (`model.records`), and the packages'."""
    package = Path(__file__).resolve().parent.parent
    model = package / "model"
    store = sorted((package / "store").glob("*.py"))
    return [
        package / "__init__.py",
        *store,
        *(model / n for n in ("__init__.py", "errors.py", "ids.py", "records.py")),
    ]


def socket_path(url: str, folder: Path) -> Path:
    """The socket of the broker for `url` under this process's libpq environment."""
    from loopx import __version__

    package = Path(__file__).resolve().parent.parent
    digest = hashlib.sha256()
    digest.update(orjson.dumps([PROTOCOL, __version__, url]))
    for file in code_files():
        name = file.relative_to(package).as_posix()
        digest.update(name.encode() + b"\0" + file.read_bytes())
    pg_env = sorted((k, v) for k, v in os.environ.items() if k.startswith("PG"))
    digest.update(orjson.dumps(pg_env))
    return folder / f"pg-{digest.hexdigest()[:24]}.sock"


def as_list(c: Cursor | None) -> list[Any] | None:
    """A cursor as it travels: [seq, head, offset]."""
    return None if c is None else [c.seq, c.head, c.offset]


def as_cursor(value: Any) -> Cursor | None:
    return None if value is None else Cursor(seq=value[0], head=value[1], offset=value[2])


class TooLargeMessage(ValueError):
    """A message over the broker's caps: refused before a byte is sent."""


def send(sock: Any, header: dict[str, Any], payload: bytes = b"") -> None:
    head = orjson.dumps(header)
    if len(head) > MAX_HEADER or len(payload) > MAX_PAYLOAD:
        raise TooLargeMessage("a store call over the broker's message cap")
    sock.sendall(_LENGTHS.pack(len(head), len(payload)) + head + payload)


def receive(sock: Any) -> tuple[dict[str, Any], bytes] | None:
    """The next message, or None when the peer closed the connection between messages."""
    lengths = _exactly(sock, _LENGTHS.size, eof_ok=True)
    if lengths is None:
        return None
    n_head, n_payload = _LENGTHS.unpack(lengths)
    if n_head > MAX_HEADER or n_payload > MAX_PAYLOAD:
        raise ConnectionError("a broker message over its size cap")
    header = orjson.loads(_exactly(sock, n_head) or b"")
    if not isinstance(header, dict):
        raise ConnectionError("a broker message without a header object")
    return header, (_exactly(sock, n_payload) or b"") if n_payload else b""


def _exactly(sock: Any, n: int, *, eof_ok: bool = False) -> bytes | None:
    chunks: list[bytes] = []
    left = n
    while left:
        chunk = sock.recv(min(left, 1 << 20))
        if not chunk:
            if eof_ok and left == n:
                return None
            raise ConnectionError("the broker connection closed mid-message")
        chunks.append(chunk)
        left -= len(chunk)
    return b"".join(chunks)
