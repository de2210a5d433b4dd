/**
 * The hostile-input catalogue: hundreds of requests that try to break the service, each with
 * the answer it must get, run against a seeded server whose every table and definition is
 * fingerprinted before and after.
 *
 * @module
 */

// deno-lint-ignore no-import-prefix -- a tool of tests, kept out of the import map (deno.dev.lock)
import fc from "npm:fast-check@^4.10.2";
import * as XLSX from "xlsx";
import {
  type Answer,
  errorShapeProblem,
  fingerprint,
  mint,
  ok,
  TestServer,
  uploadForm as form,
} from "../helpers/server.ts";
import { zip } from "../helpers/zip.ts";

/** One request of the catalogue. */
export interface HostileRequest {
  /** What kind of attack it is, for the report. */
  readonly group: string;
  readonly label: string;
  readonly method: string;
  /** Under /api/v1 unless it starts with "/". */
  readonly path: string;
  /** JSON-encoded unless a string, bytes or a form (see {@link TestServer.request}). */
  readonly body?: unknown;
  readonly headers?: Record<string, string>;
  /** The default all-scope token when absent, no header when null. */
  readonly token?: string | null;
  /** The statuses that are right; any 4xx when absent. */
  readonly status?: readonly number[];
  /** Checks a right status further; returns what is wrong, if anything. */
  readonly check?: (answer: Answer) => string | undefined;
}

/** A request written byte for byte on a socket, for what `fetch` refuses to send. */
export interface RawRequest {
  readonly group: string;
  readonly label: string;
  readonly bytes: Uint8Array;
}

/** Tried and right, per group and in all, with a line for each wrong answer. */
export interface HostileReport {
  readonly tried: number;
  readonly correct: number;
  readonly groups: Record<string, { tried: number; correct: number }>;
  readonly failures: string[];
}

/**
 * The longest any hostile request may take to be answered: far above what a refusal needs,
 * far below what a request that pins the server (a quadratic check, say) takes.
 */
export const ANSWER_WITHIN_MS = 15_000;

/** The server settings the catalogue expects (small limits, so limits are cheap to pass). */
export const HOSTILE_ENV: Record<string, string> = {
  MAX_SHEET_ROWS: "10",
  MAX_UPLOAD_BYTES: "4MiB",
  MAX_JSON_BYTES: "2MiB",
};

export const INJECTIONS: readonly string[] = [
  `a"; DROP TABLE items; --`,
  `a'); DROP TABLE items; --`,
  `" OR 1=1 --`,
  `x" INTEGER, "y`,
  `'; SELECT * FROM read_csv('/etc/passwd'); --`,
  `$1`,
  `\\"`,
  `Robert'); DROP TABLE Students;--`,
  `items" CASCADE; --`,
  `1; ATTACH '/tmp/x.db' AS x`,
];

const encoder = new TextEncoder();

/** A definition valid in the seeded database, using every field a definition has. */
function fullDefinition(): Record<string, unknown> {
  return {
    columns: [
      { name: "id", type: "integer", is_nullable: false },
      { name: "label", type: "varchar", default: "'x'" },
      { name: "item", type: "integer" },
    ],
    constraints: {
      primary_key: { name: "pk", columns: ["id"] },
      unique: [{ name: "label_key", columns: ["label"] }],
      foreign_keys: [{
        name: "item_fkey",
        column: "item",
        reference_table: "items",
        reference_column: "id",
        reference_schema: "public",
      }],
    },
  };
}

/** The JSON endpoints with a body, each with a valid body around a definition. */
const DEFINITION_BODIES: readonly {
  readonly method: string;
  readonly path: string;
  readonly body: (definition: unknown) => unknown;
}[] = [
  { method: "POST", path: "table/fresh", body: (d) => ({ table: d }) },
  {
    method: "POST",
    path: "table/fresh/upload/json",
    body: (d) => ({ table: d, data: [{ id: 1, label: "a", item: 1 }] }),
  },
  {
    method: "POST",
    path: "table_template/fresh",
    body: (d) => ({ table_template: d, version: "1.0", compatibility: "none" }),
  },
  {
    method: "POST",
    path: "table_template/base/compatibility",
    body: (d) => ({ table_template: d, version: "9.0", compatibility: "none" }),
  },
];

const JSON_ENDPOINTS: readonly [string, string][] = [
  ["POST", "table/fresh"],
  ["PUT", "table/items"],
  ["POST", "table/fresh/upload/json"],
  ["POST", "table/items/records"],
  ["POST", "table_template/fresh"],
  ["POST", "table_template/base/compatibility"],
];

const FILE_ENDPOINTS: readonly string[] = ["upload/excel", "upload/csv"];

const NOT_STRING = [1, true, [], {}, ["x"]];
const NOT_ARRAY = ["x", 1, {}, true];
const NOT_OBJECT = ["x", 1, [], true];
const NOT_BOOLEAN = ["yes", 1, [], {}];

/** Every field of a definition, with the values of the wrong JSON type for it. */
const DEFINITION_FIELDS: readonly [readonly (string | number)[], readonly unknown[]][] = [
  [["columns"], NOT_ARRAY],
  [["columns", 0], NOT_OBJECT],
  [["columns", 0, "name"], NOT_STRING],
  [["columns", 0, "type"], NOT_STRING],
  [["columns", 1, "default"], NOT_STRING],
  [["columns", 0, "is_nullable"], NOT_BOOLEAN],
  [["constraints"], NOT_OBJECT],
  [["constraints", "primary_key"], NOT_OBJECT],
  [["constraints", "primary_key", "name"], NOT_STRING],
  [["constraints", "primary_key", "columns"], NOT_ARRAY],
  [["constraints", "primary_key", "columns", 0], NOT_STRING],
  [["constraints", "unique"], NOT_ARRAY],
  [["constraints", "unique", 0], NOT_OBJECT],
  [["constraints", "unique", 0, "name"], NOT_STRING],
  [["constraints", "unique", 0, "columns"], NOT_ARRAY],
  [["constraints", "foreign_keys"], NOT_ARRAY],
  [["constraints", "foreign_keys", 0], NOT_OBJECT],
  [["constraints", "foreign_keys", 0, "name"], NOT_STRING],
  [["constraints", "foreign_keys", 0, "column"], NOT_STRING],
  [["constraints", "foreign_keys", 0, "reference_table"], NOT_STRING],
  [["constraints", "foreign_keys", 0, "reference_column"], NOT_STRING],
  [["constraints", "foreign_keys", 0, "reference_schema"], NOT_STRING],
];

/** A deep copy of `value` with the field at `path` set to `replacement`. */
function withField(value: unknown, path: readonly (string | number)[], replacement: unknown) {
  const copy = structuredClone(value) as Record<string | number, unknown>;
  let at = copy;
  for (const key of path.slice(0, -1)) at = at[key] as Record<string | number, unknown>;
  at[path.at(-1)!] = replacement;
  return copy;
}

function show(value: unknown): string {
  const text = JSON.stringify(value) ?? String(value);
  return text.length > 40 ? `${text.slice(0, 37)}...` : text;
}

function malformedJson(): HostileRequest[] {
  const bodies: [string, string | Uint8Array][] = [
    ["empty", ""],
    ["whitespace", "  \n "],
    ["lone brace", "{"],
    ["closing brace", "}"],
    ["truncated object", '{"table":'],
    ["truncated array", '{"table": {"columns": [}'],
    ["trailing comma", '{"a":1,}'],
    ["single quotes", "{'a':1}"],
    ["truncated literal", "nul"],
    ["two documents", "{} {}"],
    ["trailing garbage", "{}x"],
    ["unterminated string", '{"a": "abc'],
    ["bad escape", '{"a": "\\u12"}'],
    ["leading zero", '{"a": 01}'],
    ["NaN", '{"a": NaN}'],
    ["comment", "/* c */ {}"],
    ["bare bytes", new Uint8Array([0x7b, 0xff, 0xfe, 0x7d])],
    ["NUL after the document", "{}\u0000"],
  ];
  return JSON_ENDPOINTS.flatMap(([method, path]) =>
    bodies.map(([label, body]) => ({
      group: "malformed JSON",
      label: `${method} ${path}: ${label}`,
      method,
      path,
      body,
      headers: { "content-type": "application/json" },
      status: [400],
    }))
  );
}

function wrongTypes(itemsTable: Record<string, unknown>): HostileRequest[] {
  const cases: HostileRequest[] = [];
  for (const endpoint of DEFINITION_BODIES) {
    cases.push(...NOT_OBJECT.map((wrong) => ({
      group: "wrong JSON types",
      label: `${endpoint.path}: definition ${show(wrong)}`,
      method: endpoint.method,
      path: endpoint.path,
      body: endpoint.body(wrong),
    })));
    for (const [path, wrongs] of DEFINITION_FIELDS) {
      for (const wrong of wrongs) {
        cases.push({
          group: "wrong JSON types",
          label: `${endpoint.path}: ${path.join(".")} = ${show(wrong)}`,
          method: endpoint.method,
          path: endpoint.path,
          body: endpoint.body(withField(fullDefinition(), path, wrong)),
        });
      }
    }
  }
  const tops: [string, string, Record<string, unknown>, string, readonly unknown[]][] = [
    ["POST", "table/fresh", { table: {} }, "table", NOT_OBJECT],
    ["POST", "table/fresh/upload/json", { data: [{ a: 1 }] }, "data", NOT_ARRAY],
    ["POST", "table/fresh/upload/json", { data: [{ a: 1 }] }, "table", NOT_OBJECT],
    ["POST", "table_template/fresh", { table_template: {} }, "version", [1, 1.5, true, [], {}]],
    ["POST", "table_template/fresh", { table_template: {} }, "compatibility", NOT_STRING],
    ["POST", "table_template/fresh", { table_template: {} }, "table_template", NOT_OBJECT],
    ["PUT", "table/items", { table: itemsTable }, "table", NOT_OBJECT],
  ];
  for (const [method, path, body, field, wrongs] of tops) {
    for (const wrong of wrongs) {
      cases.push({
        group: "wrong JSON types",
        label: `${method} ${path}: ${field} = ${show(wrong)}`,
        method,
        path,
        body: withField(body, [field], wrong),
      });
    }
  }
  const updateFields: [readonly (string | number)[], readonly unknown[]][] = [
    [["name"], NOT_STRING],
    [["schema"], NOT_STRING],
    [["columns"], NOT_ARRAY],
    [["columns", 0], NOT_OBJECT],
    [["columns", 0, "id"], ["1", 1.5, -1, true, {}, 2 ** 60]],
    [["columns", 0, "name"], NOT_STRING],
    [["columns", 0, "type"], NOT_STRING],
    [["columns", 1, "is_nullable"], NOT_BOOLEAN],
    [["columns", 2, "default"], NOT_STRING],
    [["constraints"], NOT_OBJECT],
    [["constraints", "primary_key"], NOT_OBJECT],
    [["constraints", "unique"], NOT_ARRAY],
    [["constraints", "foreign_keys"], NOT_ARRAY],
  ];
  for (const [path, wrongs] of updateFields) {
    for (const wrong of wrongs) {
      cases.push({
        group: "wrong JSON types",
        label: `PUT table/items: ${path.join(".")} = ${show(wrong)}`,
        method: "PUT",
        path: "table/items",
        body: { table: withField(itemsTable, path, wrong) },
      });
    }
  }
  const record = { id: 100, name: "n", price: 1.5, tags: ["a"], created: "2026-01-01T00:00:00Z" };
  const recordFields: [string, readonly unknown[]][] = [
    ["id", ["abc", 2 ** 40, [], {}]],
    ["price", ["lots", "1e999", {}, []]],
    ["tags", [{}, 1]],
    ["created", ["yesterday", 1e20, true]],
  ];
  for (const [field, wrongs] of recordFields) {
    for (const wrong of wrongs) {
      cases.push({
        group: "wrong JSON types",
        label: `records: ${field} = ${show(wrong)}`,
        method: "POST",
        path: "table/items/records",
        body: [{ ...record, id: 101 }, { ...record, [field]: wrong }],
      });
    }
  }
  for (const wrong of [{}, "x", 1, null, [1], [[1]], [null], [{}, 1]]) {
    cases.push({
      group: "wrong JSON types",
      label: `records: body ${show(wrong)}`,
      method: "POST",
      path: "table/items/records",
      body: wrong,
    });
  }
  return cases;
}

function deepNesting(): HostileRequest[] {
  const depth = 10_000;
  const arrays = "[".repeat(depth) + "]".repeat(depth);
  const objects = '{"a":'.repeat(depth) + "1" + "}".repeat(depth);
  // Unknown members are ignored, so the deep object goes where the body needs something else.
  const around: Record<string, (deep: string) => string> = {
    "table/fresh": (d) => `{"table": {"columns": ${d}}}`,
    "table/items": (d) => `{"table": {"name": ${d}}}`,
    "table/fresh/upload/json": (d) => `{"data": ${d}}`,
    "table/items/records": (d) => `[${d}]`,
    "table_template/fresh": (d) => `{"table_template": {"columns": ${d}}}`,
    "table_template/base/compatibility": (d) => `{"version": ${d}}`,
  };
  const cases: HostileRequest[] = [];
  for (const [method, path] of JSON_ENDPOINTS) {
    for (const [label, text] of [["arrays", arrays], ["objects", around[path]!(objects)]]) {
      cases.push({
        group: "deep nesting",
        label: `${method} ${path}: ${depth} levels of ${label}`,
        method,
        path,
        body: text,
        headers: { "content-type": "application/json" },
      });
    }
  }
  const inside: [string, string, string][] = [
    ["POST", "table/fresh", `{"table": {"constraints": {"unique": [${objects}]}}}`],
    ["POST", "table/fresh", `{"table": {"columns": ${arrays}}}`],
    ["POST", "table/fresh/upload/json", `{"data": [${objects}]}`],
    ["POST", "table/fresh/upload/json", `{"data": ${arrays}}`],
    ["POST", "table/items/records", `[{"name": ${objects}}]`],
    ["POST", "table/items/records", `[{"id": ${arrays}}]`],
    ["POST", "table_template/fresh", `{"table_template": {"columns": [${objects}]}}`],
  ];
  for (const [method, path, text] of inside) {
    cases.push({
      group: "deep nesting",
      label: `${method} ${path}: nested inside ${text.slice(0, 12)}`,
      method,
      path,
      body: text,
      headers: { "content-type": "application/json" },
    });
  }
  return cases;
}

function huge(): HostileRequest[] {
  const mb = (n: number) => "x".repeat(n * 1024 * 1024);
  const manyColumns = (n: number) =>
    Array.from({ length: n }, (_, i) => ({ name: `c${i}`, type: "integer" }));
  const good = (i: number) => ({ id: 1000 + i, name: `n${i}`, price: i, tags: [], created: null });
  const cases: [string, string, string, unknown, number[]?][] = [
    ["a 1 MiB column name", "POST", "table/fresh", {
      table: { columns: [{ name: mb(1), type: "integer" }] },
    }],
    ["a 1 MiB type", "POST", "table/fresh", {
      table: { columns: [{ name: "a", type: mb(1) }] },
    }],
    ["a 1 MiB default", "POST", "table/fresh", {
      table: { columns: [{ name: "a", type: "varchar", default: `'${mb(1)}` }] },
    }],
    ["2,001 columns", "POST", "table/fresh", { table: { columns: manyColumns(2001) } }, [422]],
    ["20,000 columns", "POST", "table/fresh", { table: { columns: manyColumns(20_000) } }, [
      413,
      422,
    ]],
    ["2,001 columns in a template", "POST", "table_template/fresh", {
      table_template: { columns: manyColumns(2001) },
    }, [422]],
    ["10,000 unique keys", "POST", "table/fresh", {
      table: {
        columns: [{ name: "a", type: "integer" }],
        constraints: { unique: Array.from({ length: 10_000 }, () => ({ columns: ["b"] })) },
      },
    }],
    ["a body over MAX_JSON_BYTES", "POST", "table/fresh", {
      table: { columns: [{ name: "a", type: "varchar", default: `'${mb(3)}'` }] },
    }, [413]],
    ["a PUT over MAX_JSON_BYTES", "PUT", "table/items", { table: { name: mb(3) } }, [413]],
    ["a template over MAX_JSON_BYTES", "POST", "table_template/fresh", {
      table_template: {},
      version: mb(3),
    }, [413]],
    ["records over MAX_UPLOAD_BYTES", "POST", "table/items/records", [{ name: mb(5) }], [413]],
    ["upload over MAX_UPLOAD_BYTES", "POST", "table/fresh/upload/json", {
      data: [{ a: mb(5) }],
    }, [413]],
    [
      "30,000 good records and one bad one",
      "POST",
      "table/items/records",
      [...Array.from({ length: 30_000 }, (_, i) => good(i)), { id: "bad" }],
      [422],
    ],
    [
      "a 1 MiB value in the one bad record",
      "POST",
      "table/items/records",
      [good(0), { ...good(1), name: mb(1), price: "lots" }],
      [422],
    ],
    [
      "30,000 rows with a bad last row in an upload",
      "POST",
      "table/fresh/upload/json",
      {
        table: { columns: [{ name: "n", type: "integer" }] },
        data: [...Array.from({ length: 30_000 }, (_, i) => ({ n: i })), { n: "x" }],
      },
      [422],
    ],
    ["100,000 array rows that are too wide", "POST", "table/fresh/upload/json", {
      table: { columns: [{ name: "n", type: "integer" }] },
      data: Array.from({ length: 100_000 }, (_, i) => [i, i]),
    }, [400, 422]],
  ];
  const requests: HostileRequest[] = cases.map(([label, method, path, body, status]) => ({
    group: "huge values",
    label,
    method,
    path,
    body,
    status,
  }));
  const long = "a".repeat(10_000);
  for (
    const path of [
      `table/${long}`,
      `table/items?schema=${long}`,
      `schema/${long}`,
      `table_template/${long}`,
      `table/items/records?limit=${"9".repeat(10_000)}`,
      `table?offset=${"9".repeat(400)}`,
    ]
  ) {
    requests.push({
      group: "huge values",
      label: `GET ${path.slice(0, 30)}...`,
      method: "GET",
      path,
    });
  }
  requests.push({
    group: "huge values",
    label: "a 32 KiB Authorization header",
    method: "GET",
    path: "table",
    token: `eyJ${"A".repeat(32 * 1024)}`,
    status: [401, 431],
  });
  return requests;
}

function injection(): HostileRequest[] {
  const cases: HostileRequest[] = [];
  const add = (label: string, method: string, path: string, body?: unknown) =>
    cases.push({ group: "SQL injection", label, method, path, body });
  for (const [i, text] of INJECTIONS.entries()) {
    const e = encodeURIComponent(text);
    const tag = `#${i}`;
    add(`${tag} table name, create`, "POST", `table/${e}`, {});
    add(`${tag} table name, get`, "GET", `table/${e}`);
    add(`${tag} table name, delete`, "DELETE", `table/${e}`);
    add(`${tag} table name, records`, "GET", `table/${e}/records`);
    add(`${tag} table name, csv`, "GET", `table/${e}/records/csv`);
    add(`${tag} table name, upload`, "POST", `table/${e}/upload/json`, { data: [{ a: 1 }] });
    add(`${tag} schema name, create`, "POST", `schema/${e}`);
    add(`${tag} schema name, delete`, "DELETE", `schema/${e}?cascade=true`);
    add(`${tag} template name, create`, "POST", `table_template/${e}`, { table_template: {} });
    add(`${tag} template name, delete`, "DELETE", `table_template/${e}`);
    add(`${tag} schema=`, "POST", `table/t?schema=${e}`, {});
    add(`${tag} list schema=`, "GET", `table?schema=${e}`);
    add(`${tag} limit=`, "GET", `table?limit=${e}`);
    add(`${tag} offset=`, "GET", `table/items/records?offset=${e}`);
    add(`${tag} verbose=`, "GET", `table?verbose=${e}`);
    add(`${tag} if_not_exists=`, "POST", `table/t?if_not_exists=${e}`, {});
    add(`${tag} if_exists=`, "POST", `table/items/upload/json?if_exists=${e}`, { data: [] });
    add(`${tag} on_conflict=`, "POST", `table/items/records?on_conflict=${e}`, []);
    add(`${tag} cascade=`, "DELETE", `schema/sales?cascade=${e}`);
    add(`${tag} version=`, "DELETE", `table_template/base?version=${e}`);
    add(`${tag} order_by=`, "GET", `table_template?order_by=${e}`);
    add(`${tag} latest=`, "GET", `table_template?latest=${e}`);
    add(`${tag} template=`, "POST", `table/t?template=${e}`);
    add(`${tag} template_version=`, "POST", `table/t?template=base&template_version=${e}`);
    add(`${tag} type`, "POST", "table/t", { table: { columns: [{ name: "a", type: text }] } });
    add(`${tag} default`, "POST", "table/t", {
      table: { columns: [{ name: "a", type: "int", default: `1); ${text}` }] },
    });
    add(`${tag} reference_table`, "POST", "table/t", {
      table: {
        columns: [{ name: "a", type: "int" }],
        constraints: {
          foreign_keys: [{ column: "a", reference_table: text, reference_column: "id" }],
        },
      },
    });
    add(`${tag} reference_column`, "POST", "table/t", {
      table: {
        columns: [{ name: "a", type: "int" }],
        constraints: {
          foreign_keys: [{ column: "a", reference_table: "items", reference_column: text }],
        },
      },
    });
    add(`${tag} reference_schema`, "POST", "table/t", {
      table: {
        columns: [{ name: "a", type: "int" }],
        constraints: {
          foreign_keys: [{
            column: "a",
            reference_table: "items",
            reference_column: "id",
            reference_schema: text,
          }],
        },
      },
    });
    add(`${tag} key column`, "POST", "table/t", {
      table: {
        columns: [{ name: "a", type: "int" }],
        constraints: { primary_key: { columns: [text] } },
      },
    });
    add(`${tag} template type`, "POST", "table_template/t", {
      table_template: { columns: [{ name: "a", type: text }] },
    });
    add(`${tag} PUT type`, "PUT", "table/items", {
      table: { columns: [{ id: 1, name: "id", type: text }] },
    });
    add(`${tag} PUT rename to schema`, "PUT", "table/items", { table: { schema: text } });
    add(`${tag} record key`, "POST", "table/items/records", [{ id: 500, [text]: 1 }]);
    cases.push({
      group: "SQL injection",
      label: `${tag} search= finds nothing`,
      method: "GET",
      path: `table_template?search=${e}`,
      status: [200],
      check: (a) =>
        a.body?.table_templates?.length === 0 ? undefined : `found templates: ${a.text}`,
    });
  }
  return cases;
}

function pathTricks(): HostileRequest[] {
  const tricks = [
    "..%2F..%2Fetc%2Fpasswd",
    "%2e%2e",
    "a%00b",
    "%00",
    "a%E2%80%AEb",
    "a%E2%80%8Bb",
    "%C0%AE%C0%AE",
    "%ZZ",
    "%",
    "a%252Fb",
    "a%5Cb",
    "%D0%B0",
    "a%0D%0AX-Injected:%201",
  ];
  const cases: HostileRequest[] = [];
  for (const reserved of ["_table_service", "information_schema", "main", "tables"]) {
    const targets: [string, string, unknown?][] = [
      ["GET", `table?schema=${reserved}`],
      ["GET", `table/items?schema=${reserved}`],
      ["POST", `table/t?schema=${reserved}`, {}],
      ["POST", `schema/${reserved}`],
      ["DELETE", `schema/${reserved}?cascade=true`],
      ["PUT", "table/items", { table: { schema: reserved } }],
    ];
    for (const [method, path, body] of targets) {
      cases.push({
        group: "path tricks",
        label: `${method} ${path} (a reserved schema)`,
        method,
        path,
        body,
      });
    }
  }
  for (const trick of tricks) {
    const targets: [string, string, unknown?][] = [
      ["GET", `table/${trick}`],
      ["DELETE", `table/${trick}`],
      ["POST", `table/${trick}`, {}],
      ["GET", `table/${trick}/records`],
      ["PUT", `table/${trick}`, { table: {} }],
      ["GET", `table?schema=${trick}`],
      ["POST", `schema/${trick}`],
      ["DELETE", `schema/${trick}`],
      ["POST", `table_template/${trick}`, { table_template: {} }],
      ["GET", `table_template/${trick}`],
    ];
    for (const [method, path, body] of targets) {
      cases.push({ group: "path tricks", label: `${method} ${path}`, method, path, body });
    }
  }
  return cases;
}

/** A multipart body written by hand, with the header that goes with it. */
function multipart(boundary: string, parts: string[], end = true) {
  const text = parts.map((p) => `--${boundary}\r\n${p}\r\n`).join("") +
    (end ? `--${boundary}--\r\n` : "");
  return encoder.encode(text);
}

function filePart(name = "file", filename = "a.csv", content = "a\n1\n") {
  return `Content-Disposition: form-data; name="${name}"; filename="${filename}"\r\n` +
    `Content-Type: text/csv\r\n\r\n${content}`;
}

function contentTypes(): HostileRequest[] {
  const cases: HostileRequest[] = [];
  const json = encoder.encode(JSON.stringify({ table: {}, data: [] }));
  const wrong = [
    "text/plain",
    "application/xml",
    "application/x-www-form-urlencoded",
    "multipart/form-data; boundary=x",
    "application/jsonx",
    "image/png",
  ];
  for (const [method, path] of JSON_ENDPOINTS) {
    for (const type of [...wrong, undefined]) {
      cases.push({
        group: "content types",
        label: `${method} ${path} as ${type ?? "no content type"}`,
        method,
        path,
        body: json,
        headers: type ? { "content-type": type } : {},
        status: [400, 415],
      });
    }
  }
  const b = "XyZ";
  const bodies: [string, Uint8Array, string | undefined][] = [
    ["JSON", json, "application/json"],
    ["text", encoder.encode("a,b\n1,2\n"), "text/plain"],
    ["no content type", encoder.encode("a,b\n1,2\n"), undefined],
    ["multipart without boundary", multipart(b, [filePart()]), "multipart/form-data"],
    ["a boundary not in the body", multipart(b, [filePart()]), "multipart/form-data; boundary=Q"],
    [
      "duplicate file parts",
      multipart(b, [filePart(), filePart()]),
      `multipart/form-data; boundary=${b}`,
    ],
    [
      "duplicate body parts",
      multipart(b, [
        'Content-Disposition: form-data; name="body"\r\n\r\n{}',
        'Content-Disposition: form-data; name="body"\r\n\r\n{}',
        filePart(),
      ]),
      `multipart/form-data; boundary=${b}`,
    ],
    [
      "only the closing boundary",
      encoder.encode(`--${b}--\r\n`),
      `multipart/form-data; boundary=${b}`,
    ],
    [
      "no closing boundary",
      multipart(b, [filePart()], false),
      `multipart/form-data; boundary=${b}`,
    ],
    [
      "a part without headers",
      encoder.encode(`--${b}\r\nno headers here\r\n--${b}--\r\n`),
      `multipart/form-data; boundary=${b}`,
    ],
    [
      "a part header without a colon",
      multipart(b, ["Content-Disposition form-data\r\n\r\nx"]),
      `multipart/form-data; boundary=${b}`,
    ],
    [
      "a body part that is CSV",
      multipart(b, ['Content-Disposition: form-data; name="body"\r\n\r\na,b', filePart()]),
      `multipart/form-data; boundary=${b}`,
    ],
    [
      "a 1,000-character boundary",
      multipart("B".repeat(1000), [filePart()]),
      `multipart/form-data; boundary=${"B".repeat(1000)}`,
    ],
  ];
  for (const endpoint of FILE_ENDPOINTS) {
    for (const [label, body, type] of bodies) {
      cases.push({
        group: "content types",
        label: `${endpoint}: ${label}`,
        method: "POST",
        path: `table/fresh/${endpoint}`,
        body,
        headers: type ? { "content-type": type } : {},
      });
    }
  }
  return cases;
}

/** Requests that lie about their length or break HTTP framing, for a socket. */
export function rawRequests(): RawRequest[] {
  const head = (lines: string[]) =>
    `${["POST /api/v1/table/items/records HTTP/1.1", "Host: x", ...lines].join("\r\n")}\r\n\r\n`;
  const cases: [string, string][] = [
    [
      "a Content-Length longer than the body",
      head(["Content-Length: 1000", "Content-Type: application/json"]) + "[{}]",
    ],
    [
      "a Content-Length shorter than the body",
      head(["Content-Length: 3", "Content-Type: application/json"]) + '[{"id": 900}]',
    ],
    ["a negative Content-Length", head(["Content-Length: -5"]) + "[]"],
    ["a Content-Length that is not a number", head(["Content-Length: ten"]) + "[]"],
    ["two Content-Lengths that disagree", head(["Content-Length: 2", "Content-Length: 40"]) + "[]"],
    [
      "Content-Length and chunked together",
      head(["Content-Length: 4", "Transfer-Encoding: chunked"]) + "0\r\n\r\n",
    ],
    [
      "a chunk size that is not hex",
      head(["Transfer-Encoding: chunked", "Content-Type: application/json"]) +
      "zz\r\n[]\r\n0\r\n\r\n",
    ],
    [
      "a chunk longer than it says",
      head(["Transfer-Encoding: chunked", "Content-Type: application/json"]) +
      "2\r\n[{}]\r\n0\r\n\r\n",
    ],
    [
      "a chunked body that never ends",
      head(["Transfer-Encoding: chunked", "Content-Type: application/json"]) + '5\r\n[{"id"\r\n',
    ],
    [
      "a header without a colon",
      head(["Content-Type application/json", "Content-Length: 2"]) + "[]",
    ],
    ["a NUL in a header", head(["X-Evil: a\u0000b", "Content-Length: 2"]) + "[]"],
    ["an unknown transfer encoding", head(["Transfer-Encoding: gzip, chunked"]) + "0\r\n\r\n"],
    ["a request line with no version", "POST /api/v1/table/items/records\r\n\r\n"],
    ["garbage", "\u0001\u0002\u0003 hello\r\n\r\n"],
  ];
  return cases.map(([label, text]) => ({
    group: "lying lengths",
    label,
    bytes: encoder.encode(text),
  }));
}

async function spreadsheets(): Promise<HostileRequest[]> {
  const workbook = XLSX.utils.book_new();
  XLSX.utils.book_append_sheet(workbook, XLSX.utils.aoa_to_sheet([["n"], [1], [2]]), "S");
  const xlsx = new Uint8Array(XLSX.write(workbook, { type: "array", bookType: "xlsx" }));
  const book = (sheetXml: string) =>
    zip({
      "[Content_Types].xml":
        '<?xml version="1.0"?><Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types"/>',
      "xl/workbook.xml": "<workbook/>",
      "xl/worksheets/sheet1.xml": sheetXml,
    });
  const laughs = `<?xml version="1.0"?><!DOCTYPE lolz [<!ENTITY lol "lol">` +
    Array.from({ length: 9 }, (_, i) => `<!ENTITY lol${i + 1} "${`&lol${i || ""};`.repeat(10)}">`)
      .join("") +
    `]><worksheet><sheetData><row r="1"><c r="A1" t="inlineStr"><is><t>&lol9;</t></is></c></row></sheetData></worksheet>`;
  // 3 MB of sheet XML that deflates to a few KiB: past the 100× ratio.
  const bomb = await book(
    `<worksheet><sheetData>${
      '<row><c t="n"><v>1</v></c></row>'.repeat(100_000)
    }</sheetData></worksheet>`,
  );
  // The same bomb with headers that say its sheet is 2 bytes packed: a check trusting
  // them would inflate 2 bytes, where SheetJS inflates to the stream's end.
  const lying = bomb.slice();
  const view = new DataView(lying.buffer);
  for (let i = 0; i + 4 <= lying.length; i++) {
    const signature = view.getUint32(i, true);
    if (signature === 0x04034b50) view.setUint32(i + 18, 2, true);
    if (signature === 0x02014b50) view.setUint32(i + 20, 2, true);
  }
  const tall = XLSX.utils.book_new();
  XLSX.utils.book_append_sheet(
    tall,
    XLSX.utils.aoa_to_sheet([["n"], ...Array.from({ length: 20 }, (_, i) => [i])]),
    "S",
  );
  const tallBytes = new Uint8Array(XLSX.write(tall, { type: "array", bookType: "xlsx" }));
  const ole = new Uint8Array([
    0xd0,
    0xcf,
    0x11,
    0xe0,
    0xa1,
    0xb1,
    0x1a,
    0xe1,
    ...new Uint8Array(600),
  ]);
  const png = new Uint8Array([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0, 0]);
  const sheets: [string, FormData, number[], RegExp?][] = [
    ["a PNG", form(png, "a.xlsx"), [415]],
    ["HTML text", form(encoder.encode("<html><table></table></html>"), "a.xls"), [415]],
    ["a truncated zip", form(xlsx.slice(0, xlsx.length >> 1), "a.xlsx"), [400]],
    ["a zip bomb", form(bomb, "bomb.xlsx"), [413], /decompresses to more than/],
    ["a zip bomb whose sizes lie", form(lying, "bomb.xlsx"), [400], /not the size its headers say/],
    ["billion laughs", form(await book(laughs), "lol.xlsx"), [400], /DTD/],
    ["a sheet over the row limit", form(tallBytes, "tall.xlsx"), [413]],
    ["an OLE2 file that is no workbook", form(ole, "a.xls"), [400]],
    ["an empty file", form(new Uint8Array(0), "a.csv"), [400]],
    ["a body part that is not JSON", form(xlsx, "a.xlsx", "{table: nope"), [400]],
    ["a body part that is not an object", form(xlsx, "a.xlsx", "[1]"), [400]],
    [
      "a bad definition",
      form(xlsx, "a.xlsx", { table: { columns: [{ name: "x", type: "nope" }] } }),
      [422],
    ],
    ["a file over MAX_UPLOAD_BYTES", form(new Uint8Array(5 * 1024 * 1024), "big.csv"), [413]],
  ];
  const cases: HostileRequest[] = [];
  for (const [label, body, status, message] of sheets) {
    for (const target of ["items", "fresh"]) {
      cases.push({
        group: "hostile spreadsheets",
        label: `${label} into ${target}`,
        method: "POST",
        path: `table/${target}/upload/excel?if_exists=replace`,
        body,
        status,
        check: message
          ? (a) => message.test(a.body?.error?.message ?? "") ? undefined : `message: ${a.text}`
          : undefined,
      });
    }
  }
  cases.push({
    group: "hostile spreadsheets",
    label: "a sheet that does not exist",
    method: "POST",
    path: "table/fresh/upload/excel?sheet=Nope",
    body: form(xlsx, "a.xlsx"),
    status: [400, 404, 422],
  });
  const csvs: [string, string][] = [
    ["a CSV with only a header of empty names", ",,\n1,2,3\n"],
    ["a CSV with a NUL byte", "a,b\n1,\u00002\n"],
    ["a CSV whose rows are wider than the header", "a\n1,2,3\n"],
    ["a CSV of one quote", '"'],
  ];
  for (const [label, text] of csvs) {
    cases.push({
      group: "hostile spreadsheets",
      label,
      method: "POST",
      path: "table/items/upload/csv?if_exists=append",
      body: form(encoder.encode(text), "a.csv"),
    });
  }
  return cases;
}

/** Ten years, in seconds. */
const YEARS = 10 * 365 * 86_400;

async function badTokens(): Promise<HostileRequest[]> {
  const now = Math.floor(Date.now() / 1000);
  const b64 = (value: unknown) =>
    btoa(JSON.stringify(value)).replace(/=+$/, "").replace(/\+/g, "-").replace(/\//g, "_");
  const none = `${b64({ alg: "none", typ: "JWT" })}.${
    b64({ sub: "x", exp: now + 600, scope: "tables:write" })
  }.`;
  const valid = await mint({ scope: "tables:write templates:write" });
  const tokens: [string, string | null, number[]][] = [
    ["no Authorization header", null, [401]],
    ["an empty bearer", "", [401]],
    ["garbage", "not-a-token", [401]],
    ["three empty segments", "..", [401]],
    ["alg none", none, [401]],
    ["a flipped signature", `${valid.slice(0, -2)}${valid.endsWith("A") ? "BB" : "AA"}`, [401]],
    [
      "a foreign secret",
      await mint({
        secret: "another-secret-that-is-long-enough-for-hs256!!",
        scope: "tables:write",
      }),
      [401],
    ],
    // Years away from now, not minutes: the tokens are minted when the catalogue is built,
    // and a slow run (or a wall clock stepped while it runs) once reached this group when a
    // token "not yet valid" for 600 s had become valid, and its PUT renamed items.
    ["expired", await mint({ expiresIn: -YEARS, scope: "tables:write" }), [401]],
    [
      "not yet valid",
      await mint({ notBefore: YEARS, expiresIn: YEARS + 3600, scope: "tables:write" }),
      [401],
    ],
    ["without exp", await mint({ expiresIn: null, scope: "tables:write" }), [401]],
    ["read-only scopes", await mint({ scope: "tables:read templates:read" }), [403]],
    ["no scopes", await mint({}), [403]],
    ["scopes of the wrong type", await mint({ scopes: "tables:write" }), [401, 403]],
    [
      "confined to another schema",
      await mint({ scope: "tables:write templates:write", schemas: ["other"] }),
      [403],
    ],
  ];
  const targets: [string, string, unknown?][] = [
    ["POST", "table/fresh", {}],
    ["PUT", "table/items", { table: { name: "renamed" } }],
    ["POST", "table/items/records", [{ id: 700, name: "x" }]],
    ["POST", "table/items/upload/json?if_exists=replace", { data: [{ a: 1 }] }],
    ["DELETE", "table/items"],
    ["POST", "schema/fresh"],
    ["DELETE", "schema/sales?cascade=true"],
    ["POST", "table_template/fresh", { table_template: {} }],
    ["DELETE", "table_template/base"],
  ];
  const cases: HostileRequest[] = [];
  for (const [label, token, status] of tokens) {
    for (const [method, path, body] of targets) {
      // Template endpoints do not care about the schemas claim.
      const confinedToOther = label === "confined to another schema";
      if (confinedToOther && path.startsWith("table_template")) continue;
      if (confinedToOther && path.includes("schema/")) continue;
      cases.push({
        group: "bad tokens",
        label: `${method} ${path}: ${label}`,
        method,
        path,
        body,
        token,
        status,
        check: (a) =>
          a.status === 401 && !a.headers.get("www-authenticate")?.startsWith("Bearer")
            ? "no WWW-Authenticate: Bearer"
            : undefined,
      });
    }
  }
  cases.push({
    group: "bad tokens",
    label: "Basic credentials",
    method: "GET",
    path: "table",
    headers: { authorization: "Basic dXNlcjpwYXNz" },
    status: [401],
  });
  return cases;
}

/** Definitions made invalid on purpose by one generated defect among valid columns. */
function generatedDefinitions(seed: number, count: number): HostileRequest[] {
  const name = fc.stringMatching(/^[a-z][a-z0-9_]{0,10}$/);
  const column = fc.record({
    name,
    type: fc.constantFrom("integer", "varchar", "double", "boolean", "date", "bigint[]"),
  });
  const defect = fc.oneof(
    fc.string({ minLength: 1, maxLength: 8 }).map((s) => ({
      what: "a control character in a name",
      apply: (d: Def) => d.columns.push({ name: `${s}\u0007`, type: "integer" }),
    })),
    fc.string({ maxLength: 8 }).map((s) => ({
      what: "a type that is no type",
      apply: (d: Def) => d.columns.push({ name: "zz_bad", type: `${s}; DROP TABLE items` }),
    })),
    fc.string({ maxLength: 12 }).map((s) => ({
      what: "a default with a statement",
      apply: (d: Def) =>
        d.columns.push({ name: "zz_bad", type: "varchar", default: `'a'; ${s} DROP TABLE items` }),
    })),
    fc.string({ minLength: 1, maxLength: 12 }).map((s) => ({
      what: "a key on an unknown column",
      apply: (d: Def) => (d.constraints = { primary_key: { columns: [`zz_${s}`] } }),
    })),
    fc.constant({
      what: "a duplicated column",
      apply: (d: Def) => d.columns.push({ ...d.columns[0]!, type: "integer" }),
    }),
    name.map((s) => ({
      what: "a foreign key to a missing table",
      apply: (d: Def) => (d.constraints = {
        foreign_keys: [{
          column: d.columns[0]!.name,
          reference_table: `zz_${s}`,
          reference_column: "id",
        }],
      }),
    })),
  );
  type Def = { columns: Record<string, unknown>[]; constraints?: unknown };
  const samples = fc.sample(
    fc.tuple(
      fc.uniqueArray(column, { minLength: 1, maxLength: 6, selector: (c) => c.name }),
      defect,
    ),
    { seed, numRuns: count },
  );
  return samples.map(([columns, { what, apply }], i) => {
    const definition: Def = { columns: structuredClone(columns) };
    apply(definition);
    // A template may name tables that do not exist yet.
    const template = i % 2 === 1 && !what.includes("missing table");
    return {
      group: "generated (fast-check)",
      label: `definition ${i} (${what})${template ? " as a template" : ""}`,
      method: "POST",
      path: template ? "table_template/generated" : "table/generated",
      body: template ? { table_template: definition } : { table: definition },
      status: [400, 422],
    };
  });
}

/** Batches of good records for `items` with one generated bad record somewhere among them. */
function generatedRecords(seed: number, count: number): HostileRequest[] {
  const good = fc.record({
    name: fc.string({ maxLength: 20 }),
    price: fc.integer({ min: 0, max: 99999 }),
    tags: fc.array(fc.string({ maxLength: 5 }), { maxLength: 3 }),
  });
  const bad = fc.oneof(
    fc.string({ minLength: 1, maxLength: 10 }).map((s) => ({
      what: "an unknown column",
      row: { name: "x", [`zz ${s}`]: 1 },
    })),
    fc.string({ maxLength: 10 }).filter((s) => !/^\s*[-+]?[0-9.eE]+\s*$/.test(s)).map((s) => ({
      what: "a price that is no number",
      row: { name: "x", price: `${s}!` },
    })),
    fc.constant({ what: "a null name", row: { name: null } }),
    fc.integer({ min: 2 ** 31, max: 2 ** 40 }).map((n) => ({
      what: "an id beyond INTEGER",
      row: { id: n, name: "x" },
    })),
    fc.string({ maxLength: 10 }).map((s) => ({
      what: "a date that is no date",
      row: { name: "x", created: `${s}x-13-45` },
    })),
  );
  const samples = fc.sample(
    fc.tuple(fc.array(good, { maxLength: 30 }), bad, fc.nat()),
    { seed, numRuns: count },
  );
  return samples.map(([rows, { what, row }, at], i) => {
    const batch: unknown[] = [...rows];
    batch.splice(at % (rows.length + 1), 0, row);
    return {
      group: "generated (fast-check)",
      label: `records ${i} (${what} among ${rows.length} good)`,
      method: "POST",
      path: "table/items/records",
      body: batch,
      status: [422],
    };
  });
}

/** The seeded database every catalogue request runs against. */
export async function seed(server: TestServer): Promise<void> {
  const must = async (method: string, path: string, body?: unknown) =>
    ok(await server.request(method, path, body === undefined ? {} : { body }));
  await must("POST", "schema/sales");
  await must("POST", "table/items", {
    table: {
      columns: [
        { name: "id", type: "serial" },
        { name: "name", type: "varchar", is_nullable: false },
        { name: "price", type: "decimal(10,2)", default: "0" },
        { name: "tags", type: "varchar[]" },
        { name: "created", type: "timestamptz" },
      ],
      constraints: { primary_key: { columns: ["id"] } },
    },
  });
  await must("POST", "table/items/records", [
    { name: "bolt", price: 0.25, tags: ["metal"], created: "2026-01-01T00:00:00Z" },
    { name: "nut", price: 0.1, tags: [] },
    { name: "gear", price: 12.5, tags: ["metal", "round"] },
  ]);
  await must("POST", "table/orders?schema=sales", {
    table: {
      columns: [{ name: "id", type: "integer" }, { name: "item", type: "integer" }, {
        name: "qty",
        type: "integer",
        is_nullable: false,
      }],
      constraints: {
        primary_key: { columns: ["id"] },
      },
    },
  });
  await must("POST", "table/orders/records?schema=sales", [{ id: 1, item: 1, qty: 5 }, {
    id: 2,
    item: 3,
    qty: 1,
  }]);
  await must("POST", "table/lines", {
    table: {
      columns: [{ name: "item", type: "integer" }, { name: "note", type: "text" }],
      constraints: {
        foreign_keys: [{ column: "item", reference_table: "items", reference_column: "id" }],
      },
    },
  });
  await must("POST", "table/lines/records", [{ item: 2, note: "spare" }]);
  await must("POST", "table/empty", {});
  await must("POST", "table_template/base", {
    table_template: fullDefinition(),
    version: "1.0",
    compatibility: "backward",
  });
}

/** Every request of the catalogue, built for the seeded database. */
export async function catalogue(server: TestServer, seedNumber = 7): Promise<HostileRequest[]> {
  const { table: items } = ok(await server.request("GET", "table/items"));
  return [
    ...malformedJson(),
    ...wrongTypes(items),
    ...deepNesting(),
    ...huge(),
    ...injection(),
    ...pathTricks(),
    ...contentTypes(),
    ...(await spreadsheets()),
    ...(await badTokens()),
    ...generatedDefinitions(seedNumber, 60),
    ...generatedRecords(seedNumber + 1, 60),
  ];
}

/** Whether an error message shows a file path, a stack frame or the service's own SQL. */
function leaks(message: string): boolean {
  return /file:\/\/|node_modules|\.duckdb|\/spool\/|\bat \S+ \(|_table_service\.|read_json\(/
    .test(message);
}

/**
 * The valid requests the wrong-type cases were made from, each on a name of its own: they
 * must succeed, or the refusals would prove nothing.
 */
export function controls(): HostileRequest[] {
  return DEFINITION_BODIES.map((endpoint, i) => ({
    group: "controls",
    label: `${endpoint.path} with the definition unchanged`,
    method: endpoint.method,
    path: endpoint.path.replace("fresh", `control${i}`),
    body: endpoint.body(fullDefinition()),
    status: [200],
  }));
}

/** What is wrong with `answer` to `request`, or undefined when it is right. */
export function judge(request: HostileRequest, answer: Answer): string | undefined {
  const allowed = request.status;
  const statusOk = allowed
    ? allowed.includes(answer.status)
    : answer.status >= 400 && answer.status < 500;
  if (!statusOk) {
    return `status ${answer.status}, wanted ${allowed?.join("/") ?? "4xx"}: ${
      answer.text.slice(0, 300)
    }`;
  }
  if (answer.status >= 400) {
    const problem = errorShapeProblem(answer);
    if (problem) return `${problem}: ${answer.text.slice(0, 300)}`;
    if (leaks(answer.body.error.message)) {
      return `the message leaks internals: ${answer.body.error.message}`;
    }
  }
  return request.check?.(answer);
}

/** Writes `bytes` on a fresh socket and reads what comes back until the server closes or 5 s pass. */
async function sendRaw(port: number, bytes: Uint8Array): Promise<string> {
  const connection = await Deno.connect({ hostname: "127.0.0.1", port });
  try {
    await connection.write(bytes);
    await connection.closeWrite();
    const decoder = new TextDecoder();
    let text = "";
    const buffer = new Uint8Array(65536);
    const deadline = setTimeout(() => connection.close(), 5000);
    try {
      for (let n; (n = await connection.read(buffer)) !== null;) {
        text += decoder.decode(buffer.subarray(0, n), { stream: true });
      }
    } catch {
      // Closed by the deadline or reset by the server: what arrived is the answer.
    } finally {
      clearTimeout(deadline);
    }
    return text;
  } finally {
    try {
      connection.close();
    } catch {
      // Already closed.
    }
  }
}

/**
 * Judges a raw answer: a 4xx status line (in the contract's shape when the service wrote it)
 * or a closed connection; never a 2xx or a 5xx.
 */
function judgeRaw(text: string): string | undefined {
  if (text === "") return undefined;
  const status = Number(/^HTTP\/1\.[01] (\d{3})/.exec(text)?.[1]);
  if (!(status >= 400 && status < 500)) return `answered: ${text.slice(0, 200)}`;
  const body = text.split("\r\n\r\n").slice(1).join("\r\n\r\n");
  if (/content-type: application\/json/i.test(text)) {
    try {
      const parsed = JSON.parse(body);
      if (parsed?.error?.code !== status) return `not the contract's error shape: ${body}`;
    } catch {
      return `a JSON answer that is not JSON: ${body.slice(0, 200)}`;
    }
  }
  return undefined;
}

/**
 * Runs the whole catalogue against a server seeded by {@link seed}: every request must get
 * its answer and the server must stay up, and the fingerprint after each group must equal
 * the one before the first.
 */
export async function runCatalogue(
  server: TestServer,
  log: (line: string) => void = () => {},
): Promise<HostileReport> {
  const attempts = [
    ...(await catalogue(server)).map((request) => ({
      ...request,
      problem: () => problemOf(server, request),
    })),
    ...rawRequests().map((request) => ({
      ...request,
      problem: async () => judgeRaw(await sendRaw(server.port, request.bytes)),
    })),
  ];
  const groups: Record<string, { tried: number; correct: number }> = {};
  const failures: string[] = [];
  const before = await fingerprint(server);
  const tablesBefore = await tableNames(server);
  for (const [group, members] of Map.groupBy(attempts, (a) => a.group)) {
    const started = performance.now();
    const tally = groups[group] = { tried: 0, correct: 0 };
    for (const attempt of members) {
      const problem = await attempt.problem();
      tally.tried++;
      if (problem === undefined) tally.correct++;
      else failures.push(`${group} / ${attempt.label}: ${problem}`);
    }
    const alive = await fetch(`${server.base}/healthz`).then(async (r) => {
      await r.body?.cancel();
      return r.status;
    }, () => 0);
    if (alive !== 200) {
      failures.push(`${group}: the server is down after the group`);
      throw new Error(`The server went down during "${group}"`);
    }
    if (await fingerprint(server) !== before) {
      const now = await tableNames(server);
      failures.push(
        `${group}: the tables or definitions changed (tables before: ${tablesBefore}; after: ${now})`,
      );
    }
    log(
      `${group}: ${tally.correct}/${tally.tried} in ${Math.round(performance.now() - started)} ms`,
    );
  }
  const tried = Object.values(groups).reduce((n, g) => n + g.tried, 0);
  const correct = Object.values(groups).reduce((n, g) => n + g.correct, 0);
  return { tried, correct, groups, failures };
}

/** The tables listed, as `schema.name` in order, for a report. */
async function tableNames(server: TestServer): Promise<string> {
  const { tables } = ok(await server.request("GET", "table?limit=1000"));
  return (tables as { name: string; schema: string }[]).map((t) => `${t.schema}.${t.name}`)
    .join(", ");
}

/** Sends `request` and judges its answer, which must come within {@link ANSWER_WITHIN_MS}. */
async function problemOf(server: TestServer, request: HostileRequest): Promise<string | undefined> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  try {
    const answer = await Promise.race([
      server.request(request.method, request.path, {
        body: request.body,
        headers: request.headers,
        token: request.token,
      }),
      new Promise<never>((_, reject) => {
        timer = setTimeout(
          () => reject(new Error(`more than ${ANSWER_WITHIN_MS} ms`)),
          ANSWER_WITHIN_MS,
        );
      }),
    ]);
    return judge(request, answer);
  } catch (error) {
    return `no answer: ${error instanceof Error ? error.message : error}`;
  } finally {
    clearTimeout(timer);
  }
}
