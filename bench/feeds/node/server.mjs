// Node.js's peer of Proscenium's hub for bench/feeds.sh: ws's WebSocketServer (its
// defaults: no permessage-deflate) at /feed, and POST /publish fanning the body out
// to every socket — in this process, or through Redis pub/sub when REDIS names one
// (a replica then fans out what it receives from Redis, its own posts included, as
// the thesis's Subscriber did). Prints its port once listening.
//
// Usage: node server.mjs PORT   (REDIS=redis://... for replicas)

import http from "node:http";
import { WebSocketServer } from "ws";
import { createClient } from "redis";

const port = Number(process.argv[2] || 0);
const wss = new WebSocketServer({ noServer: true });

function fanOut(data) {
  for (const socket of wss.clients) {
    if (socket.readyState === 1) socket.send(data);
  }
}

let publish = fanOut;
if (process.env.REDIS) {
  const publisher = createClient({ url: process.env.REDIS });
  const subscriber = publisher.duplicate();
  await Promise.all([publisher.connect(), subscriber.connect()]);
  await subscriber.subscribe("feed", (message) => fanOut(message), false);
  publish = (data) => publisher.publish("feed", data);
}

const server = http.createServer((req, res) => {
  if (req.method === "POST" && req.url === "/publish") {
    const chunks = [];
    req.on("data", (chunk) => chunks.push(chunk));
    req.on("end", () => {
      publish(Buffer.concat(chunks).toString());
      res.writeHead(204).end();
    });
  } else {
    res.writeHead(404).end();
  }
});
server.on("upgrade", (req, socket, head) => {
  if (req.url !== "/feed") return socket.destroy();
  wss.handleUpgrade(req, socket, head, (ws) => wss.emit("connection", ws, req));
});
server.listen(port, "127.0.0.1", () => console.log(server.address().port));
