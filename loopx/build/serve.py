"""`loopx serve`: build into a temporary folder, serve it on 127.0.0.1, rebuild on change.

As in MkDocs: the watchdog handler only sets a flag; a debounced loop calls the same
`build()`; a failed rebuild keeps the last good site and logs why. Served HTML gets a small
script that polls the build number and reloads the page after a rebuild (the built files
themselves stay script-free).
"""

from __future__ import annotations

import functools
import http.server
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from loopx.build.pipeline import build
from loopx.build.work import BuildCache
from loopx.model.errors import LoopxError

RELOAD_SCRIPT = (
    b"<script>(function(){var v=null;function p(){fetch('/__loopx__/build').then("
    b"function(r){return r.text()}).then(function(t){if(v!==null&&t!==v){location.reload()}"
    b"v=t}).catch(function(){}).finally(function(){setTimeout(p,700)})}p()})();</script>"
)


class Builder:
    """Runs builds and remembers the last good one (shared with the HTTP handler)."""

    def __init__(self, root: Path, out: Path, log: Callable[[str], None], **options: Any):
        self.root, self.out, self.log, self.options = root, out, log, options
        self.cache = BuildCache()  # unchanged goals are not re-rendered or re-scanned
        self.number = 0
        self.error: str | None = None
        self.changed = threading.Event()
        self.lock = threading.Lock()

    def rebuild(self) -> bool:
        started = time.perf_counter()
        try:
            result = build(self.root, self.out, cache=self.cache, **self.options)
        except LoopxError as err:
            self.error = f"[{err.code}] {err.message}"
            self.log(f"rebuild failed, still serving the last good build: {self.error}")
            return False
        except Exception as err:  # keep serving whatever happens
            self.error = f"{type(err).__name__}"
            self.log(f"rebuild failed, still serving the last good build: {self.error}")
            return False
        assert result.report is not None
        with self.lock:
            self.number += 1
            self.error = None
        self.log(
            f"build {self.number}: {len(result.report.written)} file(s) written in "
            f"{time.perf_counter() - started:.2f}s"
        )
        return True


def _handler(builder: Builder) -> type[http.server.SimpleHTTPRequestHandler]:
    class Handler(http.server.SimpleHTTPRequestHandler):
        def log_message(self, format: str, *args: Any) -> None:
            pass

        def do_GET(self) -> None:  # noqa: N802 (http.server's naming)
            if self.path.startswith("/__loopx__/build"):
                body = f"{builder.number}:{builder.error or ''}".encode()
                self.send_response(200)
                self.send_header("Content-Type", "text/plain; charset=utf-8")
                self.send_header("Cache-Control", "no-store")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)
                return
            if self.path in ("", "/"):
                self.send_response(302)
                self.send_header(
                    "Location",
                    "/public/index.html"
                    if (builder.out / "public").is_dir()
                    else "/team/index.html",
                )
                self.end_headers()
                return
            path = Path(self.translate_path(self.path))
            if path.suffix == ".html" and path.is_file():
                body = path.read_bytes().replace(b"</body>", RELOAD_SCRIPT + b"</body>", 1)
                self.send_response(200)
                self.send_header("Content-Type", "text/html; charset=utf-8")
                self.send_header("Cache-Control", "no-store")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)
                return
            super().do_GET()

    return Handler


def watch(builder: Builder, debounce: float, stop: threading.Event) -> Any:
    """Start a watchdog observer on the ledgers; its handler only sets a flag."""
    from watchdog.events import FileSystemEvent, FileSystemEventHandler
    from watchdog.observers import Observer

    class OnChange(FileSystemEventHandler):
        def on_any_event(self, event: FileSystemEvent) -> None:
            if str(event.src_path).endswith(".jsonl"):
                builder.changed.set()

    observer = Observer()
    goals = builder.root / ".loopx" / "goals"
    goals.mkdir(parents=True, exist_ok=True)
    observer.schedule(OnChange(), str(goals), recursive=True)
    observer.start()
    from loopx.store.select import open_store

    store = open_store(builder.root)
    if hasattr(store, "listen"):  # PostgreSQL: appends from any host arrive by NOTIFY
        threading.Thread(
            target=store.listen,
            args=(lambda _goal: builder.changed.set(), stop),
            name="loopx-listen",
            daemon=True,
        ).start()

    def loop() -> None:
        while not stop.is_set():
            if builder.changed.wait(timeout=0.2):
                time.sleep(debounce)  # let a burst of appends settle
                builder.changed.clear()
                builder.rebuild()

    threading.Thread(target=loop, name="loopx-rebuild", daemon=True).start()
    return observer


def make_server(builder: Builder, port: int) -> http.server.ThreadingHTTPServer:
    handler = functools.partial(_handler(builder), directory=str(builder.out))
    return http.server.ThreadingHTTPServer(("127.0.0.1", port), handler)


def serve(
    root: Path,
    *,
    port: int,
    audiences: tuple[str, ...],
    head: str | None,
    debounce: float,
    log: Callable[[str], None],
) -> None:
    with tempfile.TemporaryDirectory(prefix="loopx-serve-") as tmp:
        builder = Builder(root, Path(tmp), log, audiences=audiences, head=head)
        if not builder.rebuild():
            raise LoopxError(f"the first build failed: {builder.error}", code="build_failed")
        stop = threading.Event()
        observer = watch(builder, debounce, stop)
        server = make_server(builder, port)
        log(f"serving on http://127.0.0.1:{server.server_address[1]}/ (Ctrl-C to stop)")
        try:
            server.serve_forever()
        except KeyboardInterrupt:
            log("stopped")
        finally:
            stop.set()
            observer.stop()
            observer.join(timeout=2)
            server.server_close()
