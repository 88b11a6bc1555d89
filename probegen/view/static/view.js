// probegen view: every item of one or more runs, what the model saw, chose and why.
// Data comes from the page's <script type="application/json" id="data"> block (or, served, from
// ./data.json). Every text is put on the page with textContent / createTextNode: never as HTML.
"use strict";
(function () {
  var PAGE = 50;
  var D = null;            // the model: {runs, items, plane}
  var S = {};              // the state, mirrored in the URL fragment
  var shown = [];          // indices of the items the filters keep, in order
  var cursor = -1;         // position in `shown` of the open item
  var byKey = {};          // "run\u0000set\u0000id" -> item index
  var IS = {};             // item id -> its rows of a `probegen items` table (view --items)
  var byId = {};           // item ids of the page
  var DEFAULTS = {tab: "items", run: "0", set: "", cond: "", ok: "", pos: "", rel: "", hops: "", dt: "",
                  mmin: "", mmax: "", abin: "", q: "", sort: "file", page: "0", item: "", cmp: "", cat: "", flag: ""};

  // ---- DOM helpers (text only) -----------------------------------------------------------------
  function el(tag, attrs) {
    var n = document.createElement(tag);
    if (attrs) for (var k in attrs) {
      if (k === "text") n.textContent = attrs[k];
      else if (k === "cls") n.className = attrs[k];
      else if (k.slice(0, 2) === "on") n.addEventListener(k.slice(2), attrs[k]);
      else n.setAttribute(k, attrs[k]);
    }
    for (var i = 2; i < arguments.length; i++) add(n, arguments[i]);
    return n;
  }
  function add(n) {
    for (var i = 1; i < arguments.length; i++) {
      var c = arguments[i];
      if (c === null || c === undefined) continue;
      if (Array.isArray(c)) { c.forEach(function (x) { add(n, x); }); continue; }
      n.appendChild(typeof c === "object" ? c : document.createTextNode(String(c)));
    }
  }
  function svg(tag, attrs) {
    var n = document.createElementNS("http://www.w3.org/2000/svg", tag);
    for (var k in attrs || {}) {
      if (k === "text") n.textContent = attrs[k];
      else if (k.slice(0, 2) === "on") n.addEventListener(k.slice(2), attrs[k]);
      else n.setAttribute(k, attrs[k]);
    }
    return n;
  }
  function clear(n) { while (n.firstChild) n.removeChild(n.firstChild); return n; }
  function $(id) { return document.getElementById(id); }
  function fmt(v, d) { return (v === null || v === undefined || isNaN(v)) ? "-" : Number(v).toFixed(d === undefined ? 3 : d); }
  function fmtP(p) { return p > 0 && p < 1e-4 ? Number(p).toExponential(1) : fmt(p, 4); }  // a p-value: a small one never reads 0
  function letter(i) { return String.fromCharCode(65 + (i % 26)) + (i >= 26 ? String(Math.floor(i / 26)) : ""); }

  // ---- state <-> URL fragment ---------------------------------------------------------------------
  function readHash() {
    var p = new URLSearchParams(location.hash.replace(/^#/, ""));
    S = {};
    for (var k in DEFAULTS) S[k] = p.has(k) ? p.get(k) : DEFAULTS[k];
    if (!D.runs[+S.run]) S.run = "0";
  }
  function writeHash() {
    var p = new URLSearchParams();
    for (var k in DEFAULTS) if (S[k] !== DEFAULTS[k]) p.set(k, S[k]);
    var h = p.toString();
    if (h !== location.hash.replace(/^#/, "")) history.replaceState(null, "", h ? "#" + h : location.pathname + location.search);
  }
  function setState(ch, keepPage) {
    for (var k in ch) S[k] = ch[k];
    if (!keepPage && !("page" in ch)) S.page = "0";
    writeHash();
    render();
  }

  // ---- item helpers ---------------------------------------------------------------------------------
  function run() { return D.runs[+S.run]; }
  function setsOf(r) { return D.runs[r].sets; }
  function condOf(it) {
    if (S.cond && it.conds[S.cond]) return S.cond;
    var st = D.runs[it.run].sets.filter(function (s) { return s.name === it.set; })[0];
    if (S.cond) return null;
    return st && it.conds[st.main] ? st.main : Object.keys(it.conds)[0];
  }
  function status(e) {
    if (!e) return "none";
    var n = e.ok.length, k = 0;
    for (var i = 0; i < n; i++) k += e.ok[i];
    return k === n ? "right" : k === 0 ? "wrong" : "partly";
  }
  function accOf(e) { var k = 0; for (var i = 0; i < e.ok.length; i++) k += e.ok[i]; return e.ok.length ? k / e.ok.length : NaN; }
  function relOf(it) { return it.meta.probe !== undefined ? String(it.meta.probe) : ""; }
  function statsOf(it) { return IS[it.id] || null; }
  function flagsOf(it) {
    var out = [];
    (statsOf(it) || []).forEach(function (r) { r.flags.forEach(function (f) { if (out.indexOf(f) < 0) out.push(f); }); });
    return out;
  }

  // ---- filtering ---------------------------------------------------------------------------------
  function cmpIds() {
    // the ids of run A's items in the chosen comparison category
    if (!S.cmp || !S.cat) return null;
    var c = comparison(parseCmp(S.cmp));
    if (!c) return null;
    var ids = {};
    (c.items[S.cat] || []).forEach(function (id) { ids[id] = 1; });
    return ids;
  }
  function applyFilters() {
    var q = S.q.trim().toLowerCase(), r = +S.run, ids = cmpIds();
    var mmin = S.mmin === "" ? null : parseFloat(S.mmin), mmax = S.mmax === "" ? null : parseFloat(S.mmax);
    var setName = S.set || (ids ? parseCmp(S.cmp).a.set : "");
    var out = [];
    for (var i = 0; i < D.items.length; i++) {
      var it = D.items[i];
      if (it.run !== r) continue;
      if (setName && it.set !== setName) continue;
      if (ids && !ids[it.id]) continue;
      var c = condOf(it);
      if (!c) continue;
      var e = it.conds[c];
      if (S.ok && status(e) !== S.ok) continue;
      if (S.pos && String(it.meta.pos) !== S.pos) continue;
      if (S.rel && relOf(it) !== S.rel) continue;
      if (S.hops && String(it.meta.hops) !== S.hops) continue;
      if (S.dt && String(it.meta.distractor_type) !== S.dt) continue;
      if (S.flag && (S.flag === "flagged") !== (flagsOf(it).length > 0)) continue;
      if (mmin !== null && !(e.m >= mmin)) continue;
      if (mmax !== null && !(e.m <= mmax)) continue;
      if (S.abin !== "" && Math.round(accOf(e) * 10) !== +S.abin) continue;
      if (q && it._text.indexOf(q) < 0) continue;
      out.push(i);
    }
    if (S.sort !== "file") {
      var key = {"margin": function (i) { var e = D.items[i].conds[condOf(D.items[i])]; return e.m === undefined ? 0 : e.m; },
                 "acc": function (i) { return accOf(D.items[i].conds[condOf(D.items[i])]); },
                 "id": null}[S.sort.replace(/^-/, "")];
      var dir = S.sort[0] === "-" ? -1 : 1;
      out.sort(key ? function (a, b) { return dir * (key(a) - key(b)) || a - b; }
                   : function (a, b) { return dir * (D.items[a].id < D.items[b].id ? -1 : D.items[a].id > D.items[b].id ? 1 : 0); });
    }
    return out;
  }
  function searchText(it) {
    var parts = [it.id, it.set];
    for (var k in it.meta) parts.push(String(it.meta[k]));
    for (var c in it.conds) {
      var e = it.conds[c];
      [e.q, e.c, e.rl, e.cl].forEach(function (a) { if (a) parts.push(a.join("\n")); });
      if (e.cr) e.cr.forEach(function (a) { parts.push(a.join("\n")); });
    }
    return parts.join("\n").toLowerCase();
  }

  // ---- comparison -------------------------------------------------------------------------------
  function parseCmp(s) {
    var p = s.split("|");
    function side(x) { var a = (x || "").split("~"); return {run: +a[0] || 0, set: a[1] || "", cond: a[2] || ""}; }
    return {a: side(p[0]), b: side(p[1])};
  }
  function cmpString(c) { return [c.a, c.b].map(function (x) { return x.run + "~" + x.set + "~" + x.cond; }).join("|"); }
  var cmpCache = {};
  function comparison(c) {
    var key = cmpString(c);
    if (cmpCache[key]) return cmpCache[key];
    var A = D.items.filter(function (it) { return it.run === c.a.run && it.set === c.a.set && it.conds[c.a.cond]; });
    var res = {counts: {both: 0, onlyA: 0, onlyB: 0, neither: 0}, items: {both: [], onlyA: [], onlyB: [], neither: []},
               matched: 0, unmatched: 0, decisions: 0};
    A.forEach(function (it) {
      var j = byKey[c.b.run + "\u0000" + c.b.set + "\u0000" + it.id];
      var other = j === undefined ? null : D.items[j].conds[c.b.cond];
      var ea = it.conds[c.a.cond];
      if (!other || other.ok.length !== ea.ok.length) { res.unmatched++; return; }
      res.matched++;
      var hit = {};
      for (var d = 0; d < ea.ok.length; d++) {
        var cat = ea.ok[d] && other.ok[d] ? "both" : ea.ok[d] ? "onlyA" : other.ok[d] ? "onlyB" : "neither";
        res.counts[cat]++; res.decisions++; hit[cat] = 1;
      }
      for (var k in hit) res.items[k].push(it.id);
    });
    cmpCache[key] = res;
    return res;
  }

  // ---- rendering -----------------------------------------------------------------------------------
  function render() {
    ["items", "compare", "figures"].forEach(function (t) {
      $("tab-" + t).setAttribute("aria-selected", String(S.tab === t));
      $("panel-" + t).hidden = S.tab !== t;
    });
    renderFilters();
    shown = applyFilters();
    if (S.tab === "items") renderList();
    if (S.tab === "compare") renderCompare();
    if (S.tab === "figures") renderFigures();
    renderDetail();
  }

  function options(sel, values, current) {
    clear(sel);
    values.forEach(function (v) { add(sel, el("option", {value: v[0], text: v[1]})); });
    sel.value = current;
    if (sel.value !== current) sel.value = values.length ? values[0][0] : "";
  }
  function distinct(fn) {
    var r = +S.run, seen = {}, out = [];
    D.items.forEach(function (it) {
      if (it.run !== r || (S.set && it.set !== S.set)) return;
      var v = fn(it);
      if (v !== undefined && v !== null && v !== "" && !seen[v]) { seen[v] = 1; out.push(String(v)); }
    });
    return out.sort(function (a, b) { return isNaN(a) || isNaN(b) ? (a < b ? -1 : a > b ? 1 : 0) : a - b; });
  }
  function renderFilters() {
    options($("f-run"), D.runs.map(function (r, i) { return [String(i), r.label + " (" + r.command + ")"]; }), S.run);
    options($("f-set"), [["", "every dataset"]].concat(setsOf(+S.run).map(function (s) { return [s.name, s.name + " (" + s.n + ")"]; })), S.set);
    var conds = {};
    setsOf(+S.run).forEach(function (s) { if (!S.set || s.name === S.set) s.conditions.forEach(function (c) { conds[c] = 1; }); });
    options($("f-cond"), [["", "main condition"]].concat(Object.keys(conds).map(function (c) { return [c, c]; })), S.cond);
    options($("f-ok"), [["", "right and wrong"], ["right", "right only"], ["wrong", "wrong only"], ["partly", "partly right (groups)"]], S.ok);
    var one = function (id, label, fn, key) {
      var vals = distinct(fn);
      options($(id), [["", label]].concat(vals.map(function (v) { return [v, v]; })), S[key]);
      $(id).hidden = vals.length === 0;
    };
    one("f-pos", "any part of speech", function (it) { return it.meta.pos; }, "pos");
    one("f-rel", "any relation", function (it) { return it.meta.probe; }, "rel");
    one("f-hops", "any hop count", function (it) { return it.meta.hops; }, "hops");
    one("f-dt", "any distractor type", function (it) { return it.meta.distractor_type; }, "dt");
    options($("f-flag"), [["", "flagged or not"], ["flagged", "flagged items only"], ["unflagged", "unflagged items only"]], S.flag);
    $("f-flag").hidden = !D.itemstats;
    options($("f-sort"), [["file", "file order"], ["margin", "least confident first"], ["-margin", "most confident first"],
                          ["acc", "lowest accuracy first"], ["-acc", "highest accuracy first"], ["id", "id"]], S.sort);
    if (document.activeElement !== $("f-q")) $("f-q").value = S.q;
    if (document.activeElement !== $("f-mmin")) $("f-mmin").value = S.mmin;
    if (document.activeElement !== $("f-mmax")) $("f-mmax").value = S.mmax;
    var note = $("f-cmp");
    clear(note);
    if (S.cmp && S.cat) {
      var c = parseCmp(S.cmp);
      add(note, ["comparison: ", catLabel(S.cat, c), " ", el("button", {type: "button", text: "clear", onclick: function () { setState({cmp: "", cat: ""}); }})]);
    }
    if (S.abin !== "") add(note, [" accuracy about " + (+S.abin / 10).toFixed(1) + " ", el("button", {type: "button", text: "clear", onclick: function () { setState({abin: ""}); }})]);
  }

  function renderList() {
    var total = D.items.filter(function (it) { return it.run === +S.run; }).length;
    var pages = Math.max(1, Math.ceil(shown.length / PAGE)), page = Math.min(+S.page || 0, pages - 1);
    $("count").textContent = shown.length + " of " + total + " items";
    $("count").setAttribute("data-shown", String(shown.length));
    var tb = clear($("list-body"));
    var openIdx = currentItem();
    shown.slice(page * PAGE, page * PAGE + PAGE).forEach(function (i) {
      var it = D.items[i], c = condOf(it), e = it.conds[c];
      var marks = el("td", {cls: "marks"});
      Object.keys(it.conds).forEach(function (k) {
        var st = status(it.conds[k]);
        add(marks, el("span", {cls: "mark " + st, title: k + ": " + st, text: k[0].toUpperCase()}));
      });
      var fl = flagsOf(it);
      var tr = el("tr", {cls: "row " + status(e) + (i === openIdx ? " open" : "") + (fl.length ? " flagged" : ""), "data-id": it.id,
                         "data-status": status(e), tabindex: "0", onclick: function () { openItem(i); }},
        el("td", {cls: "id", text: it.id, title: fl.length ? "flagged: " + fl.join("; ") : ""}, fl.length ? el("span", {cls: "flag", text: " \u2691"}) : null),
        el("td", {text: it.set}),
        marks,
        el("td", {cls: "num", text: fmt(accOf(e), 2)}),
        el("td", {cls: "num", text: fmt(e.m, 3)}),
        el("td", {cls: "snip", text: snippet(e, it)}));
      add(tb, tr);
    });
    $("page").textContent = "page " + (page + 1) + " of " + pages;
    $("prev").disabled = page <= 0;
    $("next").disabled = page >= pages - 1;
  }
  function snippet(e, it) {
    var s = (e.q && e.q[0]) || (it.meta.synset ? String(it.meta.synset) : "") || "";
    return s.length > 110 ? s.slice(0, 107) + "..." : s;
  }
  function currentItem() {
    if (!S.item) return -1;
    var p = S.item.split("~");
    var j = byKey[p[0] + "\u0000" + p[1] + "\u0000" + p.slice(2).join("~")];
    return j === undefined ? -1 : j;
  }
  function itemKey(it) { return it.run + "~" + it.set + "~" + it.id; }
  function openItem(i) {
    cursor = shown.indexOf(i);
    setState({item: itemKey(D.items[i])}, true);
  }

  // ---- one item ----------------------------------------------------------------------------------------
  function renderDetail() {
    var box = clear($("detail"));
    var i = currentItem();
    if (i < 0) { box.hidden = true; return; }
    box.hidden = false;
    var it = D.items[i], r = D.runs[it.run];
    var st = r.sets.filter(function (s) { return s.name === it.set; })[0] || {help: {}};
    add(box, el("div", {cls: "dhead"},
      el("h2", {text: it.id}),
      el("button", {type: "button", cls: "close", title: "close (Esc)", text: "close", onclick: function () { setState({item: ""}, true); }})));
    add(box, el("p", {cls: "meta"}, r.label + " - " + it.set + " - " + it.kind +
      Object.keys(it.meta).map(function (k) { return " - " + k + ": " + it.meta[k]; }).join("")));
    if (statsOf(it)) add(box, statsTable(it));
    var wrap = el("div", {cls: "conds"});
    var prevC = null;
    var names = Object.keys(it.conds);
    var layout = layoutOf(it);
    if (layout.sideBySide && names.length > 1) add(box, sideBySide(it, names, r, st));
    Object.keys(it.conds).forEach(function (c) {
      var e = it.conds[c];
      var cands = e.c || (e.cs ? prevC : null);
      if (e.c) prevC = e.c;
      var sec = el("section", {cls: "cond " + status(e), "data-cond": c},
        el("h3", {}, c, " ", el("span", {cls: "badge " + status(e), text: status(e) + (e.ok.length > 1 ? " " + fmt(accOf(e), 2) : "")})),
        st.help && st.help[c] ? el("p", {cls: "help", text: st.help[c]}) : null);
      add(sec, layout.body(e, cands, r));
      if (e.tie) add(sec, el("p", {cls: "tie", text: "exact tie in row(s) " + e.tie.map(function (x) { return x + 1; }).join(", ") +
        ": broken at random by probegen's seeded tie-break (the run's seed and the item id), never towards the gold"}));
      if (e.gen) add(sec, genView(e.gen));
      if (e.x) add(sec, exchangesView(e.x));
      add(wrap, sec);
    });
    add(box, wrap);
  }
  function seedsView(e, cands, r) {
    return [
      e.q ? [el("div", {cls: "qlabel", text: "the item (as a prompt shows it; the trained probe reads the target's span)"}),
        e.q.map(function (q) { return queryText(q, r.nonce); })] : null,
      cands && cands.length ? el("ol", {cls: "defs", type: "A"}, cands.map(function (c, j) {
        return el("li", {text: c + (e.g && e.g[0] === j ? " (gold)" : "")}); })) : null,
      el("p", {text: "right per seed: " + e.ok.map(function (x) { return x ? "yes" : "no"; }).join(", ")})];
  }
  // The item layouts of the view model, named by an item's `kind` (group: rows matched to candidates, each
  // row a decision; options: one pick among options; seeds: a trained probe's outcome per seed). All that
  // differs between them is here: the rest of the page asks an item's layout, never compares names.
  var LAYOUTS = {
    group: {body: function (e, cands, r) { return groupView(e, cands, r.nonce); }, sideBySide: false, perRow: true},
    options: {body: function (e, cands, r) { return choiceView(e, cands, r); }, sideBySide: true, perRow: false},
    seeds: {body: seedsView, sideBySide: false, perRow: false}
  };
  function layoutOf(it) { return LAYOUTS[it.kind] || LAYOUTS.seeds; }
  function queryText(q, nonce) {
    // the query with the made-up word marked (text nodes only)
    var p = el("p", {cls: "query"});
    if (q === null || q === undefined) { add(p, el("em", {text: "(not recorded)"})); return p; }
    if (q === "") { add(p, el("em", {text: "(empty query)"})); return p; }
    if (!nonce || q.indexOf(nonce) < 0) { add(p, q); return p; }
    q.split(nonce).forEach(function (part, k) {
      if (k) add(p, el("mark", {cls: "nonce", title: "the made-up word hiding the target", text: nonce}));
      add(p, part);
    });
    return p;
  }
  function ranks(row) {
    var idx = row.map(function (_, j) { return j; }).sort(function (a, b) { return row[b] - row[a]; });
    var rk = [];
    idx.forEach(function (j, r) { rk[j] = r + 1; });
    return rk;
  }
  function confidence(row, r) {
    // what a score says about the model's confidence: a language model's log-probs normalised over
    // the candidates, the generative method's share of option orders, the letter method's label
    // probabilities (already a distribution); none for cosine scores
    if (r.asked.distribution) return row.slice();  // the run's method says (probegen.methods)
    // the language-model kinds (probegen.scorers.LM_KINDS; "api": what older served runs recorded)
    if (["causal", "masked", "served", "api"].indexOf(r.scorer) < 0) return null;
    var max = Math.max.apply(null, row), exp = row.map(function (v) { return Math.exp(v - max); });
    var z = exp.reduce(function (a, b) { return a + b; }, 0);
    return exp.map(function (v) { return v / z; });
  }
  function sideBySide(it, names, r, st) {
    // every condition's scores, ranks and decision for the same candidates, side by side
    var cands = null, same = true;
    names.forEach(function (c) { var e = it.conds[c]; if (e.c) { if (cands && cands.join("\u0000") !== e.c.join("\u0000")) same = false; cands = cands || e.c; } });
    if (!cands || !same) return null;
    var out = el("div", {cls: "side", id: "side"});
    var ql = el("table", {cls: "queries"});
    names.forEach(function (c) {
      var e = it.conds[c];
      add(ql, el("tr", {}, el("th", {title: st.help && st.help[c] ? st.help[c] : "", text: c}), el("td", {}, queryText(e.q ? e.q[0] : null, r.nonce))));
    });
    add(out, el("div", {cls: "qlabel", text: "the query in each condition"}), ql);
    var head = el("tr", {}, el("th", {text: ""}), el("th", {text: "candidate"}));
    names.forEach(function (c) { add(head, el("th", {cls: "num"}, c, " ", el("span", {cls: "badge " + status(it.conds[c]), text: status(it.conds[c])}))); });
    var tb = el("tbody");
    var g = it.conds[names[0]].g[0];
    cands.forEach(function (text, j) {
      var tr = el("tr", {cls: j === g ? "gold" : ""}, el("td", {text: letter(j) + (j === g ? " gold" : "")}), el("td", {cls: "cand", text: text}));
      names.forEach(function (c) {
        var e = it.conds[c], rk = ranks(e.s[0]), chosen = e.p[0] === j;
        add(tr, el("td", {cls: "num" + (chosen ? " chosen" : ""), title: c + ": score " + e.s[0][j] + ", rank " + rk[j] + (chosen ? ", chosen" : ""),
          text: fmt(e.s[0][j], 3) + " #" + rk[j] + (chosen ? " *" : "")}));
      });
      add(tb, tr);
    });
    add(out, el("table", {cls: "cands"}, el("thead", {}, head), tb));
    add(out, el("p", {cls: "hint", text: "score #rank per condition; * the model's choice; the gold row is marked."}));
    return out;
  }
  function choiceView(e, cands, r) {
    var out = [];
    out.push(el("div", {cls: "qlabel", text: "query"}));
    out.push(queryText(e.q ? (e.q[0] === "" ? "" : e.q[0]) : null, r.nonce));
    var row = e.s[0], rk = ranks(row), tb = el("tbody");
    var conf = confidence(row, r);
    row.forEach(function (v, j) {
      var chosen = e.p[0] === j, gold = e.g[0] === j;
      add(tb, el("tr", {cls: (chosen ? "chosen " : "") + (gold ? "gold" : "")},
        el("td", {text: letter(j)}),
        el("td", {cls: "cand", text: cands ? cands[j] : "(text not recorded)"}),
        el("td", {cls: "num", text: fmt(v, 4)}),
        el("td", {cls: "num", text: String(rk[j])}),
        conf ? el("td", {cls: "num", title: r.asked.confidence, text: fmt(conf[j], 2)}) : null,
        el("td", {text: (gold ? "gold " : "") + (chosen ? "chosen" : "") + (e.ct ? " " + e.ct[j] : "")})));
    });
    out.push(el("table", {cls: "cands"}, el("thead", {}, el("tr", {},
      el("th", {text: ""}), el("th", {text: "candidate"}), el("th", {text: "score"}), el("th", {text: "rank"}),
      conf ? el("th", {text: "conf."}) : null, el("th", {text: ""}))), tb));
    out.push(el("p", {cls: "decision", text: "decision: " + letter(e.p[0]) + (e.p[0] === e.g[0] ? " = gold" : ", gold " + letter(e.g[0])) +
      "; margin over the best other candidate " + fmt(e.m, 4)}));
    return out;
  }
  function groupView(e, cands, nonce) {
    var k = e.s.length, out = [], t = el("table", {cls: "matrix"});
    var hr = el("tr", {}, el("th", {text: "context \\ definition"}));
    for (var j = 0; j < e.s[0].length; j++) hr.appendChild(el("th", {title: e.cl ? e.cl[j] : "", text: letter(j)}));
    add(t, el("thead", {}, hr));
    var tb = el("tbody");
    for (var i = 0; i < k; i++) {
      var row = e.s[i], rk = ranks(row);
      var tr = el("tr", {cls: e.ok[i] ? "right" : "wrong"},
        el("th", {cls: "ctx", title: e.rl ? e.rl[i] : ""}, el("span", {cls: "rn", text: (i + 1) + ". "}),
          queryText(e.q ? e.q[i] : null, nonce), el("span", {cls: "syn", text: e.rl ? e.rl[i] : ""})));
      for (var j2 = 0; j2 < row.length; j2++) {
        var cls = "cell r" + Math.min(rk[j2], 4) + (e.p[i] === j2 ? " chosen" : "") + (e.g[i] === j2 ? " gold" : "");
        tr.appendChild(el("td", {cls: cls, title: "score " + row[j2] + ", rank " + rk[j2] + " in its row" +
          (e.p[i] === j2 ? "; chosen" : "") + (e.g[i] === j2 ? "; gold" : ""), text: fmt(row[j2], 3)}));
      }
      add(tb, tr);
    }
    add(t, tb);
    out.push(el("p", {cls: "hint", text: "rows: contexts as the model saw them; columns: definitions in the evaluator's order. " +
      "Boxed: the chosen matching (one-to-one alignment); ringed: gold. " + e.ok.reduce(function (a, b) { return a + b; }, 0) +
      " of " + k + " contexts matched right; mean margin " + fmt(e.m, 4) + "."}));
    out.push(el("div", {cls: "mwrap"}, t));
    if (cands) {
      var ol = el("ol", {cls: "defs", type: "A"});
      cands.forEach(function (d, j) { add(ol, el("li", {title: e.cl ? e.cl[j] : ""}, d, e.cl ? el("span", {cls: "syn", text: " " + e.cl[j]}) : null)); });
      out.push(ol);
    }
    return out;
  }
  function genView(g) {
    var d = el("div", {cls: "gen"}, el("div", {cls: "qlabel", text: "answers per option order"}));
    (g.answers || []).forEach(function (a, o) {
      add(d, el("p", {text: "order " + o + ": " + (g.status ? g.status[o] : "") + ", answer " + (a || []).map(letter).join(" ") +
        (g.random_rows && g.random_rows[o] && g.random_rows[o].length ? ", rows completed at random: " + g.random_rows[o].map(function (r) { return r + 1; }).join(", ") : "")}));
    });
    return d;
  }
  function exchangesView(xs) {
    var d = el("details", {cls: "exchanges", open: ""}, el("summary", {text: xs.length + " exchange(s) with the model: prompt, raw answers, parse errors"}));
    xs.forEach(function (x) {
      var oo = x.option_order || [];
      var shownAs = oo.map(function (j, pos) { return letter(pos) + "=" + letter(j); }).join(" ");
      var ans = (x.answer || []).map(function (j) { var pos = oo.indexOf(j); return (pos >= 0 ? letter(pos) + " shown, " : "") + "candidate " + letter(j); });
      var box = el("div", {cls: "exchange"},
        el("p", {cls: "meta", text: "option order " + x.order + " (" + x.ask + "): shown " + (shownAs || "in the item's order") +
          "; " + x.status + "; answer taken: " + (ans.join("; ") || "none") +
          (x.random_rows && x.random_rows.length ? "; rows completed at random: " + x.random_rows.map(function (r) { return r + 1; }).join(", ") : "")}));
      (x.messages || []).forEach(function (m, k) {
        add(box, el("div", {cls: "msg " + (m && m.role)}, el("span", {cls: "role", text: m && m.role}), el("pre", {text: m ? String(m.content) : ""})));
      });
      (x.errors || []).forEach(function (err, k) {
        if (err) add(box, el("p", {cls: "err", text: "parse error (answer " + (k + 1) + "): " + err}));
      });
      add(d, box);
    });
    return d;
  }

  // ---- item statistics (view --items) -------------------------------------------------------------------
  function statsTable(it) {
    var rows = statsOf(it), fl = flagsOf(it);
    function iv(r, k) { return fmt(r[k], 2) + (r[k + "_lo"] !== null && r[k + "_lo"] !== undefined ? " [" + fmt(r[k + "_lo"], 2) + ", " + fmt(r[k + "_hi"], 2) + "]" : ""); }
    var t = el("table", {cls: "acc itemstats"}, el("thead", {}, el("tr", {}, ["item", "p-value", "item-rest r", "difficulty b [95%]", "discrimination a [95%]", "outfit", "flags"].map(function (h) { return el("th", {text: h}); }))));
    add(t, el("tbody", {}, rows.map(function (r) {
      return el("tr", {cls: r.flags.length ? "flagged" : ""}, el("td", {text: r.item}), el("td", {cls: "num", text: fmt(r.p, 2)}), el("td", {cls: "num", text: fmt(r.item_rest, 2)}),
        el("td", {text: iv(r, "b")}), el("td", {text: iv(r, "a")}), el("td", {cls: "num", text: fmt(r.outfit, 2)}), el("td", {text: r.flags.join("; ")}));
    })));
    return el("section", {cls: "stats", id: "item-stats"}, el("h3", {text: "Item statistics" + (fl.length ? " - flagged: " + fl.join("; ") : "")}), t,
      el("p", {cls: "hint", text: "from " + D.itemstats.path + " (probegen items): over every respondent of that analysis"}));
  }
  function openById(id) {
    var r = +S.run, j = -1;
    for (var i = 0; i < D.items.length; i++) if (D.items[i].id === id && (j < 0 || (D.items[i].run === r && D.items[j].run !== r))) j = i;
    if (j < 0) return;
    setState({tab: "items", run: String(D.items[j].run), item: itemKey(D.items[j])}, true);
  }
  function itemMap() {
    var pts = D.itemstats.rows.filter(function (p) { return p.a !== null && p.b !== null && byId[p.view]; });
    var W = 520, H = 380, P = 48, xs = [0], ys = [0];
    pts.forEach(function (p) { xs.push(p.b); ys.push(p.a); });
    var x0 = Math.min.apply(null, xs) - 0.3, x1 = Math.max.apply(null, xs) + 0.3, y0 = Math.min.apply(null, ys) - 0.3, y1 = Math.max.apply(null, ys) + 0.3;
    function X(v) { return P + (v - x0) / (x1 - x0) * (W - 2 * P); }
    function Y(v) { return H - P - (v - y0) / (y1 - y0) * (H - 2 * P); }
    var g = svg("svg", {viewBox: "0 0 " + W + " " + H, width: W, height: H, id: "item-map", role: "img", "aria-label": "item map"});
    g.appendChild(svg("rect", {x: P, y: P, width: W - 2 * P, height: H - 2 * P, fill: "none", stroke: "#999"}));
    g.appendChild(svg("line", {x1: X(0), x2: X(0), y1: P, y2: H - P, stroke: "#ccc", "stroke-dasharray": "3 3"}));
    g.appendChild(svg("line", {x1: P, x2: W - P, y1: Y(0), y2: Y(0), stroke: "#ccc", "stroke-dasharray": "3 3"}));
    g.appendChild(svg("text", {x: W / 2, y: H - 8, "text-anchor": "middle", "font-size": 12, text: "difficulty b (IRT)"}));
    g.appendChild(svg("text", {x: 14, y: H / 2, "text-anchor": "middle", "font-size": 12, transform: "rotate(-90 14 " + H / 2 + ")", text: "discrimination a"}));
    [[x0, "start"], [x1, "end"]].forEach(function (v) { g.appendChild(svg("text", {x: X(v[0]) + (v[1] === "start" ? P / 4 : -P / 4), y: H - P + 14, "text-anchor": v[1], "font-size": 10, text: fmt(v[0], 1)})); });
    pts.forEach(function (p) {
      var bad = p.flags.length > 0;
      var c = svg("circle", {cx: X(p.b), cy: Y(p.a), r: 5, fill: bad ? "#d62728" : "#1f77b4", "fill-opacity": 0.7, "class": "imap-point" + (bad ? " flagged" : ""),
        tabindex: 0, "data-id": p.view, "data-item": p.item,
        onclick: function () { openById(p.view); }, onkeydown: function (ev) { if (ev.key === "Enter") openById(p.view); }});
      c.appendChild(svg("title", {text: p.item + ": b " + fmt(p.b, 2) + ", a " + fmt(p.a, 2) + (bad ? " - " + p.flags.join("; ") : "") + " (click to open)"}));
      g.appendChild(c);
    });
    return el("div", {cls: "figure"}, g, el("p", {cls: "hint", text: pts.length + " items of " + D.itemstats.path + "; flagged in red; click a point to open its item"}));
  }

  // ---- compare ----------------------------------------------------------------------------------------
  function sides() {
    var out = [];
    D.runs.forEach(function (r, i) { r.sets.forEach(function (s) { s.conditions.forEach(function (c) {
      out.push([i + "~" + s.name + "~" + c, r.label + " - " + s.name + " - " + c]); }); }); });
    return out;
  }
  function defaultCmp() {
    var all = sides(), a = null, b = null;
    for (var i = 0; i < D.runs.length && !b; i++) for (var j = i + 1; j < D.runs.length && !b; j++) {
      D.runs[i].sets.forEach(function (s) { D.runs[j].sets.forEach(function (t) {
        if (!b && s.name === t.name) { a = i + "~" + s.name + "~" + s.main; b = j + "~" + t.name + "~" + (t.conditions.indexOf(s.main) >= 0 ? s.main : t.main); }
      }); });
    }
    if (!a) { a = all[0] ? all[0][0] : "0~~"; b = all[1] ? all[1][0] : a; }
    return a + "|" + b;
  }
  function catLabel(cat, c) {
    var A = D.runs[c.a.run] ? D.runs[c.a.run].label : "A", B = D.runs[c.b.run] ? D.runs[c.b.run].label : "B";
    return {both: "both right", onlyA: "only " + A + " right", onlyB: "only " + B + " right", neither: "neither right"}[cat] || cat;
  }
  function renderCompare() {
    var cs = S.cmp || defaultCmp(), c = parseCmp(cs), all = sides(), box = clear($("compare"));
    var selA = el("select", {id: "cmp-a", "aria-label": "run A", onchange: function () { setState({cmp: selA.value + "|" + selB.value, cat: ""}); }});
    var selB = el("select", {id: "cmp-b", "aria-label": "run B", onchange: function () { setState({cmp: selA.value + "|" + selB.value, cat: ""}); }});
    options(selA, all, cs.split("|")[0]);
    options(selB, all, cs.split("|")[1]);
    add(box, el("p", {}, "A: ", selA, " B: ", selB));
    var res = comparison(c);
    var unit = D.items.some(function (it) { return it.run === c.a.run && layoutOf(it).perRow; }) ? "contexts (a group's rows)" : "decisions";
    add(box, el("p", {cls: "hint", text: "Counted over " + unit + " of the " + res.matched + " items both runs have (" + res.unmatched +
      " of A's items have no counterpart in B). Click a count for the items behind it."}));
    var t = el("table", {cls: "cmp", id: "cmp-table"}, el("thead", {}, el("tr", {}, el("th", {text: ""}), el("th", {text: "B right"}), el("th", {text: "B wrong"}))));
    function cell(cat) {
      return el("td", {}, el("button", {type: "button", cls: "count", "data-cat": cat, title: catLabel(cat, c),
        text: res.counts[cat] + " (" + res.items[cat].length + " items)",
        onclick: function () { setState({tab: "items", run: String(c.a.run), set: c.a.set, cond: c.a.cond, cmp: cs, cat: cat, item: ""}); }}));
    }
    add(t, el("tbody", {}, el("tr", {}, el("th", {text: "A right"}), cell("both"), cell("onlyA")),
                             el("tr", {}, el("th", {text: "A wrong"}), cell("onlyB"), cell("neither"))));
    add(box, t);
    var pr = pairOf(cs);
    if (pr) add(box, el("p", {id: "cmp-stats", "data-diff": String(pr.diff), "data-p": String(pr.p_mcnemar), "data-holm": String(pr.p_holm),
      text: "Accuracy A - B over the " + pr.items + " decisions both made: " + fmt(pr.diff, 3) + " [" + fmt(pr.ci_lo, 3) + ", " + fmt(pr.ci_hi, 3) +
        "] (95% paired cluster bootstrap, an item's decisions resampled together); exact McNemar p = " + fmtP(pr.p_mcnemar) + " (" + pr.a_only +
        " only A right, " + pr.b_only + " only B right); Holm-adjusted over the page's " + D.pairs.length + " pairs: " + fmtP(pr.p_holm) +
        (pr.significant ? " (significant at 0.05)" : " (not significant at 0.05)")}));
    if ((D.pairs || []).length) add(box, el("h3", {text: "Every pair on the same dataset (Holm's correction over all " + D.pairs.length + ")"}), pairsTable());
  }
  function sideLabel(k) {
    var p = k.split("~"), r = D.runs[+p[0]];
    return (r ? r.label : p[0]) + " - " + p[1] + " - " + p.slice(2).join("~");
  }
  function pairOf(cs) {
    var ab = cs.split("|");
    for (var i = 0; i < (D.pairs || []).length; i++) {
      var p = D.pairs[i];
      if (p.a === ab[0] && p.b === ab[1]) return p;
      if (p.a === ab[1] && p.b === ab[0]) return {a: p.b, b: p.a, items: p.items, diff: -p.diff, ci_lo: -p.ci_hi, ci_hi: -p.ci_lo, a_only: p.b_only,
        b_only: p.a_only, p_mcnemar: p.p_mcnemar, p_holm: p.p_holm, significant: p.significant};
    }
    return null;
  }
  function pairsTable() {
    var t = el("table", {cls: "acc", id: "pairs-table"}, el("thead", {}, el("tr", {}, ["A", "B", "decisions", "A - B [95% CI]", "only A", "only B", "McNemar p", "Holm p"].map(function (h) { return el("th", {text: h}); }))));
    add(t, el("tbody", {}, D.pairs.map(function (p) {
      return el("tr", {cls: p.significant ? "significant" : ""},
        el("td", {}, el("button", {type: "button", cls: "link", text: sideLabel(p.a), onclick: function () { setState({cmp: p.a + "|" + p.b, cat: ""}); }})),
        el("td", {text: sideLabel(p.b)}), el("td", {cls: "num", text: String(p.items)}),
        el("td", {text: fmt(p.diff, 3) + " [" + fmt(p.ci_lo, 3) + ", " + fmt(p.ci_hi, 3) + "]"}), el("td", {cls: "num", text: String(p.a_only)}),
        el("td", {cls: "num", text: String(p.b_only)}), el("td", {cls: "num", text: fmtP(p.p_mcnemar)}), el("td", {cls: "num", text: fmtP(p.p_holm) + (p.significant ? " *" : "")}));
    })));
    return t;
  }

  // ---- figures: the bias plane and breakdowns ----------------------------------------------------------
  function renderFigures() {
    var box = clear($("figures"));
    var pts = D.plane;
    if (pts.length) add(box, el("h2", {text: "Context-word bias plane"}), plane(pts));
    if (D.itemstats) add(box, el("h2", {text: "Item map: difficulty x discrimination"}), itemMap());
    add(box, el("h2", {text: "Accuracy per condition"}), condTable());
    var r = +S.run;
    var mc = D.items.some(function (it) { return it.run === r && it.meta.hops !== undefined; });
    if (mc) add(box, el("h2", {text: "Accuracy by relation, hops and distractor type (" + D.runs[r].label + ")"}), hopsTable());
    if (D.items.some(function (it) { return it.run === r && layoutOf(it).perRow; })) add(box, el("h2", {text: "Group accuracy (" + D.runs[r].label + ")"}), histogram());
  }
  function plane(pts) {
    var W = 460, H = 380, P = 48, drawn = pts.filter(function (p) { return p.x !== null && p.y !== null; });
    var xs = [0, 1], ys = [0, 1];
    drawn.forEach(function (p) { xs.push(p.x); ys.push(p.y); if (p.xci) xs.push(p.xci[0], p.xci[1]); if (p.yci) ys.push(p.yci[0], p.yci[1]); });
    var x0 = Math.min.apply(null, xs) - 0.1, x1 = Math.max.apply(null, xs) + 0.1, y0 = Math.min.apply(null, ys) - 0.1, y1 = Math.max.apply(null, ys) + 0.1;
    function X(v) { return P + (v - x0) / (x1 - x0) * (W - 2 * P); }
    function Y(v) { return H - P - (v - y0) / (y1 - y0) * (H - 2 * P); }
    var g = svg("svg", {viewBox: "0 0 " + W + " " + H, width: W, height: H, id: "plane", role: "img", "aria-label": "bias plane"});
    g.appendChild(svg("rect", {x: P, y: P, width: W - 2 * P, height: H - 2 * P, fill: "none", stroke: "#999"}));
    [0, 1].forEach(function (v) {
      g.appendChild(svg("line", {x1: X(v), x2: X(v), y1: P, y2: H - P, stroke: "#ccc", "stroke-dasharray": "3 3"}));
      g.appendChild(svg("line", {x1: P, x2: W - P, y1: Y(v), y2: Y(v), stroke: "#ccc", "stroke-dasharray": "3 3"}));
      g.appendChild(svg("text", {x: X(v), y: H - P + 14, "text-anchor": "middle", "font-size": 11, text: String(v)}));
      g.appendChild(svg("text", {x: P - 6, y: Y(v) + 4, "text-anchor": "end", "font-size": 11, text: String(v)}));
    });
    g.appendChild(svg("text", {x: W / 2, y: H - 8, "text-anchor": "middle", "font-size": 12, text: "Bias_C (context)"}));
    g.appendChild(svg("text", {x: 14, y: H / 2, "text-anchor": "middle", "font-size": 12, transform: "rotate(-90 14 " + H / 2 + ")", text: "Bias_W (word)"}));
    var colors = ["#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b", "#17becf"];
    drawn.forEach(function (p, k) {
      var col = p.run === null ? "#777" : colors[p.run % colors.length];
      if (p.xci) g.appendChild(svg("line", {x1: X(p.xci[0]), x2: X(p.xci[1]), y1: Y(p.y), y2: Y(p.y), stroke: col}));
      if (p.yci) g.appendChild(svg("line", {x1: X(p.x), x2: X(p.x), y1: Y(p.yci[0]), y2: Y(p.yci[1]), stroke: col}));
      var label = (p.run === null ? p.name : D.runs[p.run].label + ": " + p.name) + " (Bias_C " + fmt(p.x, 2) + ", Bias_W " + fmt(p.y, 2) + ")";
      var c = svg("circle", {cx: X(p.x), cy: Y(p.y), r: 7, fill: p.run === null ? "none" : col, stroke: col, "stroke-width": 2,
        "class": "point", tabindex: p.run === null ? -1 : 0, "data-run": p.run === null ? "" : p.run, "data-set": p.set || "",
        onclick: function () { if (p.run !== null) setState({tab: "items", run: String(p.run), set: p.set, cond: "", item: "", cmp: "", cat: ""}); },
        onkeydown: function (ev) { if (ev.key === "Enter" && p.run !== null) setState({tab: "items", run: String(p.run), set: p.set, cond: "", item: "", cmp: "", cat: ""}); }});
      c.appendChild(svg("title", {text: label + (p.run === null ? "" : ": click for its items")}));
      g.appendChild(c);
      g.appendChild(svg("text", {x: X(p.x) + 9, y: Y(p.y) - 9, "font-size": 11, text: p.name}));
    });
    var undef = pts.filter(function (p) { return p.x === null || p.y === null; });
    var div = el("div", {cls: "figure"}, g);
    if (undef.length) {
      var ul = el("ul", {cls: "undef"});
      undef.forEach(function (p) {
        add(ul, el("li", {}, el("button", {type: "button", cls: "link point-undef", "data-run": p.run === null ? "" : p.run, "data-set": p.set || "",
          text: (p.run === null ? p.name : D.runs[p.run].label + ": " + p.name),
          onclick: function () { if (p.run !== null) setState({tab: "items", run: String(p.run), set: p.set, cond: "", item: ""}); }}),
          " - not on the plane: " + (p.x === null ? "Bias_C" : "") + (p.x === null && p.y === null ? " and " : "") + (p.y === null ? "Bias_W" : "") +
          " undefined (the Full - Label gap is within noise, or too few items)"));
      });
      add(div, el("p", {text: "Points without a defined ratio:"}), ul);
    }
    return div;
  }
  function condTable() {
    var t = el("table", {cls: "acc", id: "cond-table"}), conds = [];
    D.runs.forEach(function (r) { r.sets.forEach(function (s) { s.conditions.forEach(function (c) { if (conds.indexOf(c) < 0) conds.push(c); }); }); });
    add(t, el("thead", {}, el("tr", {}, el("th", {text: "run"}), el("th", {text: "dataset"}), conds.map(function (c) { return el("th", {text: c}); }))));
    var tb = el("tbody");
    D.runs.forEach(function (r, i) { r.sets.forEach(function (s) {
      var tr = el("tr", {}, el("td", {text: r.label}), el("td", {text: s.name}));
      conds.forEach(function (c) {
        if (s.conditions.indexOf(c) < 0) { add(tr, el("td", {text: ""})); return; }
        var its = D.items.filter(function (it) { return it.run === i && it.set === s.name && it.conds[c]; });
        var acc = its.length ? its.reduce(function (a, it) { return a + accOf(it.conds[c]); }, 0) / its.length : NaN;
        add(tr, el("td", {}, el("button", {type: "button", cls: "link", title: "open these items",
          text: fmt(acc, 3) + " (" + its.length + ")", onclick: function () { setState({tab: "items", run: String(i), set: s.name, cond: c, item: ""}); }})));
      });
      add(tb, tr);
    }); });
    add(t, tb);
    return t;
  }
  function hopsTable() {
    var r = +S.run, cells = {}, dts = [], rows = [];
    D.items.forEach(function (it) {
      if (it.run !== r || (S.set && it.set !== S.set) || it.meta.hops === undefined) return;
      var c = condOf(it);
      if (!c) return;
      var rk = relOf(it) + "\u0000" + it.meta.hops, dt = String(it.meta.distractor_type);
      if (rows.indexOf(rk) < 0) rows.push(rk);
      if (dts.indexOf(dt) < 0) dts.push(dt);
      var k = rk + "\u0000" + dt;
      cells[k] = cells[k] || [0, 0];
      cells[k][0] += accOf(it.conds[c]); cells[k][1]++;
    });
    rows.sort(); dts.sort();
    var t = el("table", {cls: "acc", id: "hops-table"}, el("thead", {}, el("tr", {}, el("th", {text: "relation"}), el("th", {text: "hops"}),
      dts.map(function (d) { return el("th", {text: d}); }))));
    var tb = el("tbody");
    rows.forEach(function (rk) {
      var p = rk.split("\u0000"), tr = el("tr", {}, el("td", {text: p[0]}), el("td", {text: p[1]}));
      dts.forEach(function (d) {
        var v = cells[rk + "\u0000" + d];
        add(tr, el("td", {}, v ? el("button", {type: "button", cls: "link heat", title: "open these items",
          text: fmt(v[0] / v[1], 2) + " (" + v[1] + ")",
          onclick: function () { setState({tab: "items", rel: p[0], hops: p[1], dt: d, item: ""}); }}) : null));
      });
      add(tb, tr);
    });
    add(t, tb);
    return t;
  }
  function histogram() {
    var r = +S.run, bins = [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0];
    D.items.forEach(function (it) {
      if (it.run !== r || !layoutOf(it).perRow || (S.set && it.set !== S.set)) return;
      var c = condOf(it);
      if (c) bins[Math.round(accOf(it.conds[c]) * 10)]++;
    });
    var max = Math.max.apply(null, bins.concat([1])), W = 460, H = 180, g = svg("svg", {viewBox: "0 0 " + W + " " + H, width: W, height: H});
    bins.forEach(function (n, b) {
      var h = n / max * (H - 40), x = 20 + b * 38;
      var rect = svg("rect", {x: x, y: H - 20 - h, width: 30, height: Math.max(h, 1), fill: "#1f77b4", "class": "bar", "data-bin": b,
        onclick: function () { setState({tab: "items", abin: String(b), item: ""}); }});
      rect.appendChild(svg("title", {text: n + " groups with accuracy about " + (b / 10).toFixed(1)}));
      g.appendChild(rect);
      g.appendChild(svg("text", {x: x + 15, y: H - 6, "text-anchor": "middle", "font-size": 10, text: (b / 10).toFixed(1)}));
      g.appendChild(svg("text", {x: x + 15, y: H - 24 - h, "text-anchor": "middle", "font-size": 10, text: String(n)}));
    });
    return el("div", {cls: "figure"}, g, el("p", {cls: "hint", text: "groups by the share of their contexts matched right (rounded to 0.1); click a bar for its groups"}));
  }

  // ---- keyboard ----------------------------------------------------------------------------------------
  function move(d) {
    if (!shown.length) return;
    var i = currentItem(), pos = shown.indexOf(i);
    pos = pos < 0 ? (d > 0 ? 0 : shown.length - 1) : Math.max(0, Math.min(shown.length - 1, pos + d));
    var page = Math.floor(pos / PAGE);
    S.page = String(page);
    S.item = itemKey(D.items[shown[pos]]);
    writeHash();
    render();
    var row = document.querySelector("#list-body tr.open");
    if (row && row.scrollIntoView) row.scrollIntoView({block: "nearest"});
  }
  function onKey(ev) {
    var t = ev.target && ev.target.tagName;
    if (t === "INPUT" || t === "SELECT" || t === "TEXTAREA") {
      if (ev.key === "Escape") ev.target.blur();
      return;
    }
    if (ev.key === "j" || ev.key === "ArrowDown") { move(1); ev.preventDefault(); }
    else if (ev.key === "k" || ev.key === "ArrowUp") { move(-1); ev.preventDefault(); }
    else if (ev.key === "/") { $("f-q").focus(); ev.preventDefault(); }
    else if (ev.key === "Escape") setState({item: ""}, true);
    else if (ev.key === "n" || ev.key === "]") { if (!$("next").disabled) setState({page: String(+S.page + 1)}); }
    else if (ev.key === "p" || ev.key === "[") { if (!$("prev").disabled) setState({page: String(Math.max(0, +S.page - 1))}); }
    else if (ev.key === "1") setState({tab: "items"}, true);
    else if (ev.key === "2") setState({tab: "compare"}, true);
    else if (ev.key === "3") setState({tab: "figures"}, true);
  }

  // ---- start -------------------------------------------------------------------------------------------
  function header() {
    var t = clear($("runs"));
    D.runs.forEach(function (r, i) {
      r.sets.forEach(function (s, k) {
        var accs = Object.keys(s.accuracy || {}).map(function (c) { return c + " " + fmt(s.accuracy[c], 3); }).join(", ");
        var set = Object.keys(r.settings || {}).map(function (n) { return " --" + n.replace(/_/g, "-") + " " + r.settings[n]; }).join("");
        add(t, el("tr", {}, el("td", {text: k ? "" : r.label}), el("td", {text: k ? "" : r.command + (r.asked.flag ? " --method " + r.asked.flag : "") + set}),
          el("td", {text: s.name + " (" + s.kind + ", " + s.n + ")"}), el("td", {text: accs}),
          el("td", {cls: "path", text: k ? "" : r.path})));
      });
      r.notes.forEach(function (n) { add(t, el("tr", {cls: "note"}, el("td", {}), el("td", {colspan: "4", text: n}))); });
    });
  }
  function wire() {
    var map = {"f-run": "run", "f-set": "set", "f-cond": "cond", "f-ok": "ok", "f-pos": "pos", "f-rel": "rel", "f-hops": "hops", "f-dt": "dt", "f-sort": "sort", "f-flag": "flag"};
    Object.keys(map).forEach(function (id) {
      $(id).addEventListener("change", function () {
        var ch = {}; ch[map[id]] = $(id).value;
        if (id === "f-run") { ch.set = ""; ch.cond = ""; ch.pos = ""; ch.rel = ""; ch.hops = ""; ch.dt = ""; ch.abin = ""; ch.cmp = ""; ch.cat = ""; ch.item = ""; }
        setState(ch);
      });
    });
    var timer = null;
    $("f-q").addEventListener("input", function () { clearTimeout(timer); timer = setTimeout(function () { setState({q: $("f-q").value}); }, 120); });
    ["f-mmin", "f-mmax"].forEach(function (id) {
      $(id).addEventListener("change", function () { var ch = {}; ch[id === "f-mmin" ? "mmin" : "mmax"] = $(id).value; setState(ch); });
    });
    $("reset").addEventListener("click", function () { setState({set: "", cond: "", ok: "", pos: "", rel: "", hops: "", dt: "", mmin: "", mmax: "", abin: "", q: "", sort: "file", cmp: "", cat: "", flag: ""}); });
    $("prev").addEventListener("click", function () { setState({page: String(Math.max(0, +S.page - 1))}); });
    $("next").addEventListener("click", function () { setState({page: String(+S.page + 1)}); });
    ["items", "compare", "figures"].forEach(function (t) { $("tab-" + t).addEventListener("click", function () { setState({tab: t}, true); }); });
    window.addEventListener("hashchange", function () { readHash(); render(); });
    document.addEventListener("keydown", onKey);
  }
  function start(data) {
    var t0 = performance.now();
    D = data;
    D.items.forEach(function (it, i) { it._text = searchText(it); byKey[it.run + "\u0000" + it.set + "\u0000" + it.id] = i; byId[it.id] = 1; });
    if (D.itemstats) D.itemstats.rows.forEach(function (r) { (IS[r.view] = IS[r.view] || []).push(r); });
    readHash();
    header();
    wire();
    render();
    document.body.setAttribute("data-ready", "1");
    document.body.setAttribute("data-load-ms", String(Math.round(performance.now() - t0)));
    document.body.setAttribute("data-ready-at", String(Math.round(performance.now())));  // ms since navigation started
  }
  function boot() {
    var block = $("data");
    if (block && block.textContent.trim()) { start(JSON.parse(block.textContent)); return; }
    fetch("data.json", {credentials: "same-origin"}).then(function (r) {
      if (!r.ok) throw new Error("data.json: HTTP " + r.status);
      return r.json();
    }).then(start).catch(function (e) { $("count").textContent = "could not load the runs: " + e.message; });
  }
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", boot); else boot();
})();
