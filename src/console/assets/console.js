// The mailsift console: one page, drawn from the JSON API of mailsiftd.
// Everything that came from mail is put on the page as text (textContent),
// never as markup.
//
// This script holds what every part of the page shares: the state, the
// helpers that put text on the page, api() (the session cookie and the CSRF
// token), the router, times in this browser's time zone, and how a score adds
// up (the history's details and a scan show it alike). Each page has a script
// of its own; index.html loads them in order, this one first and session.js,
// which signs in and out (api() signs out on a 401) and starts the page, last.
'use strict';

const state = { account: null, role: null, csrf: null, timer: null, chart: 'hour', status: null };
const $ = (id) => document.getElementById(id);
const pages = ['login', 'status', 'history', 'scan', 'users', 'config'];

function text(id, value) { $(id).textContent = value === null || value === undefined ? '–' : String(value); }

function el(tag, content, cls) {
  const e = document.createElement(tag);
  if (content !== undefined && content !== null) e.textContent = String(content);
  if (cls) e.className = cls;
  return e;
}

async function api(path, options = {}) {
  const headers = Object.assign({}, options.headers || {});
  if (options.method === 'POST' && state.csrf) headers['X-CSRF-Token'] = state.csrf;
  const response = await fetch(path, Object.assign({}, options, { headers, credentials: 'same-origin' }));
  let body = null;
  try { body = await response.json(); } catch (e) { body = { error: response.statusText }; }
  if (response.status === 401 && path !== '/api/login') { signedOut(); }
  if (!response.ok) { const err = new Error(body && body.error ? body.error : response.statusText); err.status = response.status; throw err; }
  return body;
}

function show(page) {
  for (const p of pages) { $('page-' + p).hidden = p !== page; document.body.classList.toggle('page-' + p, p === page); }
  for (const a of document.querySelectorAll('#nav a')) a.classList.toggle('current', a.dataset.page === page);
  if (state.timer) { clearInterval(state.timer); state.timer = null; }
  if (page === 'status') { loadStatus(); state.timer = setInterval(loadStatus, 10000); }
  if (page === 'config') loadConfig();
  if (page === 'users') { const name = new URLSearchParams(location.search).get('name'); $('user-name').value = name || ''; loadUsers(); if (name) loadUser(); }
  if (page === 'history') { fillHistoryForm(new URLSearchParams(location.search)); loadHistory(false); }
}

function route() {
  const page = location.pathname.replace(/^\//, '') || 'status';
  show(pages.includes(page) && page !== 'login' ? page : 'status');
}

// The history keeps its filter in its URL: back to it from another page, the last one.
function go(page) {
  const filter = page === 'history' ? historyState.filter.toString() : '';
  history.pushState({}, '', '/' + page + (filter ? '?' + filter : ''));
  route();
}

// This browser's time zone, which the page's times are in ("Europe/Berlin", or "UTC+01:00").
function timeZone() {
  const name = Intl.DateTimeFormat().resolvedOptions().timeZone;
  if (name) return name;
  const m = -new Date().getTimezoneOffset(), two = (n) => String(Math.floor(Math.abs(n))).padStart(2, '0');
  return `UTC${m < 0 ? '-' : '+'}${two(m / 60)}:${two(m % 60)}`;
}

// "2026-11-27 23:41:05" in this browser's time zone (the page says which): one
// width for every time, and short enough for a history row.
function when(unix) {
  if (!unix) return '–';
  const d = new Date(unix * 1000), p = (n) => String(n).padStart(2, '0');
  return `${d.getFullYear()}-${p(d.getMonth() + 1)}-${p(d.getDate())} ${p(d.getHours())}:${p(d.getMinutes())}:${p(d.getSeconds())}`;
}

// A score's naive-Bayes features toward one class, as a table.
function reasonRows(table, reasons) {
  table.replaceChildren();
  const head = el('tr'); for (const h of ['log-odds', 'spam', 'ham', 'feature']) head.append(el('th', h)); table.append(head);
  if (!reasons.length) { const r = el('tr'); const td = el('td', '(none)'); td.colSpan = 4; r.append(td); table.append(r); }
  for (const x of reasons) {
    const r = el('tr');
    r.append(el('td', x.log_odds.toFixed(3), 'num'), el('td', x.spam, 'num'), el('td', x.ham, 'num'), el('td', x.feature, 'mono'));
    table.append(r);
  }
}

// How a score adds up: the linear scorer's terms and slots, or the naive-Bayes
// prior and features. `p` holds log_odds, prior_log_odds, toward_spam/ham and,
// with the linear scorer, linear.
function scoreSum(box, p) {
  box.replaceChildren();
  if (!p) return;
  const t = el('table', null, 'figures sum');
  const row = (v, what) => { const r = el('tr'); r.append(el('td', (v >= 0 ? '+' : '') + v.toFixed(4), 'num'), el('td', what)); t.append(r); };
  const l = p.linear;
  // The naive-Bayes log-odds from its parts: the prior, the features listed, the others.
  const nbSum = (table, n, total) => {
    const r = (v, what) => { const tr = el('tr'); tr.append(el('td', (v >= 0 ? '+' : '') + v.toFixed(4), 'num'), el('td', what)); table.append(tr); };
    r(n.prior, 'prior (the classes learned)');
    r(n.listed, 'the naive-Bayes features listed');
    r(n.others, 'the other features together');
    r(n.log_odds, total);
  };
  if (!l) {
    box.append(el('h3', 'How the score adds up (naive Bayes)'));
    nbSum(t, p.nb_sum, '= log-odds');
    box.append(t);
    return;
  }
  box.append(el('h3', 'How the score adds up (linear scorer)'));
  row(l.bias, 'bias');
  row(l.nb_term, `naive Bayes: weight ${l.nb_weight.toFixed(4)} × input ${l.nb_input.toFixed(4)} (log-odds ${l.nb_log_odds.toFixed(3)}${l.clipped ? ', clipped' : ''})`);
  row(l.slots_sum, `the weights of the message's ${l.slots} slots (the strongest below)`);
  row(l.z, '= log-odds');
  box.append(t);
  if (p.nb_sum) {
    box.append(el('h3', 'The naive-Bayes log-odds, part by part'));
    const nt = el('table', null, 'figures sum nb-sum');
    nbSum(nt, p.nb_sum, '= naive-Bayes log-odds (the input above before clipping)');
    box.append(nt);
  }
  const slots = (title, list) => {
    box.append(el('h3', title));
    const tt = el('table', null, 'reasons');
    for (const x of list) { const r = el('tr'); r.append(el('td', x.weight.toFixed(4), 'num'), el('td', x.source, 'mono')); tt.append(r); }
    if (!list.length) { const r = el('tr'); r.append(el('td', '(none)')); tt.append(r); }
    box.append(tt);
  };
  slots('Slots toward spam', l.toward_spam);
  slots('Slots toward ham', l.toward_ham);
  box.append(el('p', `the other ${l.others} slots together: ${l.others_sum.toFixed(4)}`, 'meta'));
}

// The navigation, and the browser's Back and Forward.
document.addEventListener('DOMContentLoaded', () => {
  for (const a of document.querySelectorAll('#nav a')) {
    a.addEventListener('click', (ev) => { ev.preventDefault(); go(a.dataset.page); });
  }
  window.addEventListener('popstate', () => { if (state.account) route(); });
});
