"""Benchmark (not a test): a workshop room on one server.

Starts `streamlit run app.py` on a free localhost port with a fresh runs folder, then
opens N browser sessions, one every --arrive-every seconds (Playwright contexts in
Debian's /usr/bin/chromium; each context is its own Streamlit session). Every session opens the Playground, waits
until it is usable, and presses Train on the digits default (seed = session number, so
the runs are distinct and none is reused). While the runs queue and train, late
visitors open the Playground again and again, timing each load. Bounded by --timeout.

Reports: page load p50/p95 (the N first opens, and the late visits made while N
sessions are open and training), queue wait and completion p50/p95 (from the store:
created → trainer start, created → end), CPU of the server process and of the training
processes (share of one core), peak memory, and whether anything was lost: every
session must own exactly one run, FINISHED, with metrics.json, and show its accuracy.

    nice -n 10 .venv/bin/python bench/workshop.py [--sessions 20] [--arrive-every 3]
                                                  [--timeout 2400] [--query dpmerf_epochs=1]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

CHROMIUM = "/usr/bin/chromium"
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
        "--disable-component-update", "--disable-sync", "--no-first-run",
        "--disable-dev-shm-usage"]
TICK = os.sysconf("SC_CLK_TCK")
LOAD_TIMEOUT_S = 300  # a page not usable by then counts as a failed load


def pct(xs: list[float], q: float) -> float:
    """Nearest-rank percentile (q in 0..100); nan for no data."""
    if not xs:
        return float("nan")
    s = sorted(xs)
    return s[min(len(s) - 1, max(0, int(round(q / 100 * len(s) + 0.5)) - 1))]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _proc_stat(pid: int) -> tuple[float, float] | None:
    """(CPU seconds so far, RSS MB) of one process, None when it is gone."""
    try:
        f = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return (int(f[11]) + int(f[12])) / TICK, int(f[21]) * os.sysconf("SC_PAGE_SIZE") / 2**20


def _children(pid: int) -> list[int]:
    out = []
    try:
        kids = Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
    except OSError:
        return out
    for k in map(int, kids):
        out += [k, *_children(k)]
    return out


class CpuMeter(threading.Thread):
    """Samples the server process and its descendants (worker, trainers) once a second."""

    def __init__(self, pid: int) -> None:
        super().__init__(daemon=True)
        self.pid = pid
        self.cpu: dict[int, float] = {}
        self.peak_server_mb = self.peak_train_mb = 0.0
        self.done = threading.Event()
        self.t0 = time.time()
        self.server_cpu0 = (_proc_stat(pid) or (0.0, 0.0))[0]

    def run(self) -> None:
        while not self.done.wait(1.0):
            server = _proc_stat(self.pid)
            if server is None:
                return
            self.cpu[self.pid] = server[0]
            self.peak_server_mb = max(self.peak_server_mb, server[1])
            train_mb = 0.0
            for k in _children(self.pid):
                st = _proc_stat(k)
                if st is not None:
                    self.cpu[k] = st[0]
                    train_mb += st[1]
            self.peak_train_mb = max(self.peak_train_mb, train_mb)

    def shares(self) -> tuple[float, float]:
        """(server, training processes) CPU as a share of one core since the start."""
        wall = max(1e-9, time.time() - self.t0)
        server = self.cpu.get(self.pid, self.server_cpu0) - self.server_cpu0
        others = sum(v for k, v in self.cpu.items() if k != self.pid)
        return server / wall, others / wall


def start_server(runs: Path, port: int) -> subprocess.Popen:
    env = dict(os.environ, DPSYNTH_RUNS=str(runs))
    streamlit = Path(sys.executable).with_name("streamlit")
    proc = subprocess.Popen([str(streamlit), "run", "app.py", "--server.port", str(port),
                             "--server.headless", "true"], cwd=ROOT, env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.time() + 120
    while True:
        try:
            if urllib.request.urlopen(f"http://localhost:{port}/_stcore/health",
                                      timeout=1).read() == b"ok":
                return proc
        except OSError:
            pass
        if proc.poll() is not None or time.time() > deadline:
            proc.kill()
            raise SystemExit(f"streamlit did not start on port {port}")
        time.sleep(0.3)


async def open_playground(page, url: str) -> float:
    """Seconds until the Playground is usable: Train enabled and the derived σ shown."""
    from playwright.async_api import expect

    t0 = time.perf_counter()
    await page.goto(url, wait_until="domcontentloaded", timeout=LOAD_TIMEOUT_S * 1000)
    await expect(page.get_by_role("button", name="Train", exact=True)).to_be_enabled(
        timeout=LOAD_TIMEOUT_S * 1000)
    await expect(page.get_by_text("noise multiplier (sigma)")).to_be_visible(
        timeout=LOAD_TIMEOUT_S * 1000)
    return time.perf_counter() - t0


async def session(browser, url: str, seed: int, out: dict, deadline: float,
                  query: str) -> None:
    from playwright.async_api import expect

    ctx = await browser.new_context(viewport={"width": 1280, "height": 1600})
    page = await ctx.new_page()
    rec = out.setdefault(seed, {})
    try:
        rec["load_s"] = await open_playground(page, f"{url}/?seed={seed}{query}")
        # A click that lands while the page is still redrawing can be dropped: press
        # again (while Train is enabled) until the run shows up, "started by you".
        train = page.get_by_role("button", name="Train", exact=True)
        for _ in range(5):
            if await train.is_enabled():
                await train.click()
            try:
                await expect(page.get_by_text("started by you").first).to_be_visible(
                    timeout=60_000)
                break
            except AssertionError:
                continue
        rec["clicked"] = time.time()
        left = max(1.0, deadline - time.time())
        await expect(page.get_by_text("Downstream accuracy")).to_be_visible(
            timeout=left * 1000)
        rec["seen_done"] = time.time()
    except Exception as e:  # recorded, reported as lost or unfinished below
        rec["error"] = f"{type(e).__name__}: {str(e).splitlines()[0][:160]}"
    finally:
        out[seed] = rec
        await ctx.close()


async def late_visitor(browser, url: str, loads: list[float], stop: asyncio.Event) -> None:
    """Opens the Playground in a fresh session every few seconds while the room trains."""
    while not stop.is_set():
        ctx = await browser.new_context(viewport={"width": 1280, "height": 1600})
        try:
            loads.append(await open_playground(await ctx.new_page(), f"{url}/?seed=999"))
        except Exception:
            loads.append(float("inf"))  # a load that never completed counts as the worst
        finally:
            await ctx.close()
        try:
            await asyncio.wait_for(stop.wait(), timeout=5.0)
        except asyncio.TimeoutError:
            pass


async def room(url: str, n: int, timeout: float, query: str, arrive_every: float
               ) -> tuple[dict, list[float], float, float]:
    from playwright.async_api import async_playwright

    out: dict = {}
    late: list[float] = []
    deadline = time.time() + timeout
    async with async_playwright() as p:
        browser = await p.chromium.launch(executable_path=CHROMIUM, args=ARGS, headless=True)
        try:
            # The instructor opens the app first: its first page imports torch and the
            # datasets, as a server started before the room arrives has done already.
            warm = await browser.new_context()
            warm_s = await open_playground(await warm.new_page(), f"{url}/?seed=998")
            await warm.close()
            t0 = time.time()
            sessions = []
            for i in range(n):  # a room arrives over a minute or so, not in one instant
                sessions.append(asyncio.create_task(
                    session(browser, url, i, out, deadline, query)))
                await asyncio.sleep(arrive_every)
            # Late visits start once every session has its page (all N open).
            while len([r for r in out.values() if "load_s" in r or "error" in r]) < n \
                    and time.time() < deadline:
                await asyncio.sleep(0.5)
            stop = asyncio.Event()
            visitor = asyncio.create_task(late_visitor(browser, url, late, stop))
            await asyncio.gather(*sessions)
            stop.set()
            await visitor
            wall = time.time() - t0
        finally:
            await browser.close()
    return out, late, wall, warm_s


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sessions", type=int, default=20)
    ap.add_argument("--timeout", type=float, default=2400.0,
                    help="seconds before unfinished sessions are given up (default 2400)")
    ap.add_argument("--arrive-every", type=float, default=3.0,
                    help="seconds between two sessions opening the app (default 3)")
    ap.add_argument("--query", default="",
                    help="extra Playground URL settings, e.g. dpmerf_epochs=1 (default: "
                         "none, the digits default)")
    args = ap.parse_args()
    if not os.path.exists(CHROMIUM):
        raise SystemExit(f"{CHROMIUM} is absent: install Debian's chromium package.")
    runs = Path(tempfile.mkdtemp(prefix="dpsynth-workshop-"))
    port = free_port()
    server = start_server(runs, port)
    meter = CpuMeter(server.pid)
    meter.start()
    try:
        query = f"&{args.query}" if args.query else ""
        out, late, wall, warm = asyncio.run(room(f"http://localhost:{port}", args.sessions,
                                           args.timeout, query, args.arrive_every))
        server_share, train_share = meter.shares()
        from engine import gallery
        from engine.store import RunStore

        store = RunStore(runs, recover=False)  # read before the server stops its worker
        # the precomputed gallery is in the store too; count only the room's own runs
        rows = [r for r in store.list_runs() if r.sweep != gallery.SWEEP]
    finally:
        meter.done.set()
        server.terminate()
        try:
            server.wait(30)
        except subprocess.TimeoutExpired:
            server.kill()

    by_session: dict[str, list] = {}
    for r in rows:
        by_session.setdefault(r.session, []).append(r)
    finished = [r for r in rows if r.status == "finished"
                and (runs / r.run_id / "metrics.json").exists()
                and json.loads((runs / r.run_id / "metrics.json").read_text())["status"] == "finished"]
    waits = [r.started - r.created for r in finished]
    done = [r.ended - r.created for r in finished]
    train = [r.ended - r.started for r in finished]
    loads = [r["load_s"] for r in out.values() if "load_s" in r]
    seen = [r for r in out.values() if "seen_done" in r]
    errors = [r["error"] for r in out.values() if "error" in r]
    accs = [r.headline for r in finished if r.headline is not None]
    store.close()

    print(f"{args.sessions} browser sessions (Playwright contexts in {CHROMIUM}), digits "
          f"DP-MERF defaults{' + ' + args.query if args.query else ''}, seeds "
          f"0..{args.sessions - 1}; wall {wall:.0f} s; "
          f"machine load average at the end {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
    print(f"page load, instructor's first open (imports): {warm:.1f} s")
    print(f"page load, N sessions arriving   : p50 {pct(loads, 50):.1f} s, "
          f"p95 {pct(loads, 95):.1f} s, max {max(loads, default=float('nan')):.1f} s "
          f"({len(loads)} of {args.sessions} loaded)")
    print(f"page load, late visits while open: p50 {pct(late, 50):.1f} s, "
          f"p95 {pct(late, 95):.1f} s, max {max(late, default=float('nan')):.1f} s "
          f"({len(late)} visits)")
    print(f"queue wait (created → training)  : p50 {pct(waits, 50):.0f} s, "
          f"p95 {pct(waits, 95):.0f} s")
    print(f"completion (created → finished)  : p50 {pct(done, 50):.0f} s, "
          f"p95 {pct(done, 95):.0f} s; one run trains+evaluates in "
          f"{statistics.median(train) if train else float('nan'):.0f} s (median)")
    print(f"CPU, share of one core           : server {server_share:.2f}, "
          f"worker + trainers {train_share:.2f}; peak RSS server {meter.peak_server_mb:.0f} MB, "
          f"worker + trainers {meter.peak_train_mb:.0f} MB")
    unfinished = sum(r.status in ("queued", "running") for r in rows)
    owned = sum(1 for s in by_session if s is not None and len(by_session[s]) == 1)
    print(f"runs: {len(rows)} in the store, {len(finished)} finished with metrics.json, "
          f"{owned} sessions own exactly one run, {len(seen)} pages showed the accuracy; "
          f"statuses {dict(Counter(r['status'] for r in rows))}; "
          f"lost (missing or failed): {args.sessions - len(finished) - unfinished}, "
          f"unfinished at the time bound: {unfinished}; accuracy {min(accs, default=0):.3f}–"
          f"{max(accs, default=0):.3f}")
    for e in sorted(set(errors))[:5]:
        print("session error:", e)
    shutil.rmtree(runs, ignore_errors=True)


if __name__ == "__main__":
    main()
