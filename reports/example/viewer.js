// lockstep's timeline viewer: the one script of every runs/NAME/timeline.html of a report.
//
// A timeline page holds its run's data as JSON in <script type="application/json"
// id="timeline-data"> (items drawn as bars and marks, bands, lanes, rows: see
// src/report/interactive.rs) and loads this file from the report's root. It draws the data as an
// SVG, one lane a node: a strip of marks (commands, expiries, faults), a state row (a client's
// holds — what it believed, with a tick where its own clock said the grant ran out — or the lock
// key's life on a server — what was true — and downtimes), then the operations as bars from
// invoke to completion; every violation as a red band across every lane, labelled with its
// checker in a strip of its own above the lanes (one row a violation), over its witness only (a
// stretch of time — two holds at once, a belief past the lease — or a narrow band at each witness
// event), and its witness events ringed; every fault labelled at its time. Every label goes
// through one placer (`label`): kept inside the chart, shortened (…) or left out where it would
// overlap one placed before it (the item keeps its hover). The page opens on the first
// violation (DATA.focus), the whole run one click away. It handles hover (details of an item)
// and zoom (drag across the chart, the mouse wheel, the from/to fields, or #from=A&to=B in the
// address, in seconds). Written for lockstep (no library); nothing is fetched, so a page works
// opened from disk.
(function () {
  const DATA = JSON.parse(document.getElementById('timeline-data').textContent);
  // The controls and the legend (colours as in viewer.css).
  const LEGEND = [['#0969da', 'hold (believed)'], ['#57606a', 'key on a server'], ['#e36209', 'key ended by another'],
    ['rgba(207,34,46,.25)', 'violation'], ['#a6dba0', 'ok'], ['#f4b6b6', 'fail'], ['#ffe08a', 'info (unknown)'], ['#ddd', 'never completed'],
    ['#c9c3e6', 'paused'], ['#4a72b0', 'command'], ['#cf222e', 'expiry'], ['#1a7f37', 'write accepted'],
    ['#e36209', 'write rejected'], ['#6f42c1', 'fault'], ['#cf222e', 'violation witness']];
  const CONTROLS = '<div id="controls">from <input id="from" type="number" step="any"> to ' +
    '<input id="to" type="number" step="any"> s <button id="apply">zoom</button><button id="out">zoom out</button>' +
    '<button id="reset">whole run</button>' + (DATA.focus ? ' (opened on the first violation)' : '') +
    ' \u00b7 drag across the chart to zoom on a range, wheel to zoom, hover for details' +
    '<span class="legend">' + LEGEND.map(([c, t]) => '<span style="background:' + c + '"></span>' + t).join('') + '</span></div>';
  document.getElementById('chart').insertAdjacentHTML('beforebegin', CONTROLS);
  const NS = 'http://www.w3.org/2000/svg';
  const chart = document.getElementById('chart'), tip = document.getElementById('tip');
  // The lane names' column: wide enough for the longest name (a served run's lanes are its
  // tests), between 110 and 300 px.
  const LEFT = Math.min(300, Math.max(110, 16 + Math.max(0, ...DATA.lanes.map(n => n.length)) * 11 * 0.62));
  const RIGHT = 20, TOP = 26, MARK = 14, STATE = 14, ROW = 18, VROW = 13;
  const BANDS = DATA.bands || [];
  const VIOLATIONS = DATA.violations || [];
  // The first violation's range, else the whole run.
  let view = DATA.focus ? [DATA.focus[0], DATA.focus[1]] : [0, DATA.end_us];
  const laneY = [], laneH = [];
  // The violations' labels: a row each, above the lanes.
  const STRIP = VIOLATIONS.length ? VIOLATIONS.length * VROW + 4 : 0;
  let y = TOP + STRIP;
  DATA.lanes.forEach((_, i) => { laneY.push(y); laneH.push(MARK + STATE + Math.max(1, DATA.rows[i]) * ROW + 6); y += laneH[i]; });
  const HEIGHT = y + 8;
  // Times are seconds since the run's start.
  const fmt = us => (us / 1e6).toLocaleString('en-US', {maximumFractionDigits: 6}) + ' s';
  function el(name, attrs, parent) {
    const e = document.createElementNS(NS, name);
    for (const k in attrs) e.setAttribute(k, attrs[k]);
    if (parent) parent.appendChild(e);
    return e;
  }
  // A text's width as drawn, from its font size (px) and weight: an upper bound for the fonts
  // viewer.css names (DejaVu Sans and system sans-serif faces average under .62 em a glyph).
  const textWidth = (text, size, bold) => text.length * size * (bold ? 0.68 : 0.62);
  // What the placer has placed in the current drawing: boxes [x0, y0, x1, y1].
  let placed = [];
  // Places a label whose baseline starts at (x0, y0): inside the chart (moved left to end at
  // its right edge, never left of `min`), at most `max` px wide, shortened to end before the
  // first label placed before it that it would overlap, or left out (returns null).
  function label(svg, x0, y0, text, attrs, size, bold, min, max) {
    const width = svg.getAttribute('width') * 1, height = svg.getAttribute('height') * 1;
    const lo = min === undefined ? 0 : min;
    let room = Math.min(max === undefined ? Infinity : max, width - 2 - lo);
    let x = Math.max(lo, Math.min(x0, width - 2 - Math.min(textWidth(text, size, bold), room)));
    const top = y0 - 0.8 * size, bottom = y0 + 0.22 * size; // the face's ascent and descent
    if (top < 0 || bottom > height) return null;
    for (const [a, b, c, d] of placed) {
      if (d <= top || b >= bottom) continue; // another row
      if (c <= x || a >= x + Math.min(textWidth(text, size, bold), room)) continue;
      if (a > x) room = Math.min(room, a - 2 - x); else return null;
    }
    let shown = text;
    if (textWidth(shown, size, bold) > room) {
      const n = Math.floor(room / textWidth('x', size, bold)) - 1;
      if (n < 2) return null;
      shown = text.slice(0, n) + '\u2026';
    }
    placed.push([x, top, x + textWidth(shown, size, bold), bottom]);
    const t = el('text', Object.assign({x, y: y0, 'pointer-events': 'none'}, attrs), svg);
    t.textContent = shown;
    return t;
  }
  function step(span) {
    const raw = span / 8, p = Math.pow(10, Math.floor(Math.log10(raw)));
    return [1, 2, 5, 10].map(m => m * p).find(s => s >= raw);
  }
  function draw() {
    const width = Math.max(600, chart.clientWidth || 1200), W = width - LEFT - RIGHT;
    const [v0, v1] = view, k = W / (v1 - v0);
    const x = t => LEFT + (Math.min(Math.max(t, v0), v1) - v0) * k;
    chart.textContent = '';
    placed = [];
    const svg = el('svg', {width, height: HEIGHT}, chart);
    DATA.lanes.forEach((name, i) => {
      el('rect', {x: 0, y: laneY[i], width, height: laneH[i], class: 'lane-bg' + (i % 2 ? ' odd' : '')}, svg);
    });
    // Every violation's label first, a row each: none is hidden by another label.
    VIOLATIONS.forEach((v, n) => {
      const points = v.p && v.p.length ? v.p : null;
      const inView = points ? points.filter(p => p >= v0 && p <= v1) : (v.e < v0 || v.s > v1 ? [] : [v.s]);
      if (!inView.length) return;
      const at = points ? inView[inView.length - 1] : Math.max(v.s, v0);
      const t = label(svg, x(at) + 3, TOP + VROW * (n + 1) - 2, v.t, {class: 'violation-label'}, 11, true, LEFT);
      if (t) { t.setAttribute('pointer-events', 'auto'); t.dataset.v = n; }
    });
    DATA.lanes.forEach((name, i) => label(svg, 6, laneY[i] + 16, name, {}, 11, false, 0, LEFT - 10));
    const s = step(v1 - v0);
    for (let t = Math.ceil(v0 / s) * s; t <= v1; t += s) {
      el('line', {x1: x(t), x2: x(t), y1: TOP - 4, y2: HEIGHT, stroke: '#ddd'}, svg);
      label(svg, x(t) + 2, TOP - 8, fmt(t), {}, 11, false, LEFT);
    }
    // Pauses first: a span behind the lane's holds and operations.
    DATA.items.forEach((it, n) => {
      if (it.k !== 'pause') return;
      const end = it.e > DATA.end_us ? DATA.end_us : it.e;
      if (end < v0 || it.s > v1) return;
      const r = el('rect', {x: x(it.s), y: laneY[it.l] + 1, width: Math.max(2, x(end) - x(it.s)), height: laneH[it.l] - 2, class: 'pause'}, svg);
      r.dataset.n = n;
    });
    // Every violation over its witness only: its stretch, or a narrow band at each witness event.
    VIOLATIONS.forEach((v, n) => {
      const spans = v.p && v.p.length ? v.p.map(p => [p, p]) : [[v.s, v.e]];
      spans.forEach(([a, b]) => {
        if (b < v0 || a > v1) return;
        const x0 = x(a), w = Math.max(3, x(b) - x0);
        const r = el('rect', {x: x0 - (a === b ? 1.5 : 0), y: TOP, width: w, height: HEIGHT - TOP, class: 'violation'}, svg);
        r.dataset.v = n;
      });
    });
    BANDS.forEach((b, n) => {
      const end = b.e > DATA.end_us ? DATA.end_us : b.e;
      if (end < v0 || b.s > v1) return;
      const x0 = x(b.s), w = Math.max(2, x(end) - x0), top = laneY[b.l] + MARK;
      const r = el('rect', {x: x0, y: top, width: w, height: STATE - 3, class: 'band ' + b.k}, svg);
      r.dataset.b = n;
      if (b.b !== undefined && b.b >= v0 && b.b <= v1) {
        el('line', {x1: x(b.b), x2: x(b.b), y1: top - 2, y2: top + STATE - 1, class: 'believed', 'pointer-events': 'none'}, svg);
      }
      if (w > 40) label(svg, x0 + 3, top + 9, b.t, {class: 'band-label'}, 10, false, x0 + 3, w - 6);
    });
    DATA.items.forEach((it, n) => {
      const end = it.e === 18446744073709552000 || it.e > DATA.end_us ? DATA.end_us : it.e;
      if (end < v0 || it.s > v1) return;
      const top = laneY[it.l];
      let shape;
      if (it.r >= 0) {
        const x0 = x(it.s), w = Math.max(2, x(end) - x0);
        shape = el('rect', {x: x0, y: top + MARK + STATE + it.r * ROW, width: w, height: ROW - 3, class: it.k}, svg);
        if (w > 40) label(svg, x0 + 3, top + MARK + STATE + it.r * ROW + 11, it.t, {}, 11, false, x0 + 3, w - 6);
      } else if (it.k === 'pause') {
        return;
      } else if (it.k === 'witness') {
        // An event a violation rests on: outlined across its lane (its checker in the hover).
        shape = el('rect', {x: x(it.s) - 3, y: top + 1, width: 6, height: laneH[it.l] - 2, class: 'witness'}, svg);
      } else {
        shape = el('rect', {x: x(it.s) - 1.5, y: top + 2, width: 3, height: MARK - 3, class: it.k}, svg);
        // A fault is labelled at its time ("crash redis-1", "clock-jump redis-1 +10 s").
        if (it.k === 'fault') label(svg, x(it.s) + 3, top + MARK - 3, it.t, {class: 'fault-label'}, 10, false, LEFT);
      }
      shape.dataset.n = n;
    });
    // A pause is labelled at its start, or where the view starts ("pause client-2 15 s"), at the
    // foot of its lane.
    DATA.items.forEach(it => {
      if (it.k !== 'pause' || it.e < v0 || it.s > v1) return;
      label(svg, x(Math.max(it.s, v0)) + 3, laneY[it.l] + laneH[it.l] - 2, it.t, {class: 'fault-label'}, 10, false, LEFT);
    });
    // A served test's label carries its name ("test test_crash"), at the foot of its lane, after
    // the faults and pauses (which keep their place where they meet).
    DATA.items.forEach(it => {
      if (it.k !== 'note' || !/^test /.test(it.t) || it.s < v0 || it.s > v1) return;
      const name = it.t.replace(/ \((conn \d+, client .*|control)\)$/, '');
      label(svg, x(it.s) + 3, laneY[it.l] + laneH[it.l] - 2, name, {class: 'test-label'}, 10, false, LEFT);
    });
    svg.addEventListener('mousemove', hover);
    svg.addEventListener('mouseleave', () => { tip.hidden = true; });
    document.getElementById('from').value = (v0 / 1e6).toFixed(6);
    document.getElementById('to').value = (v1 / 1e6).toFixed(6);
    return {x, k, W};
  }
  let geo = draw();
  let lit = null;
  function hover(ev) {
    const ds = ev.target.dataset || {};
    if (lit && lit !== ev.target) lit.classList.remove('hl');
    const it = ds.n !== undefined ? DATA.items[ds.n] : ds.b !== undefined ? BANDS[ds.b] : ds.v !== undefined ? VIOLATIONS[ds.v] : null;
    if (!it) { tip.hidden = true; return; }
    lit = ev.target; lit.classList.add('hl');
    const rows = it.d.map(([k, v]) => '<tr><td>' + esc(k) + '</td><td>' + esc(v) + '</td></tr>').join('');
    tip.innerHTML = '<b>' + esc(it.t) + '</b><table>' + rows + '</table>';
    tip.hidden = false;
    const w = tip.offsetWidth, h = tip.offsetHeight;
    tip.style.left = Math.min(ev.clientX + 14, window.innerWidth - w - 4) + 'px';
    tip.style.top = (ev.clientY + 14 + h > window.innerHeight ? ev.clientY - h - 10 : ev.clientY + 14) + 'px';
  }
  function esc(s) { return String(s).replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;'); }
  function zoom(a, b) {
    a = Math.max(0, a); b = Math.min(DATA.end_us, b);
    if (b - a >= 10) { view = [a, b]; geo = draw(); }
  }
  const timeAt = px => view[0] + (px - LEFT) / geo.k;
  let drag = null, band = null;
  chart.addEventListener('mousedown', ev => {
    const r = chart.getBoundingClientRect();
    drag = ev.clientX - r.left;
    band = document.createElement('div');
    band.style.cssText = 'position:absolute;top:0;bottom:0;background:rgba(9,105,218,.15);border:1px solid #0969da;pointer-events:none';
    band.style.left = drag + 'px'; band.style.width = '0px';
    chart.appendChild(band);
  });
  window.addEventListener('mousemove', ev => {
    if (drag === null) return;
    const px = ev.clientX - chart.getBoundingClientRect().left;
    band.style.left = Math.min(px, drag) + 'px'; band.style.width = Math.abs(px - drag) + 'px';
  });
  window.addEventListener('mouseup', ev => {
    if (drag === null) return;
    const px = ev.clientX - chart.getBoundingClientRect().left;
    const a = timeAt(Math.min(px, drag)), b = timeAt(Math.max(px, drag));
    drag = null; band.remove();
    if (Math.abs(b - a) * geo.k > 4) zoom(a, b);
  });
  chart.addEventListener('wheel', ev => {
    ev.preventDefault();
    const t = timeAt(ev.clientX - chart.getBoundingClientRect().left), f = ev.deltaY > 0 ? 1.25 : 0.8;
    zoom(t - (t - view[0]) * f, t + (view[1] - t) * f);
  }, {passive: false});
  document.getElementById('apply').onclick = () =>
    zoom(parseFloat(document.getElementById('from').value) * 1e6, parseFloat(document.getElementById('to').value) * 1e6);
  document.getElementById('out').onclick = () => { const m = (view[0] + view[1]) / 2, h = view[1] - view[0]; zoom(m - h, m + h); };
  document.getElementById('reset').onclick = () => zoom(0, DATA.end_us);
  window.addEventListener('resize', () => { geo = draw(); });
  const q = new URLSearchParams(location.hash.slice(1));
  if (q.has('from') && q.has('to')) zoom(parseFloat(q.get('from')) * 1e6, parseFloat(q.get('to')) * 1e6);
})();
