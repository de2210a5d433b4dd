/**
 * The signed-in token: kept in sessionStorage only (gone when the tab closes), never in a
 * URL, a log line or localStorage. Its scopes are read from its payload to hide what the
 * token may not do; the server checks them anyway.
 */

const KEY = "table-service-token";

/** The token of this tab, or undefined. */
export function savedToken() {
  return sessionStorage.getItem(KEY) ?? undefined;
}

/** Keeps `token` for this tab. */
export function saveToken(token) {
  sessionStorage.setItem(KEY, token);
}

/** Forgets the token. */
export function forgetToken() {
  sessionStorage.removeItem(KEY);
}

/** The claims of a JWT, unverified (the server verifies), or undefined when it is no JWT. */
export function claimsOf(token) {
  const part = token.split(".")[1];
  if (part === undefined) return undefined;
  try {
    const text = atob(part.replaceAll("-", "+").replaceAll("_", "/"));
    const bytes = Uint8Array.from(text, (c) => c.charCodeAt(0));
    const claims = JSON.parse(new TextDecoder().decode(bytes));
    return claims !== null && typeof claims === "object" ? claims : undefined;
  } catch {
    return undefined;
  }
}

/** The scopes a token carries, `:write` implying `:read`, as the server reads them. */
export function scopesOf(token) {
  const claims = claimsOf(token) ?? {};
  const found = new Set();
  if (typeof claims.scope === "string") {
    for (const s of claims.scope.split(" ")) if (s) found.add(s);
  }
  if (Array.isArray(claims.scopes)) {
    for (const s of claims.scopes) if (typeof s === "string") found.add(s);
  }
  for (const kind of ["tables", "templates"]) {
    if (found.has(`${kind}:write`)) found.add(`${kind}:read`);
  }
  return found;
}

/** When the token expires (ms since the epoch), if it says. */
export function expiryOf(token) {
  const exp = claimsOf(token)?.exp;
  return typeof exp === "number" ? exp * 1000 : undefined;
}
