"""The one way the benches, the browser tests and the screenshot script start the app:
`streamlit run app.py` on a free localhost port with its own run store, until healthy."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

ROOT = Path(__file__).resolve().parents[1]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class PortTaken(SystemExit):
    """The port free_port() found was taken before the server could bind it."""


def start_on_free_port(runs: Path, *, timeout: float = 120.0, env: dict | None = None,
                       tries: int = 3) -> tuple[subprocess.Popen, int]:
    """`start_server` on a free port, and on another one when something else (a second
    test worker's server, a browser's connection) took it in between."""
    for attempt in range(tries):
        port = free_port()
        try:
            return start_server(runs, port, timeout=timeout, env=env), port
        except PortTaken:
            if attempt == tries - 1:
                raise
    raise AssertionError("unreachable")


def start_server(runs: Path, port: int, *, timeout: float = 120.0,
                 env: dict | None = None) -> subprocess.Popen:
    """The app on localhost:`port` with the run store in `runs`, once /_stcore/health says
    ok; SystemExit with the server's last output if it dies or `timeout` passes first."""
    env = dict(os.environ if env is None else env, DPSYNTH_RUNS=str(runs))
    streamlit = Path(sys.executable).with_name("streamlit")
    log = tempfile.TemporaryFile()  # a file, not a pipe: nobody has to keep reading it
    proc = subprocess.Popen([str(streamlit), "run", "app.py", "--server.port", str(port),
                             "--server.headless", "true", "--browser.gatherUsageStats", "false"],
                            cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT)
    deadline = time.time() + timeout
    while True:
        try:
            if urllib.request.urlopen(f"http://localhost:{port}/_stcore/health",
                                      timeout=1).read() == b"ok":
                return proc
        except OSError:
            pass
        if proc.poll() is not None or time.time() > deadline:
            proc.kill()
            log.seek(0)
            out = log.read().decode(errors="replace")
            taken = f"Port {port} is not available" in out  # streamlit's words
            raise (PortTaken if taken else SystemExit)(
                f"streamlit did not start on port {port}: {out[-2000:]}")
        time.sleep(0.2)


def stop_server(proc: subprocess.Popen) -> None:
    proc.terminate()
    try:
        proc.wait(10)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


@contextmanager
def serve(runs: Path, *, timeout: float = 120.0, env: dict | None = None) -> Iterator[str]:
    """`with serve(folder) as url:` the app's address while the block runs (`env`: extra
    environment variables for the server, e.g. DPSYNTH_INSTRUCTOR_KEY)."""
    proc, port = start_on_free_port(runs, timeout=timeout,
                                    env=None if env is None else {**os.environ, **env})
    try:
        yield f"http://localhost:{port}"
    finally:
        stop_server(proc)
