"""Benchmark (not a test): a workshop room on one server.

Starts `streamlit run app.py` on a free localhost port with a fresh runs folder, then
opens N sessions, one every --arrive-every seconds. By default (--client ws) each is a
light client speaking Streamlit's own websocket protocol (bench/ws_client.py): no
browser runs, so the two cores go to the server and the trainers, not to the simulated
room. --browsers K makes the last K of them real pages (Playwright contexts in Debian's
chromium); --client browser makes all N real pages (the previous benchmark, where 20
Chromium pages took most of the machine). Every session opens the Playground, presses
Train on the digits default (seed = session number + 1, so the runs are distinct and
none reuses the gallery's seed-0 run), follows the page's own 1 s auto-refresh until the
accuracy shows, and keeps its tab open until the whole room is done. Meanwhile late
visitors open the Playground again and again, timing each load. Bounded by --timeout.

Reports: page load p50/p95 (the N first opens, and the late visits made while all N are
open), rerun latency p50/p95 (each auto-refresh of the live panel: request sent → its
run finished, while all N are open), queue wait and completion p50/p95 (from the store:
created → trainer start, created → end), CPU of the server, of the training processes
and of the benchmark's own clients (share of one core), peak memory, the preview error
(predicted vs measured training seconds per run), and whether
anything was lost: every session must own exactly one run, FINISHED, with metrics.json,
and show its accuracy.

    nice -n 10 .venv/bin/python bench/workshop.py [--sessions 20] [--client ws|browser]
        [--browsers 2] [--arrive-every 3] [--timeout 2400] [--query dpmerf_epochs=1]
        [--backend local|ray]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import resource
import shutil
import statistics
import sys
import tempfile
import threading
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench import workshop_browser  # noqa: E402
from bench.app_server import start_on_free_port, stop_server  # noqa: E402
from bench.workshop_browser import finished_accuracy, hold  # noqa: E402
from bench.ws_client import Session  # noqa: E402

TICK = os.sysconf("SC_CLK_TCK")
LOAD_TIMEOUT_S = 300  # a page not usable by then counts as a failed load


def pct(xs: list[float], q: float) -> float:
    """Nearest-rank percentile (q in 0..100); nan for no data."""
    if not xs:
        return float("nan")
    s = sorted(xs)
    return s[min(len(s) - 1, max(0, int(round(q / 100 * len(s) + 0.5)) - 1))]




def proc_stat(pid: int) -> tuple[float, float] | None:
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
        self.server_cpu0 = (proc_stat(pid) or (0.0, 0.0))[0]

    def run(self) -> None:
        while not self.done.wait(1.0):
            server = proc_stat(self.pid)
            if server is None:
                return
            self.cpu[self.pid] = server[0]
            self.peak_server_mb = max(self.peak_server_mb, server[1])
            train_mb = 0.0
            for k in _children(self.pid):
                st = proc_stat(k)
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




async def ws_session(url: str, rec: dict, deadline: float, all_done: asyncio.Event,
                     load_timeout: float, runs: Path) -> None:
    """A light session (bench/ws_client.py): open the Playground, press Train, follow the
    page's own auto-refresh until the accuracy shows; keep the tab open until all are done."""
    try:
        async with Session(url, rec["query"]) as s:
            try:
                rec["load_s"] = await s.load(load_timeout)
                if not s.shows("noise multiplier (sigma)"):
                    raise RuntimeError("the Playground rendered without its derived σ")
                await s.click("Train", load_timeout)
                await s.wait_for_text("started by you", load_timeout)
                rec["clicked"] = time.time()
                shown = await finished_accuracy(runs, rec["seed"], deadline)
                while not any(e.kind == "metric" and shown in e.text.split()
                              for e in s.elements.values()):
                    if time.time() > deadline:
                        raise TimeoutError(f"the page never showed its accuracy {shown}")
                    await asyncio.sleep(0.2)
                rec["seen_done"] = time.time()
                rec["done"] = True
                await hold(all_done, deadline)
            finally:
                rec["reruns"] = s.timings.reruns
                rec["media"] = s.timings.media
    except Exception as e:  # recorded, reported as lost or unfinished below
        rec["error"] = f"{type(e).__name__}: {str(e).splitlines()[0][:160] if str(e) else ''}"
    finally:
        rec["done"] = True


async def ws_load(url: str, timeout: float) -> float:
    """One fresh light session opens the Playground; its load time (inf if it never does)."""
    try:
        async with Session(url, "seed=999") as s:
            took = await s.load(timeout)
            return took if s.button("Train") is not None else float("inf")
    except Exception:
        return float("inf")


async def late_visitor(load_once, loads: list[float], stop: asyncio.Event) -> None:
    """Opens the Playground in a fresh session every few seconds while the room trains."""
    while not stop.is_set():
        loads.append(await load_once())
        try:
            await asyncio.wait_for(stop.wait(), timeout=5.0)
        except asyncio.TimeoutError:
            pass


async def room(url: str, n: int, browsers: int, timeout: float, query: str,
               arrive_every: float, runs: Path) -> tuple[dict, list[float], float, float]:
    """N sessions arrive (the last `browsers` of them real Chromium pages), each trains
    once; late visitors time fresh loads while all N are open."""
    out: dict = {}
    late: list[float] = []
    deadline = time.time() + timeout
    all_done = asyncio.Event()
    pw = browser = None
    if browsers:
        from playwright.async_api import async_playwright

        pw = await async_playwright().start()
        browser = await workshop_browser.launch(pw)
    try:
        # The instructor opens the app first: its first page imports torch and the
        # datasets, as a server started before the room arrives has done already.
        warm = await ws_load(url, LOAD_TIMEOUT_S)
        t0 = time.time()
        tasks = []
        for i in range(n):  # a room arrives over a minute or so, not in one instant
            rec = out[i] = {"query": f"seed={i + 1}{query}", "seed": i + 1,
                            "browser": i >= n - browsers}
            if rec["browser"]:
                coro = workshop_browser.session(browser, f"{url}/?{rec['query']}", rec,
                                                deadline, LOAD_TIMEOUT_S, all_done, runs)
            else:
                coro = ws_session(url, rec, deadline, all_done, LOAD_TIMEOUT_S, runs)
            tasks.append(asyncio.create_task(coro))
            await asyncio.sleep(arrive_every)
        # Late visits start once every session has its page (all N open).
        while sum("load_s" in r or "error" in r for r in out.values()) < n \
                and time.time() < deadline:
            await asyncio.sleep(0.5)
        out["all_open_at"] = time.time()
        stop = asyncio.Event()
        if browsers == n:
            load_once = lambda: workshop_browser.load_once(  # noqa: E731
                browser, f"{url}/?seed=999", LOAD_TIMEOUT_S)
        else:
            load_once = lambda: ws_load(url, LOAD_TIMEOUT_S)  # noqa: E731
        visitor = asyncio.create_task(late_visitor(load_once, late, stop))
        while not all(out[i].get("done") for i in range(n)) and time.time() < deadline:
            await asyncio.sleep(0.5)
        out["all_done_at"] = time.time()
        stop.set()
        all_done.set()
        await asyncio.gather(*tasks, visitor)
        wall = time.time() - t0
    finally:
        if browser is not None:
            await browser.close()
            await pw.stop()
    return out, late, wall, warm


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sessions", type=int, default=20)
    ap.add_argument("--client", choices=["ws", "browser"], default="ws",
                    help="ws: light websocket sessions (default); browser: real Chromium pages")
    ap.add_argument("--browsers", type=int, default=0,
                    help="with --client ws: how many of the sessions are real pages instead")
    ap.add_argument("--timeout", type=float, default=2400.0,
                    help="seconds before unfinished sessions are given up (default 2400)")
    ap.add_argument("--arrive-every", type=float, default=3.0,
                    help="seconds between two sessions opening the app (default 3)")
    ap.add_argument("--query", default="",
                    help="extra Playground URL settings, e.g. dpmerf_epochs=1 (default: "
                         "none, the digits default)")
    ap.add_argument("--backend", choices=["local", "ray"], default="local",
                    help="local: the app's own trainer processes (default); ray: its worker "
                         "hands runs to Ray ($DPSYNTH_RAY_ADDRESS, else a one-machine Ray "
                         "it starts), engine/jobs/ray_backend.py")
    ap.add_argument("--tiny", action="store_true",
                    help="two sessions, one arriving every second, a tiny run each: the "
                         "configuration a test runs so the bench cannot rot")
    args = ap.parse_args()
    if args.tiny:
        args.sessions, args.arrive_every, args.browsers, args.client = 2, 1.0, 0, "ws"
        args.query = args.query or "dpmerf_epochs=1&dpmerf_n_features=300"
        args.timeout = min(args.timeout, 900.0)
    browsers = args.sessions if args.client == "browser" else args.browsers
    if not 0 <= browsers <= args.sessions:
        raise SystemExit(f"--browsers must lie in 0..{args.sessions}. Got {browsers}.")
    if browsers and not os.path.exists(workshop_browser.CHROMIUM):
        raise SystemExit(f"{workshop_browser.CHROMIUM} is absent: install Debian's chromium "
                         "package, or use --client ws without --browsers.")
    # $DPSYNTH_RUNS names the store to use (kept afterwards); else a fresh one, removed.
    keep = bool(os.environ.get("DPSYNTH_RUNS"))
    runs = Path(os.environ["DPSYNTH_RUNS"]) if keep else Path(tempfile.mkdtemp(
        prefix="dpsynth-workshop-"))
    runs.mkdir(parents=True, exist_ok=True)
    env = {k: v for k, v in os.environ.items() if k != "DPSYNTH_RAY_ADDRESS"}
    if args.backend == "ray":
        env["DPSYNTH_RAY_ADDRESS"] = os.environ.get("DPSYNTH_RAY_ADDRESS") or "local"
    server, port = start_on_free_port(runs, env=env)
    meter = CpuMeter(server.pid)
    meter.start()
    me0 = _self_cpu()
    try:
        query = f"&{args.query}" if args.query else ""
        out, late, wall, warm = asyncio.run(room(f"http://localhost:{port}", args.sessions,
                                                 browsers, args.timeout, query,
                                                 args.arrive_every, runs))
        server_share, train_share = meter.shares()
        client_share = (_self_cpu() - me0) / max(1e-9, time.time() - meter.t0)
        from engine.runs import gallery
        from engine.store.runs import RunStore

        store = RunStore(runs, recover=False)  # read before the server stops its worker
        # the precomputed gallery is in the store too; count only the room's own runs
        rows = [r for r in store.list_runs() if r.sweep != gallery.SWEEP]
        store.close()
    finally:
        meter.done.set()
        stop_server(server)
    print(f"backend: {args.backend}")
    report(args, browsers, out, late, wall, warm, rows, runs,
           (server_share, train_share, client_share), meter)
    if not keep:
        shutil.rmtree(runs, ignore_errors=True)


def _self_cpu() -> float:
    """CPU seconds of this process: the light clients and the meter (Chromium not included)."""
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def _p(xs: list[float], unit: str = "s", digits: int = 1) -> str:
    return (f"p50 {pct(xs, 50):.{digits}f} {unit}, p95 {pct(xs, 95):.{digits}f} {unit}, "
            f"max {max(xs, default=float('nan')):.{digits}f} {unit}")


def report(args, browsers: int, out: dict, late: list[float], wall: float, warm: float,
           rows: list, runs: Path, shares: tuple[float, float, float],
           meter: CpuMeter) -> None:
    n = args.sessions
    recs = [out[i] for i in range(n)]
    by_session: dict[str, list] = {}
    for r in rows:
        by_session.setdefault(r.session, []).append(r)

    def metrics_finished(r) -> bool:
        path = runs / r.run_id / "metrics.json"
        return path.exists() and json.loads(path.read_text())["status"] == "finished"

    finished = [r for r in rows if r.status == "finished" and metrics_finished(r)]
    waits = [r.started - r.created for r in finished]
    done = [r.ended - r.created for r in finished]
    train = [r.ended - r.started for r in finished]
    ws_loads = [r["load_s"] for r in recs if "load_s" in r and not r["browser"]]
    page_loads = [r["load_s"] for r in recs if "load_s" in r and r["browser"]]
    opened, closed = out.get("all_open_at", float("inf")), out.get("all_done_at", 0.0)
    reruns = [s for r in recs for t, s in r.get("reruns", ()) if opened <= t <= closed]
    all_reruns = [s for r in recs for _, s in r.get("reruns", ())]
    media = [s for r in recs for s in r.get("media", ())]
    seen = [r for r in recs if "seen_done" in r]
    errors = [r["error"] for r in recs if "error" in r]
    accs = [r.headline for r in finished if r.headline is not None]
    server_share, train_share, client_share = shares

    print(f"{n} sessions: {n - browsers} light websocket clients (bench/ws_client.py) + "
          f"{browsers} Chromium pages; digits DP-MERF defaults"
          f"{' + ' + args.query if args.query else ''}, seeds 1..{n}, one arriving every "
          f"{args.arrive_every:g} s; wall {wall:.0f} s; machine load average at the end "
          f"{os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
    print(f"page load, instructor's first open (imports): {warm:.1f} s")
    if n > browsers:
        print(f"page load, ws sessions arriving  : {_p(ws_loads)} "
              f"({len(ws_loads)} of {n - browsers} loaded)")
    if browsers:
        print(f"page load, Chromium pages arriving: {_p(page_loads)} "
              f"({len(page_loads)} of {browsers} usable)")
    print(f"page load, late visits while all {n} open: {_p(late)} ({len(late)} visits, "
          f"{'Chromium' if browsers == n else 'ws'})")
    if n > browsers:
        print(f"rerun latency (1 s auto-refresh) while all {n} open: {_p(reruns, digits=2)} "
              f"({len(reruns)} reruns; whole bench {_p(all_reruns, digits=2)}); "
              f"images fetched: {len(media)}, {_p(media, digits=2)}")
    print(f"queue wait (created → training)  : {_p(waits, digits=0)}")
    print(f"completion (created → finished)  : {_p(done, digits=0)}; one run trains+evaluates "
          f"in {statistics.median(train) if train else float('nan'):.0f} s (median)")
    print(f"CPU, share of one core           : server {server_share:.2f}, worker + trainers "
          f"{train_share:.2f}, this process (light clients) {client_share:.3f}; peak RSS server "
          f"{meter.peak_server_mb:.0f} MB, worker + trainers {meter.peak_train_mb:.0f} MB")
    unfinished = sum(r.status in ("queued", "running") for r in rows)
    owned = sum(1 for s in by_session if s is not None and len(by_session[s]) == 1)
    print(f"runs: {len(rows)} in the store, {len(finished)} finished with metrics.json, "
          f"{owned} sessions own exactly one run, {len(seen)} pages showed the accuracy; "
          f"statuses {dict(Counter(r.status.value for r in rows))}; "
          f"lost (missing or failed): {n - len(finished) - unfinished}, "
          f"unfinished at the time bound: {unfinished}; accuracy {min(accs, default=0):.3f}–"
          f"{max(accs, default=0):.3f}")
    print_preview_error([runs / r.run_id / "metrics.json" for r in finished])
    for e in sorted(set(errors))[:5]:
        print("session error:", e)


def print_preview_error(paths: list[Path]) -> None:
    """Predicted (the cost preview the trainer saw) vs measured training seconds per run."""
    pairs = []
    for path in paths:
        secs = json.loads(path.read_text()).get("seconds", {})
        if isinstance(secs.get("predicted"), (int, float)) and secs.get("train"):
            pairs.append((path.parent.name, secs["predicted"], secs["train"], secs.get("timed")))
    if not pairs:
        print("preview error: no run recorded its preview")
        return
    errs = [100 * (p - m) / m for _, p, m, _ in pairs]
    within = sum(abs(e) <= 30 for e in errs)
    print(f"preview error (predicted vs measured training s): {within} of {len(pairs)} within "
          f"±30 %, median {statistics.median(errs):+.0f} %; "
          + "; ".join(f"{rid} {p:.1f} vs {m:.1f} ({e:+.0f} %, timed {t or float('nan'):.1f})"
                      for (rid, p, m, t), e in zip(pairs[:8], errs)))


if __name__ == "__main__":
    main()
