"""Private content, addressed by sha256, kept only on this host under `.loopx/private/`."""

from __future__ import annotations

import hashlib
import re
from pathlib import Path

from loopx.model.errors import InvalidInput
from loopx.store import fsio

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
        if not path.exists():
            fs = fsio.current()
            fs.makedirs(path.parent, sync=True)
            fs.write_atomic(path, data, sync=True)
        return ref

    def get(self, ref: str) -> bytes | None:
        try:
            return fsio.current().read_file(self.path(ref))
        except FileNotFoundError:
            return None
