// The mailsift console's history page: the filter (kept in the page's URL),
// the listing a page at a time, and its export links. A line's details and
// correcting it: explain.js. Loaded after console.js, whose helpers it uses.
// Everything from the server is put on the page as text (textContent), never
// as markup.
'use strict';

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

document.addEventListener('DOMContentLoaded', () => {
  $('history-form').addEventListener('submit', (ev) => { ev.preventDefault(); loadHistory(false); });
  $('history-more').addEventListener('click', () => loadHistory(true));
  // Clear empties the form (the reset event comes before it does), then shows everything.
  $('history-form').addEventListener('reset', () => setTimeout(() => loadHistory(false), 0));
});
