#!/usr/bin/env node
// The browser bridge in a real browser (issue 15): Debian's chromium,
// headless, runs a page with the real npm clients (sockjs-client and
// @vertx/eventbus-bridge-client.js) against two clustered ebnodes (web/
// front, SockJS websocket transport). Checks send, publish, request,
// register and unregister across nodes, an ingress request acknowledged
// with an epoch, access_denied, and reconnection across a leader SIGTERM.
// Prints the numbers: messages/s from one page, the time for a
// registration to become visible from the other node, the time from the
// leader's SIGTERM to an ingress acknowledgement with the new epoch.
'use strict';
const assert = require('assert');
const lib = require('./lib');

const puppeteer = lib.loadPuppeteer();
const N_RATE = Number(process.env.EB_BROWSER_RATE_N || '5000');

async function main() {
  const cl = new lib.Cluster('bridge');
  let browser = null;
  let web = null;
  let failed = true;
  const numbers = {};
  try {
    const a = await cl.start('a');
    await lib.waitUntil(async () => (await cl.leader('a')) !== null, 20000, 'a leads');
    const b = await cl.start('b');
    web = await lib.staticServer();
    browser = await lib.launch(puppeteer);
    const page = await browser.newPage();
    page.on('console', (m) => { if (m.type() === 'error') console.error('page: ' + m.text()); });
    await page.goto(web.url + '/page.html');
    const ev = (fn, ...args) => page.evaluate(fn, ...args);

    // SockJS info endpoint, as sockjs-client reads it.
    const info = await (await fetch(a.web + '/info')).json();
    assert.strictEqual(info.websocket, true);

    await ev((u) => T.open('a1', u, true), a.web);
    await ev((u) => T.open('b1', u, false), b.web);

    // register on a, visible from b: request until answered.
    const vis = await ev(async () => {
      const t0 = performance.now();
      T.register('a1', 'browser.echo');
      T.register('a1', 'browser.news');
      for (;;) {
        const r = await T.request('b1', 'browser.echo', { q: 1 });
        if (!r.err) return { ms: performance.now() - t0, r };
        if (performance.now() - t0 > 10000) throw new Error('never visible: ' + JSON.stringify(r.err));
        await new Promise((res) => setTimeout(res, 5));
      }
    });
    assert.deepStrictEqual(vis.r.body, { echo: { q: 1 }, by: 'a1' });
    numbers.registration_visible_ms = Math.round(vis.ms * 10) / 10;

    // request with headers
    const rq = await ev(() => T.request('b1', 'browser.echo', { n: 2 }, { h: 'v' }));
    assert.deepStrictEqual(rq.body, { echo: { n: 2 }, by: 'a1' });
    const lastHdr = await ev(() => T.got('a1', 'browser.echo').slice(-1)[0].headers);
    assert.strictEqual(lastHdr.h, 'v');

    // send (no reply) and publish (both nodes' consumers)
    await ev(() => T.register('b1', 'browser.news'));
    await ev(() => T.send('b1', 'browser.echo', { s: 'x' }));
    await lib.waitUntil(() => ev(() => T.got('a1', 'browser.echo').some((m) => m.body && m.body.s === 'x')), 5000, 'send arrives');
    await ev(() => T.publish('b1', 'browser.news', { p: 1 }));
    await lib.waitUntil(() => ev(() => T.got('a1', 'browser.news').length === 1 && T.got('b1', 'browser.news').length === 1), 5000, 'publish reaches both');

    // access_denied: not in the inbound list (Vert.x SockJS wording: body)
    await ev(() => T.send('b1', 'secret.x', {}));
    const denied = await lib.waitUntil(() => ev(() => T.unhandled('b1').find((m) => m.type === 'err')), 5000, 'access_denied');
    assert.strictEqual(denied.body, 'access_denied');

    // unregister: requests from b fail (no handlers) again
    await ev(() => T.unregister('a1', 'browser.echo'));
    const gone = await ev(async () => {
      const t0 = performance.now();
      for (;;) {
        const r = await T.request('b1', 'browser.echo', { q: 3 });
        if (r.err) return r.err;
        if (performance.now() - t0 > 10000) throw new Error('still registered');
        await new Promise((res) => setTimeout(res, 5));
      }
    });
    assert.ok(typeof gone.failureCode === 'number', JSON.stringify(gone));

    // messages/s from one page (send to its own consumer through node b)
    numbers.messages_per_s = Math.round(await ev((n) => T.rate('b1', 'browser.rate', n), N_RATE));

    // the SockJS xhr-streaming fallback (a proxy that blocks WebSocket):
    // sockjs-client forced to it through the EventBus options; a page on
    // node b reaches a handler on a1 (node a) and the other way round
    await ev((u) => T.open('x1', u, false, { transports: ['xhr-streaming'] }), b.web);
    assert.strictEqual(await ev(() => T.transport('x1')), 'xhr-streaming');
    await ev(() => T.register('a1', 'browser.echo'));
    const xr = await ev(async () => {
      const t0 = performance.now();
      for (;;) {
        const r = await T.request('x1', 'browser.echo', { x: 1 }, { h: 'x' });
        if (!r.err) return r;
        if (performance.now() - t0 > 10000) throw new Error('xhr request: ' + JSON.stringify(r.err));
        await new Promise((res) => setTimeout(res, 5));
      }
    });
    assert.deepStrictEqual(xr.body, { echo: { x: 1 }, by: 'a1' });
    await ev(() => T.register('x1', 'browser.xnews'));
    await ev(() => T.send('x1', 'browser.echo', { s: 'xhr' }));
    await lib.waitUntil(() => ev(() => T.got('a1', 'browser.echo').some((m) => m.body && m.body.s === 'xhr')), 5000, 'xhr send arrives');
    const xback = await ev(async () => {
      for (let i = 0; i < 500; i++) {
        const r = await T.request('a1', 'browser.xnews', { to: 'x1' });
        if (!r.err) return r.body;
        await new Promise((res) => setTimeout(res, 10));
      }
      throw new Error('x1 registration not reachable');
    });
    assert.deepStrictEqual(xback, { echo: { to: 'x1' }, by: 'x1' });
    await ev(() => T.send('x1', 'secret.x', {}));
    const xdenied = await lib.waitUntil(() => ev(() => T.unhandled('x1').find((m) => m.type === 'err')), 5000, 'xhr access_denied');
    assert.strictEqual(xdenied.body, 'access_denied');
    numbers.xhr_streaming_messages_per_s = Math.round(await ev((n) => T.rate('x1', 'browser.xrate', n), N_RATE));
    const xm = await (await fetch(b.admin + '/metrics')).text();
    assert.match(xm, /ebnode_web_sessions_total\{transport="xhr"\} [1-9]/);
    await ev(() => { T.buses.x1.close(); });

    // ingress: the route target 'orders' is on page b1; ack has an epoch
    await ev(() => T.register('b1', 'orders'));
    const ingress = () => ev(async () => {
      const t0 = performance.now();
      for (;;) {
        const r = await T.request('b1', 'external.ingress', { order: 1 });
        if (!r.err && r.body && r.body.status === 'ok') return r.body;
        if (performance.now() - t0 > 20000) throw new Error('no ingress ack: ' + JSON.stringify(r));
        await new Promise((res) => setTimeout(res, 20));
      }
    });
    const ack1 = await ingress();
    assert.ok(Number.isInteger(ack1.epoch) && ack1.epoch > 0, JSON.stringify(ack1));
    assert.strictEqual(ack1.to, 'orders');

    // leader SIGTERM: b takes over; a page on b gets acks with a new epoch
    const t0 = Date.now();
    await cl.stop('a');
    const ack2 = await ingress();
    numbers.leader_sigterm_to_new_epoch_ack_ms = Date.now() - t0;
    assert.ok(ack2.epoch > ack1.epoch, JSON.stringify([ack1, ack2]));
    assert.strictEqual((await cl.leader('b')).node_id, 'b');

    // a1 (on the stopped node) reconnects once a is back, on the same port
    await cl.start('a');
    await lib.waitUntil(() => ev(() => T.reconnects('a1') >= 1 && T.state('a1') === 1), 15000, 'a1 reconnects');
    await ev(() => T.register('a1', 'browser.back'));
    const back = await ev(async () => {
      for (let i = 0; i < 500; i++) {
        const r = await T.request('b1', 'browser.back', { again: true });
        if (!r.err) return r.body;
        await new Promise((res) => setTimeout(res, 20));
      }
      throw new Error('a1 not reachable after reconnect');
    });
    assert.deepStrictEqual(back, { echo: { again: true }, by: 'a1' });
    const st = await cl.admin('b', '/bridge');
    numbers.bridge_status = st.status;

    console.log('browser bridge: ' + JSON.stringify(numbers));
    if (browser) { await browser.close(); browser = null; }
    await cl.stopAll();
    failed = false;
  } finally {
    if (browser) await browser.close().catch(() => {});
    if (web) web.srv.close();
    await cl.close(failed);
  }
}

const guard = setTimeout(() => { console.error('browser bridge: overall timeout'); process.exit(1); }, 110000 * lib.mult);
main().then(() => { clearTimeout(guard); process.exit(0); }, (e) => {
  console.error('browser bridge: FAIL: ' + (e && e.stack ? e.stack : e));
  process.exit(1);
});
