/** Sign in: paste a token; it is checked against the service before it is kept. */

import { html } from "htm/preact";
import { useState } from "preact/hooks";
import { ApiFailure } from "./api.js";
import { claimsOf, expiryOf, saveToken } from "./session.js";

export function SignIn({ notice, onSignedIn }) {
  const [text, setText] = useState("");
  const [error, setError] = useState(undefined);
  const [busy, setBusy] = useState(false);

  const submit = async (event) => {
    event.preventDefault();
    const token = text.trim();
    setError(undefined);
    if (claimsOf(token) === undefined) {
      setError("This is not a token: a token is three parts separated by dots (eyJ…).");
      return;
    }
    const expires = expiryOf(token);
    if (expires !== undefined && expires <= Date.now()) {
      setError(`This token expired on ${new Date(expires).toISOString()}.`);
      return;
    }
    setBusy(true);
    try {
      // Any call the token may make would do; schemas need tables:read, so a 403 still
      // proves the token valid.
      const response = await fetch("/api/v1/schema", {
        headers: { authorization: `Bearer ${token}` },
      });
      if (response.status === 401) {
        const body = await response.json().catch(() => undefined);
        throw new ApiFailure(401, body, "The service refused this token.");
      }
      await response.body?.cancel();
      saveToken(token);
      setText("");
      onSignedIn(token);
    } catch (failure) {
      setError(`The service refused this token: ${failure.message}`);
    } finally {
      setBusy(false);
    }
  };

  return html`<section class="sign-in">
    <h1>Sign in</h1>
    <p>Paste a bearer token. <code>deno task start</code> prints one at the first start;
      <code>deno task token</code> mints more. It is kept in this tab only.</p>
    ${notice && html`<p class="notice" role="status">${notice}</p>`}
    <form onSubmit=${submit}>
      <label for="token">Token</label>
      <textarea id="token" name="token" rows="4" spellcheck="false" autocomplete="off"
        value=${text} onInput=${(e) => setText(e.currentTarget.value)}
        aria-describedby=${error ? "token-error" : undefined}></textarea>
      ${error && html`<p id="token-error" class="failure" role="alert">${error}</p>`}
      <button type="submit" disabled=${busy || text.trim() === ""}>Sign in</button>
    </form>
  </section>`;
}
