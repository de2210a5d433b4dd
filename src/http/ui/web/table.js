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
import { Dialog, Failure } from "./dialog.js";
import { display, Grid } from "./grid.js";
import { ColumnsEditor } from "./columns_editor.js";
import { hrefOf, navigate } from "./view_state.js";

const PAGE = 200;
const OPERATORS = ["eq", "neq", "gt", "gte", "lt", "lte", "like", "ilike", "in", "is"];
const FILTER_PREFIX = "f.";

/** A column name as `select=` and `order=` take it: quoted when it needs to be. */
export function quoteName(name) {
  return /^[A-Za-z_][A-Za-z0-9_ ]*$/.test(name) && name.trim() === name
    ? name
    : `"${name.replaceAll('"', '""')}"`;
}

/** The keys of an `order=` text: [{name, rest}] where rest is ".desc.nullslast" or "". */
export function parseOrder(text) {
  const keys = [];
  let i = 0;
  while (i < text.length) {
    let name = "";
    if (text[i] === '"') {
      i++;
      while (i < text.length) {
        if (text[i] === '"' && text[i + 1] === '"') {
          name += '"';
          i += 2;
        } else if (text[i] === '"') {
          i++;
          break;
        } else name += text[i++];
      }
    } else {
      while (i < text.length && text[i] !== "." && text[i] !== ",") name += text[i++];
    }
    let rest = "";
    while (i < text.length && text[i] !== ",") rest += text[i++];
    i++;
    keys.push({ name, rest });
  }
  return keys;
}

function orderText(keys) {
  return keys.map((k) => `${quoteName(k.name)}${k.rest}`).join(",");
}

/** The same order read from its other end. */
export function reversedOrder(text) {
  return orderText(
    parseOrder(text).map(({ name, rest }) => {
      const words = rest.split(".").filter(Boolean);
      const direction = words.includes("desc") ? "asc" : "desc";
      const nulls = words.includes("nullsfirst")
        ? ".nullslast"
        : words.includes("nullslast")
        ? ".nullsfirst"
        : "";
      return { name, rest: `.${direction}${nulls}` };
    }),
  );
}

/** The view the URL describes. */
function viewOf(params) {
  const filters = [];
  for (const [key, value] of params) {
    if (key.startsWith(FILTER_PREFIX)) filters.push([key.slice(FILTER_PREFIX.length), value]);
  }
  return {
    schema: params.get("schema") || "public",
    table: params.get("table") ?? "",
    order: params.get("order") ?? "",
    select: params.get("select") ?? "",
    end: params.get("end") === "1",
    profile: params.get("profile") === "1",
    filters,
  };
}

/** The URL of a view. */
function hrefOfView(view) {
  return hrefOf("table", [
    ["schema", view.schema],
    ["table", view.table],
    ["order", view.order],
    ["select", view.select],
    ["end", view.end ? "1" : ""],
    ["profile", view.profile ? "1" : ""],
    ...view.filters.map(([column, value]) => [`${FILTER_PREFIX}${column}`, value]),
  ]);
}

/** The parameters of the records call that gives the view's rows, before paging. */
function readParams(view, keys) {
  let order = view.order;
  if (view.end) {
    order = order
      ? reversedOrder(order)
      : keys.length > 0
      ? orderText(keys.map((name) => ({ name, rest: ".desc" })))
      : "";
  }
  return [["schema", view.schema], ["select", view.select], ["order", order], ...view.filters];
}

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

/**
 * A column's figures under its header: null share, distinct values, and a histogram (numbers,
 * dates) or its most frequent values (text). A bar or a value adds the filter that selects it.
 */
function Profile({ column, figures, rows, onFilter }) {
  if (!figures) return html`<span class="muted">…</span>`;
  const share = rows > 0 ? figures.nulls / rows : 0;
  const bins = figures.histogram ?? [];
  const top = figures.top ?? [];
  const highest = Math.max(1, ...bins.map((b) => b.count));
  return html`<div class="figures">
    <span>nulls ${(share * 100).toFixed(1)}% · ≈${count(figures.approx_distinct)} distinct</span>
    ${
    bins.length > 0 &&
    html`<div class="bars" role="group" aria-label=${`Histogram of ${column.name}`}>
      ${
      bins.map((bin, i) => {
        const last = i === bins.length - 1;
        const label = `${display(bin.from)} to ${display(bin.to)}: ${count(bin.count)} rows`;
        return html`
          <button type="button" class="bar" title=${label} aria-label=${label}
            onClick=${() =>
              onFilter([`gte.${display(bin.from)}`, `${last ? "lte" : "lt"}.${display(bin.to)}`])}>
            <span style=${{
              height: `${Math.max(1, Math.round(bin.count / highest * 40))}px`,
            }}></span>
          </button>
        `;
      })
    }
    </div>`
  }
    ${
    top.length > 0 &&
    html`<ul class="top-values" aria-label=${`Most frequent values of ${column.name}`}>
      ${
      top.map((t) =>
        html`<li><button type="button" class="link"
        title=${`${display(t.value)}: ${count(t.count)} rows`}
        onClick=${() => onFilter([`eq.${display(t.value)}`])}>${
          display(t.value)
        }</button> <span class="muted">${count(t.count)}</span></li>`
      )
    }
    </ul>`
  }
  </div>`;
}

function FilterBar({ columns, filters, onChange }) {
  const [column, setColumn] = useState(columns[0]?.name ?? "");
  const [op, setOp] = useState("eq");
  const [negate, setNegate] = useState(false);
  const [value, setValue] = useState("");
  const add = (e) => {
    e.preventDefault();
    const text = op === "is" ? value || "null" : value;
    onChange([...filters, [column, `${negate ? "not." : ""}${op}.${text}`]]);
    setValue("");
  };
  return html`
    <form class="filter-bar" role="search" aria-label="Filter rows" onSubmit=${add}>
      <ul class="chips" aria-label="Filters">${filters.map(([c, v], i) =>
        html`
          <li class="chip">
            <span>${c} ${v}</span>
            <button type="button" class="ghost" aria-label=${`Remove filter ${c} ${v}`}
              onClick=${() => onChange(filters.filter((_, j) => j !== i))}>✕</button>
          </li>
        `
      )}</ul>
      <label class="sr-only" for="filter-column">Column</label>
      <select id="filter-column" data-filter-start value=${column} onChange=${(e) =>
        setColumn(e.currentTarget.value)}>
          ${columns.map((c) => html`<option value=${c.name}>${c.name}</option>`)}
        </select>
      <label
        class="check"><input type="checkbox" checked=${negate} onChange=${(e) =>
          setNegate(e.currentTarget.checked)} /> not</label>
      <label class="sr-only" for="filter-op">Operator</label>
      <select id="filter-op" value=${op} onChange=${(e) => setOp(e.currentTarget.value)}>
          ${OPERATORS.map((o) => html`<option value=${o}>${o}</option>`)}
        </select>
      <label class="sr-only" for="filter-value">Value</label>
      <input id="filter-value" value=${value} placeholder=${op === "in"
        ? "(a,b,c)"
        : op === "is"
        ? "null, true or false"
        : "value"}
        onInput=${(e) => setValue(e.currentTarget.value)} />
      <button type="submit">Filter</button>
    </form>
  `;
}

function CurlDialog({ curl, onClose }) {
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

function ColumnsDialog({ columns, chosen, onClose, onApply }) {
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

function DeleteDialog({ title, counted, counting, what = "rows", onClose, onDelete }) {
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
function ExportDialog({ view, onClose }) {
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
