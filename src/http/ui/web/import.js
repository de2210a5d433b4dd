/**
 * The import wizard: drop or pick a CSV, XLSX, XLS, ODS or JSON file (an array of objects,
 * or one object per line), name the table, create it or append to or replace it (renaming and
 * retyping the columns it makes, or choosing the columns its headers go into); a progress
 * bar while the file goes up; the rows that went in, or the refused rows by number (a refused
 * file writes nothing).
 */

import { html } from "htm/preact";
import { useState } from "preact/hooks";
import { API, ApiFailure, count, queryOf, seg } from "./api.js";
import { Failure } from "./dialog.js";
import { Grid } from "./grid.js";
import { savedToken } from "./session.js";
import { hrefOf } from "./view_state.js";

const SHEETS = /\.(xlsx|xlsm|xlsb|xls|ods)$/i;
const MODES = [["fail", "create a new table"], ["append", "append to the table"], [
  "replace",
  "replace the table",
]];

/** A table name made from a file name. */
function tableNameOf(file) {
  const base = file.name.replace(/\.[^.]*$/, "").replace(/[^A-Za-z0-9_]/g, "_").slice(0, 63);
  return /^[A-Za-z_]/.test(base) ? base : `t_${base}`.slice(0, 63);
}

/**
 * How the file goes up: the route and the body, with the columns renamed (`headers`, CSV and
 * sheets) and typed (`table`) as the person chose. JSON goes as `{"table"?, "data": …}`.
 */
async function uploadOf(file, { definition, headers }) {
  const spreadsheet = SHEETS.test(file.name);
  if (spreadsheet || /\.csv$/i.test(file.name) || file.type === "text/csv") {
    const form = new FormData();
    const part = {};
    if (definition) part.table = definition;
    if (headers && Object.keys(headers).length > 0) part.headers = headers;
    if (Object.keys(part).length > 0) {
      form.append("body", new Blob([JSON.stringify(part)], { type: "application/json" }));
    }
    form.append("file", file, file.name);
    return { route: spreadsheet ? "upload/excel" : "upload/csv", body: form, renames: true };
  }
  const table = definition ? `"table":${JSON.stringify(definition)},` : "";
  const head = (await file.slice(0, 256).text()).trimStart();
  if (head.startsWith("[")) {
    // The file is sent as it is, wrapped, never parsed here.
    return {
      route: "upload/json",
      body: new Blob([`{${table}"data":`, file, "}"], { type: "application/json" }),
      renames: false,
    };
  }
  const lines = (await file.text()).split(/\r?\n/).filter((l) => l.trim() !== "");
  return {
    route: "upload/json",
    body: new Blob([`{${table}"data":[`, lines.join(","), "]}"], { type: "application/json" }),
    renames: false,
  };
}

/** Sends `body` with progress reports (fetch reports none for uploads). */
function send(url, body, onProgress) {
  return new Promise((resolve, reject) => {
    const request = new XMLHttpRequest();
    request.open("POST", url);
    request.setRequestHeader("authorization", `Bearer ${savedToken()}`);
    request.upload.onprogress = (e) => e.lengthComputable && onProgress(e.loaded / e.total);
    request.onload = () => {
      let parsed;
      try {
        parsed = JSON.parse(request.responseText);
      } catch {
        parsed = undefined;
      }
      if (request.status >= 200 && request.status < 300) resolve(parsed);
      else reject(new ApiFailure(request.status, parsed));
    };
    request.onerror = () => reject(new ApiFailure(0, undefined, "The upload was cut off."));
    request.send(body);
  });
}

export function ImportScreen({ params }) {
  const [file, setFile] = useState(undefined);
  const [table, setTable] = useState(params.get("table") ?? "");
  const [schema, setSchema] = useState(params.get("schema") || "public");
  const [mode, setMode] = useState("fail");
  const [sheet, setSheet] = useState("");
  const [progress, setProgress] = useState(undefined);
  const [preview, setPreview] = useState(undefined);
  const [edits, setEdits] = useState(undefined);
  // On append: the file's headers and the table's columns they go into.
  const [matches, setMatches] = useState(undefined);
  const [result, setResult] = useState(undefined);
  const [error, setError] = useState(undefined);
  const [over, setOver] = useState(false);

  const reset = () => {
    setPreview(undefined);
    setEdits(undefined);
    setMatches(undefined);
    setResult(undefined);
    setError(undefined);
  };
  const choose = (chosen) => {
    if (!chosen) return;
    setFile(chosen);
    reset();
    if (!table) setTable(tableNameOf(chosen));
  };
  // What the person changed of the columns the file makes: new names (as a mapping of the
  // file's headers) and new types (as a definition), for a table the upload creates; on
  // append, the columns the headers go into.
  const changes = () => {
    if (mode === "append") {
      const chosen = (matches?.rows ?? []).filter((m) => m.column && m.column !== m.header);
      return { headers: Object.fromEntries(chosen.map((m) => [m.header, m.column])) };
    }
    if (!edits) return {};
    const headers = Object.fromEntries(
      edits.filter((e) => e.name !== e.header).map((e) => [e.header, e.name]),
    );
    const retyped = edits.some((e) => e.type !== e.inferred);
    return {
      headers,
      definition: retyped
        ? { columns: edits.map((e) => ({ name: e.name, type: e.type })) }
        : undefined,
    };
  };
  const upload = async (dryRun) => {
    setError(undefined);
    setResult(undefined);
    setProgress(0);
    try {
      const how = await uploadOf(file, changes());
      const query = queryOf([
        ["schema", schema],
        ["if_exists", mode],
        ["sheet", how.route === "upload/excel" ? sheet : ""],
        ["dry_run", dryRun ? "true" : ""],
      ]);
      const answer = await send(
        `${API}/table/${seg(table)}/${how.route}${query}`,
        how.body,
        setProgress,
      );
      if (dryRun) {
        setPreview(answer);
        if (mode === "append" && !matches && answer.headers && answer.table && how.renames) {
          const columns = answer.table.columns.map((c) => c.name);
          const columnOf = (header) =>
            columns.find((c) => c === header) ??
              columns.find((c) => c.toLowerCase() === header.toLowerCase()) ?? "";
          setMatches({
            columns,
            rows: answer.headers.map((header) => ({ header, column: columnOf(header) })),
          });
        }
        if (!edits && answer.table && how.renames) {
          setEdits(
            answer.table.columns.map((c) => ({
              header: c.name,
              name: c.name,
              type: c.type,
              inferred: c.type,
            })),
          );
        }
      } else {
        setPreview(undefined);
        setResult(answer);
      }
    } catch (failure) {
      setError(failure);
    } finally {
      setProgress(undefined);
    }
  };
  const edit = (i, patch) => {
    setPreview(undefined);
    setEdits(edits.map((e, j) => j === i ? { ...e, ...patch } : e));
  };
  const match = (i, column) => {
    setPreview(undefined);
    setMatches({
      ...matches,
      rows: matches.rows.map((m, j) => j === i ? { ...m, column } : m),
    });
  };
  const refused = preview && preview.errors.length > 0;

  return html`
    <section class="import">
      <h1>Import a file</h1>
      <form class="stack" onSubmit=${(e) => {
        e.preventDefault();
        upload(false);
      }}>
          <div class=${`drop${over ? " over" : ""}`}
            onDragOver=${(e) => {
              e.preventDefault();
              setOver(true);
            }}
            onDragLeave=${() => setOver(false)}
            onDrop=${(e) => {
              e.preventDefault();
              setOver(false);
              choose(e.dataTransfer.files[0]);
            }}>
            <label for="import-file">Drop a file here, or choose one (CSV, XLSX, XLS, ODS, JSON)</label>
            <input id="import-file" type="file" accept=".csv,.xlsx,.xlsm,.xlsb,.xls,.ods,.json,.ndjson,.jsonl"
              onChange=${(e) => choose(e.currentTarget.files[0])} />
            ${file &&
              html`<p>${file.name} <span class="muted">(${count(file.size)} bytes)</span></p>`}
          </div>
          <div class="row">
            <label>Table <input value=${table} onInput=${(e) => {
              reset();
              setTable(e.currentTarget.value);
            }} required /></label>
            <label>Schema <input value=${schema} onInput=${(e) => {
              reset();
              setSchema(e.currentTarget.value);
            }} required /></label>
            ${file && SHEETS.test(file.name) &&
              html`<label>Sheet <input value=${sheet} placeholder="first (name or number from 0)"
          onInput=${(e) => {
                reset();
                setSheet(e.currentTarget.value);
              }} /></label>`}
          </div>
          <fieldset class="row"><legend>If the table exists</legend>
            ${MODES.map(([value, text]) =>
              html`<label class="check"><input type="radio" name="mode" checked=${mode === value}
          onChange=${() => {
                reset();
                setMode(value);
              }} /> ${text}</label>`
            )}
          </fieldset>
          ${edits && mode !== "append" && html`
            <table class="list compact">
              <caption>Columns the file makes: rename them or change their types, then preview again</caption>
              <thead>
                <tr>
                  <th scope="col">In the file</th>
                  <th scope="col">Column</th>
                  <th scope="col">Type</th>
                </tr>
              </thead>
              <tbody>${edits.map((e, i) =>
                html`
                  <tr>
                    <th scope="row">${e.header}</th>
                    <td><input aria-label=${`Column name for ${e.header}`} value=${e
                      .name} onInput=${(ev) => edit(i, { name: ev.currentTarget.value })} /></td>
                    <td><input aria-label=${`Type of ${e.header}`} value=${e.type} onInput=${(ev) =>
                      edit(i, { type: ev.currentTarget.value })} /></td>
                  </tr>
                `
              )}</tbody>
            </table>
          `}
          ${matches && mode === "append" && html`
            <table class="list compact">
              <caption>The file's columns and the table's columns they go into: choose, then preview again</caption>
              <thead>
                <tr>
                  <th scope="col">In the file</th>
                  <th scope="col">Into column</th>
                </tr>
              </thead>
              <tbody>${matches.rows.map((m, i) =>
                html`
                  <tr>
                    <th scope="row">${m.header}</th>
                    <td><select aria-label=${`Column for ${m.header}`} value=${m.column}
                      onChange=${(ev) => match(i, ev.currentTarget.value)}>
                      <option value="">(no such column)</option>
                      ${matches.columns.map((c) => html`<option value=${c}>${c}</option>`)}
                    </select></td>
                  </tr>
                `
              )}</tbody>
            </table>
          `}
          <div class="actions">
            <button type="button" disabled=${!file || !table ||
              progress !== undefined} onClick=${() => upload(true)}>Preview</button>
            <button type="submit" class="primary" disabled=${!file || !table ||
              progress !== undefined || refused}>Import</button>
          </div>
          ${progress !== undefined &&
            html`<label>Uploading <progress value=${progress} max="1">${
              Math.round(progress * 100)
            }%</progress></label>`}
          ${preview && html`<section class="stack preview" aria-label="Preview">
        <p role="status">${
            refused
              ? "The file would be refused; nothing was written."
              : `Preview, nothing written yet: ${count(preview.inserted)} rows would go into ${
                preview.table?.name ?? table
              }.`
          }</p>
        ${
            refused &&
            html`<${Failure} error=${{
              message: preview.message ?? "Rows would be refused",
              details: preview.errors,
            }} />`
          }
        ${
            !refused && preview.table && html`
              <${Grid} label="Preview rows"
                columns=${preview.table.columns} rows=${preview.records} />
            `
          }
      </section>`}
          <${Failure} error=${error} />
          ${error && html`<p class="note">Nothing was written.</p>`}
          ${result &&
            html`<p role="status" class="verdict ok">${count(result.inserted)} rows went into
        <a href=${
              hrefOf("table", { schema: result.table.schema, table: result.table.name })
            }>${result.table.name}</a>.</p>`}
        </form>
    </section>
  `;
}
