"""Real-browser sessions for bench/workshop.py: Playwright contexts in Debian's chromium.

Each context is its own Streamlit session. A page is "loaded" when the Playground is
usable: Train enabled and the derived σ shown. Heavy (a Chromium renderer per page): use
a few of them next to the light websocket sessions of bench/ws_client.py, not twenty.
"""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

CHROMIUM = "/usr/bin/chromium"
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
        "--disable-component-update", "--disable-sync", "--no-first-run",
        "--disable-dev-shm-usage"]
VIEWPORT = {"width": 1280, "height": 1600}


async def launch(playwright):
    return await playwright.chromium.launch(executable_path=CHROMIUM, args=ARGS,
                                            headless=True)


async def open_playground(page, url: str, timeout: float) -> float:
    """Seconds until the Playground is usable: Train enabled and the derived σ shown."""
    from playwright.async_api import expect

    t0 = time.perf_counter()
    await page.goto(url, wait_until="domcontentloaded", timeout=timeout * 1000)
    await expect(page.get_by_role("button", name="Train", exact=True)).to_be_enabled(
        timeout=timeout * 1000)
    await expect(page.get_by_text("noise multiplier (sigma)")).to_be_visible(
        timeout=timeout * 1000)
    return time.perf_counter() - t0


async def load_once(browser, url: str, timeout: float) -> float:
    """One fresh session opens the Playground; its load time (inf when it never loads)."""
    ctx = await browser.new_context(viewport=VIEWPORT)
    try:
        return await open_playground(await ctx.new_page(), url, timeout)
    except Exception:  # a load that never completed counts as the worst
        return float("inf")
    finally:
        await ctx.close()


async def session(browser, url: str, rec: dict, deadline: float, load_timeout: float,
                  all_done: asyncio.Event, runs: Path) -> None:
    """Open the Playground, press Train, wait for the accuracy; keep the tab open (as a
    workshop does) until every session is done. Results go into `rec`."""
    from playwright.async_api import expect

    ctx = await browser.new_context(viewport=VIEWPORT)
    page = await ctx.new_page()
    try:
        rec["load_s"] = await open_playground(page, url, load_timeout)
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
        shown = await finished_accuracy(runs, rec["seed"], deadline)
        left = max(1.0, deadline - time.time())
        await expect(page.get_by_test_id("stMetricValue").filter(has_text=shown).first
                     ).to_be_visible(timeout=left * 1000)
        rec["seen_done"] = time.time()
        rec["done"] = True
        await hold(all_done, deadline)
    except Exception as e:  # recorded, reported as lost or unfinished by the caller
        rec["error"] = f"{type(e).__name__}: {str(e).splitlines()[0][:160]}"
        rec["done"] = True
    finally:
        await ctx.close()


async def finished_accuracy(runs: Path, seed: int, deadline: float) -> str:
    """The accuracy the page will show for the room's run with `seed`, as it shows it
    ("0.764"), once the run store says that run FINISHED. The bench waits on the store and
    on that figure, never on the page's wording (which changes)."""
    from engine.runs import gallery
    from engine.store.runs import RunStore

    store = RunStore(runs, recover=False)
    try:
        while time.time() < deadline:
            for r in store.list_runs(status="finished"):
                if r.sweep != gallery.SWEEP and r.config.seed == seed and r.headline is not None:
                    return f"{r.headline:.3f}"
            await asyncio.sleep(0.5)
    finally:
        store.close()
    raise TimeoutError(f"the run with seed {seed} did not finish in time")


async def hold(event: asyncio.Event, deadline: float) -> None:
    """Waits until `event` is set or `deadline` (wall clock) has passed."""
    try:
        await asyncio.wait_for(event.wait(), timeout=max(0.0, deadline - time.time()))
    except asyncio.TimeoutError:
        pass
