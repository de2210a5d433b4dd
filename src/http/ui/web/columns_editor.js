/**
 * Changing a table's columns: add, rename, retype, drop. Every change is previewed first by
 * `PUT /table/{name}?dry_run=true` (the table as it would be, the list of changes, the rows
 * that would not fit, nothing changed), then applied with `If-Match`, so a change that meets
 * another one is refused (409) and offers to read the table again.
 */

import { html } from "htm/preact";
import { useState } from "preact/hooks";
import { call, seg } from "./api.js";
import { Dialog, Failure } from "./dialog.js";
import { display } from "./grid.js";

function describe(change) {
  const what = change.change.replaceAll("_", " ");
  const about = change.column ?? change.constraint ?? "";
  const from = change.from === undefined ? "" : display(change.from);
  const to = change.to === undefined ? "" : display(change.to);
  return `${what}${about ? ` ${about}` : ""}${
    from || to ? `: ${from}${from && to ? " → " : ""}${to}` : ""
  }`;
}

/** The dialog; `table` and `etag` as read, `onDone` after a change, `onReload` after a 409. */
export function ColumnsEditor({ schema, table, etag, onClose, onDone, onReload }) {
  const [columns, setColumns] = useState(() => table.columns.map((c) => ({ ...c, drop: false })));
  const [preview, setPreview] = useState(undefined);
  const [error, setError] = useState(undefined);
  const [busy, setBusy] = useState(false);

  const change = (i, patch) => {
    setPreview(undefined);
    setColumns(columns.map((c, j) => j === i ? { ...c, ...patch } : c));
  };
  const wanted = () => ({
    table: {
      columns: columns.filter((c) => !c.drop).map((c) => ({
        id: c.id,
        name: c.name,
        type: c.type,
        is_nullable: c.is_nullable,
        default: c.default || null,
      })),
    },
  });
  const put = (dryRun) =>
    call("PUT", `table/${seg(table.name)}`, {
      params: [["schema", schema], ["dry_run", dryRun ? "true" : ""]],
      headers: etag ? { "if-match": etag } : {},
      body: wanted(),
    });
  const run = async (dryRun) => {
    setBusy(true);
    setError(undefined);
    try {
      const { body } = await put(dryRun);
      if (dryRun) setPreview(body);
      else onDone();
    } catch (failure) {
      setPreview(undefined);
      setError(failure);
    } finally {
      setBusy(false);
    }
  };
  const stale = error?.status === 409;
  const fits = preview && preview.errors.length === 0 && preview.changes.length > 0;

  return html`<${Dialog} title=${`Columns of ${table.name}`} onClose=${onClose} wide>
    <table class="list compact">
      <thead><tr><th scope="col">Column</th><th scope="col">Type</th><th scope="col">Nullable</th><th scope="col">Default</th><th scope="col">Drop</th></tr></thead>
      <tbody>${
    columns.map((c, i) => {
      const label = c.id === undefined
        ? `new column ${i + 1}`
        : `column ${table.columns.find((t) => t.id === c.id)?.name}`;
      return html`
        <tr>
          <td><input aria-label=${`Name of ${label}`} value=${c.name} disabled=${c.drop}
                    onInput=${(e) => change(i, { name: e.currentTarget.value })} /></td>
          <td><input aria-label=${`Type of ${label}`} value=${c.type} disabled=${c.drop}
                    onInput=${(e) => change(i, { type: e.currentTarget.value })} /></td>
          <td><input type="checkbox" aria-label=${`${label} may be null`} checked=${c
            .is_nullable} disabled=${c.drop}
                    onChange=${(e) => change(i, { is_nullable: e.currentTarget.checked })} /></td>
          <td><input aria-label=${`Default of ${label}`} value=${c.default ?? ""} disabled=${c.drop}
                    onInput=${(e) => change(i, { default: e.currentTarget.value })} /></td>
          <td><input type="checkbox" aria-label=${`Drop ${label}`} checked=${c.drop}
                    onChange=${(e) => change(i, { drop: e.currentTarget.checked })} /></td>
        </tr>
      `;
    })
  }</tbody>
    </table>
    <div class="actions">
      <button type="button" onClick=${() => {
    setPreview(undefined);
    setColumns([...columns, {
      name: "",
      type: "VARCHAR",
      is_nullable: true,
      default: null,
      drop: false,
    }]);
  }}>Add column</button>
      <span class="spacer"></span>
      <button type="button" disabled=${busy} onClick=${() => run(true)}>Preview changes</button>
      <button type="button" class="primary" disabled=${busy || !fits} onClick=${() =>
    run(false)}>Apply changes</button>
    </div>
    ${
    preview && html`<section class="preview" aria-label="Preview of the changes" role="status">
      ${
      preview.changes.length === 0
        ? html`<p>No change.</p>`
        : html`<ul>${preview.changes.map((c) => html`<li>${describe(c)}</li>`)}</ul>`
    }
      ${
      preview.errors.length > 0 && html`
        <${Failure} error=${{
          message: preview.message ?? "Rows would not fit",
          details: preview.errors,
        }} />
        <p class="note">Nothing was changed; the rows above would not fit.</p>
      `
    }
    </section>`
  }
    <${Failure} error=${error} onReload=${stale ? onReload : undefined} />
    ${
    stale &&
    html`<p class="note">The table changed since it was read: reload it, then make the change again.</p>`
  }
  <//>`;
}
