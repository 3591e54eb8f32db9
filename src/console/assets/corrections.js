// The mailsift console: a history line's trail of corrections, and undoing
// the latest one that stands (POST /api/undo), which puts the model back as
// it was before it. Loaded after console.js and explain.js, whose helpers ($,
// el, text, api, when; explainState, renderExplanation, markCorrected) it uses.
// Everything from the server is put on the page as text (textContent), never
// as markup.
'use strict';

// "→ spam by console:admin, TIME", and for one undone "undone by console:bob,
// TIME" beside it (the pair struck through by the style sheet).
function trailItem(c) {
  const li = el('li', null, c.undone_at ? 'undone' : 'stands');
  li.append(el('span', `→ ${c.to}${c.by ? ' by ' + c.by : ''}, ${when(c.at)}`, 'made'));
  if (c.undone_at) {
    li.append(' ', el('span', `undone${c.undone_by ? ' by ' + c.undone_by : ''}, ${when(c.undone_at)}`, 'undone-by'));
  }
  return li;
}

// The details panel's part of line `x`: its message's corrections, oldest
// first, and Undo while one stands (an admin's: the button's paragraph is).
function showCorrections(x) {
  const trail = Array.isArray(x.corrections) ? x.corrections : [];
  const list = $('explain-trail');
  list.replaceChildren(...trail.map(trailItem));
  $('explain-trail-row').hidden = !trail.length;
  $('explain-undo').hidden = !x.corrected;
}

// The line shown in the details again, as the server has it now: the panel,
// and the correction cell of every line of its message.
async function refreshLine() {
  const { id, signature, row } = explainState;
  if (id === null || id === undefined) return;
  let x;
  try { x = await api('/api/explanation?id=' + encodeURIComponent(id)); } catch (e) { text('history-error', e.message); return; }
  if (explainState.id !== id) return;  // another line was opened meanwhile
  markCorrected(signature, x.corrected, row);
  renderExplanation(x, row);
}

// Undo last correction: as `mailsift correct --undo` does. Not the same as
// correcting to the other class, which learns the message as that class.
async function undoCorrection() {
  const signature = explainState.signature;
  text('history-error', ''); text('correct-result', '');
  if (!signature) return;
  const button = $('explain-undo');
  button.disabled = true;  // one undo a click: a second would undo the correction before
  try {
    const r = await api('/api/undo', { method: 'POST', headers: { 'Content-Type': 'application/json' },
      body: JSON.stringify({ signature }) });
    text('correct-result', `${r.signature}: ${r.result}`);
  } catch (e) { text('history-error', e.message); }
  // Whatever the answer: what the server holds now.
  try { await refreshLine(); } finally { button.disabled = false; }
}
