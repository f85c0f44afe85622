// Drives headless Chromium through playwright-core for TestE2EWebBrowser
// (cmd/memvault/internal/web/e2e_test.go): loads each page of `memvault
// serve`, takes a full-page screenshot, and prints what it saw as JSON on
// stdout. It asserts nothing itself: the Go test decides.
//
//   node browse.mjs SPEC.json
//
// SPEC: {playwright, chromium, origin, tokenPath, artifacts, hostile,
//        noToken: [path…], pages: [{name, path}…], errorPages: […]}
// - playwright: the playwright-core package folder (the only npm package);
// - noToken: paths loaded in a fresh context with no token and no cookie;
// - errorPages: [{name, path}…] loaded with the cookie, expected to fail;
// - recallForm: {from, query}: the recall box of page `from`, typed into;
// - write: {tokenPath, id, otherPort, phase}: instead of all the above, the
//   --write flow on commitment `id` (see writeFlow).
// - live: {path, bin, args, cwd, env, word}: instead of all the above, the
//   page at path left open while `bin args` writes a row (see liveFlow).
// - tokenPath: the URL memvault printed (with ?token=), loaded first in a
//   second context, whose cookie then carries the later pages;
// - hostile: a word only the hostile memory text holds.
//
// Chromium runs with a new empty profile (playwright makes one) and the flags that keep it off
// the network (no background networking, component updates, sync, QUIC);
// any request to a host other than 127.0.0.1 is recorded and aborted.
import { createRequire } from 'node:module';
import { mkdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

const spec = JSON.parse(readFileSync(process.argv[2], 'utf8'));
const require = createRequire(import.meta.url);
const { chromium } = require(spec.playwright);

mkdirSync(spec.artifacts, { recursive: true });

const browser = await chromium.launch({
  executablePath: spec.chromium,
  headless: true,
  args: [
    '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
    '--disable-background-networking', '--disable-component-update',
    '--disable-sync', '--disable-default-apps', '--disable-extensions',
  ],
  timeout: 60000,
});

const out = { browser: browser.version(), forbidden: [], pages: [] };

// watch records everything a page did that the test judges: every request
// (with its URL), websockets, dialogs (dismissed), uncaught errors and
// console errors (a CSP violation is one).
function watch(context) {
  const seen = { requests: [], dialogs: [], errors: [], console: [] };
  context.on('request', (r) => seen.requests.push(r.url()));
  context.on('page', (p) => {
    p.on('websocket', (ws) => seen.requests.push(ws.url()));
    p.on('dialog', (d) => { seen.dialogs.push(`${d.type()}: ${d.message()}`); d.dismiss().catch(() => {}); });
    p.on('pageerror', (e) => seen.errors.push(String(e)));
    p.on('console', (m) => { if (m.type() === 'error') seen.console.push(m.text()); });
  });
  return seen;
}

async function newContext() {
  const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
  const seen = watch(context);
  await context.route('**/*', (route) => {
    const u = new URL(route.request().url());
    if (u.hostname !== '127.0.0.1') return route.abort('blockedbyclient');
    return route.continue();
  });
  return { context, seen };
}

// facts reads what the loaded page shows.
async function facts(page, hostile) {
  return page.evaluate((hostile) => {
    const main = document.querySelector('main');
    const h1 = document.querySelector('h1');
    const svgs = Array.from(document.querySelectorAll('svg')).map((s) => ({
      html: s.outerHTML.slice(0, 200000),
      text: s.textContent,
      shapes: s.querySelectorAll('rect, circle, ellipse, polygon, path').length,
      width: s.getBoundingClientRect().width,
      height: s.getBoundingClientRect().height,
      // Text drawn past the edges of its box: a <text> whose group (its
      // parent) holds a <rect>, measured as laid out.
      overflow: Array.from(s.querySelectorAll('text')).flatMap((t) => {
        const box = t.parentElement && t.parentElement.querySelector(':scope > rect');
        if (!box) return [];
        const a = t.getBoundingClientRect(), b = box.getBoundingClientRect();
        return (a.left < b.left - 1 || a.right > b.right + 1 || a.top < b.top - 1 || a.bottom > b.bottom + 1)
          ? [`${t.textContent} (text ${Math.round(a.left)}..${Math.round(a.right)}, box ${Math.round(b.left)}..${Math.round(b.right)})`] : [];
      }),
    }));
    const wide = document.documentElement.scrollWidth > window.innerWidth + 1;
    // What sticks out past the window's right edge, when the page is wide:
    // the innermost elements, to say what to fix.
    const sticking = wide ? Array.from(document.querySelectorAll('body *')).filter((el) => {
      const r = el.getBoundingClientRect();
      return r.right > window.innerWidth + 1 && r.width > 0 && !Array.from(el.children).some((c) => c.getBoundingClientRect().right > window.innerWidth + 1);
    }).slice(0, 8).map((el) => `${el.tagName.toLowerCase()}${el.id ? '#' + el.id : ''}${el.className && typeof el.className === 'string' ? '.' + el.className.split(' ').join('.') : ''} (right ${Math.round(el.getBoundingClientRect().right)}): ${(el.textContent || '').slice(0, 60)}`) : [];
    // The scripts the page holds: by address, or inline with their text.
    const scripts = Array.from(document.scripts).map((s) => s.src ? s.src : 'inline: ' + s.textContent.slice(0, 80));
    // A time laid out over more than one line: the stylesheet keeps each
    // on one.
    const wrapped = Array.from(document.querySelectorAll('time')).filter((t) => t.getClientRects().length > 1)
      .map((t) => t.textContent);
    // The hostile text must be text: no script element and no event
    // handler attribute may carry it.
    let live = 0;
    for (const s of document.scripts) if (s.textContent.includes(hostile)) live++;
    for (const el of document.querySelectorAll('*')) {
      for (const a of el.attributes) {
        if (a.name.startsWith('on') && a.value.includes(hostile)) live++;
      }
    }
    // An <a> inside an <svg> has an SVGAnimatedString href: resolve the
    // attribute (href or xlink:href) against the page instead.
    const links = Array.from(document.querySelectorAll('a')).map((a) =>
      a.getAttribute('href') || a.getAttribute('xlink:href')).filter(Boolean).map((h) => new URL(h, location.href).href);
    return {
      title: document.title,
      mainId: main ? main.id : '',
      h1: h1 ? h1.innerText : '',
      text: document.body ? document.body.innerText : '',
      svgs,
      wide,
      docWidth: document.documentElement.scrollWidth,
      sticking,
      scripts,
      wrapped,
      liveHostile: live,
      pwned: Boolean(window.__memvaultPwned),
      links,
    };
  }, hostile);
}

async function load(context, seen, name, path, { links = false } = {}) {
  const page = await context.newPage();
  const before = { r: seen.requests.length, d: seen.dialogs.length, e: seen.errors.length, c: seen.console.length };
  const r = { name, path, status: 0, gotoError: '' };
  try {
    const resp = await page.goto(spec.origin + path, { waitUntil: 'load', timeout: 30000 });
    r.status = resp ? resp.status() : 0;
    r.csp = resp ? (resp.headers()['content-security-policy'] || '') : '';
    await page.waitForTimeout(300); // let any script that would run, run
    Object.assign(r, await facts(page, spec.hostile));
    r.screenshot = join(spec.artifacts, `${name}.png`);
    await page.screenshot({ path: r.screenshot, fullPage: true });
    // The same page at a phone's width: its own screenshot, and what
    // wraps or scrolls there.
    await page.setViewportSize({ width: 390, height: 844 });
    await page.waitForTimeout(100);
    const phone = await facts(page, spec.hostile);
    r.phoneWide = phone.wide;
    r.phoneDocWidth = phone.docWidth;
    r.phoneSticking = phone.sticking;
    r.phoneWrapped = phone.wrapped;
    r.phoneScreenshot = join(spec.artifacts, `${name}-phone.png`);
    await page.screenshot({ path: r.phoneScreenshot, fullPage: true });
  } catch (e) {
    r.gotoError = String(e);
  }
  r.requests = seen.requests.slice(before.r);
  r.dialogs = seen.dialogs.slice(before.d);
  r.errors = seen.errors.slice(before.e);
  r.console = seen.console.slice(before.c);
  // Every link on the page to the server answers (through the context's
  // cookie, as a click would).
  if (links && r.links) {
    r.linkStatus = {};
    const same = [...new Set(r.links.filter((h) => h.startsWith(spec.origin + '/')))].slice(0, 40);
    for (const h of same) {
      try {
        const resp = await context.request.get(h, { maxRedirects: 5, timeout: 15000 });
        r.linkStatus[h] = resp.status();
      } catch (e) {
        r.linkStatus[h] = String(e);
      }
    }
  }
  await page.close();
  return r;
}

// recallForm types a query into the recall box of a page and submits it
// with Enter, as a person would, and reports the page it leads to.
async function recallForm(context, seen, { from, query }) {
  const page = await context.newPage();
  const before = { r: seen.requests.length, d: seen.dialogs.length, e: seen.errors.length, c: seen.console.length };
  const r = { name: 'recall-form', path: from, status: 0, gotoError: '' };
  try {
    await page.goto(spec.origin + from, { waitUntil: 'load', timeout: 30000 });
    const box = page.locator('input[name="q"]').first();
    await box.fill(query, { timeout: 10000 });
    const [resp] = await Promise.all([
      page.waitForNavigation({ waitUntil: 'load', timeout: 30000 }),
      box.press('Enter'),
    ]);
    r.status = resp ? resp.status() : 0;
    r.csp = resp ? (resp.headers()['content-security-policy'] || '') : '';
    r.url = page.url();
    Object.assign(r, await facts(page, spec.hostile));
    r.screenshot = join(spec.artifacts, 'recall-form.png');
    await page.screenshot({ path: r.screenshot, fullPage: true });
  } catch (e) {
    r.gotoError = String(e);
  }
  r.requests = seen.requests.slice(before.r);
  r.dialogs = seen.dialogs.slice(before.d);
  r.errors = seen.errors.slice(before.e);
  r.console = seen.console.slice(before.c);
  await page.close();
  return r;
}

// writeFlow, for a server started with --write: in phase 'forge', a page
// of another origin posts the commitment's close form to it (once without
// the CSRF field, once with it copied); in phase 'click', the person
// clicks the form's button on the overview. The test reads the ledger
// after each phase.
async function writeFlow(context, seen, w) {
  const r = { forged: [] };
  r.entry = await load(context, seen, 'write-entry', w.tokenPath);
  const page = await context.newPage();
  await page.goto(spec.origin + '/', { waitUntil: 'load', timeout: 30000 });
  const form = page.locator(`form[method="post" i][action*="${w.id}"]`).first();
  if (await form.count() === 0) {
    r.noForm = true;
    r.text = await page.evaluate(() => document.body.innerText);
    await page.close();
    return r;
  }
  r.action = new URL(await form.getAttribute('action'), page.url()).href;
  const fields = await form.locator('input[type="hidden"]').evaluateAll((els) => els.map((e) => [e.name, e.value]));
  await page.close();
  if (w.phase === 'click') {
    r.click = await click(context, w, r.action);
    return r;
  }
  // The other origin: 127.0.0.1 on another port, answered by the browser
  // itself (no server there), whose page submits a form to the server.
  for (const withCSRF of [false, true]) {
    const kept = fields.filter(([n]) => withCSRF || !/csrf/i.test(n));
    const inputs = kept.map(([n, v]) => `<input type="hidden" name="${n.replace(/"/g, '&quot;')}" value="${v.replace(/"/g, '&quot;')}">`).join('');
    const evil = `http://127.0.0.1:${w.otherPort}/forge`;
    const body = `<!doctype html><form id="f" method="post" action="${r.action}">${inputs}</form><script>document.getElementById('f').submit()</script>`;
    await context.route(evil, (route) => route.fulfill({ status: 200, contentType: 'text/html', body }));
    const p = await context.newPage();
    const f = { withCSRF, status: 0, error: '' };
    try {
      const [resp] = await Promise.all([
        p.waitForResponse((x) => x.url().startsWith(r.action) && x.request().method() === 'POST', { timeout: 30000 }),
        p.goto(evil, { waitUntil: 'load', timeout: 30000 }),
      ]);
      f.status = resp.status();
      f.origin = (await resp.request().allHeaders()).origin || '(none)';
      await p.waitForLoadState('load');
      f.screenshot = join(spec.artifacts, `write-forged${withCSRF ? '-csrf' : ''}.png`);
      await p.screenshot({ path: f.screenshot, fullPage: true });
    } catch (e) {
      f.error = String(e);
    }
    await context.unroute(evil);
    await p.close();
    r.forged.push(f);
  }
  return r;
}

// click: the person presses the button of the form on the overview.
async function click(context, w, action) {
  {
    const p = await context.newPage();
    const c = { status: 0, error: '' };
    try {
      await p.goto(spec.origin + '/', { waitUntil: 'load', timeout: 30000 });
      const f = p.locator(`form[method="post" i][action*="${w.id}"]`).first();
      const [resp] = await Promise.all([
        p.waitForResponse((x) => x.url().startsWith(action) && x.request().method() === 'POST', { timeout: 30000 }),
        f.locator('button, input[type="submit"]').first().click({ timeout: 10000 }),
      ]);
      c.postStatus = resp.status();
      c.origin = (await resp.request().allHeaders()).origin || '(none)';
      await p.waitForLoadState('load');
      c.url = p.url();
      Object.assign(c, await facts(p, spec.hostile));
      c.screenshot = join(spec.artifacts, 'write-closed.png');
      await p.screenshot({ path: c.screenshot, fullPage: true });
    } catch (e) {
      c.error = String(e);
    }
    await p.close();
    return c;
  }
}

// liveFlow: the page stays open while memvault writes a row through its
// command line; the row must appear on the page without a reload. It
// records every answer of /live (304 while nothing changed), whether the
// page navigated, and whether a mark set on the window before the write
// is still there after (a reload would lose it).
async function liveFlow(context, seen, l) {
  const r = { name: 'live', path: l.path, status: 0, gotoError: '', liveStatuses: [], navigations: 0 };
  const page = await context.newPage();
  page.on('response', (x) => { if (new URL(x.url()).pathname === '/live') r.liveStatuses.push(x.status()); });
  try {
    const resp = await page.goto(spec.origin + l.path, { waitUntil: 'load', timeout: 30000 });
    r.status = resp ? resp.status() : 0;
    page.on('framenavigated', (f) => { if (f === page.mainFrame()) r.navigations++; });
    await page.evaluate(() => { window.__liveMark = 'kept'; });
    r.before = await page.evaluate(() => document.querySelector('main').innerText);
    await page.waitForTimeout(l.settle || 4000); // a poll or more while nothing changes: 304s
    const { execFileSync } = await import('node:child_process');
    const t0 = Date.now();
    r.wrote = execFileSync(l.bin, l.args, { cwd: l.cwd, env: l.env, encoding: 'utf8', timeout: 60000 }).trim();
    try {
      await page.waitForFunction((w) => document.querySelector('main').innerText.includes(w), l.word, { timeout: l.timeout || 20000, polling: 100 });
      r.appeared = true;
    } catch (e) {
      r.appeared = false;
    }
    r.ms = Date.now() - t0;
    r.mark = await page.evaluate(() => window.__liveMark || '');
    r.badge = await page.evaluate(() => { const b = document.getElementById('live'); return b && !b.hidden ? b.textContent : ''; });
    Object.assign(r, await facts(page, spec.hostile));
    r.screenshot = join(spec.artifacts, 'live.png');
    await page.screenshot({ path: r.screenshot, fullPage: true });
  } catch (e) {
    r.gotoError = String(e);
  }
  r.requests = seen.requests.slice();
  r.dialogs = seen.dialogs.slice();
  r.errors = seen.errors.slice();
  r.console = seen.console.slice();
  await page.close();
  return r;
}

try {
  if (spec.live) {
    const { context, seen } = await newContext();
    out.entry = await load(context, seen, 'live-entry', spec.tokenPath);
    out.live = await liveFlow(context, seen, spec.live);
    await context.close();
  } else if (spec.write) {
    const { context, seen } = await newContext();
    out.write = await writeFlow(context, seen, spec.write);
    out.write.dialogs = seen.dialogs;
    out.write.errors = seen.errors;
    await context.close();
  } else {
    const { context, seen } = await newContext();
    for (const p of spec.noToken) {
      out.forbidden.push(await load(context, seen, `forbidden${out.forbidden.length}`, p));
    }
    await context.close();
  }
  if (!spec.write && !spec.live) {
    const { context, seen } = await newContext();
    out.entry = await load(context, seen, 'entry', spec.tokenPath);
    out.cookies = await context.cookies();
    for (const p of spec.pages) out.pages.push(await load(context, seen, p.name, p.path, { links: true }));
    if (spec.recallForm) out.recallForm = await recallForm(context, seen, spec.recallForm);
    out.errorPages = [];
    for (const p of spec.errorPages || []) out.errorPages.push(await load(context, seen, p.name, p.path));
    await context.close();
  }
} finally {
  await browser.close();
}
process.stdout.write(JSON.stringify(out) + '\n');
