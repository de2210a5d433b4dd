/**
 * One table: a virtual grid over the cursor API, sorted by header clicks (`order=`), filtered
 * by the filter bar (PostgREST operators), its columns chosen (`select=`), read from the
 * first row or from the last (the order reversed). The URL holds the whole view; "Copy as
 * curl" gives the API call that returns the same rows. With `tables:write` and a primary key,
 * cells are edited in place and rows deleted.
 */

import { html } from "htm/preact";
import { useEffect, useMemo, useRef, useState } from "preact/hooks";
import { call, count, curlOf, exactCount, get, seg } from "./api.js";
import { Failure } from "./dialog.js";
import { display, Grid } from "./grid.js";
import { ColumnsEditor } from "./columns_editor.js";
import { hrefOf, navigate } from "./view_state.js";
import { ColumnsDialog, CurlDialog, DeleteDialog, ExportDialog } from "./table_dialogs.js";
import { FilterBar, Profile } from "./table_filters.js";
import { hrefOfView, orderText, parseOrder, quoteName, readParams, viewOf } from "./table_view.js";

const PAGE = 200;

function useDefinition(view, version) {
  const [state, setState] = useState({ loading: true });
  useEffect(() => {
    let live = true;
    setState({ loading: true });
    call("GET", `table/${seg(view.table)}`, { params: [["schema", view.schema]] })
      .then(({ body, response }) =>
        live && setState({ table: body.table, etag: response.headers.get("etag") ?? undefined })
      )
      .catch((error) => live && setState({ error }));
    return () => live = false;
  }, [view.schema, view.table, version]);
  return state;
}

/**
 * The rows of the view, read page by page: by cursor, or, for the last rows of a table
 * without a primary key and without an order, by offsets from its end.
 */
function useRows(view, keys, ready, version) {
  const [state, setState] = useState({ rows: [], hasMore: false, loading: false });
  const generation = useRef(0);
  const key = JSON.stringify([
    view.schema,
    view.table,
    view.order,
    view.select,
    view.end,
    view.filters,
    keys,
    version,
  ]);
  const backwards = view.end && !view.order && keys.length === 0;

  const load = async (from, current, gen) => {
    setState({ ...current, loading: true });
    try {
      let rows;
      let next;
      if (backwards) {
        let offset = from;
        if (offset === undefined) {
          const counted = await get(`table/${seg(view.table)}/records`, [
            ...readParams(view, keys),
            ["limit", 0],
          ]);
          offset = counted.total;
        }
        const start = Math.max(0, offset - PAGE);
        const page = await get(`table/${seg(view.table)}/records`, [
          ...readParams(view, keys),
          ["offset", start],
          ["limit", offset - start],
          ["count", "none"],
        ]);
        rows = page.records.reverse();
        next = start > 0 ? start : null;
      } else {
        const page = await get(`table/${seg(view.table)}/records`, [
          ...readParams(view, keys),
          ["limit", PAGE],
          ["count", "none"],
          ["after", from ?? ""],
        ]);
        // An empty `after` asks for the first page; the query string leaves empty values out.
        rows = page.records;
        next = page.next;
      }
      if (gen !== generation.current) return;
      setState({
        rows: [...current.rows, ...rows],
        next,
        hasMore: next !== null && next !== undefined,
        loading: false,
      });
    } catch (error) {
      if (gen === generation.current) {
        setState({ ...current, loading: false, hasMore: false, error });
      }
    }
  };
  useEffect(() => {
    const gen = ++generation.current;
    const empty = { rows: [], hasMore: false, loading: false };
    setState(empty);
    if (ready) load(undefined, empty, gen);
  }, [key, ready]);
  const more = () => {
    if (state.loading || !state.hasMore) return;
    load(state.next, state, generation.current);
  };
  const replace = (index, row) =>
    setState((s) => ({ ...s, rows: s.rows.map((r, i) => i === index ? row : r) }));
  return { ...state, more, replace };
}

/**
 * The rows the view's filters let through: the engine's estimate at once, then the exact
 * count when it comes within the time limit (else the estimate stays, marked as one).
 */
function useTotal(view, ready, version) {
  const [total, setTotal] = useState(undefined);
  useEffect(() => {
    if (!ready) return;
    let live = true;
    setTotal(undefined);
    const path = `table/${seg(view.table)}/records`;
    const params = [["schema", view.schema], ...view.filters];
    get(path, [...params, ["limit", 0], ["count", "estimated"]])
      .then((page) => {
        if (!live) return;
        setTotal({ value: page.total, estimated: page.estimated === true });
        if (page.estimated !== true) return;
        return exactCount(path, params).then((value) => {
          if (live && value !== undefined) setTotal({ value, estimated: false });
        });
      })
      .catch(() => live && setTotal({ value: "?", estimated: false }));
    return () => live = false;
  }, [view.schema, view.table, JSON.stringify(view.filters), ready, version]);
  return total;
}

/** Bars of a column's histogram in its profile. */
const BINS = 12;
/** Most frequent values of a text column in its profile. */
const TOP = 5;

function useProfiles(view, ready) {
  const [profiles, setProfiles] = useState(undefined);
  useEffect(() => {
    if (!ready || !view.profile) return setProfiles(undefined);
    let live = true;
    get(`table/${seg(view.table)}/summary`, [
      ["schema", view.schema],
      ["select", view.select],
      ["bins", BINS],
      ["top", TOP],
      ...view.filters,
    ])
      .then((summary) => {
        if (!live) return;
        setProfiles({
          rows: summary.rows,
          columns: Object.fromEntries(summary.columns.map((c) => [c.name, c])),
        });
      })
      .catch((error) => live && setProfiles({ error }));
    return () => live = false;
  }, [view.profile, view.schema, view.table, view.select, JSON.stringify(view.filters), ready]);
  return profiles;
}

/** A cell's text as the value sent: empty is null where null is allowed; JSON kinds parsed. */
function valueOf(text, column) {
  if (text === "" && column.is_nullable) return null;
  if (/^(JSON|STRUCT|MAP|jsonb?)|\[\]$/i.test(column.type)) {
    try {
      return JSON.parse(text);
    } catch {
      return text;
    }
  }
  return text;
}

export function TableScreen({ params, scopes }) {
  const view = useMemo(() => viewOf(params), [params.toString()]);
  const [version, setVersion] = useState(0);
  const definition = useDefinition(view, version);
  const table = definition.table;
  const keys = table?.constraints?.primary_key?.columns ?? [];
  const ready = table !== undefined;
  const rows = useRows(view, keys, ready, version);
  const total = useTotal(view, ready, version);
  const summary = useProfiles(view, ready);
  const [selection, setSelection] = useState(new Set());
  const [dialog, setDialog] = useState(undefined);
  const [error, setError] = useState(undefined);
  const canWrite = scopes.has("tables:write");
  const editable = canWrite && keys.length > 0;

  useEffect(() => setSelection(new Set()), [rows.rows.length === 0]);

  if (!view.table) {
    return html`<p>No table named. <a href=${hrefOf("tables")}>See the tables</a>.</p>`;
  }
  if (definition.error) return html`<${Failure} error=${definition.error} />`;
  if (!table) return html`<p role="status">Loading ${view.table}…</p>`;

  const go = (change) => navigate(hrefOfView({ ...view, ...change }));
  const chosen = view.select ? parseOrder(view.select).map((k) => k.name) : undefined;
  const columns = chosen
    ? chosen.map((name) =>
      table.columns.find((c) => c.name.toLowerCase() === name.toLowerCase()) ?? { name, type: "" }
    )
    : table.columns;
  const sort = {};
  for (const key of parseOrder(view.order)) {
    sort[key.name] = key.rest.includes("desc") ? "desc" : "asc";
  }
  const onSort = (name) => {
    const current = sort[name];
    const next = current === undefined ? ".asc" : current === "asc" ? ".desc" : undefined;
    go({ order: next ? orderText([{ name, rest: next }]) : "" });
  };
  const firstPage = [...readParams(view, keys), ["limit", 100], ["after", ""]];
  const curl = curlOf("GET", `table/${seg(view.table)}/records`, firstPage);

  const onEdit = async (index, name, text) => {
    const row = rows.rows[index];
    const column = table.columns.find((c) => c.name === name);
    const where = keys.map((k) => [k, `eq.${display(row[k])}`]);
    setError(undefined);
    try {
      await call("PATCH", `table/${seg(view.table)}/records`, {
        params: [["schema", view.schema], ...where],
        body: { [name]: valueOf(text, column) },
      });
      // Read the row back: what is shown is what was stored, cast by the server.
      const changedKey = keys.includes(name);
      const again = await get(`table/${seg(view.table)}/records`, [
        ["schema", view.schema],
        ["select", view.select],
        ...(changedKey ? keys.map((k) => [k, `eq.${k === name ? text : display(row[k])}`]) : where),
        ["limit", 1],
        ["count", "none"],
      ]);
      if (again.records[0]) rows.replace(index, again.records[0]);
    } catch (failure) {
      setError(failure);
    }
  };
  const toggle = (index) => {
    const next = new Set(selection);
    if (next.has(index)) next.delete(index);
    else next.add(index);
    setSelection(next);
  };
  const reload = () => {
    setError(undefined);
    setSelection(new Set());
    setVersion((v) => v + 1);
  };

  return html`<section class="table-screen">
    <div class="toolbar">
      <h1><a href=${hrefOf("tables")} class="muted">${view.schema}</a> / ${view.table}</h1>
      <span class="muted" role="status">${
    total === undefined
      ? "counting rows…"
      : `${total.estimated ? "≈" : ""}${count(total.value)} ${
        view.filters.length ? "matching " : ""
      }rows${total.estimated ? " (estimated; counting…)" : ""}`
  }</span>
      <span class="spacer"></span>
      <button type="button" aria-pressed=${view.end} onClick=${() => go({ end: !view.end })}>${
    view.end ? "First rows" : "Last rows"
  }</button>
      <button type="button" aria-pressed=${view.profile} onClick=${() =>
    go({ profile: !view.profile })}>Profiles</button>
      <button type="button" onClick=${() => setDialog({ kind: "columns" })}>Columns</button>
      <button type="button" onClick=${() => setDialog({ kind: "curl" })}>Copy as curl</button>
      <button type="button" onClick=${() => setDialog({ kind: "export" })}>Export</button>
      ${
    canWrite && html`
      ${selection.size > 0 && html`<button type="button" class="danger" onClick=${() =>
        setDialog({ kind: "delete-selected" })}>Delete ${selection.size} selected</button>`}
      ${keys.length > 0 && html`<button type="button" class="danger" onClick=${() =>
        setDialog({ kind: "delete-matching" })}>Delete ${
        view.filters.length ? "matching" : "all"
      } rows</button>`}
      <button type="button" onClick=${() =>
        setDialog({ kind: "edit-columns" })}>Edit columns</button>
      <button type="button" class="danger" onClick=${() =>
        setDialog({ kind: "drop" })}>Drop table</button>
    `
  }
    </div>
    <${FilterBar} columns=${table.columns} filters=${view.filters} onChange=${(filters) =>
    go({ filters })} />
    ${
    keys.length === 0 &&
    html`<p class="note" role="note">This table has no primary key, so no column names one row:
      its rows are shown in insertion order${canWrite ? ", and its cells cannot be edited" : ""}.${
      view.end ? " Its last rows are read by offset from the end." : ""
    }</p>`
  }
    ${
    !canWrite &&
    html`<p class="note" role="note">Read only: this token has no <code>tables:write</code> scope.</p>`
  }
    ${
    view.end &&
    html`<p class="note" role="note">Showing the last rows first (the order reversed).</p>`
  }
    <${Failure} error=${error} onReload=${error?.status === 409 ? reload : undefined} />
    <${Failure} error=${rows.error} />
    ${summary?.error && html`<${Failure} error=${summary.error} />`}
    <${Grid} label=${`Rows of ${view.table}`} columns=${columns} rows=${rows.rows}
      hasMore=${rows.hasMore} loading=${rows.loading} onNeedMore=${rows.more}
      sort=${sort} onSort=${onSort}
      editable=${editable} onEdit=${onEdit}
      selection=${editable ? selection : undefined} onToggle=${toggle}
      profiles=${summary?.columns}
      renderProfile=${(column, p) =>
    html`
      <${Profile} column=${column} figures=${p} rows=${summary?.rows}
        onFilter=${(values) =>
          go({ filters: [...view.filters, ...values.map((value) => [column.name, value])] })} />
    `} />
    ${rows.loading && html`<p class="muted" role="status">Loading rows…</p>`}
    ${
    dialog?.kind === "edit-columns" && html`
      <${ColumnsEditor} schema=${view.schema} table=${table}
        etag=${definition.etag} onClose=${() => setDialog(undefined)}
        onDone=${() => {
          setDialog(undefined);
          reload();
        }}
        onReload=${() => {
          setDialog(undefined);
          reload();
        }} />
    `
  }
    ${
    dialog?.kind === "export" && html`<${ExportDialog} view=${view} onClose=${() =>
      setDialog(undefined)} />`
  }
    ${
    dialog?.kind === "curl" && html`<${CurlDialog} curl=${curl} onClose=${() =>
      setDialog(undefined)} />`
  }
    ${
    dialog?.kind === "columns" && html`
      <${ColumnsDialog} columns=${table.columns} chosen=${chosen}
        onClose=${() => setDialog(undefined)}
        onApply=${(names) => {
          setDialog(undefined);
          go({ select: names ? names.map(quoteName).join(",") : "" });
        }} />
    `
  }
    ${
    dialog?.kind === "delete-selected" && html`
      <${DeleteDialog} title=${`Delete ${selection.size} rows`}
        counted=${selection.size} onClose=${() => setDialog(undefined)}
        onDelete=${async () => {
          for (const index of [...selection].sort((a, b) => a - b)) {
            const row = rows.rows[index];
            await call("DELETE", `table/${seg(view.table)}/records`, {
              params: [["schema", view.schema], ...keys.map((k) => [k, `eq.${display(row[k])}`])],
            });
          }
          setDialog(undefined);
          reload();
        }} />
    `
  }
    ${
    dialog?.kind === "delete-matching" && html`
      <${DeleteDialog}
        title=${view.filters.length ? "Delete the matching rows" : "Delete every row"}
        counting=${() =>
          get(`table/${seg(view.table)}/records`, [["schema", view.schema], ...view.filters, [
            "limit",
            0,
          ]]).then((p) => p.total)}
        onClose=${() => setDialog(undefined)}
        onDelete=${async () => {
          await call("DELETE", `table/${seg(view.table)}/records`, {
            params: [["schema", view.schema], ...view.filters, [
              "all",
              view.filters.length === 0 ? "true" : "",
            ]],
          });
          setDialog(undefined);
          reload();
        }} />
    `
  }
    ${
    dialog?.kind === "drop" && html`
      <${DeleteDialog} title=${`Drop table ${view.table}`} counted=${total?.value}
        what="table" onClose=${() => setDialog(undefined)}
        onDelete=${async () => {
          await call("DELETE", `table/${seg(view.table)}`, { params: [["schema", view.schema]] });
          navigate(hrefOf("tables"));
        }} />
    `
  }
  </section>`;
}
