"""The loopx error tree.

LoopxError                      every error loopx raises on purpose; `code` is stable
├── InvalidInput                bad arguments or files (exit 2)
│   ├── UnsafePath              unsafe_path: a link, FIFO, device or socket where a file belongs
│   └── TooLarge                file_too_large: a file over the cap of its read
├── NotFound                    unknown goal, todo, gate, evidence, blob (exit 3)
├── Conflict                    a precondition on folded state failed (exit 4):
│                               revision_conflict, operation_id_reused, goal_terminal,
│                               claim_owner_mismatch, dependency_open, gate_pending, …
├── LedgerDamage                ledger_corrupt and friends (exit 5)
├── StorageError                io_error: the disk refused a read or write (exit 5)
├── StoreUnavailable            store_unavailable: the database is down or unreachable (exit 8)
├── CheckFailed                 a `--check` found stale or hand-edited output (exit 6)
└── BoundaryViolation           the public-boundary scan found something (exit 7)

Messages never repeat user input that might be a secret: they name fields, not values.
"""

from __future__ import annotations

from typing import Any


class LoopxError(Exception):
    code = "error"
    exit_code = 1

    def __init__(self, message: str, *, code: str | None = None, **details: Any) -> None:
        super().__init__(message)
        self.message = message
        if code is not None:
            self.code = code
        self.details = details

    def to_dict(self) -> dict[str, Any]:
        return {"code": self.code, "message": self.message, "details": self.details}


class InvalidInput(LoopxError):
    code = "invalid_input"
    exit_code = 2


class UnsafePath(InvalidInput):
    """A symlink, a special file (FIFO, device, socket), a folder where a file belongs, a
    hard-linked file opened for writing, or a path leaving its confined root."""

    code = "unsafe_path"


class TooLarge(InvalidInput):
    """A file larger than the cap of the read that asked for it."""

    code = "file_too_large"


class NotFound(LoopxError):
    code = "not_found"
    exit_code = 3


class Conflict(LoopxError):
    code = "conflict"
    exit_code = 4


class LedgerDamage(LoopxError):
    code = "ledger_corrupt"
    exit_code = 5


class StorageError(LoopxError):
    """An `OSError` (EIO, ENOSPC, EACCES, …) mapped at the store boundary."""

    code = "io_error"
    exit_code = 5


class StoreUnavailable(LoopxError):
    """The store's database cannot be reached (or its schema is newer than this loopx)."""

    code = "store_unavailable"
    exit_code = 8


class CheckFailed(LoopxError):
    code = "check_failed"
    exit_code = 6


class BoundaryViolation(LoopxError):
    code = "public_boundary_violation"
    exit_code = 7


EXIT_CODES = {
    0: "success",
    1: "internal error (a bug: please report it with --debug output)",
    2: "invalid input or usage",
    3: "not found",
    4: "conflict: a precondition on the ledger's state failed",
    5: "ledger damage, or a storage failure (io_error: I/O error, disk full)",
    6: "check failed: output is stale or was edited by hand",
    7: "public boundary violation: the scan found non-public material",
    8: "store unavailable: the database is down, unreachable or needs a newer loopx",
}
