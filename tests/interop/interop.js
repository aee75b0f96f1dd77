#!/usr/bin/env node
// Interop test: the real npm client vertx3-tcp-eventbus-client against
// running ebnodes (EBNODE_BIN). Plain: request/reply with headers, publish
// to two sockets, register/unregister (then NO_HANDLERS with the exact
// Vert.x text), access_denied going to the client's onerror. TLS (needs
// EB_CERTS_DIR, the certs fixture): request/reply with a client certificate
// against a bridge that requires one.
// Exit 0 pass, 1 fail, 77 skip (package not installed: scripts/deps.sh;
// with EB_REQUIRE_INTEROP set, as scripts/test.sh does, 1 instead).
'use strict';
const assert = require('assert');
const fs = require('fs');
const os = require('os');
const path = require('path');
const { spawn } = require('child_process');

let EventBus;
try {
  EventBus = require('vertx3-tcp-eventbus-client/lib/tcp-vertx-eventbus');
} catch (e) {
  console.error('interop: vertx3-tcp-eventbus-client missing (run scripts/deps.sh): ' + e.message);
  // scripts/test.sh (and so CI) installs it first: there a missing client is
  // a failure, never a skip.
  process.exit(process.env.EB_REQUIRE_INTEROP ? 1 : 77);
}

const mult = Number(process.env.EB_TEST_TIMEOUT_MULTIPLIER || '1') || 1;
const bin = process.env.EBNODE_BIN;
if (!bin) {
  console.error('interop: EBNODE_BIN is not set');
  process.exit(1);
}
const certs = process.env.EB_CERTS_DIR || '';
const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'ebinterop-'));
const nodes = [];
const buses = [];
let finished = false;

function startNode(name, bridge) {
  const cfg = path.join(dir, name + '.json');
  fs.writeFileSync(cfg, JSON.stringify({
    bridge: Object.assign({ listen: '127.0.0.1', port: 0 }, bridge),
    admin: { enabled: false }, cluster: { port: 0 }, log: { level: 'info' },
  }));
  const logfd = fs.openSync(path.join(dir, name + '.log'), 'w');
  const proc = spawn(bin, ['-c', cfg], { stdio: ['ignore', 'pipe', logfd] });
  const n = { name, proc, exited: false, stopping: false };
  nodes.push(n);
  proc.on('exit', (code) => {
    n.exited = true;
    if (!finished && !n.stopping) finish(1, 'interop: ebnode ' + name + ' exited early: ' + code);
  });
  return new Promise((resolve) => {
    let out = '';
    let ready = false;
    proc.stdout.on('data', (d) => {
      out += d.toString();
      const m = /READY .*bridge=([^\s]+):(\d+)/.exec(out);
      if (m && !ready) {
        ready = true;
        resolve({ host: m[1], port: Number(m[2]) });
      }
    });
  });
}

function finish(code, msg) {
  if (finished) return;
  finished = true;
  if (msg) console.error(msg);
  for (const b of buses) {
    try { b.transport.destroy(); } catch (e) { /* closing anyway */ }
  }
  let left = nodes.length + 1;
  const done = () => {
    if (--left > 0) return;
    if (code !== 0) {
      for (const n of nodes) {
        console.error('--- ebnode ' + n.name + ' log ---\n' +
          fs.readFileSync(path.join(dir, n.name + '.log'), 'utf8'));
      }
    }
    fs.rmSync(dir, { recursive: true, force: true });
    process.exit(code);
  };
  for (const n of nodes) {
    n.stopping = true;
    if (n.exited) { done(); continue; }
    const killer = setTimeout(() => n.proc.kill('SIGKILL'), 5000 * mult);
    n.proc.on('exit', () => { clearTimeout(killer); done(); });
    n.proc.kill('SIGTERM');
  }
  done();
}

const watchdog = setTimeout(() => finish(1, 'interop: timed out'), 30000 * mult);
process.on('uncaughtException', (e) => finish(1, 'interop: FAIL: ' + (e.stack || e)));
process.on('unhandledRejection', (e) => finish(1, 'interop: FAIL: ' + (e.stack || e)));

function open(host, port, options) {
  return new Promise((resolve, reject) => {
    const eb = new EventBus(host, port, options);
    buses.push(eb);
    eb.onerror = (e) => (eb.errors = eb.errors || []).push(e);
    eb.onopen = () => resolve(eb);
    eb.transport.on('error', reject);
  });
}

function request(eb, address, body, headers) {
  return new Promise((resolve) => {
    eb.send(address, body, headers || {}, (err, msg) => resolve({ err, msg }));
  });
}

// Waits until a handler on address answers (registrations from another
// socket become visible once that socket's frame was processed).
async function probe(eb, address) {
  for (let i = 0; i < 200; i++) {
    const r = await request(eb, address, { probe: true }, { timeout: 300 });
    if (!r.err) return;
    await new Promise((res) => setTimeout(res, 10));
  }
  throw new Error('no handler on ' + address);
}

function waitFor(pred, what) {
  return new Promise((resolve, reject) => {
    const t0 = Date.now();
    const tick = () => {
      if (pred()) return resolve();
      if (Date.now() - t0 > 5000 * mult) return reject(new Error('timeout: ' + what));
      setTimeout(tick, 5);
    };
    tick();
  });
}

async function runPlain() {
  const { host, port } = await startNode('plain', {
    inbound: [{}], outbound: [{ addressRegex: 'interop\\..*' }] });
  const server = await open(host, port);
  const a = await open(host, port);
  const b = await open(host, port);

  // 1. request/reply, headers both ways.
  let seenHeaders = null;
  server.registerHandler('interop.echo', (err, msg) => {
    assert.ifError(err);
    if (msg.body && msg.body.probe) return msg.reply({});
    seenHeaders = msg.headers;
    msg.reply({ echo: msg.body }, { 'x-reply': 'yes' });
  });
  await probe(a, 'interop.echo');
  const r = await request(a, 'interop.echo', { n: 42, s: 'héllo' }, { 'x-req': 'r' });
  assert.ifError(r.err);
  assert.strictEqual(r.msg.type, 'message');
  assert.strictEqual(r.msg.send, true);
  assert.deepStrictEqual(r.msg.body, { echo: { n: 42, s: 'héllo' } });
  assert.deepStrictEqual(r.msg.headers, { 'x-reply': 'yes' });
  assert.deepStrictEqual(seenHeaders, { 'x-req': 'r' });
  console.log('interop: request/reply ok');

  // 2. publish reaches both handlers of two sockets.
  const got = [];
  a.registerHandler('interop.news', (err, msg) => got.push(['a', msg.body, msg.send]));
  b.registerHandler('interop.news', (err, msg) => got.push(['b', msg.body, msg.send]));
  // Both registrations are in once each socket answers on its own address
  // (a socket's frames are handled in order).
  a.registerHandler('interop.a', (err, msg) => msg.reply({}));
  b.registerHandler('interop.b', (err, msg) => msg.reply({}));
  await probe(server, 'interop.a');
  await probe(server, 'interop.b');
  server.publish('interop.news', { headline: 'hi' });
  await waitFor(() => got.length === 2, 'two publish deliveries');
  got.sort();
  assert.deepStrictEqual(got, [['a', { headline: 'hi' }, false], ['b', { headline: 'hi' }, false]]);
  console.log('interop: publish ok');

  // 3. unregister, then the server's request fails with NO_HANDLERS. A
  // request racing the unregister (other socket) may still reach the
  // client, which no longer answers: bound it with the timeout header.
  const h = (err, msg) => msg.reply({});
  a.registerHandler('interop.tmp', h);
  await probe(server, 'interop.tmp');
  a.unregisterHandler('interop.tmp', h);
  let fail = null;
  for (let i = 0; i < 200 && !fail; i++) {
    const x = await request(server, 'interop.tmp', {}, { timeout: 300 });
    if (x.err && x.err.failureType === 'NO_HANDLERS') fail = x.err;
    else await new Promise((res) => setTimeout(res, 10));
  }
  assert.ok(fail, 'unregister took effect');
  assert.deepStrictEqual(fail, { failureCode: -1, failureType: 'NO_HANDLERS',
    message: 'No handlers for address interop.tmp' });
  console.log('interop: register/unregister ok');

  // 4. outbound denied: register of a non-permitted address -> onerror.
  a.registerHandler('secret', () => {});
  await waitFor(() => (a.errors || []).length > 0, 'access_denied err');
  assert.deepStrictEqual(a.errors[0], { type: 'err', message: 'access_denied' });
  console.log('interop: access_denied ok');
}

// 5. TLS with a client certificate against a bridge that requires one (the
// client switches to the tls module when given a cert).
async function runTls() {
  if (!certs) {
    console.log('interop: TLS skipped (EB_CERTS_DIR not set)');
    return;
  }
  const file = (f) => fs.readFileSync(path.join(certs, f));
  const { host, port } = await startNode('tls', {
    inbound: [{}], outbound: [{}],
    tls: { cert: path.join(certs, 'server.pem'), key: path.join(certs, 'server.key'),
      ca: path.join(certs, 'ca.pem'), client_auth: 'required' } });
  const opts = { cert: file('client.pem'), key: file('client.key'), ca: file('ca.pem') };
  const server = await open(host, port, opts);
  const client = await open(host, port, opts);
  server.registerHandler('tls.echo', (err, msg) => msg.reply({ echo: msg.body }));
  await probe(client, 'tls.echo');
  const r = await request(client, 'tls.echo', { over: 'tls' });
  assert.ifError(r.err);
  assert.deepStrictEqual(r.msg.body, { echo: { over: 'tls' } });
  console.log('interop: TLS request/reply ok');
}

(async () => {
  await runPlain();
  await runTls();
  clearTimeout(watchdog);
  finish(0, 'interop: PASS');
})();
