"""The README's pictures, taken from the real app: docs/playground.png and docs/runs.png.

Starts `streamlit run app.py` with a fresh run store (the gallery loads into it), trains a
small DP-MERF run on digits in the Playground through Debian's Chromium, and photographs
the Playground after it finished and the privacy–utility chart of Runs & Compare.

    .venv/bin/python docs/make_screenshots.py [--out docs]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.app_server import serve  # noqa: E402

CHROMIUM = "/usr/bin/chromium"
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
        "--disable-component-update", "--disable-sync", "--no-first-run"]
WAIT_MS = 600_000


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=str(ROOT / "docs"), help="folder for the two PNGs")
    args = ap.parse_args(argv)
    from playwright.sync_api import expect, sync_playwright

    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp, serve(Path(tmp) / "runs") as url, \
            sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=ARGS, headless=True)
        page = browser.new_page(viewport={"width": 1400, "height": 1300})
        page.goto(f"{url}/?dpmerf_n_features=2000&dpmerf_epochs=20&seed=3",
                  wait_until="domcontentloaded")
        train = page.get_by_role("button", name="Train", exact=True)
        expect(train).to_be_enabled(timeout=WAIT_MS)
        train.click()
        expect(page.get_by_text("Downstream scores")).to_be_visible(timeout=WAIT_MS)
        page.wait_for_timeout(2000)  # the last redraw
        page.screenshot(path=str(out / "playground.png"), full_page=False)

        page.goto(f"{url}/runs", wait_until="domcontentloaded")
        heading = page.get_by_role("heading", name="Privacy–utility")
        expect(heading).to_be_visible(timeout=WAIT_MS)
        chart = heading.locator("xpath=following::*[@data-testid='stPlotlyChart'][1]")
        expect(chart).to_be_visible(timeout=WAIT_MS)
        page.wait_for_timeout(3000)  # plotly draws after the element appears
        heading.evaluate("e => e.scrollIntoView({block: 'start'})")
        page.wait_for_timeout(500)
        page.screenshot(path=str(out / "runs.png"), full_page=False)
        browser.close()
    print(f"wrote {out / 'playground.png'} and {out / 'runs.png'}")


if __name__ == "__main__":
    main()
