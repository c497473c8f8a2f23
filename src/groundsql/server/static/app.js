// The page: wires the database picker, the conversation (answer.js's turns), the schema
// browser, the history, the pack and its benchmark, and the API key together. State lives here and nowhere else; the
// modules only draw what they are given.

import { ApiError, ask, at, call } from "./api.js";
import { earlierTurnView, turnView } from "./answer.js";
import { clear, el, fill } from "./dom.js";
import { plural } from "./format.js";
import { showBenchmarks } from "./bench.js";
import { remember, showHistory } from "./history.js";
import { setUpKeys } from "./keys.js";
import { showPack } from "./pack.js";
import { showSchema } from "./schema.js";

const $ = (id) => document.getElementById(id);
const picker = $("database");
const turns = $("turns");
const question = $("question");
const askButton = $("ask-button");
const notice = $("notice");
const status = $("status");
const panels = { ask: $("ask-panel"), schema: $("schema-panel"), history: $("history-panel"), pack: $("pack-panel"),
  benchmarks: $("benchmarks-panel") };
const tabs = { ask: $("tab-ask"), schema: $("tab-schema"), history: $("tab-history"), pack: $("tab-pack"),
  benchmarks: $("tab-benchmarks") };

const state = {
  databases: [], // what the key may use (GET /v1/databases): nothing else is ever shown
  database: null,
  conversation: null, // the id POST /v1/ask gave; sent back so follow-ups continue it
  questions: 0,
  asking: false,
  loaded: false,
  tab: "ask",
  schemaOf: null, // the database the schema panel shows
  packOf: null, // the database the pack panel shows
  generation: 0, // a new conversation, database or key: answers still on their way are dropped
  epoch: 0, // a new key: whatever the old one was still reading is dropped
};

// -- messages --------------------------------------------------------------------------------------

function say(message) {
  notice.textContent = message;
  notice.hidden = false;
}

function unsay() {
  notice.textContent = "";
  notice.hidden = true;
}

function announce(message) {
  status.textContent = message;
}

// -- databases --------------------------------------------------------------------------------------

function wantedDatabase() {
  return new URLSearchParams(location.hash.slice(1)).get("db");
}

// The databases this key may use, into the picker. A database named in the address (#db=NAME)
// that the key may not use is not shown: the server's own sentence (403, 404) says why.
async function loadDatabases() {
  picker.disabled = true;
  const { epoch } = state;
  let listed;
  try {
    listed = await call("GET", "/v1/databases");
  } catch (error) {
    if (state.epoch !== epoch) return;
    fill(picker, new Option("None", ""));
    say(error.message);
    return;
  }
  if (state.epoch !== epoch) return; // the key changed meanwhile: its own reading is on its way
  state.databases = listed;
  state.loaded = true;
  fill(picker, ...listed.map((d) => new Option(`${d.name} (${d.dialect})`, d.name)));
  const names = listed.map((d) => d.name);
  const wanted = wantedDatabase();
  if (!listed.length) {
    say("This API key may use no database on this server.");
    choose(null);
    return;
  }
  if (wanted && !names.includes(wanted)) await explainMissing(wanted);
  else unsay();
  picker.disabled = false;
  const keep = names.includes(state.database) ? state.database : null;
  choose(keep || (names.includes(wanted) ? wanted : names[0]), keep !== null);
}

async function explainMissing(name) {
  try {
    await call("GET", at`/v1/databases/${name}/tables`);
    say(`The database ${name} is not in this key's list.`);
  } catch (error) {
    say(error instanceof ApiError && (error.status === 403 || error.status === 404)
      ? `${capital(error.message)}.` : error.message);
  }
}

function capital(text) {
  return text.charAt(0).toUpperCase() + text.slice(1);
}

// Another database is another conversation; the schema panel follows on its next showing.
function choose(name, keepConversation = false) {
  picker.value = name || "";
  if (state.database === name && keepConversation) return;
  state.database = name;
  if (name) history.replaceState(null, "", `#db=${encodeURIComponent(name)}`);
  newConversation();
  state.schemaOf = null;
  state.packOf = null;
  if (state.tab !== "ask") showTab(state.tab, false);
  askButton.disabled = !name;
}

// -- the conversation -----------------------------------------------------------------------------

function newConversation() {
  state.generation += 1;
  state.conversation = null;
  state.questions = 0;
  clear(turns);
  $("welcome").hidden = false;
  showOnboarding();
  updateConversationHead();
}

// The database's onboarding questions (verified queries its pack marks so), each a button that
// asks it: where a newcomer starts, with answers the team has checked.
function showOnboarding() {
  const listed = (state.databases.find((d) => d.name === state.database) || {}).onboarding || [];
  fill($("onboarding-questions"), ...listed.map((text) => {
    const button = el("button", { type: "button", class: "option" }, text);
    button.addEventListener("click", () => askQuestion(text));
    return el("li", {}, button);
  }));
  $("onboarding").hidden = listed.length === 0;
}

function updateConversationHead() {
  $("conversation-head").hidden = state.questions === 0;
  $("conversation-title").textContent = state.questions
    ? `Conversation on ${state.database}: ${plural(state.questions, "question")}` : "";
}

async function askQuestion(text) {
  if (state.asking || !state.database || !text) return;
  state.asking = true;
  askButton.disabled = true;
  unsay();
  $("welcome").hidden = true;
  $("onboarding").hidden = true;
  const { database, generation } = state;
  const turn = turnView(text);
  turns.append(turn.element);
  state.questions += 1;
  updateConversationHead();
  turn.element.scrollIntoView({ block: "nearest" });
  announce("Answering…");
  try {
    const answer = await ask({ database, question: text, conversation_id: state.conversation }, turn.step);
    if (state.generation !== generation) return; // the person moved on meanwhile
    state.conversation = answer.conversation_id;
    remember(answer.conversation_id, database, text);
    turn.answered(answer);
    announce(answer.kind === "clarification" ? `Asked back: ${answer.clarification.text}`
      : answer.ok ? `Answered: ${plural(answer.rows.length, "row")}.` : "No answer.");
  } catch (error) {
    turn.failed(error);
    announce(error.message);
  } finally {
    state.asking = false;
    askButton.disabled = !state.database;
  }
}

// A conversation picked in the history: its earlier turns, then new questions continue it.
function continueConversation(found) {
  if (!state.databases.some((d) => d.name === found.database)) {
    say(`This API key may not use the database ${found.database}.`);
    return;
  }
  choose(found.database);
  state.conversation = found.id;
  state.questions = found.turns.length;
  $("welcome").hidden = true;
  $("onboarding").hidden = true;
  turns.append(...found.turns.map(earlierTurnView));
  updateConversationHead();
  showTab("ask");
  question.focus();
}

// -- tabs ---------------------------------------------------------------------------------------------

function showTab(name, focus = true) {
  state.tab = name;
  for (const [other, tab] of Object.entries(tabs)) {
    const on = other === name;
    tab.setAttribute("aria-selected", String(on));
    tab.tabIndex = on ? 0 : -1;
    panels[other].hidden = !on;
  }
  if (name === "schema" && state.database && state.schemaOf !== state.database) {
    const { database, epoch } = state;
    const wanted = () => state.schemaOf === database && state.epoch === epoch;
    state.schemaOf = database;
    showSchema(panels.schema, database, wanted).then((shown) => { if (!shown && wanted()) state.schemaOf = null; });
  }
  // The pack is read once per database, so an edit not saved yet stays while the person looks
  // elsewhere (a save, or a change someone else made, is caught by the entry's version); the
  // benchmark's runs afresh each time.
  if (name === "pack" && state.database && state.packOf !== state.database) {
    const { database, epoch } = state;
    const wanted = () => state.packOf === database && state.epoch === epoch;
    state.packOf = database;
    showPack(panels.pack, database, wanted).then((shown) => { if (!shown && wanted()) state.packOf = null; });
  }
  if (name === "benchmarks" && state.database) {
    const { database, epoch } = state;
    showBenchmarks(panels.benchmarks, database, () => state.tab === name && state.database === database
      && state.epoch === epoch);
  }
  if (name === "history") {
    showHistory(panels.history, continueConversation,
      { current: state.conversation, databases: state.databases.map((d) => d.name) });
  }
  if (focus) tabs[name].focus();
}

// The tab pattern: arrows move between tabs, Home and End to the first and last.
function onTabKey(event) {
  const names = Object.keys(tabs);
  const now = names.indexOf(state.tab);
  const to = { ArrowRight: now + 1, ArrowLeft: now - 1, Home: 0, End: names.length - 1 }[event.key];
  if (to === undefined) return;
  event.preventDefault();
  showTab(names[(to + names.length) % names.length]);
}

// -- keys -----------------------------------------------------------------------------------------------

// A key changed by the person: everything shown belongs to the old key, so it all goes.
function restart() {
  state.epoch += 1;
  state.database = null;
  state.loaded = false;
  newConversation();
  state.schemaOf = null;
  state.packOf = null;
  clear(panels.schema);
  clear(panels.history);
  clear(panels.pack);
  clear(panels.benchmarks);
  showTab("ask", false);
  loadDatabases();
}

// A key given when the server asked for one: the call that asked goes on; the list of
// databases is read again, so the picker holds only what this key may use.
function afterPrompt() {
  if (state.loaded) loadDatabases();
}

// -- start ----------------------------------------------------------------------------------------------

picker.addEventListener("change", () => choose(picker.value));
// The skip link moves focus itself: following "#question" would replace the address's #db=NAME.
document.querySelector(".skip").addEventListener("click", (event) => {
  event.preventDefault();
  showTab("ask", false);
  question.focus();
});
$("new-conversation").addEventListener("click", () => {
  newConversation();
  question.focus();
});
$("ask-form").addEventListener("submit", (event) => {
  event.preventDefault();
  const text = question.value.trim();
  if (!text || state.asking) return;
  question.value = "";
  askQuestion(text);
});
// A click on an option of a question asked back replies with it.
turns.addEventListener("reply", (event) => askQuestion(event.detail));
question.addEventListener("keydown", (event) => {
  if (event.key === "Enter" && !event.shiftKey && !event.isComposing) {
    event.preventDefault();
    $("ask-form").requestSubmit();
  }
});
// A panel may send the person to another tab (a trial of an edit, to its benchmark run).
document.querySelector("main").addEventListener("show-tab", (event) => showTab(event.detail, false));
for (const [name, tab] of Object.entries(tabs)) {
  tab.addEventListener("click", () => showTab(name));
  tab.addEventListener("keydown", onTabKey);
}
window.addEventListener("hashchange", () => {
  const wanted = wantedDatabase();
  if (wanted && wanted !== state.database && state.loaded) {
    if (state.databases.some((d) => d.name === wanted)) choose(wanted);
    else explainMissing(wanted);
  }
});
setUpKeys({ changed: restart, given: afterPrompt });
askButton.disabled = true;
loadDatabases();
