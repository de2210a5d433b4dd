/** A modal dialog: the browser's own <dialog>, so Esc closes it and focus stays inside. */

import { html } from "htm/preact";
import { useEffect, useRef } from "preact/hooks";

let counter = 0;

export function Dialog({ title, onClose, children, wide = false }) {
  const ref = useRef();
  const id = useRef(`dialog-title-${++counter}`);
  useEffect(() => {
    const dialog = ref.current;
    if (!dialog.open) dialog.showModal();
    return () => dialog.open && dialog.close();
  }, []);
  return html`
    <dialog ref=${ref} class=${wide ? "wide" : ""} aria-labelledby=${id.current}
      onCancel=${(e) => {
        e.preventDefault();
        onClose();
      }}>
        <header class="dialog-head">
          <h2 id=${id.current}>${title}</h2>
          <button type="button" class="ghost" onClick=${onClose} aria-label="Close">✕</button>
        </header>
        ${children}
      </dialog>
  `;
}

/** A line saying what went wrong, in the server's words, with its details. */
export function Failure({ error, onReload }) {
  if (!error) return null;
  const details = error.details ?? [];
  return html`<div class="failure" role="alert">
    <p>${error.message}</p>
    ${
    details.length > 0 &&
    html`<ul class="details">${
      details.slice(0, 100).map((d) =>
        html`<li>${
          [
            d.row !== undefined ? `row ${d.row} (0-based)` : undefined,
            d.sheet !== undefined ? `sheet ${d.sheet}` : undefined,
            d.sheet_row !== undefined ? `sheet row ${d.sheet_row}` : undefined,
            d.column !== undefined ? `column ${d.column}` : undefined,
            d.field !== undefined ? d.field : undefined,
          ].filter(Boolean).join(", ")
        }${d.message ? `: ${d.message}` : ""}</li>`
      )
    }</ul>`
  }
    ${onReload && html`<button type="button" onClick=${onReload}>Reload</button>`}
  </div>`;
}
