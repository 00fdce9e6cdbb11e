"use strict";
// dbt-oml lineage explorer. Its data is the document `dbt-oml lineage --json` prints
// (graph.nodes, graph.edges, graph.rows). Relations are laid out as boxes in layers, parents to
// the left; a selected column's upstream and downstream columns are highlighted. Projects with
// more than FULL_LIMIT relations are shown in focus mode: only the focused relation, its
// neighbourhood and the selected column's lineage are laid out.
(function () {
  const FULL_LIMIT = 150;
  const BOX_W = 240, GAP_X = 110, GAP_Y = 22, HEAD = 27, REASON = 18, ROW = 18, PAD = 6, MARGIN = 16;
  const SEP = "\u0000";

  const doc = JSON.parse(document.getElementById("lineage-data").textContent);
  const nodes = new Map(doc.graph.nodes.map((n) => [n.id, n]));
  const key = (id, column) => id + SEP + column.toLowerCase();
  const nodeOf = (k) => k.slice(0, k.indexOf(SEP));

  // -- indexes: column edges both ways, rows edges, relation-level neighbours -----------------
  const up = new Map(), down = new Map(), rowsOf = new Map(), parents = new Map(), children = new Map();
  const push = (map, k, v) => { const found = map.get(k); if (found) found.push(v); else map.set(k, [v]); };
  const link = (a, b) => { if (a !== b) { push(children, a, b); push(parents, b, a); } };
  for (const e of doc.graph.edges) {
    push(up, key(e.to[0], e.to[1]), e);
    push(down, key(e.from[0], e.from[1]), e);
    link(e.from[0], e.to[0]);
  }
  for (const r of doc.graph.rows) { push(rowsOf, key(r.from[0], r.from[1]), r); link(r.from[0], r.to); }
  for (const n of nodes.values()) for (const p of n.depends_on || []) if (nodes.has(p)) link(p, n.id);
  for (const m of [parents, children]) for (const [k, v] of m) m.set(k, [...new Set(v)]);
  const columnIndex = new Map();
  for (const n of nodes.values()) n.columns.forEach((c, i) => columnIndex.set(key(n.id, c), i));

  const describe = (ts) => ts.map((t) => `${t.type} ${t.subtype}${t.masking ? " masked" : ""}` +
    (t.description ? ` (${t.description})` : "")).join(", ");
  const isDirect = (e) => e.transformations.some((t) => t.type === "DIRECT");
  const label = (id, column) => `${nodes.has(id) ? nodes.get(id).name : id}.${column}`;

  // -- names: unique_id, name or relation; models win over sources of the same name ----------
  const byName = new Map();
  const rank = { model: 0, snapshot: 1, seed: 2, source: 3 };
  const ordered = [...nodes.values()].sort((a, b) => (rank[a.kind] ?? 9) - (rank[b.kind] ?? 9));
  for (const n of ordered) for (const name of [n.id, n.name, n.relation]) {
    if (!byName.has(name.toLowerCase())) byName.set(name.toLowerCase(), n.id);
  }
  const columnOf = (id, c) => nodes.get(id).columns.find((x) => x.toLowerCase() === c.toLowerCase()) || null;
  function resolve(text) { // "model", "model.column" or "unique_id.column" -> [id, column|null]
    const t = text.trim();
    if (byName.has(t.toLowerCase())) return [byName.get(t.toLowerCase()), null];
    const dot = t.lastIndexOf(".");
    const id = dot > 0 ? byName.get(t.slice(0, dot).toLowerCase()) : undefined;
    const column = id ? columnOf(id, t.slice(dot + 1)) : null;
    return column ? [id, column] : null;
  }

  const state = { focus: null, column: null, hops: 2, direct: false };

  // -- a column's lineage: every column upstream and downstream, and the models whose rows it shapes
  function trace(id, column) {
    const found = { up: new Set(), down: new Set(), edges: new Map(), rows: new Set() };
    const walk = (index, far, mark, rows) => {
      const stack = [key(id, column)], seen = new Set(stack);
      while (stack.length) {
        const k = stack.pop();
        if (rows && !state.direct) for (const r of rowsOf.get(k) || []) found.rows.add(r.to);
        for (const e of index.get(k) || []) {
          if (state.direct && !isDirect(e)) continue;
          found.edges.set(e, mark);
          const next = far(e);
          if (!seen.has(next)) { seen.add(next); found[mark].add(next); stack.push(next); }
        }
      }
    };
    walk(up, (e) => key(e.from[0], e.from[1]), "up", false);
    walk(down, (e) => key(e.to[0], e.to[1]), "down", true);
    return found;
  }

  // -- what is laid out: everything, or the focus's neighbourhood and the traced lineage ------
  function visible(lineage) {
    if (nodes.size <= FULL_LIMIT) return new Set(nodes.keys());
    const out = new Set(state.focus ? [state.focus] : []);
    for (const index of [parents, children]) {
      let frontier = [...out];
      for (let i = 0; i < state.hops && frontier.length; i++) {
        frontier = frontier.flatMap((id) => index.get(id) || []).filter((id) => !out.has(id) && out.add(id));
      }
    }
    if (lineage) {
      for (const k of [...lineage.up, ...lineage.down]) out.add(nodeOf(k));
      for (const id of lineage.rows) out.add(id);
    }
    return out;
  }

  function layout(shown) {
    const depth = new Map();
    const depthOf = (id) => {
      if (depth.has(id)) return depth.get(id);
      depth.set(id, 0); // a cycle stops here
      let d = 0;
      for (const p of parents.get(id) || []) if (shown.has(p)) d = Math.max(d, depthOf(p) + 1);
      depth.set(id, d);
      return d;
    };
    const layers = [];
    for (const id of [...shown].sort()) (layers[depthOf(id)] ||= []).push(id);
    const order = new Map(), pos = new Map();
    layers.forEach((ids, layer) => {
      const weight = (id) => {
        const ps = (parents.get(id) || []).filter((p) => order.has(p));
        return ps.length ? ps.reduce((s, p) => s + order.get(p), 0) / ps.length : -1;
      };
      ids.sort((a, b) => weight(a) - weight(b) || nodes.get(a).name.localeCompare(nodes.get(b).name));
      let y = MARGIN;
      ids.forEach((id, i) => {
        const n = nodes.get(id);
        order.set(id, i);
        pos.set(id, { x: MARGIN + layer * (BOX_W + GAP_X), y });
        y += HEAD + (n.opaque ? REASON : 0) + n.columns.length * ROW + PAD + GAP_Y;
      });
    });
    return pos;
  }

  const el = (tag, cls) => { const e = document.createElement(tag); if (cls) e.className = cls; return e; };

  function box(n, p, lineage) {
    const div = el("div", `box kind-${n.kind}${n.opaque ? " opaque" : ""}${lineage && lineage.rows.has(n.id) ? " hl-rows" : ""}`);
    div.style.left = p.x + "px";
    div.style.top = p.y + "px";
    div.dataset.node = n.id;
    const head = el("h2");
    head.textContent = n.name;
    head.title = `${n.relation}\n${n.id}${n.path ? "\n" + n.path : ""}`;
    const kind = el("span", "kind");
    kind.textContent = n.kind + (n.materialized ? ` (${n.materialized})` : "");
    head.appendChild(kind);
    div.appendChild(head);
    if (n.opaque) {
      const reason = el("div", "reason");
      reason.textContent = reason.title = "opaque: " + n.opaque;
      div.appendChild(reason);
    }
    for (const c of n.columns) {
      const row = el("div", "col");
      row.textContent = c;
      row.dataset.node = n.id;
      row.dataset.column = c;
      if (lineage) {
        const k = key(n.id, c);
        if (n.id === state.focus && c.toLowerCase() === state.column.toLowerCase()) row.classList.add("hl-focus");
        else if (lineage.up.has(k)) row.classList.add("hl-up");
        else if (lineage.down.has(k)) row.classList.add("hl-down");
      }
      div.appendChild(row);
    }
    return div;
  }

  function anchor(pos, id, column, right) {
    const p = pos.get(id), i = columnIndex.get(key(id, column));
    if (!p || i === undefined) return null;
    return { x: p.x + (right ? BOX_W : 0), y: p.y + HEAD + (nodes.get(id).opaque ? REASON : 0) + i * ROW + ROW / 2 };
  }

  const escape = (s) => s.replace(/[&<>"]/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;" })[c]);

  function drawEdges(shown, pos, lineage) {
    const svg = document.getElementById("edges");
    let width = 0, height = 0, count = 0;
    for (const [id, p] of pos) {
      width = Math.max(width, p.x + BOX_W + MARGIN);
      height = Math.max(height, p.y + HEAD + REASON + nodes.get(id).columns.length * ROW + MARGIN);
    }
    const plain = [], marked = [];
    for (const e of doc.graph.edges) {
      if (!shown.has(e.from[0]) || !shown.has(e.to[0])) continue;
      const a = anchor(pos, e.from[0], e.from[1], true), b = anchor(pos, e.to[0], e.to[1], false);
      if (!a || !b) continue;
      const mark = lineage ? lineage.edges.get(e) : undefined;
      const cls = [mark ? "hl-" + mark : lineage ? "dim" : "", isDirect(e) ? "" : "indirect"].join(" ").trim();
      const bend = Math.max(40, Math.abs(b.x - a.x) / 2);
      const title = `${label(...e.from)} \u2192 ${label(...e.to)}: ${describe(e.transformations)}`;
      (mark ? marked : plain).push(`<path class="${cls}" d="M${a.x},${a.y} C${a.x + bend},${a.y} ${b.x - bend},${b.y} ${b.x},${b.y}"><title>${escape(title)}</title></path>`);
      count++;
    }
    svg.setAttribute("width", width);
    svg.setAttribute("height", height);
    svg.innerHTML = plain.join("") + marked.join("");
    return count;
  }

  function render() {
    const lineage = state.focus && state.column ? trace(state.focus, state.column) : null;
    const shown = visible(lineage);
    const pos = layout(shown);
    const boxes = document.getElementById("boxes");
    const fragment = document.createDocumentFragment();
    for (const [id, p] of pos) fragment.appendChild(box(nodes.get(id), p, lineage));
    boxes.replaceChildren(fragment);
    const edges = drawEdges(shown, pos, lineage);
    const mode = nodes.size <= FULL_LIMIT ? "all" : `focus mode: ${shown.size} of`;
    const what = state.focus ? ` \u2014 ${label(state.focus, state.column || "*")}` +
      (lineage ? `: ${lineage.up.size} upstream, ${lineage.down.size} downstream` : "") : "";
    document.getElementById("status").textContent = `${mode} ${nodes.size} relations, ${edges} column edges${what}`;
    const focused = state.focus && nodes.size > FULL_LIMIT &&
      boxes.querySelector(`[data-node="${CSS.escape(state.focus)}"]`);
    if (focused) focused.scrollIntoView({ block: "center", inline: "center" });
  }

  function select(id, column, fromHash) {
    state.focus = id;
    state.column = column;
    if (!fromHash) {
      const hash = id ? (column ? "column=" : "node=") + encodeURIComponent(column ? id + "." + column : id) : "";
      history.replaceState(null, "", "#" + hash);
    }
    render();
  }

  function fromHash() {
    const params = new URLSearchParams(location.hash.slice(1));
    const text = params.get("column") || params.get("node") || (doc.model ? doc.model + (doc.column ? "." + doc.column : "") : "");
    const found = text ? resolve(text) : null;
    if (found) return select(found[0], found[1], true);
    if (nodes.size > FULL_LIMIT) { // something to look at: the best-connected model
      let best = null, degree = -1;
      for (const n of nodes.values()) {
        const d = (parents.get(n.id) || []).length + (children.get(n.id) || []).length;
        if (n.kind === "model" && d > degree) { best = n.id; degree = d; }
      }
      return select(best, null, true);
    }
    return select(null, null, true);
  }

  // -- controls -----------------------------------------------------------------------------
  const boxes = document.getElementById("boxes");
  boxes.addEventListener("click", (ev) => {
    const row = ev.target.closest(".col");
    if (row) return select(row.dataset.node, row.dataset.column);
    const head = ev.target.closest("h2");
    if (head) select(head.parentNode.dataset.node, null);
  });
  boxes.addEventListener("mouseover", (ev) => {
    const row = ev.target.closest(".col");
    if (!row || row.title) return;
    const k = key(row.dataset.node, row.dataset.column);
    const inputs = (up.get(k) || []).map((e) => `\u2190 ${label(...e.from)}  ${describe(e.transformations)}`);
    row.title = [label(row.dataset.node, row.dataset.column), ...(inputs.length ? inputs : ["(no inputs)"]),
      `${(down.get(k) || []).length} reader(s)`].join("\n");
  });
  const search = document.getElementById("search");
  search.addEventListener("focus", () => {
    const list = document.getElementById("names");
    if (list.children.length) return;
    for (const n of ordered) { const o = el("option"); o.value = n.name; list.appendChild(o); }
  }, { once: true });
  search.addEventListener("keydown", (ev) => {
    if (ev.key !== "Enter") return;
    const found = resolve(search.value);
    search.setCustomValidity(found ? "" : "no such model or column");
    search.reportValidity();
    if (found) select(found[0], found[1]);
  });
  document.getElementById("direct").addEventListener("change", (ev) => { state.direct = ev.target.checked; render(); });
  document.getElementById("hops").addEventListener("change", (ev) => { state.hops = Number(ev.target.value); render(); });
  document.getElementById("clear").addEventListener("click", () => select(state.focus, null));
  window.addEventListener("hashchange", fromHash);

  fromHash();
  document.documentElement.dataset.loadedMs = performance.now().toFixed(0);
})();
