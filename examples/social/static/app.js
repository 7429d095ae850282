// The page of the social example: plain JavaScript, no build step. It signs up and
// logs in (the token kept in localStorage), uploads pictures, shows a user's
// pictures with their likes, and keeps a live list of likes from the server: over a
// WebSocket at /feed, or server-sent events at /feed/events where WebSocket is not
// available (or ?transport=sse asks for them).

const state = { token: localStorage.getItem("token"), name: localStorage.getItem("name") };
const $ = (id) => document.getElementById(id);

function say(text) { $("status").textContent = text || ""; }

function showWho() {
  $("who").textContent = state.name ? `signed in as ${state.name}` : "not signed in";
}

async function api(method, path, body, json = true) {
  const headers = {};
  if (state.token) headers.authorization = `Bearer ${state.token}`;
  if (json && body !== undefined) headers["content-type"] = "application/json";
  const answer = await fetch(path, { method, headers, body: json && body !== undefined ? JSON.stringify(body) : body });
  const text = await answer.text();
  const data = text ? JSON.parse(text) : null;
  if (!answer.ok) throw new Error((data && data.error) || answer.statusText);
  return data;
}

async function logIn(name, password) {
  const session = await api("POST", "/sessions", { name, password });
  state.token = session.token;
  state.name = session.name;
  localStorage.setItem("token", state.token);
  localStorage.setItem("name", state.name);
  showWho();
  $("owner").value = state.name;
  await showPictures();
}

$("signup").addEventListener("submit", async (event) => {
  event.preventDefault();
  const form = new FormData(event.target);
  const [name, email, password] = ["name", "email", "password"].map((f) => form.get(f));
  try {
    if (event.submitter && event.submitter.name === "signup") {
      await api("POST", "/users", { name, email, password });
    }
    await logIn(name, password);
    say("");
  } catch (error) { say(error.message); }
});

$("upload").addEventListener("submit", async (event) => {
  event.preventDefault();
  const files = event.target.pictures.files;
  const form = new FormData();
  for (const file of files) form.append("picture", file, file.name);
  try {
    const pictures = await api("POST", "/pictures", form, false);
    say(`uploaded ${pictures.length}`);
    $("owner").value = state.name;
    await showPictures();
    // Thumbnails are made after the answer: look again shortly.
    setTimeout(showPictures, 1500);
  } catch (error) { say(error.message); }
});

async function showPictures() {
  const owner = $("owner").value.trim();
  if (!owner) return;
  try {
    const pictures = await api("GET", `/users/${encodeURIComponent(owner)}/pictures`);
    const list = $("pictures");
    list.replaceChildren(...pictures.map(pictureItem));
  } catch (error) { say(error.message); }
}

function pictureItem(picture) {
  const item = document.createElement("li");
  item.dataset.picture = picture.id;
  const image = document.createElement("img");
  image.src = picture.thumbnail ? `/thumbs/${picture.id}` : `/pictures/${picture.id}`;
  image.alt = picture.title;
  const caption = document.createElement("div");
  caption.textContent = picture.title;
  const likes = document.createElement("span");
  likes.className = "likes";
  likes.textContent = picture.likes;
  const button = document.createElement("button");
  button.className = "like";
  button.textContent = "Like";
  button.addEventListener("click", async () => {
    try { await api("POST", `/picture/${picture.id}/likes`); } catch (error) { say(error.message); }
  });
  item.append(image, caption, button, " ", likes, " likes");
  return item;
}

$("show").addEventListener("click", showPictures);
$("owner").addEventListener("keydown", (event) => { if (event.key === "Enter") showPictures(); });
$("follow").addEventListener("click", async () => {
  const owner = $("owner").value.trim();
  try { await api("POST", `/users/${encodeURIComponent(owner)}/followers`); say(`following ${owner}`); }
  catch (error) { say(error.message); }
});

// A like from anywhere: on top of the list, and in the count of the picture if shown.
function liked(like) {
  const item = document.createElement("li");
  item.className = "new";
  item.textContent = `${like.by} likes ${like.owner}'s ${like.title} (${like.likes})`;
  $("feed").prepend(item);
  const shown = document.querySelector(`#pictures li[data-picture="${like.picture}"] .likes`);
  if (shown) shown.textContent = like.likes;
}

function listen() {
  const wanted = new URLSearchParams(location.search).get("transport");
  if (wanted !== "sse" && "WebSocket" in window) {
    const socket = new WebSocket(`${location.protocol === "https:" ? "wss" : "ws"}://${location.host}/feed`);
    socket.addEventListener("open", () => { $("transport").textContent = "(WebSocket)"; document.body.dataset.live = "1"; });
    socket.addEventListener("message", (event) => liked(JSON.parse(event.data)));
    socket.addEventListener("close", () => { delete document.body.dataset.live; setTimeout(listen, 1000); });
  } else {
    const events = new EventSource("/feed/events");
    events.addEventListener("open", () => { $("transport").textContent = "(server-sent events)"; document.body.dataset.live = "1"; });
    events.onmessage = (event) => liked(JSON.parse(event.data));
  }
}

showWho();
if (state.name) { $("owner").value = state.name; showPictures(); }
listen();
