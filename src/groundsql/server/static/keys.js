// The API key dialog: opened when the server answers 401 (or by the "API key" button); the
// key is kept in this tab's sessionStorage and sent with every API call.

import { ApiError, key, onKeyNeeded } from "./api.js";

const dialog = document.getElementById("key-dialog");
const input = document.getElementById("key-input");
const reason = document.getElementById("key-error");
let waiting = []; // the calls waiting for a key: all go on once one is given

function settle(ok) {
  const calls = waiting;
  waiting = [];
  for (const { resolve, reject } of calls) {
    if (ok) resolve(); else reject(new ApiError(401, "unauthorized", "an API key is needed to use this server"));
  }
}

export function openKeyDialog(message) {
  reason.textContent = message || "";
  reason.hidden = !message;
  input.value = "";
  if (!dialog.open) dialog.showModal();
  input.focus();
}

// `changed()`: the person changed or forgot the key (what the page shows belonged to the old
// one); `given()`: a key was given because a call needed one (that call goes on with it).
export function setUpKeys({ changed, given }) {
  onKeyNeeded((message) => new Promise((resolve, reject) => {
    waiting.push({ resolve, reject });
    // No key yet: just ask. A key the server turned down: say why.
    openKeyDialog(key.get() ? message : "");
  }));
  document.getElementById("key-form").addEventListener("submit", (event) => {
    event.preventDefault();
    const value = input.value.trim();
    if (!value) return;
    const asked = waiting.length > 0;
    key.set(value);
    settle(true); // before close(), whose event would turn the waiting calls down
    dialog.close();
    if (asked) given(); else changed();
  });
  document.getElementById("key-forget").addEventListener("click", () => {
    key.forget();
    settle(false);
    dialog.close();
    changed();
  });
  dialog.addEventListener("close", () => settle(false)); // Escape or Cancel: the calls fail, said once
  document.getElementById("key-cancel").addEventListener("click", () => dialog.close());
  document.getElementById("key-button").addEventListener("click", () => openKeyDialog(""));
}
