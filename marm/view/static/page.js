/* marm view: renders the store snapshot embedded in this page (#marm-data).
 *
 * Rules this file keeps:
 * - Every stored value reaches the document through text nodes (el() and text());
 *   nothing is ever assigned to innerHTML, so a memory holding markup shows it.
 * - No network: a static page makes no request at all; a served page (data.serve)
 *   talks only to its own origin, with the token from its URL, and only to POST an
 *   action (an op of the registry) or GET fresh data.
 * - Bounded work per keystroke: the list renders at most `shown` rows.
 */
(function () {
  "use strict";

  var D = JSON.parse(document.getElementById("marm-data").textContent);
  var TOKEN = new URLSearchParams(location.search).get("token") || "";
  var STATUSES = ["active", "doubted", "superseded", "retracted"];
  var PAGE = 200;
  var state = {
    q: "", exact: false, kind: "", session: "", project: "", from: "", to: "",
    statuses: { active: true, doubted: true, superseded: false, retracted: false },
    shown: PAGE, sel: null, entity: null, symbol: null, tab: "memories"
  };
  var byId = {};
  var lower = {};

  // -- DOM helpers: text only ---------------------------------------------------------

  function el(tag, attrs) {
    var node = document.createElement(tag);
    if (attrs) {
      for (var k in attrs) {
        if (!Object.prototype.hasOwnProperty.call(attrs, k) || attrs[k] == null) continue;
        if (k === "class") node.className = attrs[k];
        else if (k === "on") { for (var ev in attrs.on) node.addEventListener(ev, attrs.on[ev]); }
        else node.setAttribute(k, String(attrs[k]));
      }
    }
    for (var i = 2; i < arguments.length; i++) add(node, arguments[i]);
    return node;
  }
  function add(node) {  // add(node, child, child, ...): nodes, arrays of them, or text
    for (var i = 1; i < arguments.length; i++) {
      var child = arguments[i];
      if (child == null || child === false) continue;
      if (Array.isArray(child)) { for (var j = 0; j < child.length; j++) add(node, child[j]); continue; }
      node.appendChild(typeof child === "object" ? child : document.createTextNode(String(child)));
    }
  }
  function clear(node) { while (node.firstChild) node.removeChild(node.firstChild); return node; }
  function $(id) { return document.getElementById(id); }
  function short(p) { if (p == null) return "(global)"; var parts = String(p).split(/[\\/]/); return parts[parts.length - 1] || p; }
  function day(t) { return t ? String(t).slice(0, 10) : ""; }
  function when(t) { return t ? String(t).slice(0, 19).replace("T", " ") : ""; }
  function oneLine(s, n) { s = String(s).replace(/\s+/g, " ").trim(); return s.length > n ? s.slice(0, n - 1) + "\u2026" : s; }
  function badge(text, cls) { return el("span", { class: "badge " + (cls || "") }, text); }
  function notice(text, isError) { var n = $("notice"); n.className = isError ? "error" : ""; n.textContent = text || ""; }

  // -- data ---------------------------------------------------------------------------

  function index() {
    byId = {}; lower = {};
    D.memories.concat(D.review.doubted_memories).forEach(function (m) {
      byId[m.id] = m; lower[m.id] = m.content.toLowerCase();
    });
  }

  function matcher() {
    var raw = state.q;
    var quoted = /^\s*"([\s\S]+)"\s*$/.exec(raw);
    if (quoted || (state.exact && raw)) {
      var text = quoted ? quoted[1] : raw;
      return function (m) { return m.content.indexOf(text) !== -1; };
    }
    var words = raw.toLowerCase().split(/\s+/).filter(Boolean);
    if (!words.length) return null;
    return function (m) {
      var s = lower[m.id];
      for (var i = 0; i < words.length; i++) if (s.indexOf(words[i]) === -1) return false;
      return true;
    };
  }

  function filtered() {
    var match = matcher(), out = [];
    var st = state.statuses, kind = state.kind, session = state.session, project = state.project;
    var from = state.from, to = state.to;
    for (var i = 0; i < D.memories.length; i++) {
      var m = D.memories[i];
      if (!st[m.status]) continue;
      if (kind && m.kind !== kind) continue;
      if (session && m.session !== session) continue;
      if (project && (project === "~global" ? m.project != null : m.project !== project)) continue;
      if (from && day(m.recorded_at) < from) continue;
      if (to && day(m.recorded_at) > to) continue;
      if (match && !match(m)) continue;
      out.push(m);
    }
    return out;
  }

  // -- memories -----------------------------------------------------------------------

  function fillSelect(id, values, label) {
    var s = $(id), keep = s.value;
    clear(s); add(s, el("option", { value: "" }, label));
    values.forEach(function (v) { add(s, el("option", { value: v[0] }, v[1])); });
    s.value = keep;
  }

  function setupFilters() {
    var kinds = {}, sessions = {}, projects = {}, counts = {};
    D.memories.forEach(function (m) {
      kinds[m.kind] = 1; if (m.session != null) sessions[m.session] = 1;
      projects[m.project == null ? "~global" : m.project] = 1;
      counts[m.status] = (counts[m.status] || 0) + 1;
    });
    fillSelect("f-kind", Object.keys(kinds).sort().map(function (k) { return [k, k]; }), "every kind");
    fillSelect("f-session", Object.keys(sessions).sort().map(function (k) { return [k, k]; }), "every session");
    fillSelect("f-project", Object.keys(projects).sort().map(function (k) {
      return [k, k === "~global" ? "(global)" : short(k)];
    }), "every project");
    var box = clear($("f-status"));
    STATUSES.forEach(function (s) {
      var input = el("input", { type: "checkbox", "data-status": s, id: "st-" + s });
      input.checked = !!state.statuses[s];
      input.addEventListener("change", function () { state.statuses[s] = input.checked; state.shown = PAGE; renderList(); });
      add(box, el("label", null, input, " " + s + " (" + (counts[s] || 0) + ")"));
    });
  }

  function renderList() {
    var rows = filtered();
    var list = clear($("list"));
    var n = Math.min(rows.length, state.shown);
    for (var i = 0; i < n; i++) list.appendChild(item(rows[i]));
    if (rows.length > n) {
      add(list, el("li", { class: "more", on: { click: function () { state.shown += PAGE; renderList(); } } },
        "show " + Math.min(PAGE, rows.length - n) + " more (" + (rows.length - n) + " not shown)"));
    }
    var text = rows.length + " of " + D.memories.length + " memories match";
    if (D.left_out) text += "; this page carries the " + D.memories.length + " most recent of " + D.total +
      " in scope (" + D.left_out + " older ones left out: marm view --limit N)";
    $("count").textContent = text;
    if (state.sel != null) renderDetail(byId[state.sel]);
  }

  function item(m) {
    var li = el("li", { "data-id": m.id, class: state.sel === m.id ? "sel" : "" },
      el("div", { class: "meta" }, "#" + m.id + " ", badge(m.kind),
        m.status !== "active" ? badge(m.status, m.status) : null,
        " " + day(m.recorded_at) + " \u00b7 " + short(m.project) + (m.session ? " \u00b7 " + m.session : "")),
      el("div", { class: "content" }, m.content));
    li.addEventListener("click", function () { select(m.id); });
    return li;
  }

  function select(id) {
    state.sel = id;
    var items = $("list").querySelectorAll("li[data-id]");
    for (var i = 0; i < items.length; i++) items[i].className = Number(items[i].getAttribute("data-id")) === id ? "sel" : "";
    renderDetail(byId[id]);
  }

  function kv(rows) {
    return el("table", null, rows.filter(function (r) { return r[1] != null && r[1] !== ""; }).map(function (r) {
      return el("tr", null, el("th", null, r[0]), el("td", null, r[1]));
    }));
  }

  function memoryLink(id) {
    return el("span", { class: "sym", on: { click: function () { show("memories"); select(id); } } }, "#" + id);
  }

  function renderDetail(m) {
    var box = clear($("detail"));
    if (!m) { if (state.sel != null) add(box, el("p", { class: "muted" }, "memory #" + state.sel + " is not on this page")); return; }
    add(box, el("h2", null, "#" + m.id + " ", badge(m.kind), badge(m.status, m.status)));
    add(box, el("div", { class: "content", id: "detail-content" }, m.content));
    add(box, el("h3", null, "Provenance and validity"));
    add(box, kv([
      ["status", m.status + (m.reason ? " (" + m.reason + ")" : "")],
      ["superseded by", m.superseded_by != null ? memoryLink(m.superseded_by) : null],
      ["project", m.project == null ? "(global)" : m.project],
      ["session", m.session], ["agent", m.platform], ["source", m.source],
      ["recorded", when(m.recorded_at)],
      ["valid", (m.valid_from ? when(m.valid_from) : "from recording") + " \u2192 " + (m.valid_to ? when(m.valid_to) : "now")]
    ]));
    if (D.serve) add(box, memoryActions(m));
    add(box, el("h3", null, "History (" + m.history.length + ")"));
    add(box, el("table", { id: "history" },
      el("tr", null, el("th", null, "when"), el("th", null, "what"), el("th", null, "through"), el("th", null, "why")),
      m.history.map(function (e) {
        return el("tr", null, el("td", { class: "mono" }, when(e.at)), el("td", null, e.action),
          el("td", null, e.source + (e.platform ? "/" + e.platform : "")),
          el("td", null, e.reason || "", e.detail ? el("div", { class: "meta mono" }, JSON.stringify(e.detail)) : null));
      })));
  }

  function memoryActions(m) {
    var reason = el("input", { type: "text", placeholder: "reason", id: "act-reason" });
    var by = el("input", { type: "number", placeholder: "newer id", id: "act-by" });
    function r() { return reason.value.trim() || null; }
    var bar = el("div", { class: "actions" });
    function button(label, fn, cls) { return el("button", { type: "button", "data-action": label, class: cls || "", on: { click: fn } }, label); }
    if (m.status === "active") add(bar, button("doubt", function () { act("doubt", { id: m.id, reason: r() }); }));
    if (m.status !== "retracted") add(bar, button("retract", function () { act("retract", { id: m.id, reason: r() }); }));
    if (m.status !== "active") add(bar, button("restore", function () { act("restore", { id: m.id, reason: r() }); }));
    if (m.status === "active" || m.status === "doubted") {
      add(bar, by, button("supersede", function () {
        var newer = parseInt(by.value, 10);
        if (!newer) { notice("give the id of the newer memory that replaces #" + m.id, true); return; }
        act("supersede", { old: m.id, by: newer, reason: r() });
      }));
    }
    var forget = button("forget\u2026", function () {
      clear(confirmBox);
      add(confirmBox, "Erase the text of #" + m.id + " for good? ",
        button("yes, forget", function () { act("forget", { id: m.id, reason: r() }); }, "danger"),
        button("no", function () { clear(confirmBox); }));
    }, "danger");
    var confirmBox = el("span", { id: "confirm" });
    add(bar, reason, forget, confirmBox);
    return bar;
  }

  // -- review -------------------------------------------------------------------------

  function renderReview() {
    var box = clear($("view-review")), R = D.review;
    add(box, el("h2", null, "Review queue (" + R.hygiene.length + ")"));
    if (!R.hygiene.length) add(box, el("p", { class: "muted" }, "nothing waits: the drain found no duplicate, reversal or stale memory"));
    else add(box, el("table", { id: "review-hygiene" },
      el("tr", null, el("th", null, "item"), el("th", null, "kind"), el("th", null, "found"), el("th", null, "memory"), el("th", null, "other"), D.serve ? el("th", null, "") : null),
      R.hygiene.map(function (i) {
        var files = (i.detail.files || []).slice(0, 5).map(function (f) { return el("div", { class: "mono" }, f.path + ": " + f.change); });
        var verb = { duplicate: "merge", contradiction: "supersede", stale: "doubt" }[i.kind] || "accept";
        return el("tr", { "data-item": i.id }, el("td", { class: "num" }, i.id), el("td", null, i.kind),
          el("td", null, "#" + i.old_id + " " + i.what, files),
          el("td", null, i.old ? [memoryLink(i.old.id), " ", oneLine(i.old.content, 110)] : ""),
          el("td", null, i.new ? [memoryLink(i.new.id), " ", oneLine(i.new.content, 110)] : ""),
          D.serve ? el("td", { class: "actions" },
            el("button", { type: "button", "data-verdict": "accept", on: { click: function () { act("review", { action: "accept", item: i.id }); } } }, verb),
            el("button", { type: "button", "data-verdict": "dismiss", on: { click: function () { act("review", { action: "dismiss", item: i.id }); } } }, "keep both")) : null);
      })));
    add(box, el("h2", null, "Doubted memories (" + R.doubted.length + ")"));
    if (!R.doubted.length) add(box, el("p", { class: "muted" }, "nothing doubted"));
    add(box, el("ol", { id: "review-doubted", class: "plain" }, R.doubted.map(function (id) {
      var m = byId[id];
      return el("li", null, memoryLink(id), " ", m ? oneLine(m.content, 140) : "", m && m.reason ? el("span", { class: "muted" }, " \u2014 " + m.reason) : null);
    })));
    add(box, el("h2", null, "Likely duplicate concepts (" + R.duplicates.length + ")"));
    if (!R.duplicates.length) add(box, el("p", { class: "muted" }, "none proposed"));
    else add(box, el("table", { id: "review-duplicates" },
      el("tr", null, el("th", null, "keep"), el("th", null, "duplicate"), el("th", null, "why"), el("th", null, "memories"), D.serve ? el("th", null, "") : null),
      R.duplicates.map(function (p) {
        return el("tr", null, el("td", null, p.a_name), el("td", null, p.b_name), el("td", null, p.reason),
          el("td", { class: "num" }, p.memories),
          D.serve ? el("td", { class: "actions" },
            el("button", { type: "button", on: { click: function () { act("concepts merge", { a: p.a, b: p.b }); } } }, "merge " + oneLine(p.b_name, 20) + " into " + oneLine(p.a_name, 20)),
            el("button", { type: "button", on: { click: function () { act("concepts dismiss", { a: p.a, b: p.b }); } } }, "not the same")) : null);
      })));
    add(box, el("h2", null, "Parked background tasks (" + R.parked.length + ")"));
    if (!R.parked.length) add(box, el("p", { class: "muted" }, "none parked"));
    else add(box, el("table", null,
      el("tr", null, el("th", null, "kind"), el("th", null, "target"), el("th", null, "attempts"), el("th", null, "last error")),
      R.parked.map(function (t) {
        return el("tr", null, el("td", null, t.kind), el("td", { class: "mono" }, t.target), el("td", { class: "num" }, t.attempts), el("td", { class: "mono" }, t.error || ""));
      })), el("p", { class: "muted" }, "fix the cause, then run: marm drain --retry-parked"));
  }

  // -- concept graph (a small force-directed layout, SVG) --------------------------------

  var SVG = "http://www.w3.org/2000/svg";
  var TYPE_COLORS = ["#2f5bd3", "#d35f2f", "#2e7d32", "#8e44ad", "#c0392b", "#16a085", "#b8860b", "#5d6d7e", "#d81b60", "#00838f"];
  var PRED_COLORS = { fixes: "#2e7d32", uses: "#2f5bd3", causes: "#c0392b", replaces: "#8e44ad",
    depends_on: "#d35f2f", implements: "#16a085", extends: "#b8860b", related_to: "#9aa3b2" };
  var graph = null;

  function svg(tag, attrs) {
    var node = document.createElementNS(SVG, tag);
    for (var k in attrs) node.setAttribute(k, String(attrs[k]));
    for (var i = 2; i < arguments.length; i++) add(node, arguments[i]);
    return node;
  }

  function layout(nodes, edges, w, h) {
    var n = nodes.length, i, j;
    nodes.forEach(function (d, k) {
      var a = k * 2.399963, r = 12 * Math.sqrt(k + 1);  // a sunflower spiral: no overlaps, no randomness
      d.x = w / 2 + r * Math.cos(a); d.y = h / 2 + r * Math.sin(a); d.vx = 0; d.vy = 0;
    });
    var links = edges.map(function (e) { return [e.s, e.t]; });
    var ideal = Math.max(30, Math.sqrt(w * h / Math.max(n, 1)) * 0.7);
    var start = performance.now();
    for (var step = 0, alpha = 1; step < 300 && alpha > 0.01; step++, alpha *= 0.985) {
      for (i = 0; i < n; i++) {
        var a1 = nodes[i];
        for (j = i + 1; j < n; j++) {
          var b1 = nodes[j], dx = a1.x - b1.x, dy = a1.y - b1.y, d2 = dx * dx + dy * dy + 0.01;
          if (d2 > 90000) continue;
          var f = ideal * ideal / d2 * alpha * 0.5;
          a1.vx += dx * f * 0.05; a1.vy += dy * f * 0.05; b1.vx -= dx * f * 0.05; b1.vy -= dy * f * 0.05;
        }
      }
      for (i = 0; i < links.length; i++) {
        var s = nodes[links[i][0]], t = nodes[links[i][1]];
        var lx = t.x - s.x, ly = t.y - s.y, len = Math.sqrt(lx * lx + ly * ly) || 1;
        var k2 = (len - ideal) / len * 0.05 * alpha;
        s.vx += lx * k2; s.vy += ly * k2; t.vx -= lx * k2; t.vy -= ly * k2;
      }
      for (i = 0; i < n; i++) {
        var d = nodes[i];
        d.vx += (w / 2 - d.x) * 0.004 * alpha; d.vy += (h / 2 - d.y) * 0.004 * alpha;
        d.vx *= 0.6; d.vy *= 0.6; d.x += d.vx; d.y += d.vy;
      }
      if (performance.now() - start > 700) break;  // a big graph settles less, never blocks long
    }
  }

  function renderGraph() {
    var C = D.concepts, box = $("graph"), bar = clear($("graph-bar"));
    clear(box); clear($("legend"));
    if (!C.nodes.length) { add(bar, C.note || "no concepts"); graph = null; return; }
    var w = box.clientWidth || 900, h = box.clientHeight || 600;
    var pos = {};
    var nodes = C.nodes.map(function (e, k) { pos[e.id] = k; return { e: e, k: k }; });
    var edges = C.edges.map(function (e) { return { e: e, s: pos[e.source], t: pos[e.target] }; })
      .filter(function (e) { return e.s != null && e.t != null && e.s !== e.t; });
    layout(nodes, edges, w, h);
    var types = {}, preds = {};
    nodes.forEach(function (d) { if (!(d.e.type in types)) types[d.e.type] = TYPE_COLORS[Object.keys(types).length % TYPE_COLORS.length]; });
    var root = svg("g", { id: "graph-root" });
    var edgeLayer = svg("g", {}), nodeLayer = svg("g", {});
    edges.forEach(function (d) {
      var p = d.e.predicate; preds[p] = (preds[p] || 0) + 1;
      add(edgeLayer, svg("line", { class: "edge " + p, x1: nodes[d.s].x, y1: nodes[d.s].y, x2: nodes[d.t].x, y2: nodes[d.t].y,
        stroke: PRED_COLORS[p] || "#7f8c8d", "stroke-width": p === "related_to" ? 1 : 1.8 }, svg("title", {}, d.e.predicate)));
    });
    var labelled = nodes.slice().sort(function (a, b) { return b.e.memories - a.e.memories; }).slice(0, 70);
    var showLabel = {}; labelled.forEach(function (d) { showLabel[d.k] = 1; });
    nodes.forEach(function (d) {
      var g = svg("g", { class: "node", "data-key": d.e.key, transform: "translate(" + d.x.toFixed(1) + "," + d.y.toFixed(1) + ")" },
        svg("circle", { r: (4 + 2.2 * Math.sqrt(d.e.memories)).toFixed(1), fill: types[d.e.type] }),
        svg("title", {}, d.e.name + " (" + d.e.type + ", " + d.e.memories + " memories)"));
      if (showLabel[d.k]) add(g, svg("text", { x: 8, y: 3 }, oneLine(d.e.name, 28)));
      g.addEventListener("click", function (ev) { ev.stopPropagation(); pickEntity(d.e.id); });
      d.g = g;
      add(nodeLayer, g);
    });
    add(root, edgeLayer, nodeLayer);
    add(box, root);
    add(bar, C.nodes.length + " of " + C.total + " concepts (most mentioned), " + edges.length +
      " relations \u00b7 wheel zooms, drag pans, click a concept",
      el("span", { style: "margin-left:12px" }, el("input", { type: "search", id: "concept-find", placeholder: "find a concept", on: { input: function (ev) { findEntity(ev.target.value); } } })));
    var legend = $("legend");
    Object.keys(types).forEach(function (t) { add(legend, el("span", null, svg("svg", { width: 10, height: 10 }, svg("circle", { cx: 5, cy: 5, r: 5, fill: types[t] })), " " + t)); });
    add(legend, el("br"));
    Object.keys(preds).sort().forEach(function (p) {
      add(legend, el("span", { "data-predicate": p }, el("i", { style: "background:" + (PRED_COLORS[p] || "#7f8c8d") }), p + " (" + preds[p] + ")"));
    });
    graph = { nodes: nodes, edges: edges, root: root, view: fit(nodes, w, h) };
    applyView();
    panZoom(box);
    if (state.entity != null) pickEntity(state.entity);
  }

  function fit(nodes, w, h) {  // the whole layout in view, at most at twice its size
    var x0 = Infinity, y0 = Infinity, x1 = -Infinity, y1 = -Infinity;
    nodes.forEach(function (d) { x0 = Math.min(x0, d.x); y0 = Math.min(y0, d.y); x1 = Math.max(x1, d.x); y1 = Math.max(y1, d.y); });
    var k = Math.min(2, (w - 160) / Math.max(x1 - x0, 1), (h - 60) / Math.max(y1 - y0, 1));
    return { k: k, x: (w - (x1 - x0) * k) / 2 - x0 * k - 40, y: (h - (y1 - y0) * k) / 2 - y0 * k };
  }

  function applyView() { var v = graph.view; graph.root.setAttribute("transform", "translate(" + v.x + "," + v.y + ") scale(" + v.k + ")"); }

  function panZoom(box) {
    if (box._wired) return; box._wired = true;
    var drag = null;
    box.addEventListener("wheel", function (ev) {
      if (!graph) return; ev.preventDefault();
      var v = graph.view, r = box.getBoundingClientRect(), mx = ev.clientX - r.left, my = ev.clientY - r.top;
      var k = Math.min(8, Math.max(0.2, v.k * (ev.deltaY < 0 ? 1.15 : 1 / 1.15)));
      v.x = mx - (mx - v.x) * k / v.k; v.y = my - (my - v.y) * k / v.k; v.k = k; applyView();
    }, { passive: false });
    box.addEventListener("mousedown", function (ev) { if (graph) drag = { x: ev.clientX - graph.view.x, y: ev.clientY - graph.view.y }; });
    window.addEventListener("mousemove", function (ev) { if (drag) { graph.view.x = ev.clientX - drag.x; graph.view.y = ev.clientY - drag.y; applyView(); } });
    window.addEventListener("mouseup", function () { drag = null; });
  }

  function findEntity(text) {
    text = text.trim().toLowerCase();
    if (!text || !graph) return;
    var hit = graph.nodes.filter(function (d) { return d.e.key.indexOf(text) !== -1; })[0];
    if (hit) pickEntity(hit.e.id);
  }

  function pickEntity(id) {
    state.entity = id;
    var C = D.concepts, e = null;
    C.nodes.forEach(function (n) { if (n.id === id) e = n; });
    if (graph) graph.nodes.forEach(function (d) { d.g.setAttribute("class", d.e.id === id ? "node sel" : "node"); });
    var box = clear($("entity"));
    if (!e) return;
    var names = {}; C.nodes.forEach(function (n) { names[n.id] = n; });
    add(box, el("h2", null, e.name, " ", badge(e.type)));
    add(box, el("div", { class: "meta" }, e.memories + " memories name it \u00b7 key ", el("code", null, e.key)));
    var rel = C.edges.filter(function (g) { return g.source === id || g.target === id; });
    add(box, el("h3", null, "Relations (" + rel.length + ")"));
    add(box, el("ul", { class: "plain", id: "entity-relations" }, rel.map(function (g) {
      var other = names[g.source === id ? g.target : g.source];
      return el("li", null, g.source === id ? "\u2192 " : "\u2190 ", el("b", null, g.predicate), " ",
        el("span", { class: "sym", on: { click: function () { pickEntity(other.id); } } }, other.name),
        el("span", { class: "muted" }, " (" + g.memory_ids.map(function (i) { return "#" + i; }).slice(0, 6).join(", ") + ")"));
    })));
    var ids = C.mentions[id] || C.mentions[String(id)] || [];
    add(box, el("h3", null, "Memories (" + ids.length + ")"));
    add(box, el("ul", { class: "plain", id: "entity-memories" }, ids.map(function (mid) {
      var m = byId[mid];
      return el("li", { "data-id": mid }, memoryLink(mid), " ", m ? oneLine(m.content, 160) : el("span", { class: "muted" }, "(not on this page)"));
    })));
    if (D.serve) {
      var into = el("input", { type: "text", placeholder: "duplicate name" });
      var why = el("input", { type: "text", placeholder: "reason" });
      add(box, el("h3", null, "Review"), el("div", { class: "actions" },
        into, el("button", { type: "button", on: { click: function () { if (into.value.trim()) act("concepts merge", { a: e.key, b: into.value.trim() }); } } }, "merge into this"),
        why, el("button", { type: "button", class: "danger", on: { click: function () { act("concepts remove", { name: e.key, reason: why.value.trim() || null }); } } }, "remove concept")));
    }
  }

  // -- code graph ---------------------------------------------------------------------

  function renderCode() {
    var box = clear($("view-code")), K = D.code;
    if (!K.repos.length) { add(box, el("p", { class: "muted" }, K.note)); return; }
    K.repos.forEach(function (r, ri) {
      add(box, el("h2", null, r.repo));
      if (r.error) { add(box, el("p", { class: "muted" }, r.error)); return; }
      add(box, el("div", { class: "meta" }, r.files + " files, " + r.lines + " lines, " + r.symbols + " symbols, " + r.edges +
        " edges \u00b7 indexed " + when(r.indexed_at) + " \u00b7 " + Object.keys(r.languages).map(function (k) { return k + " " + r.languages[k]; }).join(", ")));
      var split = el("div", { class: "split" });
      var left = el("div", { style: "flex:1 1 60%;min-width:0" });
      var most = Math.max.apply(null, r.packages.map(function (p) { return p.lines; }).concat([1]));
      add(left, el("h3", null, "Packages by size"), el("table", { class: "packages" },
        el("tr", null, el("th", null, "directory"), el("th", null, "files"), el("th", null, "lines"), el("th", null, "symbols"), el("th", null, "")),
        r.packages.map(function (p) {
          return el("tr", null, el("td", { class: "mono" }, p.path), el("td", { class: "num" }, p.files), el("td", { class: "num" }, p.lines),
            el("td", { class: "num" }, p.symbols), el("td", null, el("span", { class: "bar", style: "width:" + Math.round(120 * p.lines / most) + "px" })));
        })));
      var side = el("aside", { id: "symbol-" + ri });
      add(left, el("h3", null, "Most central symbols"), el("table", { class: "central" },
        el("tr", null, el("th", null, "rank"), el("th", null, "kind"), el("th", null, "symbol"), el("th", null, "where"), el("th", null, "callers"), el("th", null, "callees")),
        r.central.map(function (s) {
          return el("tr", null, el("td", { class: "num" }, s.rank.toFixed(2)), el("td", null, s.kind),
            el("td", { class: "sym mono", on: { click: function () { renderSymbol(side, s); } } }, s.qname),
            el("td", { class: "mono" }, s.location), el("td", { class: "num" }, s.callers.length), el("td", { class: "num" }, s.callees.length));
        })));
      if (r.entry_points.length) add(left, el("h3", null, "Entry points"), el("ul", { class: "plain" }, r.entry_points.map(function (s) {
        return el("li", { class: "mono" }, s.kind + " " + s.qname + "  " + s.location);
      })));
      add(split, left, side);
      add(box, split);
      if (r.central.length) renderSymbol(side, r.central[0]);
    });
  }

  function renderSymbol(side, s) {
    clear(side);
    function rows(list, arrow) {
      if (!list.length) return el("p", { class: "muted" }, "none found");
      return el("ul", { class: "plain" }, list.map(function (c) {
        return el("li", { class: "mono" }, arrow + " " + c.qname, el("div", { class: "meta" }, c.location + (c.site ? " (call at " + c.site + ")" : "") +
          (c.rule && c.rule !== "same-file" ? " [" + c.rule + " " + (c.confidence || 0).toFixed(2) + "]" : "")));
      }));
    }
    add(side, el("h2", { class: "mono" }, s.qname), el("div", { class: "meta" }, s.kind + " \u00b7 " + s.location),
      s.signature ? el("pre", { class: "mono content" }, s.signature) : null,
      el("h3", null, "Callers (" + s.callers.length + ")"), rows(s.callers, "\u2190"),
      el("h3", null, "Callees (" + s.callees.length + ")"), rows(s.callees, "\u2192"));
  }

  // -- status -------------------------------------------------------------------------

  function renderStatus() {
    var box = clear($("view-status")), S = D.status, m = S.memories;
    add(box, el("h2", null, "Memories"), kv([
      ["in the store", m.total + " (" + m.active + " active, " + m.doubted + " doubted, " + m.superseded + " superseded, " + m.retracted + " retracted) in " + S.projects + " project(s)"],
      ["in this scope", D.total + " (" + D.scope.label + ")"],
      ["on this page", D.memories.length + " most recent (limit " + D.limit + ")" + (D.left_out ? "; " + D.left_out + " older left out" : "")],
      ["events", S.events]
    ]));
    var kinds = Object.keys(S.outbox).sort();
    add(box, el("h2", null, "Background backlog"), kinds.length ? el("table", { id: "backlog" },
      el("tr", null, el("th", null, "kind"), el("th", null, "pending"), el("th", null, "parked")),
      kinds.map(function (k) { return el("tr", null, el("td", null, k), el("td", { class: "num" }, S.outbox[k].pending || 0), el("td", { class: "num" }, S.outbox[k].parked || 0)); }))
      : el("p", { class: "muted" }, "empty"));
    add(box, el("h2", null, "Drains"), S.leases.length ? el("table", null,
      el("tr", null, el("th", null, "lease"), el("th", null, "state"), el("th", null, "pid"), el("th", null, "since"), el("th", null, "progress")),
      S.leases.map(function (l) { return el("tr", null, el("td", null, l.name), el("td", null, l.alive === "yes" ? "running" : "stale"), el("td", null, l.pid), el("td", null, when(l.started_at)), el("td", null, l.progress)); }))
      : el("p", { class: "muted" }, "no drain running"));
    add(box, el("h2", null, "Optional parts"), el("table", null, S.components.map(function (c) {
      return el("tr", null, el("th", null, c.name), el("td", null, c.available ? "ok" : "unavailable"), el("td", null, c.detail));
    })));
    add(box, el("h2", null, "Database"), kv([["file", S.database], ["size", Math.round(S.database_bytes / 1024) + " KiB"],
      ["schema", "v" + S.schema_version], ["page made", D.generated_at + " by marm " + D.version + " in " + D.collect_seconds + " s"]]));
  }

  // -- serve mode: actions through the op registry --------------------------------------

  function act(action, args) {
    if (!D.serve) return;
    notice(action + "\u2026");
    fetch("/api/op?token=" + encodeURIComponent(TOKEN), {
      method: "POST", headers: { "Content-Type": "application/json", "X-Marm-Token": TOKEN },
      body: JSON.stringify({ action: action, args: args }), credentials: "omit", cache: "no-store"
    }).then(function (r) { return r.json(); }).then(function (out) {
      if (!out.ok) { notice("refused: " + out.error, true); return; }
      notice(out.message || "done");
      return refresh();
    }).catch(function (err) { notice("the server did not answer (" + err + "); it may have stopped", true); });
  }

  function refresh() {
    return fetch("/api/data?token=" + encodeURIComponent(TOKEN), { credentials: "omit", cache: "no-store", headers: { "X-Marm-Token": TOKEN } })
      .then(function (r) { if (!r.ok) throw new Error("HTTP " + r.status); return r.json(); })
      .then(function (fresh) { D = fresh; renderAll(); });
  }

  // -- tabs and wiring ----------------------------------------------------------------

  var rendered = {};
  function show(tab) {
    if (!$("view-" + tab)) tab = "memories";
    state.tab = tab;
    var buttons = document.querySelectorAll("#tabs button");
    for (var i = 0; i < buttons.length; i++) buttons[i].className = buttons[i].getAttribute("data-tab") === tab ? "on" : "";
    var views = document.querySelectorAll(".view");
    for (i = 0; i < views.length; i++) views[i].className = views[i].id === "view-" + tab ? "view on" : "view";
    if (!rendered[tab]) {
      rendered[tab] = true;
      if (tab === "review") renderReview();
      else if (tab === "concepts") renderGraph();
      else if (tab === "code") renderCode();
      else if (tab === "status") renderStatus();
    }
    if (location.hash !== "#" + tab) history.replaceState(null, "", "#" + tab);
  }

  function renderAll() {
    var waiting = D.review.hygiene.length;  // the review queue's size, where a user looks first
    document.querySelector("#tabs button[data-tab=review]").textContent = waiting ? "Review (" + waiting + ")" : "Review";
    index();
    setupFilters();
    rendered = { memories: true };
    renderList();
    var tab = state.tab; state.tab = null; show(tab);
  }

  function wire() {
    $("scope").textContent = D.scope.label + " \u00b7 " + D.memories.length + " memories" + (D.left_out ? " (" + D.left_out + " older left out)" : "");
    $("mode").textContent = D.serve ? "served: actions on" : "static page (marm view --serve to act)";
    var q = $("q"), exact = $("exact");
    q.addEventListener("input", function () { state.q = q.value; state.shown = PAGE; renderList(); });
    exact.addEventListener("change", function () { state.exact = exact.checked; renderList(); });
    [["f-kind", "kind"], ["f-session", "session"], ["f-project", "project"], ["f-from", "from"], ["f-to", "to"]].forEach(function (p) {
      $(p[0]).addEventListener("change", function (ev) { state[p[1]] = ev.target.value; state.shown = PAGE; renderList(); });
    });
    var buttons = document.querySelectorAll("#tabs button");
    for (var i = 0; i < buttons.length; i++) buttons[i].addEventListener("click", function (ev) { show(ev.currentTarget.getAttribute("data-tab")); });
    window.addEventListener("hashchange", function () { show(location.hash.slice(1)); });
  }

  wire();
  state.tab = (location.hash || "#memories").slice(1);
  renderAll();
  document.documentElement.setAttribute("data-ready", "1");
})();
