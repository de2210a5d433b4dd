/**
 * The table screen's dialogs: the curl call behind the view, the columns shown, a deletion
 * after its count is shown, and an export of the view by a single-use download link.
 */

import { html } from "htm/preact";
import { useEffect, useState } from "preact/hooks";
import { call, count, seg } from "./api.js";
import { Dialog, Failure } from "./dialog.js";

export function CurlDialog({ curl, onClose }) {
  const [copied, setCopied] = useState("");
  const copy = async () => {
    try {
      await navigator.clipboard.writeText(curl);
      setCopied("Copied. Set TOKEN to your token first.");
    } catch {
      setCopied("The browser did not allow copying: select the text instead.");
    }
  };
  return html`
    <${Dialog} title="The API call behind this view" onClose=${onClose} wide>
      <p>The first page of these rows; its answer's <code>next</code> is the cursor of the next page.</p>
      <label for="curl-text">curl</label>
      <textarea id="curl-text" readonly rows="4" value=${curl} data-curl></textarea>
      <div
        class="actions"><span role="status">${copied}</span><button type="button" onClick=${copy}>Copy</button></div>
      <//>
  `;
}

export function ColumnsDialog({ columns, chosen, onClose, onApply }) {
  const [picked, setPicked] = useState(() => new Set(chosen ?? columns.map((c) => c.name)));
  const flip = (name) => {
    const next = new Set(picked);
    if (next.has(name)) next.delete(name);
    else next.add(name);
    setPicked(next);
  };
  const names = columns.map((c) => c.name).filter((n) => picked.has(n));
  return html`
    <${Dialog} title="Columns shown" onClose=${onClose}>
      <fieldset class="stack"><legend>Columns</legend>
          ${columns.map((c) =>
            html`
              <label
                class="check"><input type="checkbox" checked=${picked.has(c.name)} onChange=${() =>
                  flip(c.name)} /> ${c.name} <span class="muted">${c.type}</span></label>
            `
          )}
        </fieldset>
      <div class="actions">
        <button type="button" onClick=${() => onApply(undefined)}>All columns</button>
        <button type="button" disabled=${names.length === 0} onClick=${() =>
          onApply(names.length === columns.length ? undefined : names)}>Show these</button>
      </div>
      <//>
  `;
}

export function DeleteDialog({ title, counted, counting, what = "rows", onClose, onDelete }) {
  const [n, setN] = useState(counted);
  const [error, setError] = useState(undefined);
  const [busy, setBusy] = useState(false);
  useEffect(() => {
    if (counting) counting().then(setN).catch(setError);
  }, []);
  return html`
    <${Dialog} title=${title} onClose=${onClose}>
      <p role="status">${n === undefined
        ? "Counting…"
        : what === "table"
        ? `The table and its ${count(n)} rows will be gone.`
        : `${count(n)} rows will be deleted.`} This cannot be undone.</p>
      <${Failure} error=${error} />
      <div class="actions">
        <button type="button" onClick=${onClose}>Cancel</button>
        <button type="button" class="danger" disabled=${n === undefined ||
          busy} onClick=${async () => {
          setBusy(true);
          try {
            await onDelete();
          } catch (failure) {
            setError(failure);
            setBusy(false);
          }
        }}>Delete</button>
      </div>
      <//>
  `;
}

const FORMATS = [["csv", "CSV"], ["ndjson", "NDJSON"], ["json", "JSON"], ["parquet", "Parquet"]];

/**
 * Every row of the view (its filters, order and columns) to a file, streamed by the server
 * straight to the browser's download: a single-use ticket, asked for with the token, is the
 * only credential the download link carries.
 */
export function ExportDialog({ view, onClose }) {
  const [format, setFormat] = useState("csv");
  const [error, setError] = useState(undefined);
  const [started, setStarted] = useState(false);
  const download = async () => {
    setError(undefined);
    try {
      const { body } = await call("POST", `table/${seg(view.table)}/records/${format}/ticket`, {
        params: [
          ["schema", view.schema],
          ["select", view.select],
          ["order", view.order],
          ["timezone_offset", String(-new Date().getTimezoneOffset() / 60)],
          ...view.filters,
        ],
      });
      const link = document.createElement("a");
      link.href = body.url;
      document.body.append(link);
      link.click();
      link.remove();
      setStarted(true);
    } catch (failure) {
      setError(failure);
    }
  };
  return html`
    <${Dialog} title=${`Export ${view.table}`} onClose=${onClose}>
      <p>Every row of this view (its filters, order and columns), written by the server straight to a file.</p>
      <fieldset class="row"><legend>Format</legend>
          ${FORMATS.map(([value, name]) =>
            html`<label class="check"><input type="radio" name="export-format"
        checked=${format === value} onChange=${() => setFormat(value)} /> ${name}</label>`
          )}
        </fieldset>
      <${Failure} error=${error} />
      <div class="actions">
        <span role="status">${started ? "The download has begun." : ""}</span>
        <button type="button" class="primary" onClick=${download}>Download</button>
      </div>
      <//>
  `;
}
