"""`loopx serve`: build into a temporary folder, serve it on 127.0.0.1, rebuild on change.

As in MkDocs: the watchdog handler only sets a flag; a debounced loop calls the same
`build()`; a failed rebuild keeps the last good site and logs why. Served HTML gets a small
script that polls the build number and reloads the page after a rebuild (the built files
themselves stay script-free).

An HTTP client is untrusted input: a request whose Host header is not 127.0.0.1, localhost or
[::1] (with the bound port, or none) is refused with 421, so a page on another site that
rebinds its own name to 127.0.0.1 cannot read the team pages; folders are never listed; a
request that breaks anything (a NUL byte, bad percent-encoding, a huge path) gets a 400 and
never a traceback. The temporary folder is removed on SIGTERM and SIGHUP as on Ctrl-C.
"""

from __future__ import annotations

import contextlib
import functools
import http.server
import signal
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
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


LOCAL_NAMES = ("127.0.0.1", "localhost", "[::1]")


def host_allowed(value: str | None, port: int) -> bool:
    """Whether a Host header names this server: a loopback name, with our port or none."""
    if not value:
        return False
    value = value.strip().lower()
    if value.startswith("["):
        end = value.find("]")
        name, rest = (value[: end + 1], value[end + 1 :]) if end > 0 else (value, "")
    else:
        name, colon, port_text = value.partition(":")
        rest = colon + port_text
    return name in LOCAL_NAMES and rest in ("", f":{port}")


class Handler(http.server.SimpleHTTPRequestHandler):
    """Serves the build folder to this machine only, with live reload in every page."""

    builder: Builder  # the server's, set by `_handler`
    started = False  # whether a status line went out (then no error page can follow)

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def send_response(self, code: int, message: str | None = None) -> None:
        self.started = True
        super().send_response(code, message)

    def list_directory(self, path: Any) -> None:
        self.send_error(404, "Not Found")  # folders are never listed
        return None

    def _guarded(self, serve: Callable[[], None]) -> None:
        if not host_allowed(self.headers.get("Host"), getattr(self.server, "server_port", 0)):
            self.send_error(421, "Misdirected Request: this server answers 127.0.0.1 only")
            return
        try:
            serve()
        except (BrokenPipeError, ConnectionResetError):
            pass  # the client went away
        except Exception as err:  # never a traceback, whatever the request holds
            self.builder.log(f"refused a request that could not be served ({type(err).__name__})")
            if not self.started:
                self.send_error(400, "Bad Request")

    def do_HEAD(self) -> None:  # noqa: N802 (http.server's naming)
        self._guarded(super().do_HEAD)

    def do_GET(self) -> None:  # noqa: N802
        self._guarded(self._get)

    def _get(self) -> None:
        if self.path.startswith("/__loopx__/build"):
            body = f"{self.builder.number}:{self.builder.error or ''}".encode()
            self._send(body, "text/plain; charset=utf-8")
            return
        if self.path in ("", "/"):
            self.send_response(302)
            audience = "public" if (self.builder.out / "public").is_dir() else "team"
            self.send_header("Location", f"/{audience}/index.html")
            self.end_headers()
            return
        path = Path(self.translate_path(self.path))
        if path.suffix == ".html" and path.is_file():
            body = path.read_bytes().replace(b"</body>", RELOAD_SCRIPT + b"</body>", 1)
            self._send(body, "text/html; charset=utf-8")
            return
        super().do_GET()

    def _send(self, body: bytes, content_type: str) -> None:
        """A 200 with `body`, never cached (the next build may change it)."""
        self.send_response(200)
        self.send_header("Content-Type", content_type)
        self.send_header("Cache-Control", "no-store")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


def _handler(builder: Builder) -> type[Handler]:
    return type("Handler", (Handler,), {"builder": builder})


class QuietServer(http.server.ThreadingHTTPServer):
    """Errors that escape a handler (a client hanging up mid-reply) are not printed."""

    daemon_threads = True

    def handle_error(self, request: Any, client_address: Any) -> None:
        pass


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
    return QuietServer(("127.0.0.1", port), handler)


def serve(
    root: Path,
    *,
    port: int,
    audiences: tuple[str, ...],
    head: str | None,
    debounce: float,
    log: Callable[[str], None],
) -> None:
    with _stop_on_signals(), tempfile.TemporaryDirectory(prefix="loopx-serve-") as tmp:
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


class _Stop(KeyboardInterrupt):
    """SIGTERM or SIGHUP: stop as Ctrl-C does, so every `finally` and the temporary folder's
    cleanup run."""


@contextlib.contextmanager
def _stop_on_signals() -> Iterator[None]:
    if threading.current_thread() is not threading.main_thread():
        yield  # signal handlers can only be set from the main thread
        return

    def stop(signum: int, frame: Any) -> None:
        raise _Stop(signum)

    previous = {sig: signal.signal(sig, stop) for sig in (signal.SIGTERM, signal.SIGHUP)}
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
