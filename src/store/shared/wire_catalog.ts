/**
 * The catalog the PostgreSQL protocol's clients see: which of their queries read it, and what
 * it holds, the same on both engines. A client's catalog query runs on an in-memory database
 * holding PostgreSQL's catalog tables filled with the token's schemas and tables alone
 * (duckdb/wire_catalog.ts), never on the engine's own catalog.
 *
 * @module
 */

import type { Table } from "../../catalog/model.ts";
import type { ListedTable, QueryRequest, SchemaStore, TableStore } from "../store.ts";
import { numericTypmod, WIRE_TYPES, type WireType } from "./wire_types.ts";

/** A column of the emulated catalog: its PostgreSQL type oid and modifier. */
export interface CatalogColumn {
  readonly name: string;
  readonly oid: number;
  readonly typmod: number;
  readonly notNull: boolean;
  readonly default: string | null;
}

/** A table as the emulated catalog shows it. */
export interface CatalogTable {
  readonly schema: string;
  readonly name: string;
  readonly columns: readonly CatalogColumn[];
  readonly table: Table;
  /** The engine's estimate of its rows, as the listing gives it. */
  readonly rowsEstimate: number;
}

/** What a token may see: its schemas, their tables, and where unqualified names go. */
export interface CatalogSnapshot {
  readonly schemas: readonly string[];
  readonly tables: readonly CatalogTable[];
  readonly defaultSchema: string;
  readonly user: string;
  readonly database: string;
}

/**
 * The settings a catalog query reads (`pg_settings`, `current_setting(name)`) as a session
 * starts with them, as the listener announces them, and `search_path` the token's schema;
 * {@link sessionSettings} are the session's own values over them.
 */
export function catalogSettings(
  snapshot: { readonly defaultSchema: string },
): [string, string, string][] {
  // Name, value, and where it came from (PostgreSQL's `source`).
  return [
    ["server_version", "15.8", "default"],
    ["server_version_num", "150008", "default"],
    ["server_encoding", "UTF8", "default"],
    ["client_encoding", "UTF8", "client"],
    ["DateStyle", "ISO, MDY", "client"],
    ["TimeZone", "UTC", "client"],
    ["IntervalStyle", "postgres", "default"],
    ["integer_datetimes", "on", "default"],
    ["standard_conforming_strings", "on", "default"],
    ["default_transaction_read_only", "on", "session"],
    ["transaction_read_only", "on", "session"],
    ["max_identifier_length", "63", "default"],
    ["lc_collate", "C", "default"],
    ["lc_ctype", "C", "default"],
    ["search_path", snapshot.defaultSchema, "session"],
    // What a session may set besides (pgwire/settings.ts), as the listener starts it.
    ["application_name", "", "default"],
    ["extra_float_digits", "1", "default"],
    ["statement_timeout", "0", "default"],
    ["bytea_output", "hex", "default"],
    ["is_superuser", "off", "default"],
    ["default_transaction_isolation", "repeatable read", "default"],
    ["transaction_isolation", "repeatable read", "default"],
  ];
}

/** The names of {@link catalogSettings}, lower case. */
const SETTING_NAMES = catalogSettings({ defaultSchema: "" }).map(([name]) => name.toLowerCase());

/**
 * The settings of `request`'s session (by lower-case name) that differ from what
 * {@link catalogSettings} start with: a catalog query reads these over those. Not part of the
 * catalog's snapshot, which emulated catalogs are kept by: a session's values vary freely.
 */
export function sessionSettings(request: QueryRequest): [string, string][] {
  const start = new Map(
    catalogSettings(request).map(([name, value]) => [name.toLowerCase(), value]),
  );
  const own = Object.entries(request.client?.settings ?? {}).filter(([name, value]) =>
    start.has(name) && start.get(name) !== value
  );
  // `pg_settings` shows a duration in its unit, where SHOW shows `30s`: the session's
  // statement_timeout is the request's own timeout, in milliseconds.
  return own.some(([name]) => name === "statement_timeout")
    ? [...own, ["statement_timeout:setting", String(request.timeoutMs)]]
    : own;
}

/** Relations of PostgreSQL's catalog that the emulation answers. */
const CATALOG_NAMES =
  /\b(pg_catalog|information_schema)\s*\.|\bpg_(type|class|namespace|attribute|index|constraint|database|roles|user|am|proc|description|attrdef|settings|tables|views|stat_user_tables|stat_all_tables|enum|extension|inherits|collation|indexes|matviews|sequences?|trigger|tablespace|authid|shdescription|range)\b|::\s*reg(class|type|proc|namespace)\b|\b(format_type|pg_get_\w+|has_\w+_privilege|pg_table_is_visible|obj_description|col_description|current_schemas|pg_encoding_to_char|parse_ident)\s*\(/i;

/**
 * Whether `sql` reads PostgreSQL's catalog (a relation of `pg_catalog` or
 * `information_schema`, or one of its functions), and so is answered by the emulation.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { isCatalogQuery } from "./wire_catalog.ts";
 *
 * assert.equal(isCatalogQuery("SELECT oid FROM pg_type WHERE typname = 'hstore'"), true);
 * assert.equal(isCatalogQuery("SELECT * FROM information_schema.tables"), true);
 * assert.equal(isCatalogQuery("SELECT * FROM orders"), false);
 * assert.equal(isCatalogQuery("SELECT current_setting('server_version_num')::int"), true);
 * assert.equal(isCatalogQuery("SELECT current_setting('threads')"), false);
 * ```
 */
export function isCatalogQuery(sql: string): boolean {
  return CATALOG_NAMES.test(sql.replace(/'(?:[^']|'')*'/g, "''")) ||
    // current_setting of a setting the emulation holds; of any other, the guard refuses it.
    [...sql.matchAll(/\bcurrent_setting\s*\(\s*'([^']*)'/gi)].some((m) =>
      SETTING_NAMES.includes(m[1]!.toLowerCase())
    );
}

/** Oids of PostgreSQL's built-in types by the name `format_type` gives, without modifier. */
const BY_SQL_NAME = new Map<string, WireType>(
  [...WIRE_TYPES.values()].filter((t) => t.element === 0).map((t) => [t.sqlName, t]),
);

/**
 * The oid and type modifier of a type as PostgreSQL's `format_type` names it (the PostgreSQL
 * engine's column types); text for one it does not know.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { postgresTypeOid } from "./wire_catalog.ts";
 *
 * assert.deepEqual(postgresTypeOid("numeric(10,2)"), { oid: 1700, typmod: 655366 });
 * assert.deepEqual(postgresTypeOid("character varying(20)[]"), { oid: 1015, typmod: 24 });
 * assert.deepEqual(postgresTypeOid("timestamp(3) with time zone"), { oid: 1184, typmod: 3 });
 * ```
 */
export function postgresTypeOid(name: string): { oid: number; typmod: number } {
  const array = name.endsWith("[]");
  const scalar = name.replace(/(\[\])+$/, "").trim();
  let typmod = -1;
  let base = scalar;
  const numeric = /^numeric\((\d+)(?:,\s*(\d+))?\)$/.exec(scalar);
  const sized = /^(character varying|character|bit varying|bit)\((\d+)\)$/.exec(scalar);
  const precise = /^(timestamp|time)\((\d)\)( with(?:out)? time zone)$/.exec(scalar);
  if (numeric) {
    base = "numeric";
    typmod = numericTypmod(Number(numeric[1]), Number(numeric[2] ?? 0));
  } else if (sized) {
    base = sized[1]!;
    typmod = Number(sized[2]) + (base.startsWith("bit") ? 0 : 4);
  } else if (precise) {
    base = `${precise[1]}${precise[3]}`;
    typmod = Number(precise[2]);
  }
  const type = BY_SQL_NAME.get(base === "bpchar" ? "character" : base) ?? BY_SQL_NAME.get("text")!;
  return { oid: array ? type.array : type.oid, typmod };
}

/** Most tables the emulated catalog lists. */
const MAX_TABLES = 100_000;

/**
 * What the token of `request` may see, read through the store's own listings: its schemas
 * and their tables with their columns typed by `typeOf` (the engine's type name to
 * PostgreSQL's oid and modifier).
 */
export async function readCatalogSnapshot(
  source: {
    readonly schemas: Pick<SchemaStore, "list">;
    readonly tables: Pick<TableStore, "list">;
  },
  request: QueryRequest,
  typeOf: (type: string) => { oid: number; typmod: number },
): Promise<CatalogSnapshot> {
  const schemas = await source.schemas.list(request.visibleSchemas);
  const listing = await source.tables.list({
    visibleSchemas: request.visibleSchemas,
    offset: 0,
    limit: MAX_TABLES,
    verbose: true,
  });
  // verbose: every entry is a full table.
  const tables = (listing.tables as readonly (Table & ListedTable)[]).map((
    table,
  ): CatalogTable => ({
    schema: table.schema,
    name: table.name,
    table,
    rowsEstimate: table.rows_estimate,
    columns: table.columns.map((c) => ({
      name: c.name,
      oid: typeOf(c.type).oid,
      typmod: typeOf(c.type).typmod,
      notNull: !c.is_nullable,
      default: c.default,
    })),
  }));
  return {
    schemas,
    tables,
    defaultSchema: request.defaultSchema,
    user: request.client?.user ?? "",
    database: request.client?.database ?? "",
  };
}
