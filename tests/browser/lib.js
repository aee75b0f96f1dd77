// Shared helpers of the real-browser tests: ebnode processes against the
// ZooKeeper fixture (EB_ZK_CONNECT_FILE), a static server for the test page
// and the npm clients, and Debian's chromium driven by puppeteer-core.
// Exit codes: 0 pass, 1 fail, 77 skip (chromium or the npm packages missing;
// with EB_REQUIRE_BROWSER set, as scripts/test.sh does, 1 instead).
'use strict';
const fs = require('fs');
const http = require('http');
const net = require('net');
const os = require('os');
const path = require('path');
const { spawn } = require('child_process');

const mult = Number(process.env.EB_TEST_TIMEOUT_MULTIPLIER || '1') || 1;
const CHROMIUM = process.env.EB_CHROMIUM || '/usr/bin/chromium';

function skip(msg) {
  console.error(msg);
  process.exit(process.env.EB_REQUIRE_BROWSER ? 1 : 77);
}

function loadPuppeteer() {
  if (!fs.existsSync(CHROMIUM)) skip('browser: ' + CHROMIUM + ' missing (scripts/deps.sh installs chromium)');
  try {
    return require('puppeteer-core');
  } catch (e) {
    return skip('browser: puppeteer-core missing (run scripts/deps.sh): ' + e.message);
  }
}

function sleep(ms) {
  return new Promise((r) => setTimeout(r, ms));
}

async function waitUntil(pred, ms, what) {
  const end = Date.now() + ms * mult;
  for (;;) {
    const v = await pred();
    if (v) return v;
    if (Date.now() > end) throw new Error('timeout: ' + what);
    await sleep(20);
  }
}

function freePort() {
  return new Promise((resolve, reject) => {
    const s = net.createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const p = s.address().port;
      s.close(() => resolve(p));
    });
  });
}

function zkConnect() {
  const f = process.env.EB_ZK_CONNECT_FILE;
  if (!f) throw new Error('EB_ZK_CONNECT_FILE is not set (needs the ZooKeeper fixture)');
  return fs.readFileSync(f, 'utf8').trim();
}

class Cluster {
  constructor(name) {
    this.dir = fs.mkdtempSync(path.join(os.tmpdir(), 'ebbrowser-' + name + '-'));
    this.root = '/ebtest/browser-' + name + '-' + process.pid + '-' + Date.now();
    this.bin = process.env.EBNODE_BIN;
    if (!this.bin) throw new Error('EBNODE_BIN is not set');
    this.zk = zkConnect();
    this.nodes = {};
  }

  // Starts node `name` (again, after a stop: same ports); resolves with it
  // once READY was printed.
  async start(name, extra) {
    let n = this.nodes[name];
    if (!n) {
      n = { name, webPort: await freePort(), extra: extra || {} };
      this.nodes[name] = n;
    }
    const cfg = Object.assign({
      node: { address: name, id: name, host: '127.0.0.1' },
      zookeeper: { connect: this.zk, root: this.root, session_timeout_ms: 2000 },
      log: { level: 'info' },
      cluster: { listen: '127.0.0.1', port: 0 },
      bridge: {
        listen: '127.0.0.1', port: 0,
        inbound: [{ addressRegex: 'browser\\..+' }, { address: 'external.ingress' }],
        outbound: [{ addressRegex: 'browser\\..+' }, { address: 'orders' }],
      },
      web: { enabled: true, listen: '127.0.0.1', port: n.webPort, heartbeat_ms: 5000 },
      admin: { listen: '127.0.0.1', port: 0 },
      ingress: { default_route: { to: 'orders' } },
    }, n.extra);
    const file = path.join(this.dir, name + '.json');
    fs.writeFileSync(file, JSON.stringify(cfg));
    const logfd = fs.openSync(path.join(this.dir, name + '.log'), 'a');
    const proc = spawn(this.bin, ['-c', file], { stdio: ['ignore', 'pipe', logfd] });
    fs.closeSync(logfd);
    n.proc = proc;
    n.exited = false;
    proc.on('exit', (code, sig) => { n.exited = true; n.code = code === null ? sig : code; });
    await new Promise((resolve, reject) => {
      let out = '';
      const t = setTimeout(() => reject(new Error(name + ': no READY line')), 20000 * mult);
      proc.stdout.on('data', (d) => {
        out += d.toString();
        const m = /READY admin=([^\s]+):(\d+) bridge=([^\s]+):(\d+)/.exec(out);
        if (m && !n.ready) {
          clearTimeout(t);
          n.admin = 'http://127.0.0.1:' + m[2];
          n.bridgePort = Number(m[4]);
          resolve();
        }
      });
      proc.on('exit', (code) => { clearTimeout(t); if (!n.admin || n.proc !== proc) reject(new Error(name + ' exited: ' + code)); });
    });
    n.web = 'http://127.0.0.1:' + n.webPort + '/eventbus';
    return n;
  }

  // SIGTERM and wait for the exit (bounded).
  async stop(name) {
    const n = this.nodes[name];
    if (!n || n.exited) return;
    n.proc.kill('SIGTERM');
    await waitUntil(() => n.exited, 15000, name + ' exits');
    n.admin = null;
  }

  // SIGTERMs every running node; throws unless each exits with 0 (under
  // ASan a leak makes it non-zero).
  async stopAll() {
    for (const n of Object.values(this.nodes)) {
      await this.stop(n.name);
      if (n.code !== 0) throw new Error(n.name + ' exited with ' + n.code);
    }
  }

  async admin(name, p, token) {
    const n = this.nodes[name];
    const headers = token ? { Authorization: 'Bearer ' + token } : {};
    const r = await fetch(n.admin + p, { headers });
    return { status: r.status, body: r.status === 200 ? await r.json() : null };
  }

  async leader(name) {
    const r = await this.admin(name, '/leader');
    return r.status === 200 && r.body && r.body.node_id ? r.body : null;
  }

  async close(failed) {
    for (const n of Object.values(this.nodes)) {
      if (!n.exited) {
        n.proc.kill('SIGKILL');
      }
    }
    if (failed) {
      for (const n of Object.values(this.nodes)) {
        const f = path.join(this.dir, n.name + '.log');
        if (fs.existsSync(f)) {
          console.error('--- ebnode ' + n.name + ' log (tail) ---\n' +
            fs.readFileSync(f, 'utf8').split('\n').slice(-60).join('\n'));
        }
      }
    } else {
      fs.rmSync(this.dir, { recursive: true, force: true });
    }
  }
}

// The test page and the real npm clients, from one origin.
function staticServer() {
  const nm = path.join(__dirname, 'node_modules');
  const files = {
    '/page.html': [path.join(__dirname, 'page.html'), 'text/html'],
    '/sockjs.min.js': [path.join(nm, 'sockjs-client', 'dist', 'sockjs.min.js'), 'application/javascript'],
    '/vertx-eventbus.js': [path.join(nm, '@vertx', 'eventbus-bridge-client.js', 'vertx-eventbus.js'), 'application/javascript'],
  };
  for (const [, [f]] of Object.entries(files)) {
    if (!fs.existsSync(f)) skip('browser: ' + f + ' missing (run scripts/deps.sh)');
  }
  const srv = http.createServer((req, res) => {
    const e = files[req.url];
    if (!e) { res.writeHead(404); res.end(); return; }
    res.writeHead(200, { 'Content-Type': e[1] });
    res.end(fs.readFileSync(e[0]));
  });
  return new Promise((resolve) => srv.listen(0, '127.0.0.1', () => resolve({
    srv, url: 'http://127.0.0.1:' + srv.address().port,
  })));
}

async function launch(puppeteer) {
  return puppeteer.launch({
    executablePath: CHROMIUM,
    headless: true,
    args: ['--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage', '--no-first-run',
      '--no-default-browser-check', '--disable-extensions', '--disable-background-networking'],
  });
}

function outDir() {
  const d = process.env.EB_TEST_OUT || path.join(os.tmpdir(), 'ebnode-browser-out');
  fs.mkdirSync(d, { recursive: true });
  return d;
}

module.exports = { mult, loadPuppeteer, sleep, waitUntil, freePort, Cluster, staticServer, launch, outDir };
