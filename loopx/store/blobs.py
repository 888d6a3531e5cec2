"""Private content, addressed by sha256, kept only on this host under `.loopx/private/`.

A blob is handed back only when it is what its name says: a regular file (no link followed,
see `fsio`), at most `MAX_BLOB_BYTES`, whose sha256 is its name. Anything else — a swapped,
linked, truncated, oversized or special file — is treated as absent, so the caller shows the
"private content not on this host" marker and never foreign bytes.

Beside the files, each small blob stored is also appended to one pack (`texts.pack` in the
same folder), for the readers of every blob at once (a scan looks for the text of all of
them, in a reading block): one file read instead of four system calls a blob. A blob is on
this host when its file or its record in the pack is intact; a record counts only when its
bytes hash to its name, as a file's. In a reading block the pack is read first, and a small
blob it lacks (stored before there was a pack, or its record torn by a crash) is appended to
it when the block ends; elsewhere the blob's file is read first, and the pack only when the
file is not intact. A pack that is a link, not a regular file or too big is neither read nor
written (one with another hard link is read, its records hashed as ever, never written).
"""

from __future__ import annotations

import hashlib
import os
import re
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path

from loopx.model.errors import InvalidInput
from loopx.model.ids import hex_digests
from loopx.store import fsio

MAX_BLOB_BYTES = 64 * 1024 * 1024
_HEX64 = re.compile(r"^[0-9a-f]{64}$")
PACK = "texts.pack"
PACK_BLOB_BYTES = 64 * 1024  # a larger blob is kept in its own file only
PACK_BYTES = 64 * 1024 * 1024  # a larger pack is not read (its blobs are, one by one)
# A record: this mark, the blob's hex digest, a space, its size, a newline, its bytes.
_MAGIC = b"\nloopx-blob "


def blob_ref(data: bytes) -> str:
    return "sha256:" + hashlib.sha256(data).hexdigest()


def _hex(ref: str) -> str:
    value = ref[7:] if ref.startswith("sha256:") else ref
    if not _HEX64.match(value):
        raise InvalidInput("blob reference must be sha256:<64 hex digits>", code="invalid_ref")
    return value


def _hexes(refs: list[str]) -> list[str]:
    """`_hex` of each of `refs`, checked together (`hex_digests`; one at a time, for its
    error, only when some is not a reference)."""
    digests = [ref[7:] if ref.startswith("sha256:") else ref for ref in refs]
    return digests if hex_digests(digests) else [_hex(ref) for ref in refs]


class BlobStore:
    def __init__(self, base: Path):
        self.base = base
        # Inside `reading()`: the shard folders (`sha256/ab`) held open, by name, and how many
        # it may hold.
        self._shards: dict[str, int] | None = None
        self._room = 0
        # The pack once read (each blob's record in it, by hex digest: kept until a reading
        # block ends), and the small blobs a block read that it lacks.
        self._pack: dict[str, bytes] | None = None
        self._missing: dict[str, bytes] = {}

    def path(self, ref: str) -> Path:
        h = _hex(ref)
        return self.base / "sha256" / h[:2] / h[2:]

    def put(self, data: bytes) -> str:
        ref = blob_ref(data)
        h = ref[7:]
        if self._file(h) is None:  # missing, or not what its name says: (re)write it
            path = self.path(ref)
            fs = fsio.current()
            fs.makedirs(path.parent, sync=True)
            fs.write_atomic(path, data, sync=True)
            if len(data) <= PACK_BLOB_BYTES:
                self._pack_append(pack_record(h, data))
        return ref

    def _pack_append(self, records: bytes) -> None:
        """Append to the pack in one write (`O_APPEND`: a writer beside it appends after it,
        never into it). Best effort: the blobs' own files are what counts."""
        fs = fsio.current()
        with suppress(OSError, fsio.UnsafePath):  # a linked or special pack is left alone
            fd = fs.open(self.base / PACK, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
            try:
                fs.write_all(fd, records)
            finally:
                fs.close(fd)

    def get(self, ref: str) -> bytes | None:
        """The blob's bytes, or None when this host has no intact copy of it: neither its
        file nor its record in the pack. In a reading block the pack is read first (once),
        and a small blob it lacks is added to it when the block ends; elsewhere the file is,
        and the pack only when the file is not intact."""
        h = _hex(ref)
        if self._shards is None:
            data = self._file(h)
            return data if data is not None else self._from_pack(h)
        return self._in_block(h)

    def _in_block(self, h: str) -> bytes | None:
        """`get` in a reading block: the pack first, then the blob's own file."""
        data = self._from_pack(h)
        if data is not None:
            return data
        data = self._file(h)
        if data is not None and len(data) <= PACK_BLOB_BYTES:
            self._missing[h] = pack_record(h, data)
        return data

    def _file(self, h: str) -> bytes | None:
        """The blob's own file, when it is intact."""
        data: bytes | None
        try:
            fd = self._shard(h[:2]) if self._shards is not None else None
            if fd is None:
                data = fsio.current().read_file(self.path(h), limit=MAX_BLOB_BYTES)
            else:  # through the shard's descriptor, no path made: a scan reads thousands
                data = fsio.read_regular_at(fd, h[2:], MAX_BLOB_BYTES)
        except (FileNotFoundError, NotADirectoryError, fsio.UnsafePath, fsio.TooLarge):
            return None
        if data is None or hashlib.sha256(data).hexdigest() != h:
            return None
        return data

    def get_many(self, refs: list[str]) -> dict[str, bytes | None]:
        """`get` of each of `refs` (by the ref as given), in one reading block: the pack is
        read once for all of them."""
        refs = list(refs)
        with self.reading():
            return dict(zip(refs, map(self._in_block, _hexes(refs)), strict=True))

    def _from_pack(self, h: str) -> bytes | None:
        """The blob's record in the pack, when its bytes hash to its name."""
        if self._pack is None:
            data = None
            with suppress(OSError):
                data = fsio.read_regular(self.base / PACK, PACK_BYTES)
            self._pack = pack_index(data) if data else {}
        data = self._pack.get(h)
        if data is None:
            return None
        return data if hashlib.sha256(data).hexdigest() == h else None

    @contextmanager
    def reading(self) -> Iterator[None]:
        """A block that reads many blobs (a scan of every private text): each shard folder
        is opened once, as `get` opens it (no link on the way from the project, a folder
        only), and its blobs are read through that descriptor (no link, regular files of at
        most `MAX_BLOB_BYTES`); the descriptors are closed when it ends. Where each blob
        was opened from the project's folder, a scan of 13,562 blobs took ~0.35 s. A quarter
        of the process's descriptor limit at most are held (256 on Linux's usual 1,024; 64
        where the limit is 256, as on macOS); past that a blob is read the usual way. A
        block is one thread's (the CLI's scan and publish): another thread reading the same
        store meanwhile would read through descriptors the block closes."""
        if self._shards is not None:  # inside another block: it holds them
            yield
            return
        import resource

        soft = resource.getrlimit(resource.RLIMIT_NOFILE)[0]
        self._shards, self._room = {}, 256 if soft == resource.RLIM_INFINITY else soft // 4
        try:
            yield
        finally:
            missing, self._missing, self._pack = self._missing, {}, None
            shards, self._shards = self._shards, None
            for fd in shards.values():
                with suppress(OSError):
                    os.close(fd)
            if missing:  # a store from before the pack, or a record torn: added once
                self._pack_append(b"".join(missing[h] for h in sorted(missing)))

    def _shard(self, shard: str) -> int | None:
        """The descriptor of a shard folder held open for the block, opened now if there is
        room; None when it is not there, not a plain folder (asked again each time: another
        process may make it meanwhile) or there is no room (then the path is read)."""
        assert self._shards is not None
        fd = self._shards.get(shard)
        if fd is None and len(self._shards) < self._room:
            try:
                fd = fsio.current().open(self.base / "sha256" / shard, os.O_RDONLY | os.O_DIRECTORY)
            except (FileNotFoundError, NotADirectoryError, fsio.UnsafePath):
                return None
            self._shards[shard] = fd
        return fd


def pack_record(h: str, data: bytes) -> bytes:
    """One blob as the pack holds it (`h`: its hex digest)."""
    return b"%s%s %d\n%s" % (_MAGIC, h.encode("ascii"), len(data), data)


def pack_index(data: bytes) -> dict[str, bytes]:
    """The bytes of each blob's record in a pack, by hex digest: a record is what lies
    between two record marks (or a mark and the end), taken only when its header is a hex
    digest and a size of at most six digits, its bytes are as many as that size says and no
    more than `PACK_BLOB_BYTES`; of two records of one blob, the later. A torn record, or one
    whose bytes hold the mark, is not taken (its blob is read from its own file); what a
    record holds is not trusted here: `BlobStore.get` hashes it. The pack is cut at every
    mark in one pass (`bytes.split`), not looked through mark by mark: a scan reads 13,455
    records in 8 ms instead of 26."""
    index: dict[bytes, bytes] = {}
    records = data.split(_MAGIC)[:0:-1]  # what precedes the first mark is no record
    while records:  # each let go once read: the pack's bytes are held twice at most
        head, newline, body = records.pop().partition(b"\n")
        digest, space, size = head.partition(b" ")
        if (
            newline
            and space
            and len(digest) == 64
            and 0 < len(size) <= 6
            and size.isdigit()  # ASCII digits only, for bytes
            and len(body) == int(size) <= PACK_BLOB_BYTES
        ):
            index[digest] = body
    named = {d.decode("latin-1"): body for d, body in index.items()}  # any byte a letter
    if not hex_digests(named):  # each a digest in lowercase hex (checked at once)
        named = {d: body for d, body in named.items() if hex_digests([d])}
    return named
