"use strict";
// dbt-oml lineage explorer. Its data is the document `dbt-oml lineage --json` prints
// (graph.nodes, graph.edges, graph.rows). Relations are laid out as boxes in layers, parents to
// the left; a selected column's upstream and downstream columns are highlighted, and the
// selection is scrolled to the middle of the canvas. Each box is as wide as its longest name
// (up to MAX_W; longer names end in an ellipsis, the full name in the tooltip) and says which
// catalog it is in and on which server (the OpenLineage namespace, when the document has it).
//
// The neighbourhood (1, 2, 3 hops or all) is what is laid out around the selected relation: it
// and the relations up to N dependency hops upstream and downstream of it (dbt's `N+model+N`).
// "all" is every relation in a project of up to FULL_LIMIT relations, and the selection's whole
// upstream and downstream in a larger one. Larger projects open on 2 hops (focus mode), smaller
// ones on all; `#column=model.col&hops=1` (or `#model=`) opens on a selection and a neighbourhood.
(function () {
  const FULL_LIMIT = 150;
  const MIN_W = 180, MAX_W = 420, NS_W = 300;
  const GAP_X = 110, GAP_Y = 22, HEAD = 27, WHERE = 16, REASON = 18, ROW = 18, PAD = 6, MARGIN = 16;
  const SEP = "\u0000";
  const ALL = Infinity;

  const doc = JSON.parse(document.getElementById("lineage-data").textContent);
  const nodes = new Map(doc.graph.nodes.map((n) => [n.id, n]));
  const large = nodes.size > FULL_LIMIT;
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

  // -- where a relation lives: its catalog and namespace (the document's, else the catalog
  // from the relation's name: database.schema.table) ------------------------------------------
  const catalogOf = (n) => {
    if (n.catalog !== undefined) return n.catalog;
    const parts = n.kind === "file" ? [] : n.relation.split(".");
    return parts.length >= 3 ? parts[0] : null;
  };
  const hasWhere = (n) => Boolean(catalogOf(n) || n.namespace);
  const top = (n) => HEAD + (hasWhere(n) ? WHERE : 0) + (n.opaque ? REASON : 0);
  const height = (n) => top(n) + n.columns.length * ROW + PAD;

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

  const defaultHops = large ? 2 : ALL;
  const state = { focus: null, column: null, hops: defaultHops, direct: false };

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

  // -- what is laid out: the selection's neighbourhood (see the top of this file) -------------
  function visible() {
    if (!state.focus || (!large && state.hops === ALL)) return new Set(nodes.keys());
    const out = new Set([state.focus]);
    for (const index of [parents, children]) {
      const seen = new Set([state.focus]);
      let frontier = [state.focus];
      for (let i = 0; i < state.hops && frontier.length; i++) {
        const next = [];
        for (const id of frontier) for (const far of index.get(id) || []) {
          if (!seen.has(far)) { seen.add(far); out.add(far); next.push(far); }
        }
        frontier = next;
      }
    }
    return out;
  }

  // -- widths: each box fits its longest text, measured in the fonts the page draws it in ------
  const measure = (() => {
    const probe = document.createElement("div");
    probe.className = "box";
    probe.style.visibility = "hidden";
    probe.innerHTML = '<h2><span class="name">x</span><span class="kind">x</span></h2>' +
      '<div class="where"><span class="catalog">x</span><span class="ns">x</span></div><div class="col">x</div>';
    document.getElementById("boxes").appendChild(probe);
    const fonts = {};
    for (const cls of ["name", "kind", "catalog", "ns", "col"]) {
      const s = getComputedStyle(probe.querySelector("." + cls));
      fonts[cls] = `${s.fontStyle} ${s.fontWeight} ${s.fontSize} ${s.fontFamily}`;
    }
    probe.remove();
    const ctx = document.createElement("canvas").getContext("2d");
    return (text, cls) => { ctx.font = fonts[cls]; return ctx.measureText(text).width; };
  })();
  const kindText = (n) => n.kind + (n.materialized ? ` (${n.materialized})` : "");
  // padding 8 + 8, borders 1 + 1, and 4 px for what canvas and layout round differently
  const EDGE = 22;
  const widths = new Map();
  function widthOf(n) {
    if (widths.has(n.id)) return widths.get(n.id);
    let w = measure(n.name, "name") + 6 + measure(kindText(n), "kind");
    for (const c of n.columns) w = Math.max(w, measure(c, "col"));
    const catalog = catalogOf(n);
    if (hasWhere(n)) {
      w = Math.max(w, (catalog ? measure(catalog, "catalog") + 6 : 0) +
        Math.min(NS_W, n.namespace ? measure(n.namespace, "ns") : 0));
    }
    const width = Math.ceil(Math.min(MAX_W, Math.max(MIN_W, w + EDGE)));
    widths.set(n.id, width);
    return width;
  }
  // a namespace too long for its box: its start and its end (the server, the file), "…" between
  function fitMiddle(text, room) {
    if (measure(text, "ns") <= room) return text;
    let lo = 0, hi = text.length;
    const cut = (k) => text.slice(0, Math.ceil(k / 3)) + "\u2026" + text.slice(text.length - Math.floor(2 * k / 3));
    while (lo < hi) { const mid = (lo + hi + 1) >> 1; if (measure(cut(mid), "ns") <= room) lo = mid; else hi = mid - 1; }
    return cut(lo);
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
    let x = MARGIN;
    for (const ids of layers) {
      if (!ids) continue;
      const weight = (id) => {
        const ps = (parents.get(id) || []).filter((p) => order.has(p));
        return ps.length ? ps.reduce((s, p) => s + order.get(p), 0) / ps.length : -1;
      };
      ids.sort((a, b) => weight(a) - weight(b) || nodes.get(a).name.localeCompare(nodes.get(b).name));
      let y = MARGIN, w = 0;
      ids.forEach((id, i) => {
        const n = nodes.get(id);
        order.set(id, i);
        pos.set(id, { x, y, w: widthOf(n) });
        w = Math.max(w, widthOf(n));
        y += height(n) + GAP_Y;
      });
      x += w + GAP_X;
    }
    return pos;
  }

  const el = (tag, cls, text) => {
    const e = document.createElement(tag);
    if (cls) e.className = cls;
    if (text !== undefined) e.textContent = text;
    return e;
  };

  function where(n, width) {
    const line = el("div", "where");
    const catalog = catalogOf(n);
    let room = width - EDGE;
    if (catalog) {
      line.appendChild(el("span", "catalog", catalog)).title = "catalog " + catalog;
      room -= measure(catalog, "catalog") + 6;
    }
    if (n.namespace) {
      const ns = line.appendChild(el("span", "ns", fitMiddle(n.namespace, room)));
      ns.title = "namespace (the server it lives on): " + n.namespace;
      ns.dataset.namespace = n.namespace;
    }
    return line;
  }

  function box(n, p, lineage) {
    const div = el("div", `box kind-${n.kind}${n.opaque ? " opaque" : ""}${n.id === state.focus ? " focus" : ""}` +
      (lineage && lineage.rows.has(n.id) ? " hl-rows" : ""));
    div.style.left = p.x + "px";
    div.style.top = p.y + "px";
    div.style.width = p.w + "px";
    div.dataset.node = n.id;
    const head = el("h2");
    head.title = `${n.name}\n${n.relation}\n${n.id}${n.path ? "\n" + n.path : ""}`;
    head.append(el("span", "name", n.name), el("span", "kind", kindText(n)));
    div.appendChild(head);
    if (hasWhere(n)) div.appendChild(where(n, p.w));
    if (n.opaque) div.appendChild(el("div", "reason", "opaque: " + n.opaque)).title = "opaque: " + n.opaque;
    const room = p.w - EDGE;
    for (const c of n.columns) {
      const row = el("div", "col", c);
      row.dataset.node = n.id;
      row.dataset.column = c;
      if (measure(c, "col") > room) row.title = c; // cut: the tooltip has the full name
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
    return { x: p.x + (right ? p.w : 0), y: p.y + top(nodes.get(id)) + i * ROW + ROW / 2 };
  }

  const escape = (s) => s.replace(/[&<>"]/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;" })[c]);

  function drawEdges(shown, pos, lineage) {
    const svg = document.getElementById("edges");
    let width = 0, height_ = 0, count = 0;
    for (const [id, p] of pos) {
      width = Math.max(width, p.x + p.w + MARGIN);
      height_ = Math.max(height_, p.y + height(nodes.get(id)) + MARGIN);
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
    svg.setAttribute("height", height_);
    svg.innerHTML = plain.join("") + marked.join("");
    return count;
  }

  function status(shown, edges, lineage) {
    const hops = state.hops === ALL ? "all" : `${state.hops} hop${state.hops === 1 ? "" : "s"}`;
    const mode = !state.focus || (!large && state.hops === ALL) ? "all" : `${shown.size} of`;
    let what = "";
    if (state.focus) {
      what = ` \u2014 ${label(state.focus, state.column || "*")} (neighbourhood: ${hops})`;
      if (lineage) {
        what += `: ${lineage.up.size} upstream, ${lineage.down.size} downstream`;
        const beyond = new Set([...lineage.up, ...lineage.down].map(nodeOf));
        for (const id of lineage.rows) beyond.add(id);
        for (const id of shown) beyond.delete(id);
        if (beyond.size) what += `; ${beyond.size} more relation(s) of its lineage beyond the neighbourhood`;
      }
    }
    document.getElementById("status").textContent = `${mode} ${nodes.size} relations, ${edges} column edges${what}`;
  }

  const canvas = document.getElementById("canvas");
  const boxes = document.getElementById("boxes");

  // the selected column (or relation) in the middle of the canvas; `always` false: only if it
  // is not wholly in view already (a click: the view does not jump under the pointer)
  function reveal(always) {
    const found = state.focus && boxes.querySelector(`.box[data-node="${CSS.escape(state.focus)}"]`);
    if (!found) return;
    const target = (state.column && found.querySelector(`.col[data-column="${CSS.escape(state.column)}"]`)) || found;
    const c = canvas.getBoundingClientRect(), r = target.getBoundingClientRect();
    const vw = canvas.clientWidth, vh = canvas.clientHeight;
    const inside = r.left >= c.left && r.top >= c.top && r.right <= c.left + vw && r.bottom <= c.top + vh;
    if (inside && !always) return;
    let dy = r.top - c.top - (vh - r.height) / 2;
    if (r.height > vh) dy = r.top - c.top - MARGIN; // a box taller than the canvas: its head at the top
    canvas.scrollTo({ left: canvas.scrollLeft + r.left - c.left - (vw - r.width) / 2, top: canvas.scrollTop + dy, behavior: "instant" });
  }

  function render(always) {
    const lineage = state.focus && state.column ? trace(state.focus, state.column) : null;
    const shown = visible();
    const pos = layout(shown);
    const fragment = document.createDocumentFragment();
    for (const [id, p] of pos) fragment.appendChild(box(nodes.get(id), p, lineage));
    boxes.replaceChildren(fragment);
    status(shown, drawEdges(shown, pos, lineage), lineage);
    reveal(always);
  }

  function writeHash() {
    const id = state.focus, column = state.column;
    const params = new URLSearchParams();
    if (id) params.set(column ? "column" : "node", column ? id + "." + column : id);
    if (state.hops !== defaultHops) params.set("hops", state.hops === ALL ? "all" : String(state.hops));
    history.replaceState(null, "", "#" + params.toString());
  }

  // always: centre the selection (a search, a link, the neighbourhood); else only if hidden
  function select(id, column, { always = true, fromHash = false } = {}) {
    state.focus = id;
    state.column = column;
    if (!fromHash) writeHash();
    render(always);
  }

  const hopsControl = document.getElementById("hops");
  function setHops(text) {
    const n = text === "all" ? ALL : Number(text);
    state.hops = [1, 2, 3, ALL].includes(n) ? n : defaultHops;
    hopsControl.value = state.hops === ALL ? "all" : String(state.hops);
  }

  function fromHash() {
    const params = new URLSearchParams(location.hash.slice(1));
    setHops(params.get("hops") || "");
    const text = params.get("column") || params.get("model") || params.get("node") ||
      (doc.model ? doc.model + (doc.column ? "." + doc.column : "") : "");
    const found = text ? resolve(text) : null;
    if (found) return select(found[0], found[1], { fromHash: true });
    if (large) { // something to look at: the best-connected model
      let best = null, degree = -1;
      for (const n of nodes.values()) {
        const d = (parents.get(n.id) || []).length + (children.get(n.id) || []).length;
        if (n.kind === "model" && d > degree) { best = n.id; degree = d; }
      }
      return select(best, null, { fromHash: true });
    }
    return select(null, null, { fromHash: true });
  }

  // -- controls -----------------------------------------------------------------------------
  boxes.addEventListener("click", (ev) => {
    const row = ev.target.closest(".col");
    if (row) return select(row.dataset.node, row.dataset.column, { always: false });
    const head = ev.target.closest("h2");
    if (head) select(head.parentNode.dataset.node, null, { always: false });
  });
  boxes.addEventListener("mouseover", (ev) => {
    const row = ev.target.closest(".col");
    if (!row || row.dataset.traced) return;
    row.dataset.traced = "1";
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
  document.getElementById("direct").addEventListener("change", (ev) => { state.direct = ev.target.checked; render(false); });
  hopsControl.addEventListener("change", (ev) => { setHops(ev.target.value); writeHash(); render(true); });
  document.getElementById("clear").addEventListener("click", () => select(state.focus, null, { always: false }));
  window.addEventListener("hashchange", fromHash);

  fromHash();
  document.documentElement.dataset.loadedMs = performance.now().toFixed(0);
})();
