/**
 * Templates: the list, a template's versions, a side-by-side diff of two versions, and the
 * compatibility verdict of a draft before it is saved (which stores nothing).
 */

import { html } from "htm/preact";
import { useEffect, useState } from "preact/hooks";
import { call, get, seg } from "./api.js";
import { Failure } from "./dialog.js";
import { hrefOf, navigate } from "./view_state.js";

const MODES = [
  "none",
  "backward",
  "backward_transitive",
  "forward",
  "forward_transitive",
  "full",
  "full_transitive",
];

export function TemplatesScreen({ params, scopes }) {
  const name = params.get("name") ?? "";
  const [list, setList] = useState(undefined);
  const [error, setError] = useState(undefined);
  const [search, setSearch] = useState("");
  useEffect(() => {
    get("table_template", [["latest", true], ["order_by", "name_asc"], ["search", search]])
      .then((t) => setList(t.table_templates))
      .catch(setError);
  }, [search]);
  return html`
    <section class="templates">
      <div class="toolbar">
        <h1>Templates</h1>
        <span class="spacer"></span>
        <label>Search <input type="search" value=${search} onInput=${(e) =>
          setSearch(e.currentTarget.value)} /></label>
      </div>
      <${Failure} error=${error} />
      <div class="split">
          <nav aria-label="Templates" class="template-list">
            ${list === undefined
              ? html`<p role="status">Loading…</p>`
              : list.length === 0
              ? html`<p class="muted">No templates.</p>`
              : html`<ul>
          ${
                list.map((t) =>
                  html`<li><a href=${hrefOf("templates", { name: t.name })} aria-current=${
                    t.name === name ? "page" : undefined
                  }>${t.name}</a> <span class="muted">v${t.version}</span></li>`
                )
              }
        </ul>`}
          </nav>
          ${name
            ? html`<${Template} key=${name} name=${name} params=${params} scopes=${scopes} />`
            : html`<p class="muted">Choose a template.</p>`}
        </div>
    </section>
  `;
}

function columnsOf(template) {
  return template?.table_template?.columns ?? [];
}

function Template({ name, params, scopes }) {
  const [versions, setVersions] = useState(undefined);
  const [error, setError] = useState(undefined);
  useEffect(() => {
    get(`table_template/${seg(name)}`).then((t) => setVersions(t.table_templates)).catch(setError);
  }, [name]);
  if (error) return html`<${Failure} error=${error} />`;
  if (!versions) return html`<p role="status">Loading ${name}…</p>`;
  const sorted = [...versions].sort((a, b) => compareVersions(b.version, a.version));
  const left = params.get("left") ?? sorted[1]?.version ?? sorted[0]?.version;
  const right = params.get("right") ?? sorted[0]?.version;
  const go = (change) =>
    navigate(hrefOf("templates", { name, left, right, ...change }), { replace: true });
  const byVersion = (v) => versions.find((t) => t.version === v);
  return html`<div class="template">
    <h2>${name}</h2>
    <table class="list compact">
      <thead><tr><th scope="col">Version</th><th scope="col">Compatibility</th><th scope="col">Created</th><th scope="col">Columns</th></tr></thead>
      <tbody>${
    sorted.map((t) =>
      html`
        <tr>
          <td>${t.version}</td>
          <td>${t.compatibility}</td>
          <td>${t.created_at}</td>
          <td>${columnsOf(t).length}</td>
        </tr>
      `
    )
  }</tbody>
    </table>
    <h3>Compare two versions</h3>
    <div class="row">
      <label>Left <select value=${left} onChange=${(e) => go({ left: e.currentTarget.value })}>${
    sorted.map((t) => html`<option value=${t.version}>${t.version}</option>`)
  }</select></label>
      <label>Right <select value=${right} onChange=${(e) => go({ right: e.currentTarget.value })}>${
    sorted.map((t) => html`<option value=${t.version}>${t.version}</option>`)
  }</select></label>
    </div>
    <${Diff} left=${byVersion(left)} right=${byVersion(right)} />
    ${scopes.has("templates:read") && html`<${Draft} name=${name} latest=${sorted[0]} />`}
  </div>`;
}

function compareVersions(a, b) {
  const [a1, a2] = a.split(".").map(Number);
  const [b1, b2] = b.split(".").map(Number);
  return a1 - b1 || a2 - b2;
}

function describe(column) {
  if (!column) return "";
  return `${column.type}${column.is_nullable === false ? " NOT NULL" : ""}${
    column.default ? ` DEFAULT ${column.default}` : ""
  }`;
}

/** The columns of two versions side by side, matched by name (case-insensitive). */
function Diff({ left, right }) {
  if (!left || !right) return null;
  const names = [];
  for (const c of [...columnsOf(left), ...columnsOf(right)]) {
    if (!names.some((n) => n.toLowerCase() === c.name.toLowerCase())) names.push(c.name);
  }
  const find = (t, n) => columnsOf(t).find((c) => c.name.toLowerCase() === n.toLowerCase());
  return html`
    <table class="list diff">
      <caption class="sr-only">Columns of version ${left.version} and version ${right
        .version}</caption>
      <thead>
        <tr>
          <th scope="col">Column</th>
          <th scope="col">${left.version}</th>
          <th scope="col">${right.version}</th>
          <th scope="col">Change</th>
        </tr>
      </thead>
      <tbody>${names.map((n) => {
        const a = find(left, n);
        const b = find(right, n);
        const change = !a ? "added" : !b ? "removed" : describe(a) !== describe(b) ? "changed" : "";
        return html`
          <tr class=${change}>
            <th scope="row">${n}</th>
            <td>${describe(a)}</td>
            <td>${describe(b)}</td>
            <td>${change}</td>
          </tr>
        `;
      })}</tbody>
    </table>
  `;
}

function Draft({ name, latest }) {
  const [text, setText] = useState(() =>
    JSON.stringify(latest?.table_template ?? { columns: [] }, null, 2)
  );
  const [mode, setMode] = useState(latest?.compatibility ?? "none");
  const [verdict, setVerdict] = useState(undefined);
  const [error, setError] = useState(undefined);
  const check = async (e) => {
    e.preventDefault();
    setVerdict(undefined);
    setError(undefined);
    let definition;
    try {
      definition = JSON.parse(text);
    } catch (parse) {
      setError({ message: `The draft is not JSON: ${parse.message}` });
      return;
    }
    const [major, minor] = (latest?.version ?? "1.0").split(".").map(Number);
    try {
      const { body } = await call("POST", `table_template/${seg(name)}/compatibility`, {
        body: { table_template: definition, version: `${major}.${minor + 1}`, compatibility: mode },
      });
      setVerdict(body);
    } catch (failure) {
      setError(failure);
    }
  };
  return html`<form class="stack" onSubmit=${check}>
    <h3>Check a draft</h3>
    <label for="draft">Draft definition (JSON), checked against the versions before it; nothing is saved</label>
    <textarea id="draft" rows="10" spellcheck="false" value=${text} onInput=${(e) =>
    setText(e.currentTarget.value)}></textarea>
    <label>Compatibility <select value=${mode} onChange=${(e) => setMode(e.currentTarget.value)}>${
    MODES.map((m) => html`<option value=${m}>${m}</option>`)
  }</select></label>
    <div class="actions"><button type="submit">Check compatibility</button></div>
    <${Failure} error=${error} />
    ${
    verdict &&
    html`<div role="status" class=${verdict.is_compatible ? "verdict ok" : "verdict bad"}>
      <p>${verdict.is_compatible ? "Compatible" : "Not compatible"}</p>
      ${
      verdict.details?.length > 0 && html`<ul>${
        verdict.details.map((d) => html`<li>${d.message ?? JSON.stringify(d)}</li>`)
      }</ul>`
    }
    </div>`
  }
  </form>`;
}
