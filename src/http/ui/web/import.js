/**
 * The import wizard: drop or pick a CSV, XLSX, XLS, ODS or JSON file (an array of objects,
 * or one object per line), name the table, create it or append to or replace it; a progress
 * bar while the file goes up; the rows that went in, or the refused rows by number (a refused
 * file writes nothing).
 */

import { html } from "htm/preact";
import { useState } from "preact/hooks";
import { API, ApiFailure, count, queryOf, seg } from "./api.js";
import { Failure } from "./dialog.js";
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

/** How the file goes up: the route and the body. JSON goes as `{"data": …}`. */
async function uploadOf(file) {
  if (SHEETS.test(file.name)) return { route: "upload/excel", form: true };
  if (/\.csv$/i.test(file.name) || file.type === "text/csv") {
    return { route: "upload/csv", form: true };
  }
  const head = (await file.slice(0, 256).text()).trimStart();
  if (head.startsWith("[")) {
    // The file is sent as it is, wrapped, never parsed here.
    return {
      route: "upload/json",
      body: new Blob(['{"data":', file, "}"], { type: "application/json" }),
    };
  }
  const lines = (await file.text()).split(/\r?\n/).filter((l) => l.trim() !== "");
  return {
    route: "upload/json",
    body: new Blob(['{"data":[', lines.join(","), "]}"], { type: "application/json" }),
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
  const [result, setResult] = useState(undefined);
  const [error, setError] = useState(undefined);
  const [over, setOver] = useState(false);

  const choose = (chosen) => {
    if (!chosen) return;
    setFile(chosen);
    setResult(undefined);
    setError(undefined);
    if (!table) setTable(tableNameOf(chosen));
  };
  const submit = async (e) => {
    e.preventDefault();
    setError(undefined);
    setResult(undefined);
    setProgress(0);
    try {
      const how = await uploadOf(file);
      let body = how.body;
      if (how.form) {
        body = new FormData();
        body.append("file", file, file.name);
      }
      const query = queryOf([["schema", schema], ["if_exists", mode], [
        "sheet",
        how.route === "upload/excel" ? sheet : "",
      ]]);
      const answer = await send(
        `${API}/table/${seg(table)}/${how.route}${query}`,
        body,
        setProgress,
      );
      setResult(answer);
    } catch (failure) {
      setError(failure);
    } finally {
      setProgress(undefined);
    }
  };

  return html`
    <section class="import">
      <h1>Import a file</h1>
      <form class="stack" onSubmit=${submit}>
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
            <label>Table <input value=${table} onInput=${(e) =>
              setTable(e.currentTarget.value)} required /></label>
            <label>Schema <input value=${schema} onInput=${(e) =>
              setSchema(e.currentTarget.value)} required /></label>
            ${file && SHEETS.test(file.name) &&
              html`<label>Sheet <input value=${sheet} placeholder="first" onInput=${(e) =>
                setSheet(e.currentTarget.value)} /></label>`}
          </div>
          <fieldset class="row"><legend>If the table exists</legend>
            ${MODES.map(([value, text]) =>
              html`
                <label
                  class="check"><input type="radio" name="mode" checked=${mode ===
                    value} onChange=${() => setMode(value)} /> ${text}</label>
              `
            )}
          </fieldset>
          <div class="actions"><button type="submit" class="primary" disabled=${!file || !table ||
            progress !== undefined}>Upload</button></div>
          ${progress !== undefined &&
            html`<label>Uploading <progress value=${progress} max="1">${
              Math.round(progress * 100)
            }%</progress></label>`}
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
