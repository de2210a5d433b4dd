/**
 * Calls of the ordinary API with the bearer token, and the curl command behind each view.
 * Query parameters are lists of [name, value] pairs: a filter may name a column twice.
 */

import { forgetToken, savedToken } from "./session.js";

export const API = "/api/v1";

/** A refusal of the API, in the server's words. */
export class ApiFailure extends Error {
  constructor(status, body, fallback) {
    const error = body?.error;
    super(typeof error?.message === "string" ? error.message : fallback ?? `HTTP ${status}`);
    this.status = status;
    this.type = typeof error?.type === "string" ? error.type : undefined;
    this.details = Array.isArray(error?.details) ? error.details : [];
  }
}

const listeners = new Set();

/** Calls `listener` when the server refuses the token (401): it is forgotten then. */
export function onSignedOut(listener) {
  listeners.add(listener);
  return () => listeners.delete(listener);
}

/** The query string of `params` ([name, value] pairs), each part encoded. */
export function queryOf(params = []) {
  // An empty value means absent to the API, so it is left out; but an empty `after` asks for
  // the first page of a cursor walk, so that one is sent.
  const parts = params.filter(([k, v]) =>
    v !== undefined && v !== null && (v !== "" || k === "after")
  )
    .map(([k, v]) => `${encodeURIComponent(k)}=${encodeURIComponent(String(v))}`);
  return parts.length > 0 ? `?${parts.join("&")}` : "";
}

/** The path of an API call, names of tables and templates encoded. */
export function apiPath(path, params) {
  return `${API}/${path}${queryOf(params)}`;
}

/** The segment of a name in a path. */
export function seg(name) {
  return encodeURIComponent(name);
}

/**
 * Calls the API: answers the parsed JSON (and the response), throws {@link ApiFailure}.
 * `body` is sent as JSON unless it is a FormData or Blob.
 */
export async function call(method, path, { params, body, headers = {}, signal } = {}) {
  const token = savedToken();
  const sent = { ...headers };
  if (token) sent.authorization = `Bearer ${token}`;
  let payload;
  if (body instanceof FormData || body instanceof Blob) payload = body;
  else if (body !== undefined) {
    payload = JSON.stringify(body);
    sent["content-type"] = "application/json";
  }
  let response;
  try {
    response = await fetch(apiPath(path, params), { method, headers: sent, body: payload, signal });
  } catch (error) {
    if (error.name === "AbortError") throw error;
    throw new ApiFailure(0, undefined, `The service did not answer: ${error.message}`);
  }
  const text = await response.text();
  let parsed;
  try {
    parsed = text ? JSON.parse(text) : undefined;
  } catch {
    parsed = undefined;
  }
  if (!response.ok) {
    const failure = new ApiFailure(response.status, parsed);
    if (response.status === 401) {
      forgetToken();
      for (const listener of listeners) listener(failure.message);
    }
    throw failure;
  }
  return { body: parsed, response };
}

/** `call()`'s body alone. */
export async function get(path, params, signal) {
  return (await call("GET", path, { params, signal })).body;
}

/** How long an exact count may take before the estimate stays. */
export const COUNT_LIMIT_MS = 10_000;

/**
 * The exact count of the rows `params` let through, or undefined when it took longer than
 * {@link COUNT_LIMIT_MS} (the request is then given up).
 */
export async function exactCount(path, params) {
  const signal = AbortSignal.timeout(COUNT_LIMIT_MS);
  try {
    return (await get(path, [...params, ["limit", 0], ["count", "exact"]], signal)).total;
  } catch (error) {
    if (error.name === "TimeoutError" || error.name === "AbortError") return undefined;
    throw error;
  }
}

/** A word for a shell, in single quotes. */
function shellWord(text) {
  return `'${text.replaceAll("'", `'\\''`)}'`;
}

/**
 * The curl command of a call, with the token as `$TOKEN` (never the token itself, which
 * would land in a shell's history).
 */
export function curlOf(method, path, params, body) {
  const url = `${location.origin}${apiPath(path, params)}`;
  const words = ["curl", "-sS"];
  if (method !== "GET") words.push("-X", method);
  words.push("-H", `"Authorization: Bearer $TOKEN"`);
  if (body !== undefined) {
    words.push(
      "-H",
      shellWord("Content-Type: application/json"),
      "--data",
      shellWord(JSON.stringify(body)),
    );
  }
  words.push(shellWord(url));
  return words.join(" ");
}

/** A number written for people. */
export function count(n) {
  return typeof n === "number" ? n.toLocaleString("en") : String(n);
}
