/**
 * The SQL editor: completion of keywords, tables and columns; Ctrl/Cmd+Enter runs
 * `POST /query`; the result in the grid; a refusal in the server's words; any result as a
 * chart. The query and the chart are in the URL.
 */

import { html } from "htm/preact";
import { useEffect, useMemo, useRef, useState } from "preact/hooks";
import { call, count, curlOf, get } from "./api.js";
import { Dialog, Failure } from "./dialog.js";
import { Grid } from "./grid.js";
import { hrefOf, navigate } from "./view_state.js";

const LIMIT = 1000;

/** `{schema: {table: [columns]}}` of every table the token can see. */
async function completionSchema() {
  const tree = {};
  for (let offset = 0;; offset += 1000) {
    const page = await get("table", [["verbose", true], ["limit", 1000], ["offset", offset]]);
    for (const t of page.tables) {
      tree[t.schema] ??= {};
      tree[t.schema][t.name] = t.columns.map((c) => c.name);
    }
    if (page.tables.length === 0 || offset + page.tables.length >= page.total) break;
  }
  return tree;
}

export function SqlScreen({ params }) {
  const fromUrl = params.get("sql") ?? "";
  const schema = params.get("schema") || "public";
  const chart = params.get("chart") ?? "";
  const [text, setText] = useState(fromUrl);
  const textRef = useRef(fromUrl);
  const [result, setResult] = useState(undefined);
  const [error, setError] = useState(undefined);
  const [running, setRunning] = useState(false);
  const [editorError, setEditorError] = useState(undefined);
  const [showCurl, setShowCurl] = useState(false);
  const [ChartView, setChartView] = useState(undefined);
  const host = useRef();
  const editor = useRef();

  const chartParams = { chart, x: params.get("x") ?? "", y: params.get("y") ?? "" };
  const here = (change) =>
    hrefOf("sql", {
      sql: textRef.current,
      schema: schema === "public" ? "" : schema,
      ...chartParams,
      ...change,
    });

  const run = async (sqlText) => {
    textRef.current = sqlText;
    navigate(here({ sql: sqlText }), { replace: true });
    setRunning(true);
    setError(undefined);
    try {
      const { body } = await call("POST", "query", {
        params: [["limit", LIMIT], ["schema", schema === "public" ? "" : schema]],
        body: { sql: sqlText },
      });
      setResult(body);
    } catch (failure) {
      setResult(undefined);
      setError(failure);
    } finally {
      setRunning(false);
    }
  };
  const runRef = useRef(run);
  runRef.current = run;

  useEffect(() => {
    let live = true;
    Promise.all([import("./editor.js"), completionSchema().catch(() => ({}))])
      .then(([{ createEditor }, tree]) => {
        if (!live) return;
        editor.current = createEditor(host.current, {
          doc: textRef.current,
          schema: tree,
          defaultSchema: schema,
          label: "SQL query",
          onRun: (t) => runRef.current(t),
          onChange: (t) => {
            textRef.current = t;
            setText(t);
          },
        });
      })
      .catch((e) => live && setEditorError({ message: `The editor did not load: ${e.message}` }));
    return () => {
      live = false;
      editor.current?.destroy();
    };
  }, []);
  useEffect(() => {
    if (fromUrl.trim()) run(fromUrl);
  }, []);
  useEffect(() => {
    if (!chart || ChartView) return;
    import("./chart.js").then((m) => setChartView(() => m.Chart)).catch((e) =>
      setEditorError({ message: `The chart did not load: ${e.message}` })
    );
  }, [chart]);

  const columns = useMemo(() => result?.columns ?? [], [result]);
  return html`<section class="sql-screen">
    <div class="toolbar">
      <h1>SQL</h1>
      <span class="muted">read-only queries, schema <code>${schema}</code> unless named</span>
      <span class="spacer"></span>
      <button type="button" onClick=${() => setShowCurl(true)} disabled=${!text
    .trim()}>Copy as curl</button>
      <button type="button" class="primary" disabled=${running || !text.trim()} onClick=${() =>
    run(textRef.current)}>${running ? "Running…" : "Run"}</button>
    </div>
    <div class="editor" ref=${host} data-editor></div>
    <${Failure} error=${editorError} />
    <${Failure} error=${error} />
    ${
    result && html`
      <div class="toolbar">
        <span role="status">${count(result.records.length)} rows${result.truncated
          ? ` (the first ${count(LIMIT)}; the query has more)`
          : ""}</span>
        <span class="spacer"></span>
        <button type="button" aria-pressed=${Boolean(chart)} onClick=${() =>
          navigate(here(chart ? { chart: "", x: "", y: "" } : { chart: "bar" }), {
            replace: true,
          })}>Chart</button>
      </div>
          ${chart && ChartView && html`
            <${ChartView} columns=${columns} rows=${result.records} kind=${chart}
              x=${chartParams.x} y=${chartParams.y}
              onChange=${(change) => navigate(here(change), { replace: true })} />
          `}
          <${Grid} label="Query result" columns=${columns} rows=${result.records} />
    `
  }
    ${
    showCurl && html`
      <${Dialog} title="The API call of this query" onClose=${() => setShowCurl(false)} wide>
        <label for="sql-curl">curl</label>
        <textarea id="sql-curl" readonly rows="5" value=${curlOf("POST", "query", [[
          "limit",
          LIMIT,
        ]], { sql: textRef.current })}></textarea>
        <//>
    `
  }
  </section>`;
}
