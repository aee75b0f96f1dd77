#!/usr/bin/env node
// The dashboard never sends the admin token to another host (issue 22):
// two clustered ebnodes with an admin token, plus a member record written
// by hand (zkpoke: an ephemeral, valid member "rogue") whose host and admin
// port name a listener this test owns. Debian's chromium (headless,
// puppeteer-core) opens node b's dashboard with #token=...; while the page
// refreshes (at least 16 times after the rogue member is listed), the
// listener must receive no connection at all, and the page must still show
// the figures of both real members (per-node rows "ok" with their held
// messages and configuration version, read through b's GET /cluster/metrics)
// and the rogue member as unreachable. Before this change the page fetched
// the rogue's "/metrics" with "Authorization: Bearer <token>" every tick.
'use strict';
const assert = require('assert');
const http = require('http');
const { spawn } = require('child_process');
const lib = require('./lib');

const puppeteer = lib.loadPuppeteer();
const TOKEN = 'rogue-s3cret';
const ROGUE = 'm-0badc0de-0000-4000-8000-00000000beef-0000009999';

// A zkpoke process (tests/integration/zk/zkpoke.c): one command a line.
class Poke {
  constructor(connect) {
    const bin = process.env.EB_ZKPOKE_BIN;
    if (!bin) throw new Error('EB_ZKPOKE_BIN is not set');
    this.p = spawn(bin, [connect, '4000'], { stdio: ['pipe', 'pipe', 'inherit'] });
    this.lines = [];
    this.buf = '';
    this.p.stdout.on('data', (d) => {
      this.buf += d.toString();
      let i;
      while ((i = this.buf.indexOf('\n')) >= 0) {
        this.lines.push(this.buf.slice(0, i).trim());
        this.buf = this.buf.slice(i + 1);
      }
    });
  }

  async line(what) {
    return lib.waitUntil(() => this.lines.shift(), 20000, 'zkpoke: ' + what);
  }

  async cmd(c) {
    this.p.stdin.write(c + '\n');
    const l = await this.line(c.split(' ')[0]);
    if (!l.startsWith('OK')) throw new Error('zkpoke ' + c + ': ' + l);
    return l;
  }

  close() {
    this.p.stdin.end();
  }
}

async function main() {
  const cl = new lib.Cluster('rogue');
  let browser = null;
  let poke = null;
  let failed = true;
  const numbers = {};
  // The listener the rogue record names: an HTTP server that approves any
  // CORS preflight and answers 200, as a hostile one would, so a page
  // willing to send the token would send it; it counts every connection
  // and keeps every request head (an Authorization header is the leak).
  const seen = { conns: 0, data: '', bearer: 0 };
  const trap = http.createServer((req, res) => {
    seen.data += req.method + ' ' + req.url + ' ' + JSON.stringify(req.headers) + '\n';
    if (/^Bearer /.test(req.headers.authorization || '')) seen.bearer++;
    res.writeHead(req.method === 'OPTIONS' ? 204 : 200, {
      'Access-Control-Allow-Origin': '*',
      'Access-Control-Allow-Headers': 'Authorization',
      'Content-Type': 'text/plain',
    });
    res.end(req.method === 'OPTIONS' ? '' : 'ebnode_ingress_holding 0\n');
  });
  trap.on('connection', () => { seen.conns++; });
  await new Promise((r) => trap.listen(0, '127.0.0.1', r));
  const extra = { admin: { listen: '127.0.0.1', port: 0, token: TOKEN } };
  try {
    await cl.start('a', extra);
    await lib.waitUntil(async () => (await cl.admin('a', '/leader', TOKEN)).status === 200, 20000, 'a leads');
    const b = await cl.start('b', extra);

    poke = new Poke(cl.zk);
    assert.strictEqual(await poke.line('READY'), 'READY');
    const rec = {
      node_id: 'rogue', address: 'addr-rogue', host: '127.0.0.1',
      admin_port: trap.address().port, bridge_port: 0, cluster_port: 0,
      version: 'x', eligible: false,
    };
    await poke.cmd('create e open ' + cl.root + '/members/' + ROGUE + ' ' + JSON.stringify(rec));
    // b takes it for a member.
    await lib.waitUntil(async () => {
      const r = await cl.admin('b', '/nodes', TOKEN);
      return r.status === 200 && r.body.nodes.some((n) => n.node_id === 'rogue');
    }, 10000, 'b lists the rogue member');

    browser = await lib.launch(puppeteer);
    const page = await browser.newPage();
    await page.goto(b.admin + '/#token=' + TOKEN);
    const perNode = () => page.evaluate(() => Array.from(document.querySelectorAll('#pernode tbody tr')).map((tr) => {
      const o = { node: tr.getAttribute('data-node'), state: tr.getAttribute('data-state') };
      tr.querySelectorAll('td[data-k]').forEach((td) => { o[td.getAttribute('data-k')] = td.textContent; });
      return o;
    }));
    const rows = await lib.waitUntil(async () => {
      const r = await perNode();
      const ok = r.filter((x) => x.state === 'ok' && /^\d+$/.test(x.held) && /^\d+$/.test(x.config));
      return ok.length >= 2 && r.some((x) => x.node === 'rogue') ? r : null;
    }, 10000, 'figures of a and b, a row for rogue');
    assert.deepStrictEqual(rows.filter((x) => x.node !== 'rogue').map((x) => x.node + ':' + x.state).sort(), ['a:ok', 'b:ok']);
    const members = await page.evaluate(() => Array.from(document.querySelectorAll('#members tbody tr')).map((tr) => tr.getAttribute('data-node')));
    assert.deepStrictEqual(members.slice().sort(), ['a', 'b', 'rogue']);

    // Let the page refresh at least 16 more times (about 4 s of polling).
    await page.evaluate(() => {
      window.refreshes = 0;
      new MutationObserver(() => { window.refreshes++; })
        .observe(document.querySelector('#pernode tbody'), { childList: true });
    });
    await lib.waitUntil(() => page.evaluate(() => window.refreshes >= 16), 15000, '16 refreshes');
    numbers.refreshes = await page.evaluate(() => window.refreshes);
    numbers.rogue_row = (await perNode()).find((x) => x.node === 'rogue');
    numbers.trap_connections = seen.conns;
    numbers.bearer_requests = seen.bearer;
    assert.strictEqual(seen.conns, 0, 'the rogue listener was contacted: ' + seen.data.slice(0, 300));
    assert.ok(!seen.data.includes(TOKEN));
    // The rogue member is listed, and shown unreachable: b asked its
    // internal bus address, which nobody serves.
    assert.strictEqual(numbers.rogue_row.state, 'down');

    console.log('browser dashboard_rogue: ' + JSON.stringify(numbers));
    await browser.close();
    browser = null;
    poke.close();
    poke = null;
    await cl.stopAll();
    failed = false;
  } finally {
    if (browser) await browser.close().catch(() => {});
    if (poke) poke.close();
    trap.close();
    await cl.close(failed);
    if (failed) {
      console.error('browser dashboard_rogue: trap saw ' + seen.conns + ' connections, ' +
        seen.bearer + ' requests with the bearer token');
    }
  }
}

const guard = setTimeout(() => { console.error('browser dashboard_rogue: overall timeout'); process.exit(1); }, 100000 * lib.mult);
main().then(() => { clearTimeout(guard); process.exit(0); }, (e) => {
  console.error('browser dashboard_rogue: FAIL: ' + (e && e.stack ? e.stack : e));
  process.exit(1);
});
