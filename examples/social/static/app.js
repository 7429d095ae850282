// The page of the social example: plain JavaScript, no build step, no framework.
// One page, its views chosen by the URL's hash:
//   (signed out)   the sign-up / log-in form
//   #/             the timeline: an upload form, and the pictures of the people I
//                  follow and my own, newest first
//   #/users/NAME   a user's page: their counts, Follow / Unfollow, their pictures
// The sign-in (token and name) is kept in localStorage and checked with GET /me when
// the page loads. Like counts are kept live by one feed: a WebSocket at /feed, told
// which pictures are on the screen; or server-sent events at /feed/events (every
// like) where WebSocket is not available or the URL asks for ?transport=sse.

const $ = (id) => document.getElementById(id);

const state = {
  token: localStorage.getItem("token"),
  name: localStorage.getItem("name"),
  liked: new Set(), // the ids of the pictures I like
  user: null, // the user whose page is shown
  renders: 0, // renders begun: one overtaken by a newer one does not touch the page
};

let socket = null; // the feed's WebSocket while it is open

function say(text) { $("status").textContent = text || ""; }

// A new element with `properties`, holding `children`.
function element(tag, properties = {}, ...children) {
  const node = Object.assign(document.createElement(tag), properties);
  node.append(...children);
  return node;
}

// A call to the API with `body` as JSON (a FormData as it is): the answer's JSON, or
// an Error with the server's message and status. A 401 while signed in means the
// server no longer knows the token: the page forgets it and asks to sign in again.
async function api(method, path, body) {
  const headers = {};
  if (state.token) headers.authorization = `Bearer ${state.token}`;
  if (body !== undefined && !(body instanceof FormData)) {
    headers["content-type"] = "application/json";
    body = JSON.stringify(body);
  }
  const answer = await fetch(path, { method, headers, body });
  const json = (answer.headers.get("content-type") || "").includes("json");
  const data = json ? await answer.json() : null;
  if (answer.status === 401 && state.token) {
    signOut();
    const message = "You were signed out: please log in again.";
    say(message);
    throw new Error(message);
  }
  if (!answer.ok) {
    const message = (data && data.error) || `${answer.status} ${answer.statusText}`;
    throw Object.assign(new Error(message), { status: answer.status });
  }
  return data;
}

// --- Signing in and out ---

function signIn(session) {
  state.token = session.token;
  state.name = session.name;
  localStorage.setItem("token", state.token);
  localStorage.setItem("name", state.name);
  render();
}

function signOut() {
  state.token = state.name = null;
  localStorage.removeItem("token");
  localStorage.removeItem("name");
  state.liked.clear();
  render();
}

$("signup").addEventListener("submit", async (event) => {
  event.preventDefault();
  const form = new FormData(event.target);
  const [name, email, password] = ["name", "email", "password"].map((field) => form.get(field));
  try {
    if (event.submitter && event.submitter.name === "signup") {
      await api("POST", "/users", { name, email, password });
    }
    signIn(await api("POST", "/sessions", { name, password }));
    event.target.reset();
    say("");
  } catch (error) { say(error.message); }
});

$("signout").addEventListener("click", () => {
  location.hash = "#/";
  signOut();
});

// --- Views ---

// Shows the view the hash names (or the sign-in form), fetching what it shows.
async function render() {
  const seq = ++state.renders;
  const signedIn = Boolean(state.token);
  delete document.body.dataset.view; // set again once the view is shown, for the tests
  $("account").hidden = signedIn;
  $("nav").hidden = $("live").hidden = !signedIn;
  $("who").textContent = signedIn ? `signed in as ${state.name}` : "";
  $("mine").href = `#/users/${encodeURIComponent(state.name || "")}`;
  if (!signedIn) {
    showView(null);
    showPictures([], "");
    document.body.dataset.view = "signin";
    return;
  }
  const route = location.hash.match(/^#\/users\/([^/]+)$/);
  const name = route && decodeURIComponent(route[1]);
  try {
    if (name) await renderUser(name, seq); else await renderTimeline(seq);
  } catch (error) {
    if (seq !== state.renders) return;
    showView(null);
    showPictures([], "");
    say(error.status === 404 && name ? `There is no user named ${name}.` : error.message);
  }
}

async function renderTimeline(seq) {
  const [pictures, likes] = await Promise.all([api("GET", "/timeline"), myLikes()]);
  if (seq !== state.renders) return;
  state.liked = likes;
  showView("timeline");
  showPictures(pictures, "Nothing here yet: upload a picture, or find someone to follow.");
  document.body.dataset.view = "timeline";
}

async function renderUser(name, seq) {
  const path = `/users/${encodeURIComponent(name)}`;
  const [user, pictures, likes] = await Promise.all([api("GET", path), api("GET", `${path}/pictures`), myLikes()]);
  if (seq !== state.renders) return;
  state.user = user;
  state.liked = likes;
  showView("profile");
  $("profile-name").textContent = user.name;
  $("count-pictures").textContent = user.pictures;
  $("count-followers").textContent = user.followers;
  $("count-following").textContent = user.following;
  $("follow").hidden = user.name === state.name;
  $("follow").textContent = user.followed ? "Unfollow" : "Follow";
  showPictures(pictures, `${user.name} has no pictures yet.`);
  document.body.dataset.view = "user";
}

// The ids of the pictures I like.
async function myLikes() {
  const pictures = await api("GET", `/users/${encodeURIComponent(state.name)}/likes`);
  return new Set(pictures.map((picture) => picture.id));
}

// Shows the panel of one view ("timeline", "profile"), or neither.
function showView(id) {
  $("timeline").hidden = id !== "timeline";
  $("profile").hidden = id !== "profile";
}

// Shows `pictures` as cards (`empty` when there are none), and tells the feed.
function showPictures(pictures, empty) {
  $("pictures").replaceChildren(...pictures.map(card));
  $("empty").textContent = empty;
  $("empty").hidden = pictures.length > 0 || !empty;
  watch();
}

function card(picture) {
  // The thumbnail is made just after the upload: until then, the picture itself.
  const image = element("img", {
    src: picture.thumbnail ? `/thumbs/${picture.id}` : `/pictures/${picture.id}`,
    alt: picture.title,
  });
  const owner = element("a", {
    className: "owner", href: `#/users/${encodeURIComponent(picture.owner)}`, textContent: picture.owner,
  });
  const like = element("button", { className: "like", type: "button" });
  showLiked(like, state.liked.has(picture.id));
  like.addEventListener("click", () => likePicture(picture.id, like));
  const item = element("li", { className: "card" },
    image,
    element("div", { className: "title", textContent: picture.title }),
    element("div", { className: "by" }, "by ", owner),
    element("div", { className: "actions" },
      like,
      element("span", { className: "count", title: "likes" }, "♥ ",
        element("span", { className: "likes", textContent: picture.likes }))));
  item.dataset.picture = picture.id;
  return item;
}

function showLiked(button, liked) {
  button.textContent = liked ? "Liked" : "Like";
  button.disabled = liked;
}

// Likes are never taken back, so a count only grows: a like heard late (or again,
// as server-sent events resume after the last one seen) does not lower it.
function showCount(id, likes) {
  for (const count of document.querySelectorAll(`[data-picture="${id}"] .likes`)) {
    if (likes > Number(count.textContent)) count.textContent = likes;
  }
}

// --- Actions ---

async function likePicture(id, button) {
  button.disabled = true;
  try {
    const picture = await api("POST", `/picture/${id}/likes`);
    state.liked.add(id);
    showLiked(button, true);
    showCount(id, picture.likes);
  } catch (error) {
    button.disabled = false;
    say(error.message);
  }
}

$("follow").addEventListener("click", async () => {
  const { name, followed } = state.user;
  $("follow").disabled = true;
  try {
    await api(followed ? "DELETE" : "POST", `/users/${encodeURIComponent(name)}/followers`);
    say(followed ? `You no longer follow ${name}.` : `You follow ${name}.`);
    await render();
  } catch (error) { say(error.message); }
  $("follow").disabled = false;
});

$("upload").addEventListener("submit", async (event) => {
  event.preventDefault();
  const form = new FormData();
  for (const file of event.target.pictures.files) form.append("picture", file, file.name);
  try {
    const pictures = await api("POST", "/pictures", form);
    event.target.reset();
    say(`Uploaded ${pictures.map((picture) => picture.title).join(", ")}.`);
    await render();
    setTimeout(render, 2000); // by then the thumbnails should be made
  } catch (error) { say(error.message); }
});

$("find").addEventListener("submit", (event) => {
  event.preventDefault();
  const name = new FormData(event.target).get("user").trim();
  event.target.reset();
  if (name) location.hash = `#/users/${encodeURIComponent(name)}`;
});

window.addEventListener("hashchange", () => {
  say("");
  render();
});

// --- The live feed of likes ---

// The ids of the pictures on the screen.
function onScreen() {
  return [...document.querySelectorAll("#pictures [data-picture]")].map((item) => Number(item.dataset.picture));
}

// Tells the WebSocket which pictures' likes to send (server-sent events bring all).
function watch() {
  if (socket && socket.readyState === WebSocket.OPEN) socket.send(JSON.stringify({ watch: onScreen() }));
}

// A like heard on the feed: the picture's count, and the list of the latest likes.
function heard(like) {
  // Server-sent events bring every like, and a WebSocket may bring one of a
  // picture just left: only those of pictures on the screen are shown.
  if (!onScreen().includes(like.picture)) return;
  showCount(like.picture, like.likes);
  if (like.by === state.name) {
    state.liked.add(like.picture); // liked on another page of mine
    for (const button of document.querySelectorAll(`[data-picture="${like.picture}"] .like`)) showLiked(button, true);
  }
  const item = element("li", { className: "new", textContent: `${like.by} likes ${like.owner}'s ${like.title} (${like.likes})` });
  $("feed").prepend(item);
  while ($("feed").children.length > 10) $("feed").lastChild.remove();
}

function live(transport) {
  $("transport").textContent = transport;
  document.body.dataset.live = "1";
}

function listen() {
  const wanted = new URLSearchParams(location.search).get("transport");
  if (wanted === "sse" || !("WebSocket" in window)) listenToEvents(); else listenToSocket();
}

function listenToSocket() {
  socket = new WebSocket(`${location.protocol === "https:" ? "wss" : "ws"}://${location.host}/feed`);
  socket.addEventListener("open", () => { live("(WebSocket)"); watch(); });
  socket.addEventListener("message", (event) => {
    const message = JSON.parse(event.data);
    // The answer to a watch list; kept on the body for the tests.
    if ("watching" in message) document.body.dataset.watching = message.watching.join(",");
    else heard(message);
  });
  socket.addEventListener("close", () => {
    socket = null;
    delete document.body.dataset.live;
    delete document.body.dataset.watching;
    setTimeout(listenToSocket, 1000);
  });
}

function listenToEvents() {
  const events = new EventSource("/feed/events");
  events.addEventListener("open", () => live("(server-sent events)"));
  events.addEventListener("message", (event) => heard(JSON.parse(event.data)));
  // EventSource connects again by itself, resuming after the last like it had.
  events.addEventListener("error", () => { delete document.body.dataset.live; });
}

// --- Start: check the sign-in kept, show the view, open the feed ---

async function start() {
  listen();
  if (state.token) {
    try {
      state.name = (await api("GET", "/me")).name;
      localStorage.setItem("name", state.name);
    } catch (error) { say(error.message); } // a 401 has signed out already
  }
  render();
}

start();
