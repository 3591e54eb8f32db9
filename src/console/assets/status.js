// The mailsift console's status page: the figures of /api/status, refreshed
// every 10 seconds while the page is shown (show() in console.js), and the
// charts of the last hour or day. Loaded after console.js, whose helpers it uses.
'use strict';

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

document.addEventListener('DOMContentLoaded', () => {
  $('chart-hour').addEventListener('click', () => { state.chart = 'hour'; $('chart-hour').classList.add('on'); $('chart-day').classList.remove('on'); drawChart(); });
  $('chart-day').addEventListener('click', () => { state.chart = 'day'; $('chart-day').classList.add('on'); $('chart-hour').classList.remove('on'); drawChart(); });
});
