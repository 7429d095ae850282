// The lab's Node.js peer: the routes of examples/lab-app, written the Node way.
// Usage: node server.js --bind 127.0.0.1:8080 [--cluster N] [--upstream URL] [--nbk]
// With --cluster N the cluster module runs N workers sharing the port (node-cluster).
// With --nbk, /fib above THRESHOLD runs Node.Scala's non-blocking algorithm (node-nbk).
'use strict';
const cluster = require('node:cluster');
const http = require('node:http');

function option(name, fallback) {
  const i = process.argv.indexOf(`--${name}`);
  return i > 0 ? process.argv[i + 1] : fallback;
}

const [host, port] = option('bind', '127.0.0.1:8080').split(':');
const workers = Number(option('cluster', '0'));
const upstream = new URL(option('upstream', 'http://127.0.0.1:9090/page?ms=170&kb=44'));
const nonBlocking = process.argv.includes('--nbk');

// Node.Scala's threshold (Fig. 1c): above it, plain recursion holds the loop too long.
const THRESHOLD = 30;

function fibRecursive(n) {
  return n < 2 ? n : fibRecursive(n - 1) + fibRecursive(n - 2);
}

// Node.Scala Fig. 1c's fiboA: every recursive call is a new event, so the loop serves
// other requests between them; below THRESHOLD the n-2 branch recurses plainly.
// The paper defers with process.nextTick, but Node drains the whole nextTick queue
// before it returns to I/O, so a nextTick chain holds the loop as the blocking fib
// does (Node 20, measured: with a fib(40) in flight, a fib(20) sent 0.3 s after it
// waited 0.68 s, until the fib(40) ended, as with the blocking fib, 0.49 s). Here each
// event is deferred with setImmediate, which yields to I/O between events: the
// fib(20) waited 3 ms.
function fibNonBlocking(n, done) {
  if (n < 2) return done(n);
  setImmediate(() => fibNonBlocking(n - 1, (first) => setImmediate(() => {
    if (n > THRESHOLD) fibNonBlocking(n - 2, (second) => done(first + second));
    else done(first + fibRecursive(n - 2));
  })));
}

function fib(res, n) {
  if (nonBlocking && n > THRESHOLD) {
    return fibNonBlocking(n, (value) => send(res, 200, 'text/plain', String(value)));
  }
  return send(res, 200, 'text/plain', String(fibRecursive(n)));
}

function fibIterative(n) {
  let a = 0n;
  let b = 1n;
  for (let i = 0; i < n; i++) {
    [a, b] = [b, a + b];
  }
  return a.toString(16);
}

// The lab's dynamic page: n iterations of 32-bit arithmetic, as lab-app (1,250,000 when
// the request names none; at most MAX_ITERATIONS, as every peer).
const DEFAULT_ITERATIONS = 1250000;
const MAX_ITERATIONS = 100000000;

function dynamicPage(res, asked) {
  const n = asked === null ? DEFAULT_ITERATIONS : Number(asked);
  if (!Number.isInteger(n) || n < 0 || n > MAX_ITERATIONS) {
    return send(res, 400, 'text/plain', 'n is at most 100000000');
  }
  let acc = 0;
  for (let i = 0; i < n; i++) {
    acc = (Math.imul(acc, 31) + i) >>> 0;
  }
  return send(res, 200, 'text/html', `<!doctype html><title>dynamic</title><p>${n} iterations: ${acc}</p>`);
}

function send(res, status, type, body) {
  res.writeHead(status, { 'Content-Type': type, 'Content-Length': Buffer.byteLength(body) });
  res.end(body);
}

function relay(res) {
  // One connection per request, as lab-app does.
  http.get(upstream, { agent: false }, (up) => {
    const chunks = [];
    up.on('data', (c) => chunks.push(c));
    up.on('end', () => {
      const body = Buffer.concat(chunks);
      res.writeHead(200, { 'Content-Type': 'text/plain', 'Content-Length': body.length });
      res.end(body);
    });
  }).on('error', (e) => send(res, 502, 'text/plain', `upstream: ${e.message}`));
}

function handle(req, res) {
  const url = new URL(req.url, 'http://x');
  const n = Number(url.searchParams.get('n'));
  switch (url.pathname) {
    case '/plaintext':
      return send(res, 200, 'text/plain', 'Hello, World!');
    case '/json':
      return send(res, 200, 'application/json', JSON.stringify({ message: 'Hello, World!' }));
    case '/dynamic':
      return dynamicPage(res, url.searchParams.get('n'));
    case '/fib-iter':
      return send(res, 200, 'text/plain', fibIterative(n));
    case '/fib':
      return fib(res, n);
    case '/relay':
      return relay(res);
    default:
      return send(res, 404, 'text/plain', 'Not Found');
  }
}

if (workers > 0 && cluster.isPrimary) {
  for (let i = 0; i < workers; i++) cluster.fork();
  cluster.on('exit', () => cluster.fork());
  process.on('SIGTERM', () => {
    for (const w of Object.values(cluster.workers)) w.process.kill('SIGTERM');
    process.exit(0);
  });
} else {
  const server = http.createServer(handle);
  server.keepAliveTimeout = 75000;
  // The listen backlog of every server the lab measures (Node's default is 511).
  server.listen({ port: Number(port), host, backlog: 4096 });
  process.on('SIGTERM', () => server.close(() => process.exit(0)));
}
