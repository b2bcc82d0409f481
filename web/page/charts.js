// Charts of the page, drawn as SVG at the width of their box (redrawn when it changes), with
// units on both axes and a tooltip for the point nearest the pointer. Presentation only: every
// number drawn comes from the engine's JSON.
'use strict';

const RL = (() => {
  const NS = 'http://www.w3.org/2000/svg';
  const PREFIX = [[1e18, 'E'], [1e15, 'P'], [1e12, 'T'], [1e9, 'G'], [1e6, 'M'], [1e3, 'k'], [1, ''], [1e-3, 'm'], [1e-6, 'µ'], [1e-9, 'n']];

  // 989.4e12, 'FLOP/s' -> "989 TFLOP/s"; three significant digits.
  function si(v, unit = '', digits = 3) {
    if (v === null || v === undefined || Number.isNaN(v)) return '–';
    if (!Number.isFinite(v)) return (v > 0 ? '∞' : '−∞') + (unit ? ' ' + unit : '');
    if (v === 0) return '0' + (unit ? ' ' + unit : '');
    const a = Math.abs(v);
    let [f, p] = PREFIX[PREFIX.length - 1];
    for (const [ff, pp] of PREFIX) {
      if (a >= ff * 0.9995) { f = ff; p = pp; break; }
    }
    return `${Number((v / f).toPrecision(digits))} ${p}${unit}`.trim();
  }
  // A plain number below 10^4 (0.996, 52.3, 2950), with a prefix above (12.3 k).
  const num = (v) => (v !== null && v !== undefined && Math.abs(v) < 1e4 ? String(Number(Number(v).toPrecision(3))) : si(v));
  const time = (s) => si(s, 's');
  const bytes = (b) => si(b, 'B');
  const pct = (x, d = 1) => (x === null || x === undefined ? '–' : `${(100 * x).toFixed(d)}%`);

  function el(tag, attrs = {}, parent = null, text = null) {
    const e = document.createElementNS(NS, tag);
    for (const [k, v] of Object.entries(attrs)) e.setAttribute(k, v);
    if (text !== null) e.textContent = text;
    if (parent) parent.appendChild(e);
    return e;
  }

  function linearTicks(lo, hi, n) {
    if (!(hi > lo)) return [lo];
    const raw = (hi - lo) / n;
    const mag = Math.pow(10, Math.floor(Math.log10(raw)));
    const step = [1, 2, 2.5, 5, 10].map((m) => m * mag).find((s) => s >= raw) || raw;
    const out = [];
    for (let t = Math.ceil(lo / step) * step; t <= hi + step * 1e-9; t += step) out.push(Math.abs(t) < step * 1e-9 ? 0 : t);
    return out;
  }
  function logTicks(lo, hi, maxTicks) {
    const a = Math.floor(Math.log10(lo)), b = Math.ceil(Math.log10(hi));
    const every = Math.max(1, Math.ceil((b - a + 1) / maxTicks));
    const out = [];
    for (let e = a; e <= b; e += every) out.push(Math.pow(10, e));
    return out;
  }

  let tip = null;
  function showTip(html, x, y) {
    if (!tip) {
      tip = document.createElement('div');
      tip.className = 'chart-tip';
      tip.setAttribute('role', 'status');
      document.body.appendChild(tip);
    }
    tip.innerHTML = html;
    tip.style.display = 'block';
    const w = tip.offsetWidth, h = tip.offsetHeight;
    const left = Math.min(window.scrollX + document.documentElement.clientWidth - w - 8, x + 14);
    const top = y + 14 + h > window.scrollY + window.innerHeight ? y - h - 10 : y + 14;
    tip.style.left = `${Math.max(window.scrollX + 4, left)}px`;
    tip.style.top = `${top}px`;
  }
  function hideTip() { if (tip) tip.style.display = 'none'; }

  // chart(box, {height, x: {label, log, fmt, min, max}, y: {...}, series: [{name, color,
  // kind: 'line'|'points'|'step', dash, points: [{x, y, tip}]}], marks: [{x, label}]}).
  function chart(box, o) {
    const draw = () => {
      hideTip();  // the point it showed is being redrawn
      box.textContent = '';
      const W = Math.max(280, box.clientWidth || 600);
      const H = o.height || Math.round(Math.min(380, Math.max(240, W * 0.55)));
      const narrow = W < 480;
      const m = { l: 60, r: 14, t: 10, b: 46 };
      const svg = el('svg', { width: W, height: H, viewBox: `0 0 ${W} ${H}`, class: 'chart', role: 'img', 'aria-label': o.title || `${o.y.label} against ${o.x.label}` }, box);
      const pts = o.series.flatMap((s) => s.points.filter((p) => Number.isFinite(p.x) && Number.isFinite(p.y) && (!o.x.log || p.x > 0) && (!o.y.log || p.y > 0)));
      const range = (axis, key) => {
        let lo = axis.min ?? Math.min(...pts.map((p) => p[key]));
        let hi = axis.max ?? Math.max(...pts.map((p) => p[key]));
        if (!Number.isFinite(lo) || !Number.isFinite(hi)) { lo = axis.log ? 1 : 0; hi = axis.log ? 10 : 1; }
        if (axis.log) {
          if (lo === hi) { lo /= 2; hi *= 2; }
          hi *= 1.3;
          return [Math.pow(10, Math.floor(Math.log10(lo) * 2) / 2), Math.pow(10, Math.ceil(Math.log10(hi) * 2) / 2)];
        }
        if (axis.zero !== false) lo = Math.min(0, lo);
        if (lo === hi) hi = lo + 1;
        const pad = (hi - lo) * 0.04;
        return [axis.min ?? (lo === 0 ? 0 : lo - pad), axis.max ?? hi + pad];
      };
      const [x0, x1] = range(o.x, 'x'), [y0, y1] = range(o.y, 'y');
      // The left margin holds the longest y tick label (about 6.5 px a character at 11 px)
      // and the rotated axis label beside it.
      const yt = o.y.log ? logTicks(y0, y1, 7) : linearTicks(y0, y1, 5);
      m.l = 30 + Math.max(3, ...yt.filter((t) => t >= y0 && t <= y1).map((t) => (o.y.fmt || si)(t).length)) * 6.5;
      const px = (v) => m.l + (W - m.l - m.r) * (o.x.log ? Math.log(v / x0) / Math.log(x1 / x0) : (v - x0) / (x1 - x0));
      const py = (v) => H - m.b - (H - m.t - m.b) * (o.y.log ? Math.log(v / y0) / Math.log(y1 / y0) : (v - y0) / (y1 - y0));
      const g = el('g', { class: 'axes' }, svg);
      const xt = o.x.log ? logTicks(x0, x1, narrow ? 5 : 9) : linearTicks(x0, x1, narrow ? 4 : 7);
      for (const t of xt) {
        if (t < x0 || t > x1) continue;
        el('line', { x1: px(t), x2: px(t), y1: m.t, y2: H - m.b, class: 'grid' }, g);
        // Centred under its tick, unless that would cut it at the chart's edge (a tick at the
        // axis's end, "100 ms" under a range padded to 100.2): then flush with the edge.
        const label = (o.x.fmt || si)(t), half = label.length * 3.25;
        const at = px(t) + half > W - 1 ? { x: W - 1, a: 'end' } : px(t) - half < 1 ? { x: 1, a: 'start' } : { x: px(t), a: 'middle' };
        el('text', { x: at.x, y: H - m.b + 16, 'text-anchor': at.a, class: 'tick' }, g, label);
      }
      for (const t of yt) {
        if (t < y0 || t > y1) continue;
        el('line', { x1: m.l, x2: W - m.r, y1: py(t), y2: py(t), class: 'grid' }, g);
        el('text', { x: m.l - 6, y: py(t) + 4, 'text-anchor': 'end', class: 'tick' }, g, (o.y.fmt || si)(t));
      }
      el('rect', { x: m.l, y: m.t, width: W - m.l - m.r, height: H - m.t - m.b, class: 'frame' }, g);
      el('text', { x: m.l + (W - m.l - m.r) / 2, y: H - 8, 'text-anchor': 'middle', class: 'axis-label' }, g, o.x.label);
      el('text', { x: 12, y: m.t + (H - m.t - m.b) / 2, 'text-anchor': 'middle', class: 'axis-label', transform: `rotate(-90 12 ${m.t + (H - m.t - m.b) / 2})` }, g, o.y.label);
      const plot = el('g', {}, svg);
      const clip = `clip${Math.random().toString(36).slice(2)}`;
      el('rect', { x: m.l, y: m.t, width: W - m.l - m.r, height: H - m.t - m.b }, el('clipPath', { id: clip }, svg));
      plot.setAttribute('clip-path', `url(#${clip})`);
      const shown = [];
      for (const s of o.series) {
        const p = s.points.filter((q) => Number.isFinite(q.x) && Number.isFinite(q.y) && (!o.x.log || q.x > 0) && (!o.y.log || q.y > 0));
        if (s.kind === 'line' || s.kind === 'step') {
          let d = '';
          p.forEach((q, i) => {
            if (s.kind === 'step' && i > 0) d += `L${px(q.x)},${py(p[i - 1].y)}`;
            d += `${i ? 'L' : 'M'}${px(q.x)},${py(q.y)}`;
          });
          el('path', { d, fill: 'none', stroke: s.color, 'stroke-width': s.width || 2, 'stroke-dasharray': s.dash || '' }, plot);
        } else {
          for (const q of p) el('circle', { cx: px(q.x), cy: py(q.y), r: s.r || 4, fill: s.color, 'fill-opacity': 0.8, stroke: '#fff', 'stroke-width': 0.8 }, plot);
        }
        if (s.tips !== false) for (const q of p) shown.push({ X: px(q.x), Y: py(q.y), q, s });
      }
      for (const mk of o.marks || []) {
        if (!(mk.x >= x0 && mk.x <= x1)) continue;
        el('line', { x1: px(mk.x), x2: px(mk.x), y1: m.t, y2: H - m.b, class: 'mark' }, plot);
        el('text', { x: px(mk.x) + 4, y: m.t + 14, class: 'mark-label' }, plot, mk.label);
      }
      const ring = el('circle', { r: 7, class: 'hover-ring', visibility: 'hidden' }, svg);
      const near = (ev) => {
        const r = svg.getBoundingClientRect();
        const mx = ev.clientX - r.left, my = ev.clientY - r.top;
        let best = null, bd = 18 * 18;
        for (const h of shown) {
          const d = (h.X - mx) ** 2 + (h.Y - my) ** 2;
          if (d < bd) { bd = d; best = h; }
        }
        return best;
      };
      const move = (ev) => {
        const h = near(ev);
        if (!h) { ring.setAttribute('visibility', 'hidden'); hideTip(); return; }
        ring.setAttribute('cx', h.X); ring.setAttribute('cy', h.Y); ring.setAttribute('visibility', 'visible');
        const html = h.q.tip || `<b>${h.s.name}</b><br>${o.x.label}: ${(o.x.fmt || si)(h.q.x)}<br>${o.y.label}: ${(o.y.fmt || si)(h.q.y)}`;
        showTip(html, ev.pageX, ev.pageY);
      };
      svg.addEventListener('pointermove', move);
      svg.addEventListener('pointerdown', move);
      svg.addEventListener('pointerleave', () => { ring.setAttribute('visibility', 'hidden'); hideTip(); });
      if (o.legend !== false) {
        const lg = document.createElement('div');
        lg.className = 'legend';
        for (const s of o.series) {
          if (s.legend === false) continue;
          const item = document.createElement('span');
          const sw = document.createElement('i');
          sw.style.background = s.color;
          if (s.kind === 'line' || s.kind === 'step') sw.className = 'line';
          item.append(sw, document.createTextNode(s.name));
          lg.appendChild(item);
        }
        box.appendChild(lg);
      }
    };
    draw();
    let last = box.clientWidth;
    const ro = new ResizeObserver(() => {
      if (Math.abs(box.clientWidth - last) < 2) return;
      last = box.clientWidth;
      draw();
    });
    ro.observe(box);
    box._rlObserver?.disconnect();
    box._rlObserver = ro;
  }

  // Horizontal bars: [{label, value, note}] in `unit` (fmt formats a value).
  function bars(box, items, fmt) {
    box.textContent = '';
    const max = Math.max(...items.map((i) => i.value), 0) || 1;
    const t = document.createElement('div');
    t.className = 'bars';
    for (const i of items) {
      const row = document.createElement('div');
      row.className = 'bar-row';
      const label = document.createElement('span');
      label.className = 'bar-label';
      label.textContent = i.label;
      const track = document.createElement('span');
      track.className = 'bar-track';
      const fill = document.createElement('span');
      fill.className = 'bar-fill' + (i.cls ? ' ' + i.cls : '');
      fill.style.width = `${(100 * Math.max(0, i.value)) / max}%`;
      track.appendChild(fill);
      const v = document.createElement('span');
      v.className = 'bar-value';
      v.textContent = fmt(i.value) + (i.note ? ` ${i.note}` : '');
      row.append(label, track, v);
      t.appendChild(row);
    }
    box.appendChild(t);
  }

  return { si, num, time, bytes, pct, chart, bars, hideTip };
})();
