// The HTML report's script: it only enhances the page. The figures and every chart are
// in the page already, as HTML and SVG written by evaldelta; this adds the case table
// (filter, sort, pages, each case's texts with the differences between the two
// outputs marked) and, with several comparisons, the picker that shows one at a time.
(function () {
  "use strict";

  // Every piece of data reaches the page through textContent, or setAttribute on
  // attributes that cannot run code: nothing from the data is ever parsed as HTML.
  const PAGE_SIZE = 50;
  const DIFF_CELLS = 4000000;

  const data = JSON.parse(document.getElementById("evaldelta-data").textContent);
  const cases = data.cases;
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

  function clear(node) {
    while (node.firstChild) node.removeChild(node.firstChild);
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
    // An input's handler: its value (or `checked`) into state[key], then draw again.
    const setFrom = (key, prop = "value") => (event) => {
      state[key] = event.target[prop];
      rerender();
    };
    const filters = el("div", { class: "filters" }, [
      el("label", {}, [
        el("input", {
          type: "checkbox",
          id: "filter-regressions",
          checked: state.onlyRegressions,
          onchange: setFrom("onlyRegressions", "checked"),
        }),
        " Regressions only",
      ]),
      categories.size
        ? el("label", {}, [
            "Category ",
            el("select", {
              id: "filter-category",
              onchange: setFrom("category"),
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
          oninput: setFrom("text"),
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

  // -- the page ----------------------------------------------------------------------

  // One static section per comparison; with several, one is shown at a time, and only
  // the one shown holds the case table (so its elements' ids stay unique).
  const sections = Array.from(document.querySelectorAll("section.comparison"));

  function choose(index) {
    sections.forEach((section, i) => {
      const slot = section.querySelector(".case-slot");
      clear(slot);
      section.hidden = i !== index;
      section.id = i === index ? "comparison" : "comparison-" + i;
      if (i === index) slot.appendChild(caseTable(data.comparisons[i]));
    });
  }

  if (sections.length > 1) {
    const options = data.comparisons.map((c, i) =>
      el("option", { value: i, text: c.baseline + " → " + c.candidate })
    );
    const onchange = (event) => {
      state.expanded = new Set();
      state.page = 0;
      state.category = "";
      choose(Number(event.target.value));
    };
    const picker = el("p", { class: "picker" }, [
      el("label", {}, [
        "Comparison ",
        el("select", { id: "comparison-select", onchange: onchange }, options),
      ]),
    ]);
    sections[0].parentNode.insertBefore(picker, sections[0]);
  }
  if (sections.length) choose(0);
  document.documentElement.setAttribute("data-ready", "true");
})();
