// The admin listener's dashboard in headless Chromium (tests/cli/dashboard.rs starts
// the server and keeps it under load): waits for the page to have drawn three samples
// from its event stream, saves a screenshot, and prints one JSON line of what the page
// shows: {"samples": n, "state": ..., "requests_per_s": ..., "routes": [...],
// "threads": n, "stages": [...]}.
//
// Usage: node dashboard.mjs URL SCREENSHOT

import { chromium } from "playwright-core";

const [url, screenshot] = process.argv.slice(2);
// As root, with no network but loopback: no sandbox, and none of Chromium's own
// background connections.
const browser = await chromium.launch({
  executablePath: process.env.CHROMIUM || "/usr/bin/chromium",
  args: ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync"],
});
try {
  const page = await (await browser.newContext({ viewport: { width: 1280, height: 1000 } })).newPage();
  await page.goto(url);
  // Two samples make a rate; the third shows the page keeps drawing. A busy machine
  // may take a while to start the browser and the stream.
  await page.waitForFunction(() => Number(document.body.dataset.samples || 0) >= 3, null, { timeout: 60000 });
  await page.screenshot({ path: screenshot, fullPage: true });
  const shown = await page.evaluate(() => ({
    samples: Number(document.body.dataset.samples),
    state: document.getElementById("state").textContent,
    requests_per_s: document.querySelector("#cards .card b").textContent,
    routes: [...document.querySelectorAll("#routes tr")].slice(1).map((tr) => [...tr.cells].map((c) => c.textContent)),
    threads: document.querySelectorAll("#threads tr").length - 1,
    stages: [...document.querySelectorAll("#stages .stage")].map((s) => s.dataset.stage),
  }));
  console.log(JSON.stringify(shown));
} finally {
  await browser.close();
}
