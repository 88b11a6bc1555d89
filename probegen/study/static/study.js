// probegen study page: one item at a time, keyboard shortcuts, answers saved on the server.
// The server knows what was answered, so a reload resumes at the first unanswered item.
"use strict";

const MASK = "_____";
const LETTERS = "abcdefghij";
const token = decodeURIComponent(location.pathname.split("/").filter(Boolean)[1] || "");
const $ = (id) => document.getElementById(id);

let S = null;        // state from the server
let idx = 0;         // current item index in S.items
let choice = null;   // multiple choice: chosen index
let pairs = [];      // alignment: row -> definition index (or null)
let selRow = null;   // alignment: selected row
let started = 0;     // when the current item was shown
let busy = false;

function el(tag, cls, text) {
  const e = document.createElement(tag);
  if (cls) e.className = cls;
  if (text !== undefined) e.textContent = text;
  return e;
}

// text with every blank drawn as a gap (never as innerHTML: item texts are data)
function withBlanks(parent, text) {
  const parts = text.split(MASK);
  parts.forEach((p, i) => {
    parent.appendChild(document.createTextNode(p));
    if (i < parts.length - 1) parent.appendChild(el("span", "blank", MASK));
  });
}

// a prompt with the target word's spans (marks) highlighted, and blanks drawn as gaps elsewhere
function withMarks(parent, text, marks) {
  let pos = 0;
  (marks || []).forEach(([a, b]) => {
    withBlanks(parent, text.slice(pos, a));
    parent.appendChild(el("span", "target", text.slice(a, b)));
    pos = b;
  });
  withBlanks(parent, text.slice(pos));
}

function current() { return S.items[idx]; }
function nAnswered() { return Object.keys(S.answered).length; }
function nextUnanswered() { return S.items.findIndex((it) => !(it.item in S.answered)); }

function showError(msg) {
  $("error").hidden = false;
  $("error").textContent = msg;
}

async function load() {
  let resp;
  try {
    resp = await fetch(`/api/${encodeURIComponent(token)}/state`, { cache: "no-store" });
  } catch (e) {
    showError("Cannot reach the study server. Reload the page when it is back: your saved answers are kept.");
    return;
  }
  const body = await resp.json().catch(() => ({}));
  if (!resp.ok) { showError(body.error || `error ${resp.status}`); return; }
  S = body;
  const done = nAnswered();
  if (done > 0 && done < S.items.length) setStatus(`Welcome back: ${done} answer(s) already saved.`);
  show();
}

function setStatus(msg, bad) {
  $("status").textContent = msg || "";
  $("status").className = "status" + (bad ? " bad" : "");
}

function show() {
  const total = S.items.length, done = nAnswered();
  $("progress-text").textContent = `${done} of ${total} answered`;
  $("progress-bar").style.width = `${total ? (100 * done) / total : 100}%`;
  idx = nextUnanswered();
  if (idx < 0) {
    $("task").hidden = true;
    $("instructions").hidden = true;
    $("done").hidden = false;
    return;
  }
  const it = current();
  $("task").dataset.item = it.item;  // which item is shown (for people reporting a problem, and tests)
  $("instructions").textContent = S.instructions[it.guide];
  $("item-label").textContent = `Item ${done + 1} of ${total}`;
  $("task").hidden = false;
  choice = null; selRow = null; pairs = [];
  started = performance.now();
  layout(it).show(it);
  refresh();
}

// A list of lettered options (A., B., ...): a click, or the key, picks option i.
function lettered(list, texts, pick, titled) {
  list.textContent = "";
  texts.forEach((t, i) => {
    const li = el("li");
    li.dataset.index = i;
    li.appendChild(el("span", "key", LETTERS[i].toUpperCase()));
    li.appendChild(el("span", "text", t));
    if (titled) li.title = `key ${i + 1} or ${LETTERS[i]}`;
    li.addEventListener("click", () => { pick(i); });
    list.appendChild(li);
  });
}

function showMC(it) {
  $("mc").hidden = false; $("align").hidden = true;
  const prompt = $("prompt");
  prompt.textContent = "";
  withMarks(prompt, it.prompt, it.marks);
  lettered($("choices"), it.choices, choose, true);
  $("guess-box").hidden = !S.guess;
  $("guess").value = "";
  if (S.guess) $("guess").focus();
}

function showAlign(it) {
  $("mc").hidden = true; $("align").hidden = false;
  $("rows-title").textContent = S.condition === "word" ? "Words" : "Sentences";
  pairs = it.rows.map(() => null);
  const rows = $("rows");
  rows.textContent = "";
  it.rows.forEach(([left, target, right], r) => {
    const li = el("li");
    li.dataset.row = r;
    li.appendChild(el("span", "key", String(r + 1)));
    const body = el("div", "body");
    const line = el("div", "line");
    line.appendChild(document.createTextNode(left));
    line.appendChild(target === MASK ? el("span", "blank", MASK) : el("span", "target", target));
    line.appendChild(document.createTextNode(right));
    body.appendChild(line);
    if (S.guess) {
      const inp = el("input");
      inp.type = "text"; inp.maxLength = 100; inp.placeholder = "guess the hidden word";
      inp.autocomplete = "off"; inp.spellcheck = false;
      inp.dataset.row = r;
      inp.addEventListener("input", refresh);
      body.appendChild(inp);
    }
    li.appendChild(body);
    li.appendChild(el("span", "pair", ""));
    li.addEventListener("click", (e) => { if (e.target.tagName !== "INPUT") selectRow(r); });
    rows.appendChild(li);
  });
  lettered($("defs"), it.definitions, pair, false);
  if (S.guess) rows.querySelector("input").focus(); else selectRow(0);
}

function choose(i) {
  if (i >= current().choices.length) return;
  choice = i;
  refresh();
}

function selectRow(r) {
  if (r >= pairs.length) return;
  selRow = r;
  refresh();
}

function pair(d) {
  const it = current();
  if (d >= it.definitions.length) return;
  if (selRow === null) { setStatus("Select a row first (click it or press its number).", true); return; }
  for (let r = 0; r < pairs.length; r++) if (pairs[r] === d) pairs[r] = null;  // one definition per row
  pairs[selRow] = d;
  const next = pairs.findIndex((p) => p === null);
  selRow = next < 0 ? null : next;
  setStatus("");
  refresh();
}

function refreshMC() {
  $("choices").querySelectorAll("li").forEach((li, i) => li.classList.toggle("chosen", i === choice));
}

function refreshAlign() {
  const used = new Map();
  pairs.forEach((d, r) => { if (d !== null) used.set(d, r); });
  $("rows").querySelectorAll("li").forEach((li, r) => {
    li.classList.toggle("selected", r === selRow);
    li.classList.toggle("paired", pairs[r] !== null);
    li.querySelector(".pair").textContent = pairs[r] === null ? "" : LETTERS[pairs[r]].toUpperCase();
  });
  $("defs").querySelectorAll("li").forEach((li, i) => {
    li.classList.toggle("used", used.has(i));
    li.title = used.has(i) ? `paired with row ${used.get(i) + 1}` : `key ${LETTERS[i]}`;
  });
}

// Enter in a guess box: the question's one guess is checked, a group's moves on to the next row's
function enterGuessMC(e) {
  if (e.target.value.trim() === "") { setStatus("Guess the hidden word first.", true); return; }
  e.target.blur();
  setStatus("Now pick an answer (1-5 or a-e), then Enter.");
}

function enterGuessAlign(e) {
  const inputs = Array.from($("rows").querySelectorAll("input"));
  const r = inputs.indexOf(e.target);
  if (r >= 0 && r + 1 < inputs.length) { inputs[r + 1].focus(); return; }
  e.target.blur();
  if (selRow === null) selectRow(Math.max(0, pairs.findIndex((p) => p === null)));
}

// a key outside the guess boxes: a digit or letter picks a choice, or selects a row and pairs it
function keyMC(k, e) {
  if (k >= "1" && k <= "9") { choose(Number(k) - 1); e.preventDefault(); }
  else if (k.length === 1 && LETTERS.includes(k)) { choose(LETTERS.indexOf(k)); e.preventDefault(); }
}

function keyAlign(k, e) {
  if (k.length === 1 && k >= "0" && k <= "9") { selectRow(k === "0" ? 9 : Number(k) - 1); e.preventDefault(); }
  else if (k.length === 1 && LETTERS.includes(k)) { pair(LETTERS.indexOf(k)); e.preventDefault(); }
  else if (e.key === "Escape") { selRow = null; refresh(); }
}

// The page layouts a view can have, named by its `kind` (mc: one question, pick a choice; align: rows,
// each paired with a different definition). All that differs between them is here: the rest of the page
// asks the view's layout, never compares names.
const LAYOUTS = {
  mc: {
    show: showMC,
    guesses: () => $("guess").value.trim(),
    ready: () => choice !== null && (!S.guess || guesses() !== ""),
    refresh: refreshMC,
    answer: () => choice,
    guessMissing: () => S.guess && guesses() === "",
    enterGuess: enterGuessMC,
    key: keyMC,
  },
  align: {
    show: showAlign,
    guesses: () => Array.from($("rows").querySelectorAll("input")).map((i) => i.value.trim()),
    ready: () => pairs.every((p) => p !== null) && (!S.guess || guesses().every((g) => g !== "")),
    refresh: refreshAlign,
    answer: () => pairs,
    guessMissing: () => false,  // the submit button says it: it stays disabled until every row has a guess
    enterGuess: enterGuessAlign,
    key: keyAlign,
  },
};

function layout(it) { return LAYOUTS[it.kind]; }
function guesses() { return layout(current()).guesses(); }
function ready() { return layout(current()).ready(); }

function refresh() {
  const it = current();
  if (!it) return;
  layout(it).refresh();
  $("submit").disabled = busy || !ready();
}

async function submit() {
  if (busy || !ready()) {
    if (!busy && layout(current()).guessMissing()) setStatus("Guess the hidden word first.", true);
    return;
  }
  const it = current();
  const body = {
    item: it.item,
    answer: layout(it).answer(),
    guess: S.guess ? guesses() : null,
    elapsed_ms: Math.round(performance.now() - started),
  };
  busy = true; refresh(); setStatus("saving…");
  let resp, res;
  try {
    resp = await fetch(`/api/${encodeURIComponent(token)}/answer`, {
      method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify(body),
    });
    res = await resp.json().catch(() => ({}));
  } catch (e) {
    busy = false; refresh();
    setStatus("Not saved: the server cannot be reached. Try again (Enter) in a moment.", true);
    return;
  }
  busy = false;
  if (!resp.ok) {
    setStatus(`Not saved: ${res.error || resp.status}`, true);
    if (resp.status === 409) { await load(); }
    refresh();
    return;
  }
  S.answered[it.item] = { answer: body.answer, guess: body.guess };
  setStatus("saved");
  show();
}

document.addEventListener("keydown", (e) => {
  if (!S || idx < 0 || !current() || e.ctrlKey || e.metaKey || e.altKey) return;
  const it = current();
  const inInput = e.target && e.target.tagName === "INPUT";
  if (inInput) {
    if (e.key !== "Enter") return;  // typing a guess: letters and digits are text
    e.preventDefault();
    layout(it).enterGuess(e);
    return;
  }
  const k = e.key.toLowerCase();
  if (e.key === "Enter") { e.preventDefault(); submit(); return; }
  layout(it).key(k, e);
});

$("guess").addEventListener("input", refresh);
$("submit").addEventListener("click", submit);
load();
