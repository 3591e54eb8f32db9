// The mailsift console's scan page: a pasted or chosen message scanned
// (POST /api/scan, which changes nothing) or learned (POST /api/learn, an
// admin's). Loaded after console.js, whose helpers (reasonRows, scoreSum and
// the rest) it uses.
'use strict';

async function messageBody() {
  const f = $('scan-file').files[0];
  if (f) return await f.arrayBuffer();
  const t = $('scan-text').value;
  if (!t.trim()) throw new Error('paste a message or choose a file first');
  // Mail has CRLF line ends; a pasted message has LF: either is read.
  return new TextEncoder().encode(t);
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

document.addEventListener('DOMContentLoaded', () => {
  $('scan-button').addEventListener('click', scan);
  $('learn-spam').addEventListener('click', () => learn('spam'));
  $('learn-ham').addEventListener('click', () => learn('ham'));
});
