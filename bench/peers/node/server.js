// The lab's Node.js peer: the routes of examples/lab-app, written the Node way.
// Usage: node server.js --bind 127.0.0.1:8080 [--cluster N] [--upstream URL]
// With --cluster N the cluster module runs N workers sharing the port (node-cluster).
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

function fibRecursive(n) {
  return n < 2 ? n : fibRecursive(n - 1) + fibRecursive(n - 2);
}

function fibIterative(n) {
  let a = 0n;
  let b = 1n;
  for (let i = 0; i < n; i++) {
    [a, b] = [b, a + b];
  }
  return a.toString(16);
}

// The same 30,000 iterations as lab-app, in 32-bit arithmetic.
function dynamicPage() {
  let acc = 0;
  for (let i = 0; i < 30000; i++) {
    acc = (Math.imul(acc, 31) + i) >>> 0;
  }
  return `<!doctype html><title>dynamic</title><p>30000 iterations: ${acc}</p>`;
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
      return send(res, 200, 'text/html', dynamicPage());
    case '/fib-iter':
      return send(res, 200, 'text/plain', fibIterative(n));
    case '/fib':
      return send(res, 200, 'text/plain', String(fibRecursive(n)));
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
  server.listen(Number(port), host);
  process.on('SIGTERM', () => server.close(() => process.exit(0)));
}
