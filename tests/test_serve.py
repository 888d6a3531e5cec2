"""`loopx serve` facing an untrusted HTTP client, tested against a real `loopx serve` process:
the Host header is checked (a DNS-rebinding request is refused with 421), folders are never
listed, no request prints a traceback, and SIGTERM (like Ctrl-C) removes the temporary folder
with the team pages."""

from __future__ import annotations

import http.client
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from loopx.build.serve import host_allowed
from loopx.engine.demo import create_demo

LOOPX = shutil.which("loopx") or str(Path(sys.executable).with_name("loopx"))


class Server:
    def __init__(self, proc: subprocess.Popen[bytes], port: int, tmp: Path) -> None:
        self.proc, self.port, self.tmp = proc, port, tmp

    def request(
        self, path: str, host: str | None = "", method: str = "GET"
    ) -> tuple[int, bytes, dict[str, str]]:
        """Send one request with exactly this Host header ("" = 127.0.0.1:port, None = none)."""
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=10)
        try:
            conn.putrequest(method, path, skip_host=True, skip_accept_encoding=True)
            if host is not None:
                conn.putheader("Host", host or f"127.0.0.1:{self.port}")
            conn.endheaders()
            response = conn.getresponse()
            return response.status, response.read(), dict(response.getheaders())
        finally:
            conn.close()

    def stop(self, sig: int) -> tuple[int, str]:
        self.proc.send_signal(sig)
        _, err = self.proc.communicate(timeout=30)
        return self.proc.returncode, err.decode()


def _interruptible() -> None:
    """Ctrl-C as a terminal delivers it: a test run started in the background of a shell
    without job control inherits SIGINT ignored, and Python then installs no KeyboardInterrupt
    for it, so the server would never see the signal these tests send."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def start(project: Path, tmp: Path) -> Server:
    tmp.mkdir(exist_ok=True)
    proc = subprocess.Popen(
        [LOOPX, "serve", "--root", str(project), "--port", "0", "--head", "none"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env={**os.environ, "TMPDIR": str(tmp)},
        preexec_fn=_interruptible,
    )
    assert proc.stderr is not None
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        line = proc.stderr.readline().decode()
        match = re.search(r"serving on http://127\.0\.0\.1:(\d+)/", line)
        if match:
            return Server(proc, int(match[1]), tmp)
        if not line and proc.poll() is not None:
            break
    proc.kill()
    raise AssertionError(f"loopx serve did not start: {proc.communicate()}")


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("serve") / "proj"
    create_demo(root)
    return root


@pytest.fixture(scope="module")
def server(project: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    srv = start(project, tmp_path_factory.mktemp("tmpdir"))
    yield srv
    if srv.proc.poll() is None:
        code, err = srv.stop(signal.SIGINT)
        assert "Traceback" not in err, err


def test_host_header_names_only_this_server() -> None:
    for ok in ("127.0.0.1:8321", "localhost:8321", "LOCALHOST:8321", "[::1]:8321", "localhost"):
        assert host_allowed(ok, 8321), ok
    for bad in (
        None,
        "",
        "evil.example:8321",
        "localhost:8322",
        "localhost.:8321",
        "127.0.0.1.evil.example:8321",
        "127.0.0.2:8321",
        "[::1]x:8321",
        "[::1",
        "localhost:8321:8321",
        "user@localhost:8321",
    ):
        assert not host_allowed(bad, 8321), bad


def test_a_dns_rebinding_request_is_refused(server: Server) -> None:
    status, body, _ = server.request("/team/index.html")
    assert status == 200 and b"<html" in body
    for host in (f"localhost:{server.port}", f"[::1]:{server.port}"):
        assert server.request("/team/index.html", host)[0] == 200
    # A page on attacker.example whose name now resolves to 127.0.0.1: the browser sends
    # the attacker's name. Refused, for pages, folders, the build counter and HEAD alike.
    for path in ("/team/index.html", "/", "/__loopx__/build", "/team/goals/docs/review.md"):
        status, body, _ = server.request(path, f"attacker.example:{server.port}")
        assert status == 421, (path, status)
        assert b"Documentation pass" not in body and b"launch" not in body
    assert server.request("/team/index.html", f"localhost:{server.port + 1}")[0] == 421
    assert server.request("/team/index.html", None)[0] == 421  # no Host at all
    assert server.request("/team/index.html", "attacker.example", "HEAD")[0] == 421


def test_folders_are_never_listed(server: Server) -> None:
    for path in ("/public/goals/", "/team/goals/", "/team/goals/launch/todos/"):
        status, body, _ = server.request(path)
        assert status == 404, (path, status)
        assert b"Directory listing" not in body and b"launch" not in body
    status, _, headers = server.request("/public/goals")  # redirected to the slash, then 404
    assert status in (301, 404)
    assert server.request("/public/")[0] == 200  # a folder with an index.html serves it


def test_hostile_requests_get_an_error_status_never_a_traceback(server: Server) -> None:
    for path in (
        "/public/%00",
        "/public/index.html%00.txt",
        "/public/%ff%fe%fd",
        "/public/%c0%af",
        "/%2e%2e/%2e%2e/etc/passwd",
        "/../../../etc/passwd",
        "/" + "a" * 5000,
        "/public/" + "x/" * 3000,
        "/public/index.html?" + "q" * 10000,
    ):
        status, body, _ = server.request(path)
        assert status in (200, 400, 404), (path[:40], status)
        assert b"root:" not in body
    assert server.request("/public/index.html", method="POST")[0] == 501
    assert server.proc.poll() is None  # still serving
    assert server.request("/public/index.html")[0] == 200


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGHUP, signal.SIGINT])
def test_the_temporary_folder_goes_on_sigterm_and_sighup_as_on_ctrl_c(
    project: Path, tmp_path: Path, sig: Any
) -> None:
    srv = start(project, tmp_path / "tmp")
    served = list((tmp_path / "tmp").glob("loopx-serve-*"))
    assert len(served) == 1 and (served[0] / "team" / "index.html").is_file()
    assert srv.request("/team/index.html")[0] == 200
    code, err = srv.stop(sig)
    assert code == 0, err
    assert "stopped" in err and "Traceback" not in err
    assert list((tmp_path / "tmp").glob("loopx-serve-*")) == []  # (Jinja2's cache may stay)
