// The mailsift console's users page: the users with a layer of their own
// (/api/users), and one user's layer and error rates (/api/user). Loaded after
// console.js, whose helpers it uses.
'use strict';

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

document.addEventListener('DOMContentLoaded', () => {
  $('user-form').addEventListener('submit', (ev) => { ev.preventDefault(); loadUser(); });
});
