"""What a command prints, without click: JSON, text, documents, a write's receipt and the
findings of a refused boundary scan.

Every-turn calls run without importing click (`loopx.cli.quick`), so printing lives here;
`echo_line` writes a line exactly as `click.echo` does on a standard stream (ANSI styles
kept on a terminal, stripped elsewhere; the stream flushed).
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import IO, TYPE_CHECKING, Any

import orjson

from loopx.cli import terminal

if TYPE_CHECKING:
    from loopx.engine.core import Result


def echo_line(text: str, *, nl: bool = True, err: bool = False) -> None:
    """Print `text` (and a newline) on stdout or stderr as `click.echo` does."""
    stream: IO[str] | None = sys.stderr if err else sys.stdout
    if stream is None:  # no standard stream attached: click prints nothing either
        return
    out = text + "\n" if nl else text
    if not out:
        stream.flush()
        return
    if "\x1b" in out and not _isatty(stream):
        from click._compat import strip_ansi  # only when there is a style to strip

        out = strip_ansi(out)
    stream.write(out)
    stream.flush()


def _isatty(stream: IO[str]) -> bool:
    try:
        return stream.isatty()
    except Exception:  # as click: a stream that cannot say is not a terminal
        return False


def emit(fmt: str, data: Any, text: Callable[[], str] | str | None = None) -> None:
    """Print `data` as canonical JSON, or the text rendering.

    Text mode never prints `data` as JSON, so its strings are first made terminal-safe in
    place (`terminal.field`): every text renderer reads its values from `data`, so no value
    can drive the terminal or break its record onto a second line. The rendered text is
    printed as it is, so the colour a renderer adds on a terminal (`paint`) survives;
    documents and other text go through `echo`.
    """
    if fmt == "json":
        sys.stdout.buffer.write(
            orjson.dumps(data, option=orjson.OPT_SORT_KEYS | orjson.OPT_INDENT_2) + b"\n"
        )
        sys.stdout.flush()
        return
    terminal.fields_in_place(data)
    out = text() if callable(text) else text
    if out is None:
        out = orjson.dumps(data, option=orjson.OPT_SORT_KEYS | orjson.OPT_INDENT_2).decode()
    echo_line(out)


def emit_rows(fmt: str, data: Any, rows: list[Any], line: Callable[[Any], str], empty: str) -> None:
    """Print `data` as JSON, or `rows` (part of `data`) one `line` each, `empty` for none."""
    emit(fmt, data, lambda: "\n".join(line(row) for row in rows) or empty)


def echo(text: str, *, nl: bool = True, err: bool = False) -> None:
    """Print text (a document: its own newlines kept) with nothing a terminal would act on.
    Every text-mode print of loopx goes through here."""
    echo_line(terminal.document(text), nl=nl, err=err)


def receipt_text(result: Result, what: str) -> str:
    """`todo todo-3 recorded at revision 7 (goal g, operation op-1)`, and any tail repair."""
    r = result.receipt
    verb = "recorded" if result.status == "applied" else "already recorded (replayed)"
    named = r.get("subject") and not what.endswith(str(r["subject"]))
    subject = f" {r['subject']}" if named else ""
    lines = [
        f"{what}{subject} {verb} at revision {r['revision']} "
        f"(goal {r['goal_id']}, operation {r['operation_id']})"
    ]
    if result.repair:
        lines.append(
            f"repaired a damaged ledger tail: {result.repair['length']} bytes at offset "
            f"{result.repair['offset']} moved to {result.repair['quarantine']}"
        )
    return "\n".join(lines)


def emit_result(fmt: str, result: Result, what: str) -> None:
    """Print a write's result: its JSON (status, receipt, repair), or its receipt text."""
    emit(fmt, result.to_dict(), lambda: receipt_text(result, what))


def print_findings(findings: list[dict[str, Any]]) -> None:
    """One line per finding (never the matched text), then the commands that clear it."""
    for f in findings:  # a path or id may come from a checkout: one escaped line each
        where = terminal.field(f["path"])
        echo(f"{where}:{f['line']}:{f['column']}: {f['kind']} ({f['encoding']})")
        for command in f.get("clear", []):
            echo(f"  clear with: {terminal.field(command)}")
        if "clear" in f and not f["clear"]:
            echo(
                "  no ledger field or id holds it (generated or configured text): "
                "change the project's configuration, or report it"
            )
