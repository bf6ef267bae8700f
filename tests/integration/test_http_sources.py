"""http(s) trace sources against a real local server (issue #45, item 2): one URL works, a URL is
never listed (listing read a streaming body whole), the size cap applies while the body streams,
and a server that goes silent is one line after TRAINPROF_URL_TIMEOUT_S, not a hang."""

from __future__ import annotations

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from trainprof.cli import main
from trainprof.errors import InputError
from trainprof.jobs.sources import expand

TRACE = Path(__file__).resolve().parents[1] / "data" / "traces" / "idle_causes.json"
PIECE = b" " * 65_536  # whitespace between JSON tokens: valid until the cap stops it


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    endless_bytes = [0]  # what the endless route has sent: the test checks it stopped early

    def log_message(self, *a):  # quiet
        pass

    def _head(self, length: int | None) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        if length is not None:
            self.send_header("Content-Length", str(length))
        else:
            self.send_header("Connection", "close")
        self.end_headers()

    def do_HEAD(self):  # noqa: N802 - http.server's name
        if self.path == "/a.json":
            self._head(TRACE.stat().st_size)
        elif self.path == "/mute.json":
            time.sleep(30)  # accepts, never answers
        else:
            self._head(None)

    def do_GET(self):  # noqa: N802
        if self.path == "/a.json":
            body = TRACE.read_bytes()
            self._head(len(body))
            self.wfile.write(body)
        elif self.path == "/endless.json":  # no length, a body that never ends
            self._head(None)
            self.wfile.write(b'{"traceEvents": [')
            try:
                while self.endless_bytes[0] < 512 << 20:
                    self.wfile.write(PIECE)
                    self.endless_bytes[0] += len(PIECE)
            except OSError:  # the client hung up: what the cap is for
                pass
        elif self.path == "/mute.json":
            time.sleep(30)
        elif self.path == "/silent.json":
            self._head(None)
            self.wfile.write(b'{"traceEvents": [')
            self.wfile.flush()
            time.sleep(30)  # headers and a first piece, then silence
        else:
            self.send_error(404)


@pytest.fixture(scope="module")
def server():
    srv = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    srv.daemon_threads = True
    t = threading.Thread(target=srv.serve_forever, daemon=True)
    t.start()
    yield f"http://127.0.0.1:{srv.server_address[1]}"
    srv.shutdown()


def test_one_http_url_is_analysed_and_named_by_its_url(server, tmp_path):
    out = tmp_path / "o"
    url = f"{server}/a.json"
    assert main(["analyze", url, "--out", str(out), "--no-report"]) == 0
    rank = json.loads((out / "analysis.json").read_text())["ranks"][0]
    assert rank["file"] == url


def test_http_urls_are_never_listed_and_take_no_glob(server):
    # expand() returns the URLs as given without a request: the endless route is not touched
    before = Handler.endless_bytes[0]
    urls = [f"{server}/endless.json", f"{server}/a.json"]
    assert expand(urls) == urls and Handler.endless_bytes[0] == before
    with pytest.raises(InputError, match="names one trace file; globs and folders need"):
        expand([f"{server}/rank*.json"])


def test_an_endless_body_stops_at_the_cap_while_it_streams(server, tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("TRAINPROF_MAX_TRACE_BYTES", "4M")
    Handler.endless_bytes[0] = 0
    rc = main(["analyze", f"{server}/endless.json", f"{server}/a.json", "--out", str(tmp_path / "o"),
               "--no-report", "--jobs", "1"])
    err = capsys.readouterr().err
    assert rc == 0 and "endless.json: more than 4 MiB" in err  # the other rank is analysed
    assert Handler.endless_bytes[0] < 64 << 20  # the server was cut off near the cap, not read whole


@pytest.mark.parametrize("route", ["mute", "silent"])  # never answers; headers and a piece, then silence
def test_a_silent_server_is_one_line_after_the_timeout(server, tmp_path, monkeypatch, capsys, route):
    monkeypatch.setenv("TRAINPROF_URL_TIMEOUT_S", "1")
    t0 = time.monotonic()
    rc = main(["analyze", f"{server}/{route}.json", "--out", str(tmp_path / "o"), "--no-report"])
    took = time.monotonic() - t0
    err = capsys.readouterr().err.strip().splitlines()
    assert rc == 2 and len(err) == 1 and f"{route}.json: no answer within 1 s" in err[0], err
    assert took < 20  # seconds, not the server's 30 s of silence


def test_a_bad_timeout_setting_is_a_usage_error(server, monkeypatch, capsys):
    monkeypatch.setenv("TRAINPROF_URL_TIMEOUT_S", "soon")
    assert main(["analyze", f"{server}/a.json"]) == 2
    assert "TRAINPROF_URL_TIMEOUT_S='soon'" in capsys.readouterr().err
