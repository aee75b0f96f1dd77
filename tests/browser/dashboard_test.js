#!/usr/bin/env node
// The admin dashboard in a real browser (issue 15): three clustered
// ebnodes with an admin token; Debian's chromium (headless, puppeteer-core)
// opens the page node c serves at / with #token=...; the leader is marked;
// after the leader's SIGTERM the page shows the new leader within 2 s
// (measured: SIGTERM sent -> the page's leader element changed). Ingress
// traffic from a browser bridge page runs meanwhile, so the page shows
// rates. Checks that / is served without the token and the data is not.
// Per node (every member's /metrics, gathered by c over the node links:
// GET /cluster/metrics): the page shows ingress rates, held messages and the
// configuration version of all three nodes; after `ebctl config set` the
// new version appears for every node (timed) and equals its GET /config.
// Saves a screenshot: $EB_TEST_OUT/dashboard.png.
'use strict';
const assert = require('assert');
const path = require('path');
const fs = require('fs');
const { execFileSync } = require('child_process');
const lib = require('./lib');

const puppeteer = lib.loadPuppeteer();
const TOKEN = 'dash-s3cret';

async function main() {
  const cl = new lib.Cluster('dash');
  let browser = null;
  let web = null;
  let failed = true;
  const numbers = {};
  const extra = { admin: { listen: '127.0.0.1', port: 0, token: TOKEN } };
  try {
    await cl.start('a', extra);
    await lib.waitUntil(async () => (await cl.admin('a', '/leader', TOKEN)).status === 200, 20000, 'a leads');
    await cl.start('b', extra);
    const c = await cl.start('c', extra);

    // The page is open, its data is not.
    const page0 = await fetch(c.admin + '/');
    assert.strictEqual(page0.status, 200);
    assert.match(await page0.text(), /ebnode dashboard/);
    assert.strictEqual((await fetch(c.admin + '/nodes')).status, 401);

    browser = await lib.launch(puppeteer);
    // Ingress traffic from a browser bridge page on c (route target there).
    web = await lib.staticServer();
    const tp = await browser.newPage();
    await tp.goto(web.url + '/page.html');
    await tp.evaluate((u) => T.open('c1', u, false), c.web);
    await tp.evaluate(() => {
      T.register('c1', 'orders');
      window.pump = setInterval(() => { for (let i = 0; i < 20; i++) T.send('c1', 'external.ingress', { o: i }); }, 50);
    });

    const page = await browser.newPage();
    await page.setViewport({ width: 1200, height: 760 });
    // Without the token the page says so.
    await page.goto(c.admin + '/');
    await page.waitForFunction(() => /unauthorized/.test(document.getElementById('status').textContent), { timeout: 5000 * lib.mult });

    await page.goto(c.admin + '/#token=' + TOKEN);
    const leaderOnPage = () => page.evaluate(() => document.getElementById('leader').getAttribute('data-leader'));
    await lib.waitUntil(async () => (await leaderOnPage()) === 'a', 10000, 'page shows leader a')
      .catch(async (e) => {
        throw new Error(e.message + '; page status: ' + await page.evaluate(() => document.getElementById('status').textContent));
      });
    const marked = await page.evaluate(() => Array.from(document.querySelectorAll('#members tr.leader')).map((tr) => tr.getAttribute('data-node')));
    assert.deepStrictEqual(marked, ['a']);
    const rows = await page.evaluate(() => document.querySelectorAll('#members tbody tr').length);
    assert.strictEqual(rows, 3);
    await lib.waitUntil(() => page.evaluate(() => document.querySelectorAll('#links tbody tr .up').length === 2), 10000, 'two links up');

    // CORS on the admin port with a token set: any origin may read with
    // the token (the preflight is open), the data is not open.
    const pre = await fetch(a0admin(cl) + '/metrics', { method: 'OPTIONS', headers: { Origin: 'http://x', 'Access-Control-Request-Method': 'GET', 'Access-Control-Request-Headers': 'authorization' } });
    assert.strictEqual(pre.status, 204);
    assert.strictEqual(pre.headers.get('access-control-allow-origin'), '*');
    assert.match(pre.headers.get('access-control-allow-headers'), /authorization/i);
    const un = await fetch(a0admin(cl) + '/metrics');
    assert.strictEqual(un.status, 401);
    assert.strictEqual(un.headers.get('access-control-allow-origin'), '*');

    // Per node: rates and held messages for all three, from their own
    // /metrics as c gathered them; c (which gets the bridge page's
    // traffic) has a rate.
    const perNode = () => page.evaluate(() => Array.from(document.querySelectorAll('#pernode tbody tr')).map((tr) => {
      const o = { node: tr.getAttribute('data-node'), state: tr.getAttribute('data-state') };
      tr.querySelectorAll('td[data-k]').forEach((td) => { o[td.getAttribute('data-k')] = td.textContent; if (td.hasAttribute('data-total')) o[td.getAttribute('data-k') + '_total'] = Number(td.getAttribute('data-total')); });
      return o;
    }));
    const pn = await lib.waitUntil(async () => {
      const r = await perNode();
      return r.length === 3 && r.every((x) => x.state === 'ok' && /\/s/.test(x.recv) && /^\d+$/.test(x.held)) &&
        r.find((x) => x.node === 'c').recv_total > 0 ? r : null;
    }, 10000, 'rates of all three nodes');
    assert.deepStrictEqual(pn.map((x) => x.node).sort(), ['a', 'b', 'c']);
    assert.ok(pn.find((x) => x.node === 'a').routed_total > 0, JSON.stringify(pn)); // a leads: routes
    numbers.per_node = pn.map((x) => x.node + ': ' + x.recv + ' held ' + x.held + ' config ' + x.config).join('; ');

    // Configuration version per node: set one with ebctl; the page shows
    // it for every node, equal to each node's GET /config.
    const v0 = pn.map((x) => x.config);
    const doc = path.join(cl.dir, 'cluster-config.json');
    fs.writeFileSync(doc, JSON.stringify({ log: { level: 'info' } }));
    const tc = Date.now();
    execFileSync(process.env.EBCTL_BIN || 'ebctl', ['config', '--zk', cl.zk, '--root', cl.root, 'set', doc], { timeout: 20000 * lib.mult });
    const pv = await lib.waitUntil(async () => {
      const r = await perNode();
      return r.length === 3 && r.every((x) => x.config !== '' && x.config !== '?' && Number(x.config) >= 1) ? r : null;
    }, 10000, 'config versions on the page');
    numbers.config_set_to_page_ms = Date.now() - tc;
    for (const x of pv) {
      const cfg = await cl.admin(x.node, '/config', TOKEN);
      assert.strictEqual(cfg.status, 200);
      assert.strictEqual(Number(x.config), cfg.body.version, x.node + ': page ' + x.config + ' vs /config ' + cfg.body.version);
    }
    numbers.config_versions = v0.join(',') + ' -> ' + pv.map((x) => x.node + '=' + x.config).join(',');

    // Leader SIGTERM: the page shows the new leader within 2 s.
    const t0 = Date.now();
    cl.nodes.a.proc.kill('SIGTERM');
    const newLeader = await lib.waitUntil(async () => {
      const l = await leaderOnPage();
      return l && l !== 'a' && l !== 'none' ? l : null;
    }, 5000, 'page shows a new leader');
    numbers.leader_change_to_page_ms = Date.now() - t0;
    assert.ok(['b', 'c'].includes(newLeader), newLeader);
    assert.ok(numbers.leader_change_to_page_ms < 2000, 'took ' + numbers.leader_change_to_page_ms + ' ms');
    await lib.waitUntil(() => cl.nodes.a.exited, 15000, 'a exits');
    // The history shows the change; let rates settle for the screenshot.
    await lib.waitUntil(() => page.evaluate(() => document.querySelectorAll('#changes tbody tr').length >= 2), 3000, 'role change listed');
    await lib.waitUntil(() => page.evaluate(() => document.querySelectorAll('#members tbody tr').length === 2), 10000, 'a gone from members');
    await lib.waitUntil(async () => {
      const r = await perNode();
      return r.length === 2 && r.every((x) => x.state === 'ok');
    }, 5000, 'per-node rows of b and c');
    await lib.sleep(1000);
    const shot = path.join(lib.outDir(), 'dashboard.png');
    await page.screenshot({ path: shot, fullPage: true });
    numbers.screenshot = shot;
    numbers.page_text_ingress = await page.evaluate(() => document.querySelector('#local tr[data-key="ingress received"] td').textContent);
    await tp.evaluate(() => clearInterval(window.pump));

    console.log('browser dashboard: ' + JSON.stringify(numbers));
    if (browser) { await browser.close(); browser = null; }
    await cl.stopAll();
    failed = false;
  } finally {
    if (browser) await browser.close().catch(() => {});
    if (web) web.srv.close();
    await cl.close(failed);
  }
}

function a0admin(cl) { return cl.nodes.a.admin; }

const guard = setTimeout(() => { console.error('browser dashboard: overall timeout'); process.exit(1); }, 110000 * lib.mult);
main().then(() => { clearTimeout(guard); process.exit(0); }, (e) => {
  console.error('browser dashboard: FAIL: ' + (e && e.stack ? e.stack : e));
  process.exit(1);
});
