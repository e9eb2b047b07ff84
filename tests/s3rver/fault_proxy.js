#!/usr/bin/env node
'use strict';

// A fault-injecting HTTP proxy for the S3 client tests (node's http module only, no npm package).
//
//   node fault_proxy.js --target 127.0.0.1:PORT [--port N]
//
// Listens on 127.0.0.1 (port 0 unless --port: the system picks one) and prints "listening <port>"
// on stdout once ready. Every request whose path does not start with "/__" is forwarded to the
// target as it came: method, path and query, headers (Host included, as the client sent it: SigV4
// signs it) and the body, streamed both ways. Paths under "/__" are the control channel, never
// forwarded:
//
//   POST /__fault  JSON body, any of (applied together; the answer is the settings, as JSON):
//     {"status5xx": N}         the next N matching requests answer 503 SlowDown (S3's XML error)
//     {"status": 500}          the code those answers use: 500 answers InternalError, else SlowDown
//     {"drop": N}              the next N matching requests get their connection closed, no answer
//     {"methods": ["PUT"]}     status5xx and drop count only these methods (default: every method)
//     {"delay_ms": D}          every request waits D ms before it is forwarded or failed
//     {"reset": true}          back to plain forwarding (the settings above cleared; first)
//     {"reset_stats": true}    the counts below back to 0
//   GET /__stats   JSON counts: requests (not control), forwarded, injected_5xx, dropped,
//                  upstream_errors (target unreachable: answered 502), aborted (the client left
//                  during a delay), methods (requests per method), faults (the settings).
//
// The body of a failed request is read to its end before the answer, so a client that is still
// sending sees a plain answer, not a reset connection; a request with "Expect: 100-continue" gets
// the failure instead of "100 Continue" (as from S3), its connection then closed.

const http = require('http');

function parseArgs(argv) {
  const args = { target: null, port: 0 };
  for (let i = 2; i < argv.length; i++) {
    if (argv[i] === '--target') args.target = argv[++i];
    else if (argv[i] === '--port') args.port = Number(argv[++i]);
    else {
      console.error(`fault_proxy: unknown argument ${argv[i]}`);
      process.exit(2);
    }
  }
  const m = /^([^:]+):(\d+)$/.exec(args.target || '');
  if (!m) {
    console.error('usage: node fault_proxy.js --target HOST:PORT [--port N]');
    process.exit(2);
  }
  return { host: m[1], targetPort: Number(m[2]), port: args.port };
}

const { host, targetPort, port } = parseArgs(process.argv);

const cleanFaults = () => ({ status5xx: 0, status: 503, drop: 0, methods: null, delay_ms: 0 });
let faults = cleanFaults();
const cleanStats = () => ({
  requests: 0, forwarded: 0, injected_5xx: 0, dropped: 0, upstream_errors: 0, aborted: 0, methods: {},
});
let stats = cleanStats();

// Hop-by-hop headers stay on their own connection; "expect" was answered here already.
const HOP = new Set(['connection', 'keep-alive', 'proxy-connection', 'upgrade', 'te', 'trailer', 'expect']);

function xmlError(code, message) {
  return `<?xml version="1.0" encoding="UTF-8"?>\n<Error><Code>${code}</Code><Message>${message}</Message>` +
    '<Resource></Resource><RequestId>fault-proxy</RequestId></Error>';
}

function sendJson(res, status, value) {
  const body = JSON.stringify(value);
  res.writeHead(status, { 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(body) });
  res.end(body);
}

function control(req, res) {
  const chunks = [];
  req.on('data', c => chunks.push(c));
  req.on('end', () => {
    if (req.method === 'GET' && req.url === '/__stats') return sendJson(res, 200, { ...stats, faults });
    if (req.method === 'POST' && req.url === '/__fault') {
      let j;
      try {
        j = JSON.parse(Buffer.concat(chunks).toString('utf8') || '{}');
      } catch (e) {
        return sendJson(res, 400, { error: `bad JSON: ${e.message}` });
      }
      if (j.reset) faults = cleanFaults();
      if (j.reset_stats) stats = cleanStats();
      for (const k of ['status5xx', 'status', 'drop', 'delay_ms']) {
        if (k in j) faults[k] = Math.max(0, Number(j[k]) || 0);
      }
      if ('methods' in j) faults.methods = Array.isArray(j.methods) ? j.methods.map(m => String(m).toUpperCase()) : null;
      console.error(`fault_proxy: faults ${JSON.stringify(faults)}`);
      return sendJson(res, 200, faults);
    }
    sendJson(res, 404, { error: `unknown control request ${req.method} ${req.url}` });
  });
}

function forward(req, res) {
  const headers = {};
  for (const [k, v] of Object.entries(req.headers)) if (!HOP.has(k)) headers[k] = v;
  const up = http.request({
    host, port: targetPort, method: req.method, path: req.url, headers, agent: false, setHost: false,
  });
  up.on('response', ures => {
    const h = {};
    for (const [k, v] of Object.entries(ures.headers)) if (!HOP.has(k)) h[k] = v;
    res.writeHead(ures.statusCode, ures.statusMessage, h);
    ures.pipe(res);
    ures.on('error', () => res.destroy());
    ures.on('aborted', () => res.destroy());
    console.error(`fault_proxy: ${req.method} ${req.url} -> ${ures.statusCode}`);
  });
  up.on('error', err => {
    if (res.headersSent) return res.destroy();
    stats.upstream_errors++;
    console.error(`fault_proxy: ${req.method} ${req.url} -> 502 (${err.code || err.message})`);
    req.resume();
    const body = xmlError('BadGateway', `fault proxy: target ${host}:${targetPort}: ${err.code || err.message}`);
    res.writeHead(502, { 'Content-Type': 'application/xml', 'Content-Length': Buffer.byteLength(body) });
    res.end(body);
  });
  req.on('aborted', () => up.destroy());
  res.on('close', () => { if (!res.writableFinished) up.destroy(); });
  req.pipe(up);
  stats.forwarded++;
}

function matches(method) {
  return !faults.methods || faults.methods.includes(method);
}

// expectsContinue: the client sent "Expect: 100-continue" and waits for "100 Continue" before
// it sends the body. A forwarded request gets it when it is forwarded (after the delay); a failed
// one gets its final answer instead, as S3 does, and the connection is then closed.
function handle(req, res, expectsContinue) {
  if (req.url.startsWith('/__')) {
    if (expectsContinue) res.writeContinue();
    return control(req, res);
  }
  stats.requests++;
  stats.methods[req.method] = (stats.methods[req.method] || 0) + 1;
  // What happens to this request is decided when it arrives; the delay comes after.
  let action = 'forward';
  if (faults.drop > 0 && matches(req.method)) {
    faults.drop--;
    action = 'drop';
  } else if (faults.status5xx > 0 && matches(req.method)) {
    faults.status5xx--;
    action = 'fail';
  }
  const status = faults.status === 500 ? 500 : 503;
  let gone = false;
  res.on('close', () => { if (!res.writableFinished) gone = true; });
  const act = () => {
    if (gone || req.socket.destroyed) {
      stats.aborted++;
      return;
    }
    if (action === 'drop') {
      stats.dropped++;
      console.error(`fault_proxy: ${req.method} ${req.url} -> dropped`);
      req.socket.destroy();
    } else if (action === 'fail') {
      stats.injected_5xx++;
      console.error(`fault_proxy: ${req.method} ${req.url} -> ${status} (injected)`);
      const body = status === 500
        ? xmlError('InternalError', 'We encountered an internal error. Please try again. (fault proxy)')
        : xmlError('SlowDown', 'Please reduce your request rate. (fault proxy)');
      const headers = { 'Content-Type': 'application/xml', 'Content-Length': Buffer.byteLength(body) };
      if (expectsContinue) {
        // the body never comes: answer now and close, so no body bytes are read as a request
        res.writeHead(status, { ...headers, Connection: 'close' });
        res.end(body);
        return;
      }
      req.resume();
      req.on('end', () => {
        res.writeHead(status, headers);
        res.end(body);
      });
    } else {
      if (expectsContinue) res.writeContinue();
      forward(req, res);
    }
  };
  if (faults.delay_ms > 0) setTimeout(act, faults.delay_ms);
  else act();
}

const server = http.createServer((req, res) => handle(req, res, false));
server.on('checkContinue', (req, res) => handle(req, res, true));

server.keepAliveTimeout = 5000;
server.listen(port, '127.0.0.1', () => {
  process.stdout.write(`listening ${server.address().port}\n`);
});
server.on('error', err => {
  console.error(`fault_proxy: ${err.message}`);
  process.exit(1);
});
process.on('SIGTERM', () => process.exit(0));
