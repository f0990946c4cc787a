// The studio's API, with the run's secret. The secret arrives in the
// fragment of the printed URL (never sent to a server); it is kept for
// this tab only and the fragment is removed from the address bar.

const KEY = "mew-studio-secret";

function takeSecret() {
  const m = /(?:^|[#&])secret=([A-Za-z0-9_-]+)/.exec(location.hash);
  if (m) {
    sessionStorage.setItem(KEY, m[1]);
    history.replaceState(null, "", location.pathname);
    return m[1];
  }
  return sessionStorage.getItem(KEY) || "";
}

const secret = takeSecret();

export class APIError extends Error {
  constructor(status, body) {
    super(body && body.error ? body.error : "HTTP " + status);
    this.status = status;
    this.body = body;
  }
}

async function call(method, path, body) {
  const opts = { method, headers: { "X-Studio-Secret": secret }, cache: "no-store" };
  if (body !== undefined) {
    opts.headers["Content-Type"] = "application/json";
    opts.body = JSON.stringify(body);
  }
  return fetch(path, opts);
}

// json calls the API and reads its JSON answer; a refused call with a
// JSON body (problems) is returned too, with ok false.
export async function json(method, path, body) {
  const resp = await call(method, path, body);
  let data = null;
  try { data = await resp.json(); } catch { data = null; }
  if (!resp.ok && !(data && Array.isArray(data.problems))) throw new APIError(resp.status, data);
  return data;
}

// lines calls the API and hands each JSON line of its answer to onLine.
export async function lines(path, body, onLine) {
  const resp = await call("POST", path, body);
  if (!resp.ok || !(resp.headers.get("Content-Type") || "").startsWith("application/x-ndjson")) {
    let data = null;
    try { data = await resp.json(); } catch { data = null; }
    throw new APIError(resp.status, data);
  }
  const reader = resp.body.getReader();
  const dec = new TextDecoder();
  let buf = "";
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    buf += dec.decode(value, { stream: true });
    let i;
    while ((i = buf.indexOf("\n")) >= 0) {
      const line = buf.slice(0, i).trim();
      buf = buf.slice(i + 1);
      if (line) onLine(JSON.parse(line));
    }
  }
  if (buf.trim()) onLine(JSON.parse(buf));
}

export const hasSecret = () => secret !== "";
