// Two browser pages on two replicas of examples/social (tests/browser.rs starts
// them, with Redis and PostgreSQL between), walking the site as its users would:
//  1. on replica A, ana signs up and uploads a picture to her timeline;
//  2. on replica B, bob signs up, finds ana's page and follows her; reloaded, the
//     page keeps him signed in, and his timeline shows her picture;
//  3. ana likes her picture on A: the time until B's page shows the count is
//     measured; bob likes it on B and both pages count 2, his button "Liked" and
//     disabled; liking it again through the API is answered 200 and heard nowhere;
//  4. bob unfollows ana from her page, and her picture leaves his timeline; he signs
//     out, and a page holding a token the server does not know shows the sign-in.
// Screenshots of the sign-in page, the user page, the timeline and the live likes go
// to SHOTS (social-signin.png, social-user.png, social-timeline.png,
// social-feed.png). Prints one JSON line of what was seen, for browser.rs to assert;
// "a" and "b" are how each page was served and what its feed runs on (as
// "h2 (server-sent events)").
//
// Usage: node like.mjs URL_A URL_B PICTURE SHOTS

import { join } from "node:path";
import { chromium } from "playwright-core";

const [a, b, picture, shots] = process.argv.slice(2);
// As root, with no network but loopback: no sandbox, and none of Chromium's own
// background connections (refused here, many at a time).
const browser = await chromium.launch({
  executablePath: process.env.CHROMIUM || "/usr/bin/chromium",
  args: ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync"],
});
const errors = []; // uncaught errors in either page

async function open(options) {
  const page = await (await browser.newContext({ viewport: { width: 1100, height: 800 }, ...options })).newPage();
  page.setDefaultTimeout(30000); // two shared cores: every wait is generous
  page.on("pageerror", (error) => errors.push(error.message));
  return page;
}

const shoot = (page, name) => page.screenshot({ path: join(shots, name), fullPage: true });
const text = async (page, selector) => (await page.textContent(selector)).trim();
const view = (page, name) => page.waitForSelector(`body[data-view="${name}"]`);
const titles = (page) => page.$$eval("#pictures .card .title", (found) => found.map((title) => title.textContent));
const feed = (page) => page.$$eval("#feed li", (found) => found.map((item) => item.textContent));
const card = (id) => `#pictures [data-picture="${id}"]`;
const imagesShown = (page) => page.waitForFunction(() =>
  [...document.images].every((image) => image.complete && image.naturalWidth > 0));
// Waits until `selector`'s text is `expected`.
const showing = (page, selector, expected) => page.waitForFunction(([selector, expected]) => {
  const found = document.querySelector(selector);
  return found && found.textContent.trim() === expected;
}, [selector, expected]);

async function signUp(page, name) {
  await page.fill("#signup [name=name]", name);
  await page.fill("#signup [name=email]", `${name}@example.org`);
  await page.fill("#signup [name=password]", "correct horse");
  await page.click("#signup [name=signup]");
  await showing(page, "#who", `signed in as ${name}`);
  await view(page, "timeline");
}

try {
  const seen = {};
  // 1. ana on A.
  const onA = await open();
  await onA.goto(a);
  await view(onA, "signin");
  await shoot(onA, "social-signin.png");
  await signUp(onA, "ana");
  await onA.setInputFiles("#upload [name=pictures]", picture);
  await onA.click("#upload button");
  const id = Number(await onA.getAttribute("#pictures .card", "data-picture"));
  seen.a_timeline = await titles(onA);

  // 2. bob on B. Its certificate is a test CA's, which the browser does not know.
  const onB = await open({ ignoreHTTPSErrors: true });
  await onB.goto(b);
  await signUp(onB, "bob");
  seen.b_timeline_first = await titles(onB);
  await onB.fill("#find [name=user]", "ana");
  await onB.press("#find [name=user]", "Enter");
  await view(onB, "user");
  seen.user = { name: await text(onB, "#profile-name"), button: await text(onB, "#follow") };
  await onB.click("#follow");
  await showing(onB, "#follow", "Unfollow");
  await showing(onB, "#count-followers", "1");
  seen.followed = {
    button: await text(onB, "#follow"),
    pictures: await text(onB, "#count-pictures"),
    followers: await text(onB, "#count-followers"),
    following: await text(onB, "#count-following"),
  };
  await imagesShown(onB);
  await shoot(onB, "social-user.png");
  await onB.reload();
  await view(onB, "user");
  seen.kept_signed_in = await text(onB, "#who");
  await onB.click("#home");
  await view(onB, "timeline");
  seen.b_timeline_following = await titles(onB);
  await imagesShown(onB);
  await shoot(onB, "social-timeline.png");

  // 3. Live counts across replicas: A's feed a WebSocket watching the picture, B's
  // server-sent events.
  await onA.waitForFunction((id) => (document.body.dataset.watching || "").split(",").includes(String(id)), id);
  await onB.waitForSelector("body[data-live]");
  const started = Date.now();
  await onA.click(`${card(id)} .like`);
  await onB.waitForFunction((id) =>
    document.querySelector(`#pictures [data-picture="${id}"] .likes`).textContent === "1"
      && document.querySelector("#feed li"), id);
  seen.took_ms = Date.now() - started;
  seen.feed = await text(onB, "#feed li");
  const served = (page) => page.evaluate(() =>
    `${performance.getEntriesByType("navigation")[0].nextHopProtocol} ${document.getElementById("transport").textContent}`);
  [seen.a, seen.b] = [await served(onA), await served(onB)];
  await showing(onA, `${card(id)} .like`, "Liked");

  await onB.click(`${card(id)} .like`);
  await showing(onB, `${card(id)} .like`, "Liked");
  await showing(onB, `${card(id)} .likes`, "2");
  await showing(onA, `${card(id)} .likes`, "2");
  await showing(onA, "#feed li", "bob likes ana's harbour.png (2)");
  seen.likes = { a: await text(onA, `${card(id)} .likes`), b: await text(onB, `${card(id)} .likes`) };
  seen.bob_button = { text: await text(onB, `${card(id)} .like`), disabled: await onB.isDisabled(`${card(id)} .like`) };
  await shoot(onB, "social-feed.png");
  // bob's token, used on the other replica: the like was had, so 200 and nothing new
  // on either page's feed (given a second to come, were it published).
  const token = await onB.evaluate(() => localStorage.getItem("token"));
  const again = await fetch(new URL(`/picture/${id}/likes`, a), { method: "POST", headers: { authorization: `Bearer ${token}` } });
  seen.repeated_like = { status: again.status, likes: (await again.json()).likes };
  await onB.waitForTimeout(1000);
  seen.feed_after = { a: await feed(onA), b: await feed(onB) };

  // 4. bob unfollows ana, from her page as her picture's owner link leads to it.
  await onB.click(`${card(id)} .owner`);
  await view(onB, "user");
  await onB.click("#follow");
  await showing(onB, "#follow", "Follow");
  await showing(onB, "#count-followers", "0");
  seen.unfollowed = { button: await text(onB, "#follow"), followers: await text(onB, "#count-followers") };
  await onB.click("#home");
  await view(onB, "timeline");
  seen.b_timeline_unfollowed = await titles(onB);
  seen.empty = await text(onB, "#empty");

  // Signing out forgets the token; a token the server does not know is forgotten.
  await onB.click("#signout");
  await view(onB, "signin");
  seen.signed_out = await onB.evaluate(() => localStorage.getItem("token"));
  await onB.evaluate(() => { localStorage.setItem("token", "unknown"); localStorage.setItem("name", "bob"); });
  await onB.reload();
  await view(onB, "signin");
  seen.unknown_token = { token: await onB.evaluate(() => localStorage.getItem("token")), status: await text(onB, "#status") };

  console.log(JSON.stringify({ ...seen, errors }));
} finally {
  await browser.close();
}
