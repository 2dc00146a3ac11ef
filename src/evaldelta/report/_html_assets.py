"""The HTML report's stylesheet and script, inline in the page (no file to fetch).

Kept as Python strings so that they ship inside the package wherever it is installed.
The script reads the JSON the page carries and builds every element with
``textContent`` (never ``innerHTML``), so data can only ever show as text.
"""

from __future__ import annotations

__all__ = ["CSS", "SCRIPT"]

CSS = r""":root {
  --fg: #1f2328;
  --muted: #59636e;
  --line: #d1d9e0;
  --soft: #f6f8fa;
  --better: #1a7f37;
  --worse: #cf222e;
  --tradeoff: #9a6700;
  --inconclusive: #59636e;
  --accent: #0969da;
}
* { box-sizing: border-box; }
body {
  margin: 0;
  padding: 24px 32px 48px;
  color: var(--fg);
  background: #fff;
  font: 14px/1.5 -apple-system, BlinkMacSystemFont, "Segoe UI", "Noto Sans",
    Helvetica, Arial, sans-serif;
}
h1 { font-size: 22px; margin: 0 0 4px; }
h2 {
  font-size: 18px;
  margin: 28px 0 8px;
  border-bottom: 1px solid var(--line);
  padding-bottom: 4px;
}
h3 { font-size: 15px; margin: 18px 0 6px; }
h4 { font-size: 13px; margin: 0 0 4px; color: var(--muted); font-weight: 600; }
.sub { color: var(--muted); margin: 0 0 12px; word-break: break-all; }
.verdict { font-size: 15px; margin: 8px 0 12px; }
.badge {
  display: inline-block;
  padding: 1px 10px;
  border-radius: 12px;
  color: #fff;
  font-weight: 600;
  background: var(--inconclusive);
}
.badge.better { background: var(--better); }
.badge.worse { background: var(--worse); }
.badge.tradeoff { background: var(--tradeoff); }
.warning {
  border-left: 4px solid var(--tradeoff);
  background: #fff8c5;
  padding: 6px 10px;
  margin: 6px 0;
}
.note { color: var(--muted); margin: 6px 0; }
.empty { color: var(--muted); font-style: italic; }
table { border-collapse: collapse; }
table.figures { margin: 8px 0; }
table.figures th, table.figures td {
  padding: 4px 12px;
  border-bottom: 1px solid var(--line);
  text-align: left;
}
table.figures td.num { text-align: right; font-variant-numeric: tabular-nums; }
.charts { display: flex; flex-wrap: wrap; gap: 16px 32px; margin: 12px 0; }
figure.chart {
  margin: 0;
  padding: 12px;
  border: 1px solid var(--line);
  border-radius: 6px;
  background: #fff;
  max-width: 100%;
  overflow-x: auto;
}
figure.chart figcaption { font-weight: 600; margin-bottom: 6px; }
svg.plot { display: block; font-size: 11px; }
svg.plot .axis { fill: var(--muted); }
svg.plot .axis.strong { fill: var(--fg); font-weight: 600; }
svg.plot .cell { fill: #1f2328; font-size: 10px; }
svg.plot .cell.light { fill: #fff; }
svg.plot .missing { fill: #eef1f4; stroke: #d1d9e0; stroke-dasharray: 2 2; }
svg.plot .grid { stroke: var(--line); stroke-width: 1; }
svg.plot .zero { stroke: var(--fg); stroke-width: 1; stroke-dasharray: 4 3; }
svg.plot .bar { fill: #8cb4e8; }
svg.plot .bar.baseline { fill: #b9c2cc; }
svg.plot .bar.worse { fill: #e5858b; }
svg.plot .bar.better { fill: #6cc285; }
svg.plot .bar.tie { fill: #b9c2cc; }
svg.plot .whisker { stroke: var(--fg); stroke-width: 1.5; }
svg.plot .mark { fill: var(--inconclusive); stroke: var(--inconclusive); }
svg.plot .mark.ci { stroke-width: 2; }
svg.plot .mark.better { fill: var(--better); stroke: var(--better); }
svg.plot .mark.worse { fill: var(--worse); stroke: var(--worse); }
svg.plot .mark.tradeoff { fill: var(--tradeoff); stroke: var(--tradeoff); }
.picker select, .filters select, .filters input[type="search"] { font: inherit; padding: 3px 6px; }
.filters { display: flex; flex-wrap: wrap; gap: 8px 20px; align-items: center; margin: 8px 0; }
.filters input[type="search"] { width: 260px; }
button {
  font: inherit;
  padding: 3px 10px;
  border: 1px solid var(--line);
  border-radius: 6px;
  background: var(--soft);
  cursor: pointer;
}
button:disabled { cursor: default; opacity: 0.5; }
#case-table { width: 100%; margin-top: 4px; }
#case-table th, #case-table td {
  padding: 4px 8px;
  border-bottom: 1px solid var(--line);
  text-align: left;
  vertical-align: top;
}
#case-table th { background: var(--soft); position: sticky; top: 0; }
#case-table th.sortable { cursor: pointer; user-select: none; }
#case-table th[aria-sort="ascending"]::after { content: " ▲"; }
#case-table th[aria-sort="descending"]::after { content: " ▼"; }
#case-table .num { text-align: right; font-variant-numeric: tabular-nums; }
#case-table td.id {
  word-break: break-all;
  font-family: ui-monospace, SFMono-Regular, Menlo, Consolas, monospace;
  font-size: 12px;
}
#case-table td.toggle, #case-table th.toggle { width: 20px; color: var(--muted); }
#case-table tr.case-row { cursor: pointer; }
#case-table tr.case-row:hover, #case-table tr.case-row:focus {
  background: #f0f6ff;
  outline: none;
}
#case-table td.loss { color: var(--worse); }
#case-table td.win { color: var(--better); }
#case-table td.tie { color: var(--muted); }
#case-table tr.case-detail > td { background: var(--soft); }
.detail { display: flex; flex-direction: column; gap: 10px; padding: 6px 0; }
.side-by-side { display: grid; grid-template-columns: 1fr 1fr; gap: 12px; }
.side-by-side .wide { grid-column: 1 / -1; }
pre.text {
  margin: 0;
  padding: 8px;
  background: #fff;
  border: 1px solid var(--line);
  border-radius: 4px;
  white-space: pre-wrap;
  word-break: break-word;
  max-height: 420px;
  overflow: auto;
  font: 12px/1.45 ui-monospace, SFMono-Regular, Menlo, Consolas, monospace;
}
mark.removed { background: #ffd7d5; color: inherit; }
mark.added { background: #ccf2d4; color: inherit; }
.pager { display: flex; gap: 12px; align-items: center; margin: 8px 0; }
footer {
  margin-top: 36px;
  color: var(--muted);
  font-size: 12px;
  border-top: 1px solid var(--line);
  padding-top: 8px;
}
@media print {
  .filters, .pager, .picker { display: none; }
}
"""

SCRIPT = r"""
(function () {
  "use strict";

  // Every piece of data reaches the page through textContent, or setAttribute on
  // attributes that cannot run code: nothing from the data is ever parsed as HTML.
  const SVG_NS = "http://www.w3.org/2000/svg";
  const PAGE_SIZE = 50;
  const DIFF_CELLS = 4000000;

  const data = JSON.parse(document.getElementById("evaldelta-data").textContent);
  const cases = data.cases;
  const targets = data.targets;
  // Each comparison's cases are those of the JSON document the page carries.
  data.comparisons.forEach((c, i) => {
    c.matched = data.kind === "matrix" ? data.result.pairwise[i].matched : data.result.matched;
  });

  const EVENTS = { onclick: "click", onchange: "change", oninput: "input", onkeydown: "keydown" };

  function setAll(node, attrs) {
    if (!attrs) return;
    for (const key of Object.keys(attrs)) {
      const value = attrs[key];
      if (value === null || value === undefined || value === false) continue;
      if (key === "text") node.textContent = String(value);
      else if (EVENTS[key]) node.addEventListener(EVENTS[key], value);
      else node.setAttribute(key, value === true ? "" : String(value));
    }
  }

  function append(node, children) {
    if (children === null || children === undefined) return;
    if (!Array.isArray(children)) children = [children];
    for (const child of children) {
      if (child === null || child === undefined || child === false) continue;
      if (Array.isArray(child)) append(node, child);
      else node.appendChild(typeof child === "string" ? document.createTextNode(child) : child);
    }
  }

  function el(tag, attrs, children) {
    const node = document.createElement(tag);
    setAll(node, attrs);
    append(node, children);
    return node;
  }

  function svg(tag, attrs, children) {
    const node = document.createElementNS(SVG_NS, tag);
    setAll(node, attrs);
    append(node, children);
    return node;
  }

  function clear(node) {
    while (node.firstChild) node.removeChild(node.firstChild);
  }

  function tip(text) {
    return svg("title", { text: text });
  }

  function label(x, y, content, anchor, cls) {
    const attrs = { x: x, y: y, class: cls || "axis" };
    if (anchor) attrs["text-anchor"] = anchor;
    return svg("text", attrs, content);
  }

  function line(x1, x2, y1, y2, cls) {
    return svg("line", { x1: x1, x2: x2, y1: y1, y2: y2, class: cls });
  }

  function plot(width, height, description) {
    return svg("svg", {
      class: "plot",
      width: width,
      height: height,
      viewBox: "0 0 " + width + " " + height,
      role: "img",
      "aria-label": description,
    });
  }

  function shorten(text, max) {
    text = String(text);
    return text.length > max ? text.slice(0, max - 1) + "…" : text;
  }

  function show(value) {
    if (value === null || value === undefined) return "";
    if (typeof value === "string") return value;
    return JSON.stringify(value, null, 2);
  }

  function missing(x) {
    return x === null || x === undefined || Number.isNaN(x);
  }

  function fixed(x, digits) {
    return missing(x) ? "n/a" : Number(x).toFixed(digits);
  }

  function signed(x, digits) {
    if (missing(x)) return "n/a";
    const text = Number(x).toFixed(digits);
    return text.startsWith("-") ? text : "+" + text;
  }

  const VERDICT_CLASS = {
    Better: "better",
    Worse: "worse",
    "Trade-off": "tradeoff",
    Inconclusive: "inconclusive",
  };

  // -- colour ------------------------------------------------------------------------

  const VIRIDIS = [
    [68, 1, 84],
    [59, 82, 139],
    [33, 145, 140],
    [94, 201, 98],
    [253, 231, 37],
  ];

  function viridis(t) {
    t = Math.max(0, Math.min(1, t));
    const x = t * (VIRIDIS.length - 1);
    const i = Math.min(VIRIDIS.length - 2, Math.floor(x));
    const f = x - i;
    const a = VIRIDIS[i];
    const b = VIRIDIS[i + 1];
    const c = [0, 1, 2].map((k) => Math.round(a[k] + (b[k] - a[k]) * f));
    const luma = 0.299 * c[0] + 0.587 * c[1] + 0.114 * c[2];
    return { fill: "rgb(" + c.join(",") + ")", dark: luma < 140 };
  }

  // -- charts ------------------------------------------------------------------------

  function chartFrame(id, title, note, body) {
    return el("figure", { class: "chart", id: id }, [
      el("figcaption", { text: title }),
      body,
      note ? el("p", { class: "note", text: note }) : null,
    ]);
  }

  function heatmap() {
    const shown = data.heatmap.rows;
    const base = data.heatmap.baseline;
    const k = targets.length;
    const labelW = 170;
    const cellW = Math.max(44, Math.min(150, Math.floor(480 / Math.max(1, k))));
    const cellH = 16;
    const top = 40;
    const width = labelW + k * cellW + 60;
    const height = top + shown.length * cellH + 40;
    let lo = 0;
    let hi = 1;
    for (const i of shown) {
      for (const v of cases.scores[i]) {
        if (missing(v)) continue;
        lo = Math.min(lo, v);
        hi = Math.max(hi, v);
      }
    }
    const node = plot(width, height, "Score per test and target");
    targets.forEach((t, j) => {
      const marked = j === base && data.kind === "matrix";
      const short = shorten(t, Math.max(6, Math.floor(cellW / 6.5)));
      const cls = marked ? "axis strong" : "axis";
      const cx = labelW + j * cellW + cellW / 2;
      node.appendChild(label(cx, top - (marked ? 20 : 8), [tip(t), short], "middle", cls));
      if (marked) node.appendChild(label(cx, top - 8, "baseline", "middle", "axis"));
    });
    shown.forEach((i, r) => {
      const y = top + r * cellH;
      const id = cases.test_ids[i];
      node.appendChild(label(labelW - 6, y + cellH - 4, [tip(id), shorten(id, 26)], "end"));
      cases.scores[i].forEach((v, j) => {
        const box = { x: labelW + j * cellW + 1, y: y + 1, width: cellW - 2, height: cellH - 2 };
        const where = id + " / " + targets[j] + ": ";
        if (missing(v)) {
          box.class = "missing";
          node.appendChild(svg("rect", box, tip(where + "no result")));
          return;
        }
        const colour = viridis((v - lo) / (hi - lo || 1));
        box.fill = colour.fill;
        node.appendChild(svg("rect", box, tip(where + fixed(v, 3))));
        const cls = colour.dark ? "cell light" : "cell";
        node.appendChild(label(box.x + cellW / 2 - 1, y + cellH - 4, fixed(v, 2), "middle", cls));
      });
    });
    // Legend: the colour scale from the lowest to the highest score shown.
    const ly = top + shown.length * cellH + 14;
    const steps = 20;
    const lw = Math.min(200, k * cellW);
    for (let s = 0; s < steps; s++) {
      const fill = viridis(s / (steps - 1)).fill;
      const x = labelW + (s * lw) / steps;
      const box = { x: x, y: ly, width: lw / steps + 0.5, height: 8, fill: fill };
      node.appendChild(svg("rect", box));
    }
    node.appendChild(label(labelW - 6, ly + 8, fixed(lo, 2), "end"));
    node.appendChild(label(labelW + lw + 6, ly + 8, fixed(hi, 2)));
    const total = data.heatmap.total;
    const note =
      shown.length < total
        ? "The " + shown.length + " of " + total.toLocaleString() +
          " tests whose scores differ most across targets."
        : null;
    return chartFrame("chart-heatmap", "Score per test and target", note, node);
  }

  function rateBars() {
    const rows = data.rates;
    const labelW = 170;
    const plotW = 300;
    const rowH = 26;
    const top = 10;
    const bottom = top + rows.length * rowH;
    const node = plot(labelW + plotW + 150, bottom + 30, "Pass rate per target");
    const x = (v) => labelW + Math.max(0, Math.min(1, v)) * plotW;
    for (let t = 0; t <= 4; t++) {
      const gx = labelW + (t * plotW) / 4;
      node.appendChild(line(gx, gx, top, bottom, "grid"));
      node.appendChild(label(gx, bottom + 16, t * 25 + "%", "middle"));
    }
    rows.forEach((row, r) => {
      const y = top + r * rowH;
      const cy = y + rowH / 2;
      const iv = row.pass_rate;
      const name = row.target + (row.baseline && data.kind === "matrix" ? " (baseline)" : "");
      const cls = row.baseline ? "axis strong" : "axis";
      node.appendChild(label(labelW - 6, cy + 4, [tip(name), shorten(name, 26)], "end", cls));
      if (missing(iv.estimate)) return;
      const pct = (v) => fixed(v * 100, 1);
      const range = pct(iv.ci_low) + "% to " + pct(iv.ci_high) + "%";
      const summary =
        name + ": pass rate " + pct(iv.estimate) + "% (" + row.level + " CI " + range + ")";
      const bar = {
        x: labelW,
        y: y + 5,
        width: Math.max(0.5, x(iv.estimate) - labelW),
        height: rowH - 10,
        class: row.baseline ? "bar baseline" : "bar",
      };
      node.appendChild(svg("rect", bar, tip(summary)));
      if (!missing(iv.ci_low) && !missing(iv.ci_high)) {
        const a = x(iv.ci_low);
        const b = x(iv.ci_high);
        node.appendChild(line(a, b, cy, cy, "whisker"));
        node.appendChild(line(a, a, cy - 6, cy + 6, "whisker"));
        node.appendChild(line(b, b, cy - 6, cy + 6, "whisker"));
      }
      const text = pct(iv.estimate) + "% [" + pct(iv.ci_low) + ", " + pct(iv.ci_high) + "]";
      node.appendChild(label(labelW + plotW + 8, cy + 4, text));
    });
    const level = rows.length ? rows[0].level : "";
    return chartFrame("chart-rates", "Pass rate per target, " + level + " CI", null, node);
  }

  function niceTicks(lo, hi, count) {
    const span = hi - lo;
    if (!(span > 0)) return [lo];
    const raw = span / count;
    const mag = Math.pow(10, Math.floor(Math.log10(raw)));
    const step = [1, 2, 5, 10].map((m) => m * mag).find((s) => span / s <= count) || raw;
    const out = [];
    for (let t = Math.ceil(lo / step) * step; t <= hi + 1e-9; t += step) {
      out.push(Math.abs(t) < 1e-12 ? 0 : t);
    }
    return out;
  }

  function forest() {
    const f = data.forest;
    const rows = f.rows;
    const labelW = 230;
    const plotW = 320;
    const rowH = 26;
    const top = 10;
    const bottom = top + rows.length * rowH;
    let lo = 0;
    let hi = 0;
    for (const row of rows) {
      if (!missing(row.low)) lo = Math.min(lo, row.low);
      if (!missing(row.high)) hi = Math.max(hi, row.high);
    }
    const pad = (hi - lo) * 0.08 || 1;
    lo -= pad;
    hi += pad;
    const x = (v) => labelW + ((v - lo) / (hi - lo)) * plotW;
    const node = plot(labelW + plotW + 160, bottom + 34, "Change of each comparison with its CI");
    node.appendChild(line(labelW, labelW + plotW, bottom, bottom, "grid"));
    for (const t of niceTicks(lo, hi, 5)) {
      node.appendChild(line(x(t), x(t), bottom, bottom + 4, "grid"));
      node.appendChild(label(x(t), bottom + 16, signed(t, f.digits), "middle"));
    }
    node.appendChild(line(x(0), x(0), top - 4, bottom, "zero"));
    rows.forEach((row, r) => {
      const cy = top + r * rowH + rowH / 2;
      node.appendChild(label(labelW - 8, cy + 4, [tip(row.label), shorten(row.label, 34)], "end"));
      if (missing(row.estimate)) {
        node.appendChild(label(labelW + 4, cy + 4, "n/a"));
        return;
      }
      let kind = VERDICT_CLASS[row.verdict];
      if (!kind && row.excludes_zero) kind = row.estimate > 0 ? "better" : "worse";
      if (!kind) kind = "inconclusive";
      const cls = "mark " + kind;
      const text =
        signed(row.estimate, f.digits) + " [" + signed(row.low, f.digits) + ", " +
        signed(row.high, f.digits) + "]";
      if (!missing(row.low) && !missing(row.high)) {
        node.appendChild(line(x(row.low), x(row.high), cy, cy, cls + " ci"));
      }
      const verdict = row.verdict ? " (" + row.verdict + ")" : "";
      const square = { x: x(row.estimate) - 5, y: cy - 5, width: 10, height: 10, class: cls };
      node.appendChild(svg("rect", square, tip(row.label + ": " + text + " " + f.unit + verdict)));
      node.appendChild(label(labelW + plotW + 8, cy + 4, text));
    });
    return chartFrame(
      "chart-forest",
      "Change against the baseline (" + f.unit + "), " + f.level + " CI",
      "A whisker that crosses the dashed zero line could be chance.",
      node
    );
  }

  function deltaHistogram(comparison) {
    const deltas = comparison.matched.map((m) => m.delta);
    const bins = 21;
    let extent = 0;
    for (const d of deltas) extent = Math.max(extent, Math.abs(d));
    const counts = new Array(bins).fill(0);
    const step = extent > 0 ? (2 * extent) / (bins - 1) : 1;
    for (const d of deltas) {
      const b = extent > 0 ? Math.round((d + extent) / step) : (bins - 1) / 2;
      counts[Math.max(0, Math.min(bins - 1, b))] += 1;
    }
    const most = Math.max(1, ...counts);
    const plotW = 460;
    const plotH = 150;
    const left = 40;
    const top = 10;
    const base = top + plotH;
    const node = plot(left + plotW + 20, base + 36, "Distribution of per-case deltas");
    const bw = plotW / bins;
    counts.forEach((n, b) => {
      const centre = -extent + b * step;
      const bh = (n / most) * plotH;
      let cls = "bar tie";
      if (centre < -1e-9) cls = "bar worse";
      else if (centre > 1e-9) cls = "bar better";
      const what = n + " case" + (n === 1 ? "" : "s") + " with a delta near " + signed(centre, 2);
      const rect = { x: left + b * bw + 1, y: base - bh, width: bw - 2, height: bh, class: cls };
      node.appendChild(svg("rect", rect, tip(what)));
    });
    node.appendChild(line(left, left + plotW, base, base, "grid"));
    node.appendChild(label(left - 6, top + 10, String(most), "end"));
    node.appendChild(label(left - 6, base, "0", "end"));
    for (const b of [0, (bins - 1) / 2, bins - 1]) {
      const text = signed(-extent + b * step, 2);
      node.appendChild(label(left + b * bw + bw / 2, base + 16, text, "middle"));
    }
    const axis = "candidate − baseline, per case";
    node.appendChild(label(left + plotW / 2, base + 32, axis, "middle"));
    return chartFrame(
      "chart-deltas",
      "Distribution of per-case deltas (" + deltas.length.toLocaleString() + " cases)",
      "Red: the candidate scored lower on the case; green: higher.",
      node
    );
  }

  // -- the differences between two outputs -------------------------------------------

  function tokens(text) {
    return text.match(/\s+|[\p{L}\p{N}_]+|[^\s\p{L}\p{N}_]/gu) || [];
  }

  // Longest common subsequence of two token lists: [left marks, right marks], each a
  // list of [text, changed]; null when the lists are too long to compare quickly.
  function diff(a, b) {
    let pre = 0;
    while (pre < a.length && pre < b.length && a[pre] === b[pre]) pre++;
    let suf = 0;
    const room = Math.min(a.length, b.length) - pre;
    while (suf < room && a[a.length - 1 - suf] === b[b.length - 1 - suf]) suf++;
    const A = a.slice(pre, a.length - suf);
    const B = b.slice(pre, b.length - suf);
    const n = A.length;
    const m = B.length;
    if ((n + 1) * (m + 1) > DIFF_CELLS) return null;
    const w = m + 1;
    const lcs = new Uint32Array((n + 1) * w);
    for (let i = n - 1; i >= 0; i--) {
      for (let j = m - 1; j >= 0; j--) {
        const skip = Math.max(lcs[(i + 1) * w + j], lcs[i * w + j + 1]);
        lcs[i * w + j] = A[i] === B[j] ? lcs[(i + 1) * w + j + 1] + 1 : skip;
      }
    }
    const left = [];
    const right = [];
    const push = (list, text, changed) => {
      const last = list[list.length - 1];
      if (last && last[1] === changed) last[0] += text;
      else list.push([text, changed]);
    };
    const head = a.slice(0, pre).join("");
    if (head) {
      push(left, head, false);
      push(right, head, false);
    }
    let i = 0;
    let j = 0;
    while (i < n || j < m) {
      if (i < n && j < m && A[i] === B[j]) {
        push(left, A[i++], false);
        push(right, B[j++], false);
      } else if (j >= m || (i < n && lcs[(i + 1) * w + j] >= lcs[i * w + j + 1])) {
        push(left, A[i++], true);
      } else {
        push(right, B[j++], true);
      }
    }
    const tail = a.slice(a.length - suf).join("");
    if (tail) {
      push(left, tail, false);
      push(right, tail, false);
    }
    return [left, right];
  }

  function marked(parts, cls) {
    return parts.map((p) =>
      p[1] ? el("mark", { class: cls, text: p[0] }) : document.createTextNode(p[0])
    );
  }

  function outputPanes(left, right, labels) {
    const a = show(left);
    const b = show(right);
    let marks = null;
    let note = null;
    if (a && b && a !== b) {
      marks = diff(tokens(a), tokens(b)) || diff(a.split(/(?<=\n)/), b.split(/(?<=\n)/));
      if (!marks) note = "Too long to mark the differences.";
    } else if (a && a === b) {
      note = "The outputs are identical.";
    }
    const pane = (title, text, parts, cls) =>
      el("div", { class: "pane" }, [
        el("h4", { text: title }),
        text
          ? el("pre", { class: "text" }, parts ? marked(parts, cls) : text)
          : el("p", { class: "empty", text: "(no output recorded)" }),
      ]);
    return el("div", { class: "side-by-side" }, [
      pane(labels[0], a, marks && marks[0], "removed"),
      pane(labels[1], b, marks && marks[1], "added"),
      note ? el("p", { class: "note wide", text: note }) : null,
    ]);
  }

  // -- the case table ----------------------------------------------------------------

  const state = {
    sortKey: null,
    sortAsc: true,
    onlyRegressions: false,
    category: "",
    text: "",
    page: 0,
    expanded: new Set(),
  };
  let haystack = null;

  function comparisonRows(comparison) {
    const rows = comparison.rows;
    return comparison.matched.map((m, k) => ({ k: k, m: m, row: rows ? rows[k] : k }));
  }

  function categoryOf(item) {
    return cases.category ? cases.category[item.row] : null;
  }

  // What the text search looks in: test id, category, input, expected, outputs.
  function searchText(row) {
    if (!haystack) haystack = new Array(cases.test_ids.length);
    let text = haystack[row];
    if (text === undefined) {
      const parts = [cases.test_ids[row]];
      if (cases.category) parts.push(show(cases.category[row]));
      if (cases.input) parts.push(show(cases.input[row]));
      if (cases.expected) parts.push(show(cases.expected[row]));
      if (cases.outputs) for (const column of cases.outputs) parts.push(show(column[row]));
      text = parts.join("\n").toLowerCase();
      haystack[row] = text;
    }
    return text;
  }

  const OUTCOME_ORDER = { loss: 0, win: 1, tie: 2 };
  const OUTCOME_LABEL = { loss: "regression", win: "improvement", tie: "tie" };

  // Regressions first (largest drop first), then improvements, then ties.
  function defaultOrder(x, y) {
    const o = OUTCOME_ORDER[x.m.outcome] - OUTCOME_ORDER[y.m.outcome];
    if (o) return o;
    if (x.m.outcome === "loss") return x.m.delta - y.m.delta || x.k - y.k;
    if (x.m.outcome === "win") return y.m.delta - x.m.delta || x.k - y.k;
    return x.k - y.k;
  }

  const COLUMNS = [
    { key: "test_id", label: "Test ID", get: (it) => it.m.test_id },
    { key: "category", label: "Category", get: (it) => categoryOf(it) || "" },
    { key: "score1", label: "Baseline", get: (it) => it.m.score1, num: true },
    { key: "score2", label: "Candidate", get: (it) => it.m.score2, num: true },
    { key: "delta", label: "Delta", get: (it) => it.m.delta, num: true },
    { key: "outcome", label: "Result", get: (it) => OUTCOME_ORDER[it.m.outcome], num: true },
  ];

  function visibleColumns() {
    return COLUMNS.filter((c) => c.key !== "category" || cases.category);
  }

  function filtered(comparison) {
    let items = comparisonRows(comparison);
    if (state.onlyRegressions) items = items.filter((it) => it.m.outcome === "loss");
    if (state.category) items = items.filter((it) => categoryOf(it) === state.category);
    const needle = state.text.trim().toLowerCase();
    if (needle) items = items.filter((it) => searchText(it.row).includes(needle));
    if (state.sortKey === null) {
      items.sort(defaultOrder);
    } else {
      const column = COLUMNS.find((c) => c.key === state.sortKey);
      const sign = state.sortAsc ? 1 : -1;
      items.sort((x, y) => {
        const a = column.get(x);
        const b = column.get(y);
        const c = column.num ? a - b : String(a).localeCompare(String(b));
        return c * sign || x.k - y.k;
      });
    }
    return items;
  }

  function textPane(title, value) {
    return el("div", { class: "pane" }, [
      el("h4", { text: title }),
      el("pre", { class: "text", text: show(value) || "(none)" }),
    ]);
  }

  function caseDetail(comparison, item, span) {
    const sides = comparison.columns;
    const m = item.m;
    const parts = [];
    if (!data.has_texts) {
      const why = "This report holds no inputs or outputs: the results had none, " +
        "or were read without them.";
      parts.push(el("p", { class: "empty", text: why }));
    } else {
      if (cases.input) parts.push(textPane("Input", cases.input[item.row]));
      const expected = cases.expected ? cases.expected[item.row] : null;
      if (!missing(expected)) parts.push(textPane("Expected", expected));
      const outputs = cases.outputs || [];
      const output = (side) => (outputs[side] ? outputs[side][item.row] : null);
      const attempts = (n) => (n > 1 ? ", first of " + n + " attempts" : "");
      const title = (side, name, score, n) =>
        side + ": " + name + " (score " + fixed(score, 2) + attempts(n) + ")";
      parts.push(
        outputPanes(output(sides[0]), output(sides[1]), [
          title("Baseline", comparison.baseline, m.score1, m.attempts1),
          title("Candidate", comparison.candidate, m.score2, m.attempts2),
        ])
      );
    }
    const cell = el("td", { colspan: span }, el("div", { class: "detail" }, parts));
    return el("tr", { class: "case-detail" }, cell);
  }

  function caseCells(item, columns, open) {
    const m = item.m;
    const cells = [el("td", { class: "toggle", text: open ? "▾" : "▸" })];
    for (const column of columns) {
      const key = column.key;
      if (key === "test_id") cells.push(el("td", { class: "id", text: m.test_id }));
      else if (key === "category") cells.push(el("td", { text: categoryOf(item) || "" }));
      else if (key === "score1") cells.push(el("td", { class: "num", text: fixed(m.score1, 2) }));
      else if (key === "score2") cells.push(el("td", { class: "num", text: fixed(m.score2, 2) }));
      else if (key === "delta") {
        cells.push(el("td", { class: "num " + m.outcome, text: signed(m.delta, 2) }));
      } else cells.push(el("td", { class: m.outcome, text: OUTCOME_LABEL[m.outcome] }));
    }
    return cells;
  }

  function renderTable(section, comparison) {
    const tbody = section.querySelector("tbody");
    const items = filtered(comparison);
    const pages = Math.max(1, Math.ceil(items.length / PAGE_SIZE));
    state.page = Math.max(0, Math.min(state.page, pages - 1));
    const start = state.page * PAGE_SIZE;
    const page = items.slice(start, start + PAGE_SIZE);
    const columns = visibleColumns();
    clear(tbody);
    for (const item of page) {
      const open = state.expanded.has(item.k);
      const toggle = () => {
        if (state.expanded.has(item.k)) state.expanded.delete(item.k);
        else state.expanded.add(item.k);
        renderTable(section, comparison);
      };
      const row = el(
        "tr",
        {
          class: "case-row " + item.m.outcome + (open ? " open" : ""),
          tabindex: 0,
          "aria-expanded": open ? "true" : "false",
          "data-index": item.k,
          onclick: toggle,
          onkeydown: (event) => {
            if (event.key === "Enter" || event.key === " ") {
              event.preventDefault();
              toggle();
            }
          },
        },
        caseCells(item, columns, open)
      );
      tbody.appendChild(row);
      if (open) tbody.appendChild(caseDetail(comparison, item, columns.length + 1));
    }
    if (!page.length) {
      const text = "No case matches the filters.";
      const none = { colspan: columns.length + 1, class: "empty", text: text };
      tbody.appendChild(el("tr", {}, el("td", none)));
    }
    const total = comparison.matched.length;
    const n = (x) => x.toLocaleString();
    let info = "0 of " + n(total) + " cases";
    if (items.length) {
      info = "Showing " + n(start + 1) + "–" + n(start + page.length) + " of " + n(items.length);
      info += items.length < total ? " matching cases (" + n(total) + " in all)" : " cases";
    }
    section.querySelector("#page-info").textContent = info;
    section.querySelector("#page-prev").disabled = state.page === 0;
    section.querySelector("#page-next").disabled = state.page >= pages - 1;
    for (const th of section.querySelectorAll("th[data-key]")) {
      const key = th.getAttribute("data-key");
      let sort = "none";
      if (key === state.sortKey) sort = state.sortAsc ? "ascending" : "descending";
      th.setAttribute("aria-sort", sort);
    }
  }

  function caseTable(comparison) {
    const columns = visibleColumns();
    const categories = new Set();
    if (cases.category) {
      for (const item of comparisonRows(comparison)) {
        const c = categoryOf(item);
        if (!missing(c)) categories.add(c);
      }
    }
    const section = el("section", { class: "cases" });
    const rerender = () => {
      state.page = 0;
      renderTable(section, comparison);
    };
    const turn = (by) => () => {
      state.page += by;
      renderTable(section, comparison);
    };
    const heads = columns.map((column) =>
      el(
        "th",
        {
          "data-key": column.key,
          class: column.num && column.key !== "outcome" ? "num sortable" : "sortable",
          title: "Sort by " + column.label.toLowerCase(),
          onclick: () => {
            if (state.sortKey === column.key) state.sortAsc = !state.sortAsc;
            else {
              state.sortKey = column.key;
              state.sortAsc = true;
            }
            rerender();
          },
        },
        column.label
      )
    );
    const options = [el("option", { value: "", text: "All" })].concat(
      Array.from(categories)
        .sort()
        .map((c) => el("option", { value: c, text: c, selected: c === state.category }))
    );
    const filters = el("div", { class: "filters" }, [
      el("label", {}, [
        el("input", {
          type: "checkbox",
          id: "filter-regressions",
          checked: state.onlyRegressions,
          onchange: (event) => {
            state.onlyRegressions = event.target.checked;
            rerender();
          },
        }),
        " Regressions only",
      ]),
      categories.size
        ? el("label", {}, [
            "Category ",
            el("select", {
              id: "filter-category",
              onchange: (event) => {
                state.category = event.target.value;
                rerender();
              },
            }, options),
          ])
        : null,
      el("label", {}, [
        "Search ",
        el("input", {
          type: "search",
          id: "filter-text",
          placeholder: "test id, input or output",
          value: state.text,
          oninput: (event) => {
            state.text = event.target.value;
            rerender();
          },
        }),
      ]),
      el("button", {
        type: "button",
        id: "sort-reset",
        onclick: () => {
          state.sortKey = null;
          rerender();
        },
      }, "Regressions first"),
    ]);
    const hint = "Click a row to see the input, the expected answer and both outputs " +
      "side by side, with the differences marked.";
    append(section, [
      el("h2", { text: "Cases" }),
      filters,
      el("table", { id: "case-table" }, [
        el("thead", {}, el("tr", {}, [el("th", { class: "toggle" })].concat(heads))),
        el("tbody"),
      ]),
      el("div", { class: "pager" }, [
        el("button", { type: "button", id: "page-prev", onclick: turn(-1) }, "‹ Previous"),
        el("span", { id: "page-info" }),
        el("button", { type: "button", id: "page-next", onclick: turn(1) }, "Next ›"),
      ]),
      el("p", { class: "note", text: hint }),
    ]);
    renderTable(section, comparison);
    return section;
  }

  function textTable(headers, rows) {
    const cells = (row) =>
      row.map((cell, i) => el(i ? "td" : "th", { class: i ? "num" : "", text: cell }));
    return el("table", { class: "figures" }, [
      el("thead", {}, el("tr", {}, headers.map((h) => el("th", { text: h })))),
      el("tbody", {}, rows.map((row) => el("tr", {}, cells(row)))),
    ]);
  }

  // overview: charts of the whole result, shown beside this comparison's own (a
  // pairwise report, where the figures come first) or above the picker (a matrix)
  function comparisonSection(index, overview) {
    const c = data.comparisons[index];
    const badge = VERDICT_CLASS[c.verdict] || "inconclusive";
    const moved = c.categories.length
      ? [
          el("h3", { text: "Categories that moved (leads to investigate, not proof)" }),
          textTable(["Category", "Baseline", "Candidate", "Cases"], c.categories),
        ]
      : null;
    return el("div", { id: "comparison" }, [
      // a pairwise report's header already names both runs and gives the verdict
      overview ? null : el("h2", { text: c.baseline + " → " + c.candidate }),
      c.verdict && !overview
        ? el("p", { class: "verdict" }, [
            el("span", { class: "badge " + badge, text: c.verdict }),
            " " + c.reason,
          ])
        : null,
      c.problems.map((p) => el("p", { class: "warning", text: "Warning: " + p })),
      c.figures.length
        ? textTable(["", "Baseline", "Candidate", "Change", c.level + " CI"], c.figures)
        : null,
      c.notes.map((note) => el("p", { class: "note", text: note })),
      el("p", { class: "note", text: c.summary }),
      moved,
      el("div", { class: "charts" }, [deltaHistogram(c)].concat(overview || [])),
      caseTable(c),
    ]);
  }

  // -- the page ----------------------------------------------------------------------

  const app = document.getElementById("app");
  clear(app);
  const overview = [
    data.forest.rows.length ? forest() : null,
    data.rates.length ? rateBars() : null,
    data.heatmap.rows.length ? heatmap() : null,
  ];
  // One comparison: its verdict and figures first, every chart after them. Several:
  // the matrix's charts first, then the comparison picked.
  const pairwise = data.kind === "pairwise";
  if (!pairwise) app.appendChild(el("div", { class: "charts" }, overview));
  const holder = el("div");
  if (data.comparisons.length > 1) {
    const choose = (event) => {
      state.expanded = new Set();
      state.page = 0;
      state.category = "";
      clear(holder);
      holder.appendChild(comparisonSection(Number(event.target.value)));
    };
    const options = data.comparisons.map((c, i) =>
      el("option", { value: i, text: c.baseline + " → " + c.candidate })
    );
    app.appendChild(
      el("p", { class: "picker" }, [
        el("label", {}, [
          "Comparison ",
          el("select", { id: "comparison-select", onchange: choose }, options),
        ]),
      ])
    );
  }
  app.appendChild(holder);
  if (data.comparisons.length) holder.appendChild(comparisonSection(0, pairwise ? overview : null));
  else holder.appendChild(el("p", { class: "note", text: "One target: nothing to compare." }));
  document.documentElement.setAttribute("data-ready", "true");
})();
"""
