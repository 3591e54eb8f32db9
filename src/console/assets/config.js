// The mailsift console's configuration page: the settings of mailsift.conf
// as mailsiftd read them (/api/config). Loaded after console.js, whose
// helpers it uses.
'use strict';

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
