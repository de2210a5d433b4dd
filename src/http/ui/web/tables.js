/**
 * Schemas and their tables with row counts; create and drop schemas; create a table from
 * columns or from a template.
 */

import { html } from "htm/preact";
import { useEffect, useState } from "preact/hooks";
import { call, count, exactCount, get, seg } from "./api.js";
import { Dialog, Failure } from "./dialog.js";
import { hrefOf, navigate } from "./view_state.js";

/** Runs `jobs` (functions answering promises) at most `width` at a time. */
async function limited(jobs, width) {
  let next = 0;
  const worker = async () => {
    while (next < jobs.length) await jobs[next++]();
  };
  await Promise.all(Array.from({ length: Math.min(width, jobs.length) }, worker));
}

function useCatalogue(version) {
  const [state, setState] = useState({ loading: true });
  useEffect(() => {
    let live = true;
    (async () => {
      try {
        const { schemas } = await get("schema");
        const tables = [];
        for (let offset = 0;; offset += 1000) {
          const page = await get("table", [["limit", 1000], ["offset", offset]]);
          tables.push(...page.tables);
          if (tables.length >= page.total || page.tables.length === 0) break;
        }
        if (live) setState({ schemas: schemas.map((s) => s.name), tables });
      } catch (error) {
        if (live) setState({ error });
      }
    })();
    return () => live = false;
  }, [version]);
  return state;
}

/**
 * Row counts by `schema.table`: the engine's estimate at once (from the listing), then the
 * exact count, four tables at a time, each given up after a time limit (the estimate stays).
 */
function useCounts(tables) {
  const [counts, setCounts] = useState({});
  useEffect(() => {
    if (!tables) return;
    let live = true;
    setCounts(Object.fromEntries(tables.map((t) => [
      `${t.schema}.${t.name}`,
      typeof t.rows_estimate === "number" ? { value: t.rows_estimate, estimated: true } : undefined,
    ])));
    limited(
      tables.map((t) => async () => {
        if (!live) return;
        const key = `${t.schema}.${t.name}`;
        let value;
        try {
          value = await exactCount(`table/${seg(t.name)}/records`, [["schema", t.schema]]);
        } catch {
          value = undefined;
        }
        if (live && value !== undefined) {
          setCounts((c) => ({ ...c, [key]: { value, estimated: false } }));
        }
      }),
      4,
    );
    return () => live = false;
  }, [tables]);
  return counts;
}

function Count({ count: n }) {
  if (n === undefined) return html`<span class="muted">counting…</span>`;
  return n.estimated
    ? html`<span title="an estimate from the engine's statistics; counting…">≈${
      count(n.value)
    }</span>`
    : count(n.value);
}

export function TablesScreen({ scopes }) {
  const [version, setVersion] = useState(0);
  const reload = () => setVersion((v) => v + 1);
  const catalogue = useCatalogue(version);
  const counts = useCounts(catalogue.tables);
  const [dialog, setDialog] = useState(undefined);
  const canWrite = scopes.has("tables:write");

  if (catalogue.loading) return html`<p role="status">Loading tables…</p>`;
  if (catalogue.error) return html`<${Failure} error=${catalogue.error} />`;
  const bySchema = new Map(catalogue.schemas.map((s) => [s, []]));
  for (const t of catalogue.tables) {
    if (!bySchema.has(t.schema)) bySchema.set(t.schema, []);
    bySchema.get(t.schema).push(t);
  }

  return html`<section class="tables">
    <div class="toolbar">
      <h1>Tables</h1>
      <span class="spacer"></span>
      ${
    canWrite && html`
      <button type="button" onClick=${() => setDialog({ kind: "table" })}>New table</button>
      <button type="button" onClick=${() => setDialog({ kind: "schema" })}>New schema</button>
    `
  }
    </div>
    ${
    [...bySchema].map(([schema, tables]) =>
      html`<section class="schema" aria-labelledby=${`schema-${schema}`}>
      <div class="toolbar">
        <h2 id=${`schema-${schema}`}>${schema}</h2>
        <span class="muted">${tables.length} ${tables.length === 1 ? "table" : "tables"}</span>
        <span class="spacer"></span>
        ${
        canWrite && schema !== "public" && html`
          <button type="button" class="danger"
            onClick=${() =>
              setDialog({ kind: "drop-schema", schema })}>Drop schema ${schema}</button>
        `
      }
      </div>
      ${
        tables.length === 0 ? html`<p class="muted">No tables.</p>` : html`
          <table class="list">
            <thead>
              <tr>
                <th scope="col">Table</th>
                <th scope="col" class="num">Rows</th>
              </tr>
            </thead>
            <tbody>${tables.map((t) =>
              html`
                <tr>
                  <td><a href=${hrefOf("table", { schema: t.schema, table: t.name })}>${t
                    .name}</a></td>
                  <td class="num">
                    <${Count} count=${counts[`${t.schema}.${t.name}`]} />
                  </td>
                </tr>
              `
            )}</tbody>
          </table>
        `
      }
    </section>`
    )
  }
    ${
    dialog?.kind === "schema" && html`<${CreateSchema} onClose=${() =>
      setDialog(undefined)} onDone=${reload} />`
  }
    ${
    dialog?.kind === "drop-schema" && html`<${DropSchema} schema=${dialog.schema} onClose=${() =>
      setDialog(undefined)} onDone=${reload} />`
  }
    ${
    dialog?.kind === "table" &&
    html`<${CreateTable} schemas=${catalogue.schemas} scopes=${scopes} onClose=${() =>
      setDialog(undefined)} />`
  }
  </section>`;
}

function CreateSchema({ onClose, onDone }) {
  const [name, setName] = useState("");
  const [error, setError] = useState(undefined);
  const submit = async (e) => {
    e.preventDefault();
    try {
      await call("POST", `schema/${seg(name)}`);
      onDone();
      onClose();
    } catch (failure) {
      setError(failure);
    }
  };
  return html`
    <${Dialog} title="New schema" onClose=${onClose}>
      <form onSubmit=${submit}>
        <label for="schema-name">Name</label>
        <input id="schema-name" value=${name} onInput=${(e) =>
          setName(e.currentTarget.value)} required />
        <${Failure} error=${error} />
        <div class="actions"><button type="submit">Create schema</button></div>
      </form>
      <//>
  `;
}

function DropSchema({ schema, onClose, onDone }) {
  const [cascade, setCascade] = useState(false);
  const [error, setError] = useState(undefined);
  const submit = async (e) => {
    e.preventDefault();
    try {
      await call("DELETE", `schema/${seg(schema)}`, { params: [["cascade", cascade]] });
      onDone();
      onClose();
    } catch (failure) {
      setError(failure);
    }
  };
  return html`
    <${Dialog} title=${`Drop schema ${schema}`} onClose=${onClose}>
      <form onSubmit=${submit}>
        <p>Dropping a schema cannot be undone.</p>
        <label class="check"><input type="checkbox" checked=${cascade}
            onChange=${(e) =>
              setCascade(e.currentTarget.checked)} /> Drop its tables too (cascade)</label>
        <${Failure} error=${error} />
        <div class="actions"><button type="submit" class="danger">Drop schema</button></div>
      </form>
      <//>
  `;
}

const TYPES = [
  "INTEGER",
  "BIGINT",
  "DOUBLE",
  "DECIMAL(18,3)",
  "VARCHAR",
  "BOOLEAN",
  "DATE",
  "TIMESTAMP",
  "TIMESTAMPTZ",
  "UUID",
  "JSON",
];

function CreateTable({ schemas, scopes, onClose }) {
  const [name, setName] = useState("");
  const [schema, setSchema] = useState(schemas.includes("public") ? "public" : schemas[0]);
  const [from, setFrom] = useState("columns");
  const [columns, setColumns] = useState([{
    name: "id",
    type: "INTEGER",
    nullable: false,
    key: true,
  }]);
  const [templates, setTemplates] = useState(undefined);
  const [template, setTemplate] = useState("");
  const [templateVersion, setTemplateVersion] = useState("latest");
  const [error, setError] = useState(undefined);
  const canTemplates = scopes.has("templates:read");

  useEffect(() => {
    if (from !== "template" || templates) return;
    get("table_template", [["latest", true], ["order_by", "name_asc"]])
      .then((t) => {
        setTemplates(t.table_templates);
        if (t.table_templates[0]) setTemplate(t.table_templates[0].name);
      })
      .catch(setError);
  }, [from]);

  const change = (i, patch) => setColumns(columns.map((c, j) => j === i ? { ...c, ...patch } : c));
  const submit = async (e) => {
    e.preventDefault();
    setError(undefined);
    try {
      if (from === "template") {
        await call("POST", `table/${seg(name)}`, {
          params: [["schema", schema], ["template", template], [
            "template_version",
            templateVersion,
          ]],
        });
      } else {
        const key = columns.filter((c) => c.key).map((c) => c.name);
        await call("POST", `table/${seg(name)}`, {
          params: [["schema", schema]],
          body: {
            table: {
              columns: columns.map((c) => ({
                name: c.name,
                type: c.type,
                is_nullable: c.nullable,
              })),
              constraints: key.length > 0 ? { primary_key: { columns: key } } : undefined,
            },
          },
        });
      }
      onClose();
      navigate(hrefOf("table", { schema, table: name }));
    } catch (failure) {
      setError(failure);
    }
  };
  return html`
    <${Dialog} title="New table" onClose=${onClose} wide>
      <form onSubmit=${submit} class="stack">
          <div class="row">
            <label>Name <input value=${name} onInput=${(e) =>
              setName(e.currentTarget.value)} required /></label>
            <label>Schema <select value=${schema} onChange=${(e) =>
              setSchema(e.currentTarget.value)}>
              ${schemas.map((s) => html`<option value=${s}>${s}</option>`)}
            </select></label>
          </div>
          <fieldset class="row">
            <legend>From</legend>
            <label class="check"><input type="radio" name="from" checked=${from ===
              "columns"} onChange=${() => setFrom("columns")} /> columns</label>
            ${canTemplates && html`
              <label
                class="check"><input type="radio" name="from" checked=${from ===
                  "template"} onChange=${() => setFrom("template")} /> a template</label>
            `}
          </fieldset>
          ${from === "columns"
            ? html`
              <table class="list compact">
                <thead>
                  <tr>
                    <th scope="col">Column</th>
                    <th scope="col">Type</th>
                    <th scope="col">Nullable</th>
                    <th scope="col">Key</th>
                    <th scope="col"><span class="sr-only">Remove</span></th>
                  </tr>
                </thead>
                <tbody>${columns.map((c, i) =>
                  html`
                    <tr>
                      <td><input aria-label=${`Name of column ${i + 1}`} value=${c.name} onInput=${(
                        e,
                      ) => change(i, { name: e.currentTarget.value })} required /></td>
                      <td><input aria-label=${`Type of column ${
                        i + 1
                      }`} list="column-types" value=${c.type} onInput=${(e) =>
                        change(i, { type: e.currentTarget.value })} required /></td>
                      <td><input type="checkbox" aria-label=${`Column ${
                        i + 1
                      } may be null`} checked=${c.nullable} onChange=${(e) =>
                        change(i, { nullable: e.currentTarget.checked })} /></td>
                      <td><input type="checkbox" aria-label=${`Column ${
                        i + 1
                      } is in the primary key`} checked=${c.key} onChange=${(e) =>
                        change(i, {
                          key: e.currentTarget.checked,
                          nullable: e.currentTarget.checked ? false : c.nullable,
                        })} /></td>
                      <td><button type="button" class="ghost" aria-label=${`Remove column ${
                        i + 1
                      }`} onClick=${() =>
                        setColumns(columns.filter((_, j) => j !== i))}>✕</button></td>
                    </tr>
                  `
                )}</tbody>
              </table>
              <datalist id="column-types">${TYPES.map((t) =>
                html`<option value=${t} />`
              )}</datalist>
              <div><button type="button" onClick=${() =>
                setColumns([...columns, {
                  name: "",
                  type: "VARCHAR",
                  nullable: true,
                  key: false,
                }])}>Add column</button></div>
            `
            : html`
              <div class="row">
                <label>Template <select value=${template} onChange=${(e) =>
                  setTemplate(e.currentTarget.value)}>
                        ${(templates ?? []).map((t) =>
                          html`<option value=${t.name}>${t.name}</option>`
                        )}
                      </select></label>
                <label>Version <input value=${templateVersion} onInput=${(e) =>
                  setTemplateVersion(e.currentTarget.value)} /></label>
              </div>
            `}
          <${Failure} error=${error} />
          <div class="actions"><button type="submit">Create table</button></div>
        </form>
      <//>
  `;
}
