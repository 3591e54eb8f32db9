// The mailsift console: the details panel of a history line (its score taken
// apart, as /api/explanation gives it), and correcting its message
// (POST /api/correct). Loaded after console.js and history.js, whose helpers
// it uses; corrections.js adds the panel's trail of corrections and Undo.
// Everything from the server is put on the page as text (textContent), never
// as markup.
'use strict';

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

document.addEventListener('DOMContentLoaded', () => {
  $('explain-close').addEventListener('click', () => { $('explain-panel').hidden = true; });
  for (const cls of ['spam', 'ham']) {
    $('explain-' + cls).addEventListener('click', () => correct(explainState.signature, cls, explainState.row));
  }
  $('explain-undo').addEventListener('click', undoCorrection);
});
