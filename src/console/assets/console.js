// The mailsift console: one page, drawn from the JSON API of mailsiftd.
// Everything that came from mail is put on the page as text (textContent),
// never as markup.
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

function signedIn(s) {
  state.account = s.account; state.role = s.role; state.csrf = s.csrf;
  text('who-name', s.account); text('who-role', s.role);
  $('nav').hidden = false; $('who').hidden = false;
  document.body.classList.toggle('viewer', s.role !== 'admin');
  if (location.pathname === '/login' || location.pathname === '/') history.replaceState({}, '', '/status');
  route();
}

function signedOut() {
  state.account = state.role = state.csrf = null;
  $('nav').hidden = true; $('who').hidden = true;
  $('login-name').value = ''; $('login-password').value = '';  // the next person starts blank
  show('login');
}

// Status ---------------------------------------------------------------

function seconds(v) {
  if (v === null || v === undefined) return '–';
  if (v === '+Inf') return 'over 1 s';
  return v < 1 ? '≤ ' + (v * 1000).toLocaleString() + ' ms' : '≤ ' + v + ' s';
}

function ago(s) {
  if (s === null || s === undefined) return 'never';
  if (s < 90) return Math.round(s) + ' s ago';
  if (s < 5400) return Math.round(s / 60) + ' min ago';
  return Math.round(s / 3600) + ' h ago';
}

async function loadStatus() {
  let s;
  try { s = await api('/api/status'); } catch (e) { return; }
  state.status = s;
  text('status-started', when(s.started));
  text('status-now', when(s.now));
  text('status-total', s.messages.total);
  for (const v of ['spam', 'unsure', 'ham', 'skipped', 'error']) text('status-' + v, s.messages.by_verdict[v]);
  const actions = $('status-actions');
  actions.replaceChildren();
  for (const [name, n] of Object.entries(s.messages.by_action)) {
    const row = el('tr'); row.append(el('th', name)); const td = el('td', n); td.dataset.action = name; row.append(td);
    actions.append(row);
  }
  text('status-p50', seconds(s.scoring_seconds.p50));
  text('status-p90', seconds(s.scoring_seconds.p90));
  text('status-p99', seconds(s.scoring_seconds.p99));
  text('status-mean', s.scoring_seconds.mean === null ? null : (s.scoring_seconds.mean * 1000).toFixed(2) + ' ms');
  text('status-model-spam', s.model.spam);
  text('status-model-ham', s.model.ham);
  text('status-model-features', s.model.features);
  text('status-model-age', ago(s.model.age_seconds));
  text('status-model-refresh', when(s.model.last_refresh));
  text('status-store', s.store.up ? 'up' : 'DOWN: writes wait in memory');
  $('status-store').className = s.store.up ? 'ok' : 'error';
  text('status-waiting', s.scan_buffer.waiting);
  text('status-dropped', s.scan_buffer.dropped);
  text('status-write-failures', s.store.write_failures);
  const c = s.corrections || {};
  const get = (p, k) => (c[p] ? c[p][k] : null);
  text('status-fp-day', get('day', 'false_positives')); text('status-fp-week', get('week', 'false_positives'));
  text('status-fn-day', get('day', 'false_negatives')); text('status-fn-week', get('week', 'false_negatives'));
  drawChart();
}

const verdictOrder = ['spam', 'unsure', 'ham', 'skipped', 'error'];
const actionOrder = ['rejected', 'quarantined', 'tagged', 'tempfailed', 'accepted', 'skipped'];

function drawChart() {
  const s = state.status;
  if (!s) return;
  const series = s[state.chart];
  drawBars($('chart'), series, series.by_verdict, verdictOrder);
  drawBars($('chart-actions'), series, series.by_action, actionOrder);
}

// Stacked bars, one per step, drawn as SVG elements (no markup, no inline
// style); each bar's title says what it counts.
function drawBars(box, series, counts, order) {
  const kinds = order.filter((k) => counts[k]);
  const steps = series.by_verdict.ham.length;
  const totals = Array.from({ length: steps }, (_, i) => kinds.reduce((t, k) => t + counts[k][i], 0));
  const top = Math.max(1, ...totals);
  const W = 720, H = 180, pad = 28, bw = (W - pad) / steps;
  const ns = 'http://www.w3.org/2000/svg';
  const svg = document.createElementNS(ns, 'svg');
  svg.setAttribute('viewBox', `0 0 ${W} ${H + 20}`);
  svg.setAttribute('role', 'img');
  const perMinute = series.step_seconds / 60;
  svg.setAttribute('aria-label', `messages per ${perMinute} minutes`);
  const label = (x, y, t, anchor) => {
    const e = document.createElementNS(ns, 'text');
    e.setAttribute('x', x); e.setAttribute('y', y); e.setAttribute('class', 'axis');
    if (anchor) e.setAttribute('text-anchor', anchor);
    e.textContent = t; svg.append(e);
  };
  label(pad - 4, 10, String(top), 'end');
  label(pad - 4, H, '0', 'end');
  for (let i = 0; i < steps; ++i) {
    let y = H;
    for (const k of kinds) {
      const n = counts[k][i];
      if (!n) continue;
      const h = (n / top) * (H - 10);
      const r = document.createElementNS(ns, 'rect');
      r.setAttribute('x', pad + i * bw); r.setAttribute('y', y - h);
      r.setAttribute('width', Math.max(1, bw - 1)); r.setAttribute('height', h);
      r.setAttribute('class', 'bar ' + k);
      r.dataset.count = n;
      const title = document.createElementNS(ns, 'title');
      title.textContent = `${new Date((series.start + i * series.step_seconds) * 1000).toLocaleTimeString()}: ${n} ${k}`;
      r.append(title); svg.append(r);
      y -= h;
    }
  }
  const first = new Date(series.start * 1000).toLocaleTimeString([], { hour: '2-digit', minute: '2-digit' });
  label(pad, H + 16, first, 'start');
  label(W, H + 16, 'now', 'end');
  label(W / 2, H + 16, perMinute === 1 ? 'messages per minute' : `messages per ${perMinute} minutes`, 'middle');
  box.replaceChildren(svg);
}

// History --------------------------------------------------------------

// The filter last applied (Show), the cursor of the page after the last one
// shown (null: none), and the number of the latest request: an answer to an
// earlier one that comes late is dropped.
const historyState = { filter: new URLSearchParams(), next: null, asked: 0 };

// A datetime-local value ("2024-05-01T10:30" or with seconds) as UNIX
// seconds in this browser's time zone; null when empty or not a time.
function unixSeconds(value) {
  if (!value) return null;
  const [date, time] = value.split('T');
  const [y, mo, d] = date.split('-').map(Number);
  const [h, mi, s] = (time || '0:0').split(':').map(Number);
  const t = new Date(y, mo - 1, d, h, mi, s || 0).getTime();
  return Number.isFinite(t) ? Math.floor(t / 1000) : null;
}

// The filter and order the form asks for, as the API's query parameters.
// The one field for an ID is a Message-ID when it holds an '@' or starts
// with '<', else a queue ID.
function historyFilter() {
  const params = new URLSearchParams();
  const set = (name, value) => { if (value) params.set(name, value); };
  set('verdict', $('history-verdict').value);
  set('action', $('history-action').value);
  set('q', $('history-search').value.trim());
  set('sender', $('history-sender').value.trim());
  set('recipient', $('history-recipient').value.trim());
  set('subject', $('history-subject').value.trim());
  set('client', $('history-client').value.trim());
  const id = $('history-id').value.trim();
  if (id) params.set(id.includes('@') || id.startsWith('<') ? 'message_id' : 'queue_id', id);
  const since = unixSeconds($('history-since').value), until = unixSeconds($('history-until').value);
  if (since !== null) params.set('since', since);
  if (until !== null) params.set('until', until);
  const order = $('history-order').value;
  if (order && order !== 'newest') params.set('order', order);
  return params;
}

// A time as a datetime-local value in this browser's time zone ("" for none).
function localInput(unix) {
  if (unix === null || unix === '' || !Number.isFinite(Number(unix))) return '';
  const d = new Date(Number(unix) * 1000), two = (n) => String(n).padStart(2, '0');
  return `${d.getFullYear()}-${two(d.getMonth() + 1)}-${two(d.getDate())}T${two(d.getHours())}:${two(d.getMinutes())}:${two(d.getSeconds())}`;
}

// The form as a filter says (the URL's): a view can be bookmarked and handed on.
function fillHistoryForm(params) {
  const pick = (id, value, allowed) => { $(id).value = allowed.includes(value) ? value : allowed[0]; };
  pick('history-verdict', params.get('verdict') || '', ['', 'spam', 'unsure', 'ham']);
  pick('history-action', params.get('action') || '', ['', 'accepted', 'tagged', 'quarantined', 'rejected', 'tempfailed', 'skipped']);
  pick('history-order', params.get('order') || 'newest', ['newest', 'oldest', 'spammiest', 'hammiest']);
  $('history-search').value = params.get('q') || '';
  $('history-sender').value = params.get('sender') || '';
  $('history-recipient').value = params.get('recipient') || '';
  $('history-subject').value = params.get('subject') || '';
  $('history-client').value = params.get('client') || '';
  $('history-id').value = params.get('message_id') || params.get('queue_id') || '';
  $('history-since').value = localInput(params.get('since'));
  $('history-until').value = localInput(params.get('until'));
}

function exportLinks(filter) {
  for (const format of ['csv', 'json']) {
    const p = new URLSearchParams(filter);
    p.set('format', format);
    $('history-export-' + format).href = '/api/history/export?' + p.toString();
  }
}

// more = false: the first page of the form's filter (Show); true: the page
// after the last one shown, of the filter applied then.
async function loadHistory(more) {
  text('history-error', '');
  if (!more) {
    historyState.filter = historyFilter(); historyState.next = null; exportLinks(historyState.filter);
    const url = '/history' + (historyState.filter.toString() ? '?' + historyState.filter.toString() : '');
    if (location.pathname + location.search !== url) history.replaceState({}, '', url);
  }
  const params = new URLSearchParams(historyState.filter);
  if (more) {
    if (!historyState.next) return;
    params.set('cursor', historyState.next.cursor);
  }
  const asked = ++historyState.asked;
  let h;
  try { h = await api('/api/history?' + params.toString()); } catch (e) {
    if (asked === historyState.asked) text('history-error', e.message);
    return;
  }
  if (asked !== historyState.asked) return;
  const rows = $('history-rows');
  if (!more) rows.replaceChildren();
  for (const e of h.entries) rows.append(historyRow(e));
  historyState.next = h.next;
  const order = historyState.filter.get('order') || 'newest';
  $('history-more').textContent = order === 'newest' ? 'Older' : order === 'oldest' ? 'Newer' : 'More';
  $('history-more').hidden = !h.next;
  const n = h.count;
  text('history-count', n === 1 ? '1 message matches' : `${Number(n).toLocaleString()} messages match`);
  $('history-count').dataset.count = n;
  // Which filter the listing shows (an answer to an earlier Show or Clear can
  // come in before the next is asked): what a test waits for, with the count.
  rows.dataset.filter = historyState.filter.toString();
  text('history-zone', `Times in ${timeZone()}; the CSV's in UTC.`);
  text('history-note', h.kept ? (h.subjects_kept ? '' : 'Subject lines are not kept on this server (history_subjects = off).')
    : 'mailsiftd keeps no history on this server (history = off).');
  if (!more && !h.entries.length) {
    const r = el('tr'); const td = el('td', 'no messages'); td.colSpan = 11; r.append(td); rows.append(r);
  }
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

function probabilityText(p) { return p === null || p === undefined ? '–' : p.toFixed(4); }

// "→ spam by console:admin, 2024-05-03 10:31:22" (or "" when never corrected).
function correctionText(c) {
  if (!c) return '';
  return `→ ${c.class}${c.by ? ' by ' + c.by : ''}, ${when(c.at)}`;
}

// One line a cell, cut to its column with an ellipsis: the whole value on
// hover (its title) and in the line's details.
function cell(content, cls, title) {
  const td = el('td', content || '–', cls);
  td.title = title === undefined ? (content || '') : title;
  return td;
}

// The envelope's value in the cell; it and the header's (From or To) on hover.
function pair(envelope, envelopeName, header, headerName, cls) {
  const title = [envelope ? `${envelopeName}: ${envelope}` : '', header ? `${headerName}: ${header}` : ''].filter(Boolean).join('\n');
  return cell(envelope || header, cls, title);
}

function historyRow(e) {
  const r = el('tr');
  // A line is a delivery (its id); its message is its signature (none when not scored).
  r.dataset.id = e.id;
  if (e.signature) r.dataset.signature = e.signature;
  r.dataset.queueId = e.queue_id || '';
  r.dataset.scannedAt = e.scanned_at;
  r.append(cell(when(e.scanned_at), 'time', `${when(e.scanned_at)} (${timeZone()})`));
  const v = el('td', null, 'verdict-cell');
  if (e.scored) {
    v.append(el('span', e.verdict, 'verdict ' + e.verdict), ' ', el('span', probabilityText(e.probability), 'probability'));
    v.title = `${e.verdict}, P(spam) ${probabilityText(e.probability)}`;
  } else {  // the reason on the same line, cut if long: whole on hover and in the details
    v.append(el('span', 'skipped', 'verdict skipped'));
    if (e.reason) v.append(' ', el('span', e.reason, 'reason'));
    v.title = e.reason ? 'skipped: ' + e.reason : 'skipped';
  }
  r.append(v);
  r.append(cell(e.action, 'action'));
  r.append(cell(e.queue_id, 'queue-id mono'));
  r.append(pair(e.sender, 'MAIL FROM', e.from, 'From', 'sender'));
  r.append(pair(e.recipients, 'RCPT TO', e.to, 'To', 'recipients'));
  r.append(cell(e.subject, 'subject'));
  r.append(cell(e.client_address, 'client', e.helo ? 'HELO ' + e.helo : ''));
  const corr = el('td', correctionText(e.corrected), 'correction');  // empty when never corrected
  corr.title = corr.textContent;
  r.append(corr);
  r.classList.toggle('corrected', !!e.corrected);
  const why = el('button', e.scored ? 'explain' : 'details', 'why');
  why.type = 'button';
  why.title = e.scored ? 'How this score adds up, and the message’s details' : 'The message’s details';
  why.addEventListener('click', () => explainLine(e.id, r));
  const whyCell = el('td', null, 'why'); whyCell.append(why); r.append(whyCell);
  const act = el('td', null, 'admin correct-cell');
  if (e.scored) {  // a skipped message has no scan to learn from
    for (const cls of ['spam', 'ham']) {
      const b = el('button', cls, 'correct');
      b.type = 'button';
      b.title = 'Correct as ' + cls;
      b.dataset.class = cls;
      b.addEventListener('click', () => correct(e.signature, cls, r));
      act.append(b);
    }
  }
  r.append(act);
  return r;
}

// One history line's details and explanation, as mailsiftd kept them when it
// scored the message: asked for by the line's id (one delivery of it), corrected
// by its signature (the message, whichever delivery).
const explainState = { id: null, signature: null, row: null };

async function explainLine(id, row) {
  text('history-error', ''); text('correct-result', '');
  let x;
  try { x = await api('/api/explanation?id=' + encodeURIComponent(id)); } catch (e) { text('history-error', e.message); return; }
  renderExplanation(x, row);
  $('explain-panel').scrollIntoView({ block: 'nearest' });
}

// The details panel for line `x` (/api/explanation), opened from `row`.
function renderExplanation(x, row) {
  explainState.id = x.id; explainState.signature = x.signature; explainState.row = row;
  const scored = x.scored !== false;
  text('explain-why', scored ? 'Why' : 'Not scored,');
  text('explain-verdict', scored ? x.verdict : 'skipped');
  $('explain-verdict').className = 'verdict ' + (scored ? x.verdict : 'skipped');
  text('explain-subject', x.subject || '(no Subject kept)');
  text('explain-time', when(x.scanned_at));
  text('explain-probability', probabilityText(x.probability));
  text('explain-action', x.action);
  text('explain-reason', x.reason || null);
  $('explain-reason-row').hidden = scored;
  text('explain-corrected', correctionText(x.corrected) || 'no');
  text('explain-queue-id', x.queue_id || null);
  text('explain-message-id', x.message_id || null);
  text('explain-client', x.client_address || null);
  text('explain-helo', x.helo || null);
  text('explain-sender', x.sender || null);
  text('explain-recipients', x.recipients || null);
  text('explain-from', x.from || null);
  text('explain-to', x.to || null);
  text('explain-size', x.size === undefined ? null : Number(x.size).toLocaleString() + ' bytes');
  text('explain-signature', x.signature || null);
  const p = x.explanation;
  text('explain-note', !scored ? 'mailsiftd let this message through without scoring it: ' + (x.reason || 'no reason given') + '.'
    : p ? 'As the model scored it then (it may have learned since).'
      : 'No explanation was kept for this message (history_subjects = off, reasons = 0, or scored by an older mailsiftd).');
  scoreSum($('explain-sum'), p);
  $('explain-features').hidden = !scored;
  $('explain-correct').hidden = !scored;
  reasonRows($('explain-toward-spam'), p ? p.toward_spam : []);
  reasonRows($('explain-toward-ham'), p ? p.toward_ham : []);
  showCorrections(x);  // corrections.js: the trail, and Undo
  $('explain-panel').hidden = false;
}

async function correct(signature, cls, row) {
  text('history-error', ''); text('correct-result', '');
  try {
    const r = await api('/api/correct', { method: 'POST', headers: { 'Content-Type': 'application/json' },
      body: JSON.stringify({ signature, class: cls }) });
    text('correct-result', `${r.signature}: corrected to ${r.class}: ${r.result}`);
    // What a reload shows (the server keeps it): this account's correction, now.
    markCorrected(signature, { class: r.class || cls, at: Math.floor(Date.now() / 1000), by: 'console:' + state.account }, row);
    // The details of this message, open: its trail and Undo as the server has them now.
    if (explainState.signature === signature && !$('explain-panel').hidden) await refreshLine();
  } catch (e) { text('history-error', e.message); }
}

// Every delivery of the message shown (corrections are the message's), and
// `row`: its latest correction that stands is `c` (null: none).
function markCorrected(signature, c, row) {
  const lines = [...$('history-rows').querySelectorAll('tr')].filter((t) => t.dataset.signature === signature);
  if (row && !lines.includes(row)) lines.push(row);
  for (const line of lines) {
    line.classList.toggle('corrected', !!c);
    const cell = line.querySelector('td.correction');
    if (cell) { cell.textContent = correctionText(c); cell.title = cell.textContent; }
  }
}

// Scan -----------------------------------------------------------------

async function messageBody() {
  const f = $('scan-file').files[0];
  if (f) return await f.arrayBuffer();
  const t = $('scan-text').value;
  if (!t.trim()) throw new Error('paste a message or choose a file first');
  // Mail has CRLF line ends; a pasted message has LF: either is read.
  return new TextEncoder().encode(t);
}

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

async function scan() {
  text('scan-error', ''); text('learn-result', '');
  try {
    const body = await messageBody();
    const r = await api('/api/scan', { method: 'POST', body, headers: { 'Content-Type': 'message/rfc822' } });
    $('scan-result').hidden = false;
    text('scan-verdict', r.verdict);
    $('scan-verdict').className = 'verdict ' + r.verdict;
    text('scan-from', r.from);
    text('scan-subject', r.subject);
    text('scan-probability', r.probability.toFixed(4));
    text('scan-log-odds', r.log_odds.toFixed(4));
    text('scan-signature', r.signature);
    text('scan-model', `${r.model.spam} spam and ${r.model.ham} ham learned, ${r.model.features} features`);
    reasonRows($('scan-toward-spam'), r.toward_spam);
    reasonRows($('scan-toward-ham'), r.toward_ham);
    scoreSum($('scan-linear'), r.linear ? { linear: r.linear, nb_sum: r.nb_sum } : null);
  } catch (e) { text('scan-error', e.message); }
}

async function learn(cls) {
  text('scan-error', ''); text('learn-result', '');
  try {
    const body = await messageBody();
    const r = await api('/api/learn?class=' + cls, { method: 'POST', body, headers: { 'Content-Type': 'message/rfc822' } });
    text('learn-result', `${cls}: ${r.result} (signature ${r.signature})`);
  } catch (e) { text('scan-error', e.message); }
}

// Users ---------------------------------------------------------------

async function loadUsers() {
  let l;
  try { l = await api('/api/users'); } catch (e) { text('user-error', e.message); return; }
  const t = $('users-list');
  t.replaceChildren();
  const head = el('tr');
  head.append(el('th', 'User'), el('th', 'To spam'), el('th', 'To ham'), el('th', 'Senders'), el('th', 'Latest'));
  t.append(head);
  if (!l.users.length) {
    const r = el('tr');
    r.append(el('td', '(none: no correction has stepped a layer; per_user = ' + l.per_user + ')'));
    t.append(r);
  }
  for (const u of l.users) {
    const r = el('tr');
    const a = el('a', u.user, 'mono');
    a.href = '/users?name=' + encodeURIComponent(u.user);
    a.addEventListener('click', (ev) => { ev.preventDefault(); $('user-name').value = u.user; loadUser(); });
    const cell = el('td');
    cell.append(a);
    r.append(cell, el('td', u.to_spam), el('td', u.to_ham), el('td', u.senders), el('td', when(u.last_at)));
    t.append(r);
  }
  text('users-more', l.total > l.users.length ? l.users.length + ' of ' + l.total + ' shown.' : '');
}

async function loadUser() {
  const name = $('user-name').value.trim();
  const url = '/users?name=' + encodeURIComponent(name);
  if (location.pathname + location.search !== url) history.replaceState({}, '', url);
  text('user-error', '');
  $('user-result').hidden = true;
  let u;
  try { u = await api('/api/user?name=' + encodeURIComponent(name)); } catch (e) { text('user-error', e.message); return; }
  text('user-key', u.user);
  text('user-per-user', u.per_user);
  text('user-to-spam', u.corrections.to_spam);
  text('user-to-ham', u.corrections.to_ham);
  text('user-undone', u.corrections.undone);
  text('user-lines', u.history_lines);
  const rate = (n, pct) => n + ' (' + pct.toFixed(2) + '%)';
  text('user-fp', rate(u.errors.false_positives, u.errors.false_positive_percent));
  text('user-fn', rate(u.errors.false_negatives, u.errors.false_negative_percent));
  text('user-unsure', u.errors.unsure);
  text('user-since', u.errors.since ? ' since ' + when(u.errors.since) + ' (' + timeZone() + ')' : '');
  $('user-history').href = '/history?recipient=' + encodeURIComponent(u.user);
  const t = $('user-senders');
  t.replaceChildren();
  const head = el('tr');
  head.append(el('th', 'Sender'), el('th', 'Log-odds the layer adds'), el('th', 'Corrections'), el('th', 'Latest'));
  t.append(head);
  if (!u.senders.length) { const r = el('tr'); r.append(el('td', '(none: this user is scored by the site\'s model)')); t.append(r); }
  for (const s of u.senders) {
    const r = el('tr');
    r.append(el('td', s.sender, 'mono'), el('td', (s.log_odds >= 0 ? '+' : '') + s.log_odds.toFixed(2)), el('td', s.corrections),
             el('td', when(s.last_at)));
    t.append(r);
  }
  $('user-result').hidden = false;
}

// Configuration -------------------------------------------------------

async function loadConfig() {
  let c;
  try { c = await api('/api/config'); } catch (e) { return; }
  text('config-file', c.file);
  text('config-database', c.database);
  const t = $('config-given');
  t.replaceChildren();
  if (!c.given.length) { const r = el('tr'); r.append(el('td', '(nothing: every setting is at its default)')); t.append(r); }
  for (const g of c.given) { const r = el('tr'); r.append(el('th', g.key, 'mono'), el('td', g.value, 'mono')); t.append(r); }
  const d = $('config-defaults');
  d.replaceChildren();
  for (const g of c.defaults) { const r = el('tr'); r.append(el('th', g.key, 'mono'), el('td', g.value === '' ? '(not set)' : g.value, 'mono')); d.append(r); }
}

// Start ---------------------------------------------------------------

document.addEventListener('DOMContentLoaded', async () => {
  $('login-form').addEventListener('submit', async (ev) => {
    ev.preventDefault();
    text('login-error', '');
    try {
      const s = await api('/api/login', {
        method: 'POST', headers: { 'Content-Type': 'application/json' },
        body: JSON.stringify({ name: $('login-name').value, password: $('login-password').value }),
      });
      $('login-password').value = '';
      signedIn(s);
    } catch (e) { text('login-error', e.message); }
  });
  $('sign-out').addEventListener('click', async () => { try { await api('/api/logout', { method: 'POST' }); } catch (e) { /* signed out anyway */ } signedOut(); history.pushState({}, '', '/login'); });
  for (const a of document.querySelectorAll('#nav a')) {
    a.addEventListener('click', (ev) => { ev.preventDefault(); go(a.dataset.page); });
  }
  $('chart-hour').addEventListener('click', () => { state.chart = 'hour'; $('chart-hour').classList.add('on'); $('chart-day').classList.remove('on'); drawChart(); });
  $('chart-day').addEventListener('click', () => { state.chart = 'day'; $('chart-day').classList.add('on'); $('chart-hour').classList.remove('on'); drawChart(); });
  $('scan-button').addEventListener('click', scan);
  $('history-form').addEventListener('submit', (ev) => { ev.preventDefault(); loadHistory(false); });
  $('history-more').addEventListener('click', () => loadHistory(true));
  $('user-form').addEventListener('submit', (ev) => { ev.preventDefault(); loadUser(); });
  // Clear empties the form (the reset event comes before it does), then shows everything.
  $('history-form').addEventListener('reset', () => setTimeout(() => loadHistory(false), 0));
  $('explain-close').addEventListener('click', () => { $('explain-panel').hidden = true; });
  for (const cls of ['spam', 'ham']) {
    $('explain-' + cls).addEventListener('click', () => correct(explainState.signature, cls, explainState.row));
  }
  $('explain-undo').addEventListener('click', undoCorrection);
  $('learn-spam').addEventListener('click', () => learn('spam'));
  $('learn-ham').addEventListener('click', () => learn('ham'));
  window.addEventListener('popstate', () => { if (state.account) route(); });
  try { signedIn(await api('/api/session')); } catch (e) { signedOut(); }
});
