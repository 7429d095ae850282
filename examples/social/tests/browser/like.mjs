// Two browser pages on two replicas of examples/social (tests/browser.rs starts
// them, with Redis and PostgreSQL between): on replica A, ana signs up and uploads a
// picture; on replica B, bob signs up and looks at ana's pictures, his live feed open;
// ana likes her picture on A, and the time until B's feed shows it is measured. B's
// page is saved as a screenshot. Prints one JSON line: {"took_ms": ..., "feed": ...,
// "a": ..., "b": ...}, the last two how each page was served and what its feed runs on
// (as "h2 (server-sent events)").
//
// Usage: node like.mjs URL_A URL_B PICTURE SCREENSHOT

import { chromium } from "playwright-core";

const [a, b, picture, screenshot] = process.argv.slice(2);
// As root, with no network but loopback: no sandbox, and none of Chromium's own
// background connections (refused here, many at a time).
const browser = await chromium.launch({
  executablePath: process.env.CHROMIUM || "/usr/bin/chromium",
  args: ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync"],
});

async function signUp(page, url, name) {
  await page.goto(url);
  await page.fill("#signup [name=name]", name);
  await page.fill("#signup [name=email]", `${name}@example.org`);
  await page.fill("#signup [name=password]", "correct horse");
  await page.click("#signup [name=signup]");
  await page.waitForFunction((who) => document.getElementById("who").textContent.includes(who), name);
}

try {
  const onA = await (await browser.newContext()).newPage();
  // B's certificate is a test CA's, which the browser does not know.
  const onB = await (await browser.newContext({ ignoreHTTPSErrors: true })).newPage();
  await signUp(onA, a, "ana");
  await onA.setInputFiles("#upload [name=pictures]", picture);
  await onA.click("#upload button");
  await onA.waitForSelector("#pictures li .like");

  await signUp(onB, b, "bob");
  await onB.fill("#owner", "ana");
  await onB.click("#show");
  await onB.waitForSelector("#pictures li .like");
  await onB.waitForSelector("body[data-live]");

  const started = Date.now();
  await onA.click("#pictures li .like");
  await onB.waitForSelector("#feed li", { timeout: 10000 });
  const took = Date.now() - started;
  await onB.waitForFunction(() => document.querySelector("#pictures li .likes").textContent === "1");
  await onB.screenshot({ path: screenshot, fullPage: true });
  const served = (page) => page.evaluate(() =>
    `${performance.getEntriesByType("navigation")[0].nextHopProtocol} ${document.getElementById("transport").textContent}`);
  console.log(JSON.stringify({
    took_ms: took, feed: await onB.textContent("#feed li"), a: await served(onA), b: await served(onB),
  }));
} finally {
  await browser.close();
}
