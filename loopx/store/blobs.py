"""Private content, addressed by sha256, kept only on this host under `.loopx/private/`.

A blob is handed back only when it is what its name says: a regular file (no link followed,
see `fsio`), at most `MAX_BLOB_BYTES`, whose sha256 is its name. Anything else — a swapped,
linked, truncated, oversized or special file — is treated as absent, so the caller shows the
"private content not on this host" marker and never foreign bytes.
"""

from __future__ import annotations

import hashlib
import re
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
        return ref

    def get(self, ref: str) -> bytes | None:
        """The blob's bytes, or None when this host has no intact copy of it."""
        path = self.path(ref)
        try:
            data = fsio.current().read_file(path, limit=MAX_BLOB_BYTES)
        except (FileNotFoundError, NotADirectoryError, fsio.UnsafePath, fsio.TooLarge):
            return None
        if hashlib.sha256(data).hexdigest() != path.parent.name + path.name:
            return None
        return data
