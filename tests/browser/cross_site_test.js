#!/usr/bin/env node
// Admin safe by default (issue 22), in a real browser: two clustered
// ebnodes with the default admin configuration (no token, no CORS
// origins); Debian's chromium (headless, puppeteer-core) opens a page of
// another origin (http://localhost:<port>, served by this test), which
// tries what a hostile page can: a simple no-cors POST /leader/release, a
// form POST into a hidden iframe, a fetch carrying X-Ebnode-Admin (needs a
// preflight) and a CORS read of /nodes. Every write is answered 403 (the
// leader logs cross-site-refused) or never sent, the leader keeps leading
// (its elections count, its gauge, no "revoked" in its log, the follower
// sees no leader change) and the read is blocked. Before this change the
// no-cors POST answered 200 and the leader stepped down.
'use strict';
const assert = require('assert');
const fs = require('fs');
const http = require('http');
const path = require('path');
const { execFileSync } = require('child_process');
const lib = require('./lib');

const puppeteer = lib.loadPuppeteer();

// The hostile page: the admin URL comes in its query string.
const EVIL = `<!doctype html><html><body><h1>evil</h1>
<iframe name="sink" id="sink"></iframe>
<script>
window.results = {};
async function attack(admin) {
  const r = window.results;
  try {
    const a = await fetch(admin + '/leader/release', { method: 'POST', mode: 'no-cors' });
    r.no_cors = 'answered:' + a.type;
  } catch (e) { r.no_cors = 'error:' + e.message; }
  try {
    await fetch(admin + '/leader/release', { method: 'POST', headers: { 'X-Ebnode-Admin': '1' } });
    r.custom_header = 'sent';
  } catch (e) { r.custom_header = 'blocked'; }
  try {
    const g = await fetch(admin + '/nodes');
    r.read = 'read:' + (await g.text()).slice(0, 40);
  } catch (e) { r.read = 'blocked'; }
  await new Promise((resolve) => {
    const f = document.createElement('form');
    f.method = 'POST'; f.action = admin + '/leader/release'; f.target = 'sink';
    document.getElementById('sink').onload = () => resolve();
    document.body.appendChild(f);
    f.submit();
  });
  r.form = 'submitted';
  return r;
}
</script></body></html>`;

function evilServer() {
  const srv = http.createServer((req, res) => {
    res.writeHead(200, { 'Content-Type': 'text/html' });
    res.end(EVIL);
  });
  return new Promise((resolve) => srv.listen(0, '127.0.0.1', () => resolve(srv)));
}

async function metric(admin, name) {
  const r = await fetch(admin + '/metrics');
  assert.strictEqual(r.status, 200);
  const m = new RegExp('^' + name + ' (\\S+)$', 'm').exec(await r.text());
  assert.ok(m, name);
  return Number(m[1]);
}

async function main() {
  const cl = new lib.Cluster('xsite');
  let browser = null;
  let srv = null;
  let failed = true;
  const numbers = {};
  try {
    const a = await cl.start('a');
    await lib.waitUntil(async () => (await cl.leader('a')) !== null, 20000, 'a leads');
    const b = await cl.start('b');
    await lib.waitUntil(async () => {
      const l = await cl.leader('b');
      return l && l.node_id === 'a';
    }, 10000, 'b knows leader a');
    const elections0 = await metric(a.admin, 'ebnode_leader_elections_total');
    const changes0 = await metric(b.admin, 'ebnode_leader_changes_total');

    srv = await evilServer();
    browser = await lib.launch(puppeteer);
    const page = await browser.newPage();
    // localhost is another site than 127.0.0.1 (the admin's host).
    await page.goto('http://localhost:' + srv.address().port + '/evil.html');
    const res = await page.evaluate((u) => attack(u), a.admin);
    numbers.page = res;
    // Every answered write was refused by the admin endpoint, which logs
    // each refusal (the form and the no-cors POST reached it).
    const logOf = () => fs.readFileSync(path.join(cl.dir, 'a.log'), 'utf8');
    await lib.waitUntil(() => /cross-site-refused/.test(logOf()), 5000, 'a logs cross-site-refused');
    assert.strictEqual(res.no_cors, 'answered:opaque');
    assert.strictEqual(res.custom_header, 'blocked'); // the preflight is refused
    assert.strictEqual(res.read, 'blocked');          // no CORS by default
    assert.strictEqual(res.form, 'submitted');

    // The leader kept leading: never a step-down (what a release would
    // log) nor any other revocation, and no election but the ones a lease
    // that lapsed under load (a sanitizer build with Chromium starting on
    // 2 cores: revoked reason=lease-expired, re-elected at once) explains.
    const log = logOf();
    const lapse = 'election: revoked: reason=lease-expired';
    const revoked = log.match(/election: revoked: reason=\S+/g) || [];
    const lapses = revoked.filter((r) => r === lapse).length;
    assert.deepStrictEqual(revoked.filter((r) => r !== lapse), [], 'a was revoked');
    numbers.lease_lapses = lapses;
    await lib.waitUntil(async () => (await metric(a.admin, 'ebnode_leader')) === 1,
      10000, 'a leads');
    assert.strictEqual(await metric(a.admin, 'ebnode_leader_elections_total'),
      elections0 + lapses);
    await lib.waitUntil(async () => {
      const l = await cl.leader('b');
      return l && l.node_id === 'a';
    }, 10000, 'b knows leader a');
    if (lapses === 0) {
      assert.strictEqual(await metric(b.admin, 'ebnode_leader_changes_total'), changes0);
    }
    numbers.refused_logged = (log.match(/cross-site-refused/g) || []).length;

    // ebctl (X-Ebnode-Admin, no Origin) still releases. A lease that
    // lapses under load (a sanitizer build on a busy machine: a revoked,
    // then re-elected 31 ms later) answers 409 not_leader in between:
    // asked again while a leads, bounded.
    let out = null;
    await lib.waitUntil(async () => {
      if ((await metric(a.admin, 'ebnode_leader')) !== 1) return false;
      try {
        out = execFileSync(process.env.EBCTL_BIN || 'ebctl',
          ['--admin', a.admin.replace('http://', ''), 'release'],
          { timeout: 10000 * lib.mult, stdio: ['ignore', 'pipe', 'pipe'] }).toString();
        return true;
      } catch (e) {
        if (/not_leader/.test(String(e.stderr))) return false;
        throw e;
      }
    }, 10000, 'ebctl release while a leads');
    assert.match(out, /released: yes/);
    await lib.waitUntil(async () => {
      const l = await cl.leader('b');
      return l && l.node_id === 'b';
    }, 10000, 'b leads after ebctl release');

    console.log('browser cross_site: ' + JSON.stringify(numbers));
    await browser.close();
    browser = null;
    await cl.stopAll();
    failed = false;
  } finally {
    if (browser) await browser.close().catch(() => {});
    if (srv) srv.close();
    await cl.close(failed);
  }
}

const guard = setTimeout(() => { console.error('browser cross_site: overall timeout'); process.exit(1); }, 100000 * lib.mult);
main().then(() => { clearTimeout(guard); process.exit(0); }, (e) => {
  console.error('browser cross_site: FAIL: ' + (e && e.stack ? e.stack : e));
  process.exit(1);
});
