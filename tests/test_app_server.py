"""bench/app_server.py, which every browser test and the workshop bench start the app with:
a port taken between choosing it and the server's bind (another test worker's server, a
browser's connection) costs one more try, not a failed test."""

import socket

import urllib.request

from bench import app_server


def test_a_port_taken_before_the_bind_is_retried_on_another(tmp_path, monkeypatch):
    taken = socket.socket()
    taken.bind(("0.0.0.0", 0))
    taken.listen()
    busy = taken.getsockname()[1]
    ports = [busy]
    real = app_server.free_port

    def first_busy():
        return ports.pop() if ports else real()

    monkeypatch.setattr(app_server, "free_port", first_busy)
    try:
        proc, port = app_server.start_on_free_port(tmp_path / "runs", timeout=120)
        try:
            assert port != busy and proc.poll() is None
            assert urllib.request.urlopen(f"http://localhost:{port}/_stcore/health",
                                          timeout=5).read() == b"ok"
        finally:
            app_server.stop_server(proc)
    finally:
        taken.close()
