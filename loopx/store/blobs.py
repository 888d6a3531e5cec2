"""Private content, addressed by sha256, kept only on this host under `.loopx/private/`.

A blob is handed back only when it is what its name says: a regular file (no link followed,
see `fsio`), at most `MAX_BLOB_BYTES`, whose sha256 is its name. Anything else — a swapped,
linked, truncated, oversized or special file — is treated as absent, so the caller shows the
"private content not on this host" marker and never foreign bytes.
"""

from __future__ import annotations

import hashlib
import os
import re
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path

from loopx.model.errors import InvalidInput
from loopx.store import fsio

MAX_BLOB_BYTES = 64 * 1024 * 1024
_HEX64 = re.compile(r"^[0-9a-f]{64}$")


def blob_ref(data: bytes) -> str:
    return "sha256:" + hashlib.sha256(data).hexdigest()


def _hex(ref: str) -> str:
    value = ref[7:] if ref.startswith("sha256:") else ref
    if not _HEX64.match(value):
        raise InvalidInput("blob reference must be sha256:<64 hex digits>", code="invalid_ref")
    return value


class BlobStore:
    def __init__(self, base: Path):
        self.base = base
        # Inside `reading()`: each shard folder (`sha256/ab`) read from, as a descriptor
        # (None: not there, or not a plain folder).
        self._shards: dict[str, int | None] | None = None

    def path(self, ref: str) -> Path:
        h = _hex(ref)
        return self.base / "sha256" / h[:2] / h[2:]

    def put(self, data: bytes) -> str:
        ref = blob_ref(data)
        path = self.path(ref)
        if self.get(ref) is None:  # missing, or not what its name says: (re)write it
            fs = fsio.current()
            fs.makedirs(path.parent, sync=True)
            fs.write_atomic(path, data, sync=True)
            self._forget(path.parent.name)  # a shard folder made now is opened anew
        return ref

    def get(self, ref: str) -> bytes | None:
        """The blob's bytes, or None when this host has no intact copy of it."""
        h = _hex(ref)
        data: bytes | None
        try:
            if self._shards is None:
                data = fsio.current().read_file(self.path(ref), limit=MAX_BLOB_BYTES)
            else:  # no path made: a scan reads thousands
                data = self._read_in(h[:2], h[2:])
        except (FileNotFoundError, NotADirectoryError, fsio.UnsafePath, fsio.TooLarge):
            return None
        if data is None or hashlib.sha256(data).hexdigest() != h:
            return None
        return data

    @contextmanager
    def reading(self) -> Iterator[None]:
        """A block that reads many blobs (a scan of every private text): each shard folder
        is opened once, as `get` opens it (no link on the way from the project, a folder
        only), and its blobs are read through that descriptor (no link, regular files of at
        most `MAX_BLOB_BYTES`); the descriptors are closed when it ends. Where each blob
        was opened from the project's folder, a scan of 13,562 blobs took ~0.35 s."""
        if self._shards is not None:  # inside another block: it holds them
            yield
            return
        self._shards = {}
        try:
            yield
        finally:
            shards, self._shards = self._shards, None
            for fd in shards.values():
                if fd is not None:
                    with suppress(OSError):
                        os.close(fd)

    def _read_in(self, shard: str, name: str) -> bytes | None:
        assert self._shards is not None
        if shard not in self._shards:
            try:
                self._shards[shard] = fsio.current().open(
                    self.base / "sha256" / shard, os.O_RDONLY | os.O_DIRECTORY
                )
            except (FileNotFoundError, NotADirectoryError, fsio.UnsafePath):
                self._shards[shard] = None
        fd = self._shards[shard]
        return None if fd is None else fsio.read_regular_at(fd, name, MAX_BLOB_BYTES)

    def _forget(self, shard: str) -> None:
        fd = self._shards.pop(shard, None) if self._shards is not None else None
        if fd is not None:
            with suppress(OSError):
                os.close(fd)
