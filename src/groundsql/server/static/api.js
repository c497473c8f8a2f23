// The page's only way to the server: the HTTP API under /v1, with the key the person gave.
// The key is kept in sessionStorage: this tab only, forgotten when it closes.

const KEY = "groundsql.key";

export class ApiError extends Error {
  // `detail`: the rest of the error body (a pack edit's conflict carries the entry as it is now).
  constructor(status, code, message, detail = {}) {
    super(message);
    this.status = status;
    this.code = code;
    this.detail = detail;
  }
}

export const key = {
  get: () => sessionStorage.getItem(KEY),
  set: (value) => sessionStorage.setItem(KEY, value),
  forget: () => sessionStorage.removeItem(KEY),
};

// Asked for a key when the server answers 401; resolves when one is given (set by keys.js).
let askForKey = async (message) => { throw new ApiError(401, "unauthorized", message); };

export function onKeyNeeded(handler) {
  askForKey = handler;
}

async function send(method, path, body, accept) {
  const headers = { accept };
  if (body !== undefined) headers["content-type"] = "application/json";
  const secret = key.get();
  if (secret) headers.authorization = `Bearer ${secret}`;
  let response;
  try {
    response = await fetch(path, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
  } catch {
    throw new ApiError(0, "network", "the server did not answer; is groundsql serve still running?");
  }
  return response;
}

async function failure(response) {
  let error = {};
  try {
    error = (await response.json()).error || {};
  } catch { /* not JSON: a proxy's page; the status says enough */ }
  return new ApiError(response.status, error.code || `http_${response.status}`,
    error.message || `the server answered ${response.status}`, error);
}

// A request that asks for the key and tries again while the server says 401.
async function authorized(method, path, body, accept) {
  for (;;) {
    const response = await send(method, path, body, accept);
    if (response.status !== 401) return response;
    const problem = await failure(response);
    await askForKey(problem.message);
  }
}

// The JSON body of a successful call; an ApiError carrying the API's one sentence otherwise.
export async function call(method, path, body) {
  const response = await authorized(method, path, body, "application/json");
  if (!response.ok) throw await failure(response);
  return response.json();
}

// POST /v1/ask as an event stream: `onStep` hears each finished stage; resolves to the answer.
// (EventSource cannot POST, hence fetch and a reader.)
export async function ask(body, onStep) {
  const response = await authorized("POST", "/v1/ask", body, "text/event-stream");
  if (!response.ok) throw await failure(response);
  const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
  let buffer = "";
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    buffer += value;
    let end;
    while ((end = buffer.indexOf("\n\n")) >= 0) {
      const event = parseEvent(buffer.slice(0, end));
      buffer = buffer.slice(end + 2);
      if (event.name === "step") onStep(event.data);
      if (event.name === "answer") return event.data;
      if (event.name === "error") throw new ApiError(200, event.data.code, event.data.message);
    }
  }
  throw new ApiError(0, "network", "the answer stopped before it was complete; ask again");
}

function parseEvent(block) {
  let name = "message";
  const data = [];
  for (const line of block.split("\n")) {
    if (line.startsWith("event:")) name = line.slice(6).trim();
    if (line.startsWith("data:")) data.push(line.slice(5).trimStart());
  }
  return { name, data: data.length ? JSON.parse(data.join("\n")) : null };
}

// A file the API serves (a result as CSV), saved under the name the server gives it. A link
// cannot carry the key, hence fetch and an object URL.
export async function download(path) {
  const response = await authorized("GET", path, undefined, "*/*");
  if (!response.ok) throw await failure(response);
  const disposition = response.headers.get("content-disposition") || "";
  const name = (/filename="([^"]+)"/.exec(disposition) || [])[1] || "download";
  saveBlob(await response.blob(), name);
}

// A blob offered to the person as a file.
export function saveBlob(blob, name) {
  const url = URL.createObjectURL(blob);
  const link = Object.assign(document.createElement("a"), { href: url, download: name });
  document.body.append(link);
  link.click();
  link.remove();
  setTimeout(() => URL.revokeObjectURL(url), 1000);
}

// at`/v1/databases/${name}/tables`: a path with each value encoded.
export function at(strings, ...values) {
  return strings.reduce((out, part, i) => out + encodeURIComponent(values[i - 1]) + part);
}
