// memvault's one script (docs/WEB.md, "Live updates"): keeps an open page
// up to date. Every few seconds it asks /live whether the vault moved on
// since the page was read (If-None-Match with the page's version: 304 when
// nothing changed); when it did, it fetches the page again and swaps the
// page's <main> for the new one. No eval, no inline code, no HTML built
// from strings: the new <main> comes from the server's own page, parsed
// by DOMParser (whose scripts never run). Without it a page is the same,
// just not updated.
'use strict';
(function () {
  const every = 3000;
  const meta = document.querySelector('meta[name="memvault-version"]');
  const badge = document.getElementById('live');
  if (!meta || !window.fetch || !window.DOMParser) return;
  let version = meta.content;
  let busy = false;

  function show(text, title) {
    if (!badge) return;
    badge.hidden = false;
    badge.textContent = text;
    badge.title = title;
  }

  // typing: the person is filling a field of the page; swapping the page
  // under them would lose it, so the update waits.
  function typing() {
    const a = document.activeElement;
    return a && a !== document.body && a.closest('main') && /^(INPUT|TEXTAREA|SELECT)$/.test(a.tagName);
  }

  async function update() {
    const res = await fetch(location.href, { cache: 'no-store', credentials: 'same-origin' });
    if (!res.ok || !(res.headers.get('Content-Type') || '').startsWith('text/html')) return false;
    const doc = new DOMParser().parseFromString(await res.text(), 'text/html');
    const fresh = doc.querySelector('main');
    const now = document.querySelector('main');
    const m = doc.querySelector('meta[name="memvault-version"]');
    if (!fresh || !now || fresh.id !== now.id || !m) return false;
    now.replaceWith(document.adoptNode(fresh));
    document.title = doc.title;
    version = m.content;
    meta.content = version;
    return true;
  }

  async function poll() {
    if (busy || document.visibilityState === 'hidden') return;
    busy = true;
    try {
      const res = await fetch('/live', { cache: 'no-store', credentials: 'same-origin', headers: { 'If-None-Match': '"' + version + '"' } });
      if (res.status === 200 && !typing()) {
        if (await update()) show('● live', 'updated ' + new Date().toLocaleTimeString());
      } else if (res.status === 304) {
        show('● live', 'up to date; checked ' + new Date().toLocaleTimeString());
      } else if (res.status !== 200) {
        show('○ offline', 'the server answered ' + res.status);
      }
    } catch (e) {
      show('○ offline', 'the server does not answer');
    } finally {
      busy = false;
    }
  }

  show('● live', 'this page updates itself while it is open');
  setInterval(poll, every);
  document.addEventListener('visibilitychange', poll);
})();
