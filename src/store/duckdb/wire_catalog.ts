/**
 * PostgreSQL's catalog as the protocol's clients query it, emulated in an in-memory DuckDB of
 * its own that holds the token's schemas and tables and nothing else: `pg_namespace`,
 * `pg_class`, `pg_attribute`, `pg_type`, `pg_index`, `pg_constraint`, … in schema `wire_pg`,
 * `information_schema`'s views in `wire_is`, and PostgreSQL's catalog functions as macros. A
 * client's catalog query is respelled for it (`pg_catalog.` and `information_schema.` to those
 * schemas, `OPERATOR(pg_catalog.~)`, `COLLATE pg_catalog.default`, `::regclass`) and run there
 * with file access off and the configuration locked: it can reach no row of any table and no
 * name outside the token's schemas.
 *
 * @module
 */

import { type DuckDBConnection, DuckDBInstance } from "@duckdb/node-api";
import type { CatalogSnapshot } from "../shared/wire_catalog.ts";
import { WIRE_TYPES } from "../shared/wire_types.ts";
import type { QueryRequest, WireColumn, WireRows } from "../store.ts";
import { interruptAfter } from "./interrupts.ts";
import { quoteLiteral } from "./sql.ts";
import { bound } from "./session.ts";
import { wireColumns, wireSelect } from "./wire_values.ts";
import { ApiError } from "../../errors.ts";
import { engineMessage } from "./sql.ts";

const NAMESPACE_CATALOG = 11;
const NAMESPACE_PUBLIC = 2200;
const NAMESPACE_INFORMATION = 13_000;
const FIRST_OID = 16_384;

/** A literal of a JavaScript value for a VALUES list. */
function literal(value: string | number | boolean | null | readonly (string | number)[]): string {
  if (value === null) return "NULL";
  if (typeof value === "number") return String(value);
  if (typeof value === "boolean") return value ? "true" : "false";
  if (Array.isArray(value)) return `[${value.map((v) => literal(v)).join(", ")}]`;
  return quoteLiteral(value as string);
}

/** A table of `columns` (name and DuckDB type) filled with `rows`. */
function table(
  name: string,
  columns: string,
  rows: readonly (readonly (string | number | boolean | null | readonly (string | number)[])[])[],
): string[] {
  const create = `CREATE TABLE ${name} (${columns})`;
  if (rows.length === 0) return [create];
  return [
    create,
    `INSERT INTO ${name} VALUES ${rows.map((r) => `(${r.map(literal).join(", ")})`).join(", ")}`,
  ];
}

/** PostgreSQL's category letter of a type. */
function category(name: string, element: number): string {
  if (element !== 0) return "A";
  if (name === "bool") return "B";
  if (/^(int[248]|float[48]|numeric|oid|reg\w+)$/.test(name)) return "N";
  if (/^(text|varchar|bpchar|name|char)$/.test(name)) return "S";
  if (/^(date|time|timestamp|timestamptz|timetz)$/.test(name)) return "D";
  if (name === "interval") return "T";
  if (/bit/.test(name)) return "V";
  return "U";
}

/** The statements that make the emulated catalog of `snapshot`. */
export function catalogStatements(snapshot: CatalogSnapshot): string[] {
  const namespaces = new Map<string, number>([["pg_catalog", NAMESPACE_CATALOG], [
    "information_schema",
    NAMESPACE_INFORMATION,
  ]]);
  let next = FIRST_OID;
  for (const schema of snapshot.schemas) {
    namespaces.set(schema, schema === "public" ? NAMESPACE_PUBLIC : next++);
  }
  const classes: (string | number | boolean | null)[][] = [];
  const attributes: (string | number | boolean | null)[][] = [];
  const defaults: (string | number | null)[][] = [];
  const indexes: (string | number | boolean | readonly number[])[][] = [];
  const constraints: (string | number | boolean | null | readonly number[])[][] = [];
  const infoColumns: (string | number | null)[][] = [];
  const infoConstraints: string[][] = [];
  const keyUsage: (string | number)[][] = [];
  const referential: string[][] = [];
  const tableOid = new Map<string, number>();
  for (const t of snapshot.tables) tableOid.set(`${t.schema}.${t.name}`, next++);
  for (const t of snapshot.tables) {
    const oid = tableOid.get(`${t.schema}.${t.name}`)!;
    const namespace = namespaces.get(t.schema) ?? NAMESPACE_PUBLIC;
    const { primary_key, unique, foreign_keys } = t.table.constraints;
    const hasIndex = primary_key !== null || unique.length > 0;
    classes.push([
      oid,
      t.name,
      namespace,
      "r",
      t.columns.length,
      hasIndex,
      0,
      10,
      0,
      "p",
      "d",
      false,
      false,
    ]);
    const position = new Map(t.columns.map((c, i) => [c.name, i + 1]));
    t.columns.forEach((c, i) => {
      const type = WIRE_TYPES.get(c.oid);
      attributes.push([
        oid,
        c.name,
        c.oid,
        type?.size ?? -1,
        i + 1,
        c.typmod,
        c.notNull,
        c.default !== null,
        false,
        "",
        "",
        type?.element ? 1 : 0,
      ]);
      if (c.default !== null) defaults.push([next++, oid, i + 1, c.default]);
      infoColumns.push([
        snapshot.database,
        t.schema,
        t.name,
        c.name,
        i + 1,
        c.default,
        c.notNull ? "NO" : "YES",
        c.oid,
        c.typmod,
      ]);
    });
    const keys: [string, "p" | "u", readonly string[]][] = [
      ...(primary_key
        ? [[primary_key.name, "p", primary_key.columns] as [string, "p", string[]]]
        : []),
      ...unique.map((u): [string, "u", readonly string[]] => [u.name, "u", u.columns]),
    ];
    for (const [name, kind, columns] of keys) {
      const index = next++;
      const key = columns.map((c) => position.get(c) ?? 0);
      classes.push([
        index,
        name,
        namespace,
        "i",
        columns.length,
        false,
        0,
        0,
        403,
        "p",
        "n",
        false,
        false,
      ]);
      indexes.push([index, oid, columns.length, kind === "u" || kind === "p", kind === "p", key]);
      constraints.push([
        next++,
        name,
        namespace,
        kind,
        oid,
        index,
        0,
        key,
        [],
        "",
        "",
        `${kind === "p" ? "PRIMARY KEY" : "UNIQUE"} (${columns.map(quoteName).join(", ")})`,
      ]);
      infoConstraints.push([
        snapshot.database,
        t.schema,
        name,
        t.schema,
        t.name,
        kind === "p" ? "PRIMARY KEY" : "UNIQUE",
      ]);
      columns.forEach((c, i) =>
        keyUsage.push([snapshot.database, t.schema, name, t.schema, t.name, c, i + 1])
      );
    }
    for (const fk of foreign_keys) {
      const target = tableOid.get(`${fk.reference_schema}.${fk.reference_table}`) ?? 0;
      const referenced = snapshot.tables.find((r) =>
        r.schema === fk.reference_schema && r.name === fk.reference_table
      );
      const refPosition = referenced?.columns.findIndex((c) => c.name === fk.reference_column) ??
        -1;
      constraints.push([
        next++,
        fk.name,
        namespace,
        "f",
        oid,
        0,
        target,
        [position.get(fk.column) ?? 0],
        [refPosition + 1],
        "a",
        "a",
        `FOREIGN KEY (${quoteName(fk.column)}) REFERENCES ${
          fk.reference_schema === snapshot.defaultSchema ? "" : `${quoteName(fk.reference_schema)}.`
        }${quoteName(fk.reference_table)}(${quoteName(fk.reference_column)})`,
      ]);
      infoConstraints.push([snapshot.database, t.schema, fk.name, t.schema, t.name, "FOREIGN KEY"]);
      keyUsage.push([snapshot.database, t.schema, fk.name, t.schema, t.name, fk.column, 1]);
      referential.push([
        snapshot.database,
        t.schema,
        fk.name,
        snapshot.database,
        fk.reference_schema,
        `${fk.reference_table}_pkey`,
      ]);
    }
  }
  const types = [...WIRE_TYPES.values()].map((t) => [
    t.oid,
    t.name,
    NAMESPACE_CATALOG,
    10,
    t.size,
    t.size > 0 && t.size <= 8,
    "b",
    category(t.name, t.element),
    t.element,
    t.array,
    0,
    -1,
    0,
    0,
    t.sqlName,
    t.element ? "array_in" : `${t.name}in`,
  ]);
  const ns = [...namespaces].map(([name, oid]) => [oid, name, 10]);
  const visibleSchemas = [snapshot.defaultSchema];
  return [
    "CREATE SCHEMA wire_pg",
    "CREATE SCHEMA wire_is",
    ...table(
      "wire_pg.pg_namespace",
      "oid BIGINT, nspname VARCHAR, nspowner BIGINT, nspacl VARCHAR[]",
      ns.map((r) => [...r, null]),
    ),
    ...table(
      "wire_pg.pg_class",
      "oid BIGINT, relname VARCHAR, relnamespace BIGINT, relkind VARCHAR, relnatts INTEGER, relhasindex BOOLEAN, reltype BIGINT, relowner BIGINT, relam BIGINT, relpersistence VARCHAR, relreplident VARCHAR, relispartition BOOLEAN, relrowsecurity BOOLEAN",
      classes,
    ),
    `ALTER TABLE wire_pg.pg_class ADD COLUMN reloftype BIGINT DEFAULT 0`,
    ...[
      "relchecks INTEGER DEFAULT 0",
      "relhasrules BOOLEAN DEFAULT false",
      "relhastriggers BOOLEAN DEFAULT false",
      "relhassubclass BOOLEAN DEFAULT false",
      "relforcerowsecurity BOOLEAN DEFAULT false",
      "relispopulated BOOLEAN DEFAULT true",
      "reltablespace BIGINT DEFAULT 0",
      "reltoastrelid BIGINT DEFAULT 0",
      "relisshared BOOLEAN DEFAULT false",
      "reltuples REAL DEFAULT -1",
      "relpages INTEGER DEFAULT 0",
      "relacl VARCHAR[]",
      "reloptions VARCHAR[]",
      "relpartbound VARCHAR",
      "relfilenode BIGINT DEFAULT 0",
      "relallvisible INTEGER DEFAULT 0",
    ]
      .map((c) => `ALTER TABLE wire_pg.pg_class ADD COLUMN ${c}`),
    ...table(
      "wire_pg.pg_attribute",
      "attrelid BIGINT, attname VARCHAR, atttypid BIGINT, attlen INTEGER, attnum INTEGER, atttypmod INTEGER, attnotnull BOOLEAN, atthasdef BOOLEAN, attisdropped BOOLEAN, attidentity VARCHAR, attgenerated VARCHAR, attndims INTEGER",
      attributes,
    ),
    ...[
      "attcollation BIGINT DEFAULT 0",
      "attislocal BOOLEAN DEFAULT true",
      "attinhcount INTEGER DEFAULT 0",
      "attstattarget INTEGER DEFAULT -1",
      "attbyval BOOLEAN DEFAULT false",
      "attalign VARCHAR DEFAULT 'i'",
      "attstorage VARCHAR DEFAULT 'x'",
      "atthasmissing BOOLEAN DEFAULT false",
      "attacl VARCHAR[]",
      "attoptions VARCHAR[]",
      "attfdwoptions VARCHAR[]",
      "attcompression VARCHAR DEFAULT ''",
    ]
      .map((c) => `ALTER TABLE wire_pg.pg_attribute ADD COLUMN ${c}`),
    ...table(
      "wire_pg.pg_attrdef",
      "oid BIGINT, adrelid BIGINT, adnum INTEGER, adbin VARCHAR",
      defaults,
    ),
    ...table(
      "wire_pg.pg_type",
      "oid BIGINT, typname VARCHAR, typnamespace BIGINT, typowner BIGINT, typlen INTEGER, typbyval BOOLEAN, typtype VARCHAR, typcategory VARCHAR, typelem BIGINT, typarray BIGINT, typrelid BIGINT, typtypmod INTEGER, typbasetype BIGINT, typndims INTEGER, wire_sql_name VARCHAR, typinput VARCHAR",
      types,
    ),
    ...[
      "typnotnull BOOLEAN DEFAULT false",
      "typisdefined BOOLEAN DEFAULT true",
      "typdelim VARCHAR DEFAULT ','",
      "typcollation BIGINT DEFAULT 0",
      "typdefault VARCHAR",
      "typdefaultbin VARCHAR",
      "typispreferred BOOLEAN DEFAULT false",
      "typalign VARCHAR DEFAULT 'i'",
      "typstorage VARCHAR DEFAULT 'p'",
      "typoutput VARCHAR",
      "typreceive VARCHAR",
      "typsend VARCHAR",
      "typmodin VARCHAR",
      "typmodout VARCHAR",
      "typanalyze VARCHAR",
      "typsubscript VARCHAR",
      "typacl VARCHAR[]",
    ]
      .map((c) => `ALTER TABLE wire_pg.pg_type ADD COLUMN ${c}`),
    ...table(
      "wire_pg.pg_index",
      "indexrelid BIGINT, indrelid BIGINT, indnatts INTEGER, indisunique BOOLEAN, indisprimary BOOLEAN, indkey INTEGER[]",
      indexes,
    ),
    ...[
      "indnkeyatts INTEGER DEFAULT 0",
      "indisexclusion BOOLEAN DEFAULT false",
      "indimmediate BOOLEAN DEFAULT true",
      "indisclustered BOOLEAN DEFAULT false",
      "indisvalid BOOLEAN DEFAULT true",
      "indcheckxmin BOOLEAN DEFAULT false",
      "indisready BOOLEAN DEFAULT true",
      "indislive BOOLEAN DEFAULT true",
      "indisreplident BOOLEAN DEFAULT false",
      "indnullsnotdistinct BOOLEAN DEFAULT false",
      "indoption INTEGER[]",
      "indclass BIGINT[]",
      "indcollation BIGINT[]",
      "indexprs VARCHAR",
      "indpred VARCHAR",
    ]
      .map((c) => `ALTER TABLE wire_pg.pg_index ADD COLUMN ${c}`),
    "UPDATE wire_pg.pg_index SET indnkeyatts = indnatts",
    ...table(
      "wire_pg.pg_constraint",
      "oid BIGINT, conname VARCHAR, connamespace BIGINT, contype VARCHAR, conrelid BIGINT, conindid BIGINT, confrelid BIGINT, conkey INTEGER[], confkey INTEGER[], confupdtype VARCHAR, confdeltype VARCHAR, wire_definition VARCHAR",
      constraints,
    ),
    ...[
      "condeferrable BOOLEAN DEFAULT false",
      "condeferred BOOLEAN DEFAULT false",
      "convalidated BOOLEAN DEFAULT true",
      "contypid BIGINT DEFAULT 0",
      "conparentid BIGINT DEFAULT 0",
      "confmatchtype VARCHAR DEFAULT 's'",
      "conislocal BOOLEAN DEFAULT true",
      "coninhcount INTEGER DEFAULT 0",
      "connoinherit BOOLEAN DEFAULT false",
      "conbin VARCHAR",
      "conpfeqop BIGINT[]",
      "conppeqop BIGINT[]",
      "conffeqop BIGINT[]",
      "conexclop BIGINT[]",
    ]
      .map((c) => `ALTER TABLE wire_pg.pg_constraint ADD COLUMN ${c}`),
    // No table has triggers, so psql's \d lists no foreign keys (it looks for them only on a
    // table with triggers, then asks about triggers in ways the emulation does not take);
    // pg_constraint holds them, for the drivers.
    ...table(
      "wire_pg.pg_database",
      "oid BIGINT, datname VARCHAR, datdba BIGINT, encoding INTEGER, datcollate VARCHAR, datctype VARCHAR, datistemplate BOOLEAN, datallowconn BOOLEAN, datconnlimit INTEGER, dattablespace BIGINT, datacl VARCHAR[], datlocprovider VARCHAR, daticulocale VARCHAR, datcollversion VARCHAR",
      [[1, snapshot.database, 10, 6, "C", "C", false, true, -1, 1663, null, "c", null, null]],
    ),
    ...table(
      "wire_pg.pg_roles",
      "oid BIGINT, rolname VARCHAR, rolsuper BOOLEAN, rolinherit BOOLEAN, rolcreaterole BOOLEAN, rolcreatedb BOOLEAN, rolcanlogin BOOLEAN, rolreplication BOOLEAN, rolconnlimit INTEGER, rolvaliduntil VARCHAR, rolbypassrls BOOLEAN, rolconfig VARCHAR[]",
      [[10, snapshot.user, false, true, false, false, true, false, -1, null, false, null]],
    ),
    "CREATE VIEW wire_pg.pg_user AS SELECT rolname AS usename, oid AS usesysid, rolcreatedb AS usecreatedb, rolsuper AS usesuper FROM wire_pg.pg_roles",
    "CREATE VIEW wire_pg.pg_authid AS SELECT * FROM wire_pg.pg_roles",
    ...table("wire_pg.pg_am", "oid BIGINT, amname VARCHAR, amhandler VARCHAR, amtype VARCHAR", [[
      2,
      "heap",
      "heap_tableam_handler",
      "t",
    ], [403, "btree", "bthandler", "i"]]),
    ...table(
      "wire_pg.pg_description",
      "objoid BIGINT, classoid BIGINT, objsubid INTEGER, description VARCHAR",
      [],
    ),
    ...table("wire_pg.pg_shdescription", "objoid BIGINT, classoid BIGINT, description VARCHAR", []),
    ...table(
      "wire_pg.pg_inherits",
      "inhrelid BIGINT, inhparent BIGINT, inhseqno INTEGER, inhdetachpending BOOLEAN",
      [],
    ),
    ...table(
      "wire_pg.pg_enum",
      "oid BIGINT, enumtypid BIGINT, enumsortorder REAL, enumlabel VARCHAR",
      [],
    ),
    ...table(
      "wire_pg.pg_extension",
      "oid BIGINT, extname VARCHAR, extowner BIGINT, extnamespace BIGINT, extversion VARCHAR",
      [],
    ),
    ...table("wire_pg.pg_collation", "oid BIGINT, collname VARCHAR, collnamespace BIGINT", [[
      100,
      "default",
      NAMESPACE_CATALOG,
    ], [950, "C", NAMESPACE_CATALOG]]),
    ...table(
      "wire_pg.pg_proc",
      "oid BIGINT, proname VARCHAR, pronamespace BIGINT, prokind VARCHAR, prorettype BIGINT",
      [],
    ),
    ...table(
      "wire_pg.pg_trigger",
      "oid BIGINT, tgrelid BIGINT, tgname VARCHAR, tgisinternal BOOLEAN",
      [],
    ),
    ...table(
      "wire_pg.pg_policy",
      "oid BIGINT, polname VARCHAR, polrelid BIGINT, polcmd VARCHAR, polpermissive BOOLEAN, polroles BIGINT[], polqual VARCHAR, polwithcheck VARCHAR",
      [],
    ),
    ...table(
      "wire_pg.pg_statistic_ext",
      "oid BIGINT, stxrelid BIGINT, stxname VARCHAR, stxnamespace BIGINT, stxowner BIGINT, stxstattarget INTEGER, stxkeys INTEGER[], stxkind VARCHAR[], stxexprs VARCHAR",
      [],
    ),
    ...table(
      "wire_pg.pg_publication",
      "oid BIGINT, pubname VARCHAR, pubowner BIGINT, puballtables BOOLEAN, pubinsert BOOLEAN, pubupdate BOOLEAN, pubdelete BOOLEAN, pubtruncate BOOLEAN, pubviaroot BOOLEAN",
      [],
    ),
    ...table(
      "wire_pg.pg_publication_rel",
      "oid BIGINT, prpubid BIGINT, prrelid BIGINT, prqual VARCHAR, prattrs INTEGER[]",
      [],
    ),
    ...table("wire_pg.pg_publication_namespace", "oid BIGINT, pnpubid BIGINT, pnnspid BIGINT", []),
    ...table(
      "wire_pg.pg_rewrite",
      "oid BIGINT, rulename VARCHAR, ev_class BIGINT, ev_type VARCHAR, ev_enabled VARCHAR, is_instead BOOLEAN",
      [],
    ),
    ...table(
      "wire_pg.pg_partitioned_table",
      "partrelid BIGINT, partstrat VARCHAR, partnatts INTEGER",
      [],
    ),
    ...table("wire_pg.pg_foreign_table", "ftrelid BIGINT, ftserver BIGINT", []),
    ...table(
      "wire_pg.pg_sequence",
      "seqrelid BIGINT, seqtypid BIGINT, seqstart BIGINT, seqincrement BIGINT, seqmax BIGINT, seqmin BIGINT, seqcache BIGINT, seqcycle BOOLEAN",
      [],
    ),
    ...table("wire_pg.pg_event_trigger", "oid BIGINT, evtname VARCHAR", []),
    ...table("wire_pg.pg_tablespace", "oid BIGINT, spcname VARCHAR", [[1663, "pg_default"]]),
    ...table("wire_pg.pg_settings", "name VARCHAR, setting VARCHAR", [["server_version", "15.8"], [
      "search_path",
      snapshot.defaultSchema,
    ]]),
    "CREATE VIEW wire_pg.pg_tables AS SELECT n.nspname AS schemaname, c.relname AS tablename, " +
    `${
      quoteLiteral(snapshot.user)
    } AS tableowner, NULL::VARCHAR AS tablespace, c.relhasindex AS hasindexes, false AS hasrules, false AS hastriggers, false AS rowsecurity ` +
    "FROM wire_pg.pg_class c JOIN wire_pg.pg_namespace n ON n.oid = c.relnamespace WHERE c.relkind = 'r'",
    "CREATE VIEW wire_pg.pg_views AS SELECT ''::VARCHAR AS schemaname, ''::VARCHAR AS viewname, ''::VARCHAR AS viewowner, ''::VARCHAR AS definition WHERE false",
    "CREATE VIEW wire_pg.pg_matviews AS SELECT ''::VARCHAR AS schemaname, ''::VARCHAR AS matviewname WHERE false",
    ...table(
      "wire_is.wire_columns",
      "table_catalog VARCHAR, table_schema VARCHAR, table_name VARCHAR, column_name VARCHAR, ordinal_position INTEGER, column_default VARCHAR, is_nullable VARCHAR, wire_oid BIGINT, wire_typmod INTEGER",
      infoColumns,
    ),
    "CREATE VIEW wire_is.columns AS SELECT c.table_catalog, c.table_schema, c.table_name, c.column_name, c.ordinal_position, c.column_default, c.is_nullable, " +
    "CASE WHEN t.typcategory = 'A' THEN 'ARRAY' ELSE regexp_replace(t.wire_sql_name, '\"', '', 'g') END AS data_type, " +
    "CASE WHEN t.typname IN ('varchar', 'bpchar') AND c.wire_typmod > 4 THEN c.wire_typmod - 4 END AS character_maximum_length, " +
    "CASE WHEN t.typname = 'numeric' AND c.wire_typmod > 4 THEN (c.wire_typmod - 4) >> 16 END AS numeric_precision, " +
    "CASE WHEN t.typname = 'numeric' AND c.wire_typmod > 4 THEN (c.wire_typmod - 4) & 65535 END AS numeric_scale, " +
    "t.typname AS udt_name, 'pg_catalog' AS udt_schema, c.table_catalog AS udt_catalog, 'NO' AS is_identity, 'NEVER' AS is_generated, 'YES' AS is_updatable " +
    "FROM wire_is.wire_columns c JOIN wire_pg.pg_type t ON t.oid = c.wire_oid",
    "CREATE VIEW wire_is.tables AS SELECT " + quoteLiteral(snapshot.database) +
    " AS table_catalog, n.nspname AS table_schema, c.relname AS table_name, 'BASE TABLE' AS table_type, 'YES' AS is_insertable_into, 'NO' AS is_typed " +
    "FROM wire_pg.pg_class c JOIN wire_pg.pg_namespace n ON n.oid = c.relnamespace WHERE c.relkind = 'r'",
    "CREATE VIEW wire_is.schemata AS SELECT " + quoteLiteral(snapshot.database) +
    ` AS catalog_name, nspname AS schema_name, ${
      quoteLiteral(snapshot.user)
    } AS schema_owner FROM wire_pg.pg_namespace`,
    ...table(
      "wire_is.table_constraints",
      "constraint_catalog VARCHAR, constraint_schema VARCHAR, constraint_name VARCHAR, table_schema VARCHAR, table_name VARCHAR, constraint_type VARCHAR",
      infoConstraints,
    ),
    ...table(
      "wire_is.key_column_usage",
      "constraint_catalog VARCHAR, constraint_schema VARCHAR, constraint_name VARCHAR, table_schema VARCHAR, table_name VARCHAR, column_name VARCHAR, ordinal_position INTEGER",
      keyUsage,
    ),
    ...table(
      "wire_is.referential_constraints",
      "constraint_catalog VARCHAR, constraint_schema VARCHAR, constraint_name VARCHAR, unique_constraint_catalog VARCHAR, unique_constraint_schema VARCHAR, unique_constraint_name VARCHAR",
      referential,
    ),
    "CREATE VIEW wire_is.views AS SELECT ''::VARCHAR AS table_schema, ''::VARCHAR AS table_name WHERE false",
    "CREATE VIEW wire_is.routines AS SELECT ''::VARCHAR AS routine_schema, ''::VARCHAR AS routine_name WHERE false",
    // PostgreSQL's catalog functions, as far as clients' catalog queries call them.
    "CREATE MACRO wire_pg.to_regclass(x) AS coalesce(TRY_CAST(x AS BIGINT), (SELECT wire_c.oid FROM wire_pg.pg_class wire_c JOIN wire_pg.pg_namespace wire_n ON wire_n.oid = wire_c.relnamespace WHERE wire_c.relname = replace(CAST(x AS VARCHAR), '\"', '') OR wire_n.nspname || '.' || wire_c.relname = replace(CAST(x AS VARCHAR), '\"', '') LIMIT 1))",
    "CREATE MACRO wire_pg.to_regtype(x) AS coalesce(TRY_CAST(x AS BIGINT), (SELECT wire_t.oid FROM wire_pg.pg_type wire_t WHERE wire_t.typname = CAST(x AS VARCHAR) OR wire_t.wire_sql_name = CAST(x AS VARCHAR) LIMIT 1))",
    "CREATE MACRO wire_pg.format_type(t, m) AS (SELECT CASE " +
    "WHEN wire_t.typname = 'numeric' AND m >= 4 THEN 'numeric(' || ((m - 4) >> 16) || ',' || ((m - 4) & 65535) || ')' " +
    "WHEN wire_t.typname = 'varchar' AND m >= 4 THEN 'character varying(' || (m - 4) || ')' " +
    "WHEN wire_t.typname = 'bpchar' AND m >= 4 THEN 'character(' || (m - 4) || ')' " +
    "WHEN wire_t.typname IN ('timestamp', 'timestamptz', 'time') AND m >= 0 THEN replace(wire_t.wire_sql_name, wire_pg.typname_base(wire_t.typname), wire_pg.typname_base(wire_t.typname) || '(' || m || ')') " +
    "ELSE wire_t.wire_sql_name END FROM wire_pg.pg_type AS wire_t WHERE wire_t.oid = t)",
    "CREATE MACRO wire_pg.typname_base(n) AS CASE WHEN n = 'time' THEN 'time' ELSE 'timestamp' END",
    `CREATE MACRO wire_pg.pg_get_userbyid(x) AS ${quoteLiteral(snapshot.user)}`,
    `CREATE MACRO wire_pg.pg_table_is_visible(x) AS (SELECT wire_n.nspname IN (${
      visibleSchemas.map(quoteLiteral).join(", ")
    }, 'pg_catalog') FROM wire_pg.pg_class wire_c JOIN wire_pg.pg_namespace wire_n ON wire_n.oid = wire_c.relnamespace WHERE wire_c.oid = x)`,
    `CREATE MACRO wire_pg.pg_type_is_visible(x) AS true`,
    "CREATE MACRO wire_pg.pg_get_expr(e, r) AS e, (e, r, p) AS e",
    "CREATE MACRO wire_pg.obj_description(o) AS NULL::VARCHAR, (o, c) AS NULL::VARCHAR",
    "CREATE MACRO wire_pg.col_description(o, n) AS NULL::VARCHAR",
    "CREATE MACRO wire_pg.shobj_description(o, c) AS NULL::VARCHAR",
    // What the token may read is what the emulated catalog holds: a table or schema is readable
    // exactly when it is there.
    "CREATE MACRO wire_pg.has_table_privilege(a, b) AS wire_pg.to_regclass(a) IS NOT NULL, (u, a, b) AS wire_pg.to_regclass(a) IS NOT NULL",
    "CREATE MACRO wire_pg.has_column_privilege(a, c, b) AS wire_pg.to_regclass(a) IS NOT NULL, (u, a, c, b) AS wire_pg.to_regclass(a) IS NOT NULL",
    "CREATE MACRO wire_pg.has_schema_privilege(a, b) AS EXISTS (SELECT 1 FROM wire_pg.pg_namespace wire_n WHERE wire_n.nspname = CAST(a AS VARCHAR) OR CAST(wire_n.oid AS VARCHAR) = CAST(a AS VARCHAR)), (u, a, b) AS EXISTS (SELECT 1 FROM wire_pg.pg_namespace wire_n WHERE wire_n.nspname = CAST(a AS VARCHAR) OR CAST(wire_n.oid AS VARCHAR) = CAST(a AS VARCHAR))",
    "CREATE MACRO wire_pg.has_database_privilege(a, b) AS true, (a, b, c) AS true",
    "CREATE MACRO wire_pg.pg_encoding_to_char(e) AS 'UTF8'",
    "CREATE MACRO wire_pg.pg_get_constraintdef(o) AS (SELECT wire_k.wire_definition FROM wire_pg.pg_constraint wire_k WHERE wire_k.oid = o), (o, p) AS (SELECT wire_k.wire_definition FROM wire_pg.pg_constraint wire_k WHERE wire_k.oid = o)",
    "CREATE MACRO wire_pg.pg_get_indexdef(o) AS (SELECT 'CREATE UNIQUE INDEX ' || wire_c.relname || ' ON ' || wire_r.relname || ' USING btree (' || (SELECT string_agg(wire_a.attname, ', ' ORDER BY wire_a.attnum) FROM wire_pg.pg_attribute wire_a WHERE wire_a.attrelid = wire_i.indrelid AND list_contains(wire_i.indkey, wire_a.attnum)) || ')' FROM wire_pg.pg_index wire_i JOIN wire_pg.pg_class wire_c ON wire_c.oid = wire_i.indexrelid JOIN wire_pg.pg_class wire_r ON wire_r.oid = wire_i.indrelid WHERE wire_i.indexrelid = o), (o, n, p) AS (SELECT 'CREATE UNIQUE INDEX ' || wire_c.relname || ' ON ' || wire_r.relname || ' USING btree (' || (SELECT string_agg(wire_a.attname, ', ' ORDER BY wire_a.attnum) FROM wire_pg.pg_attribute wire_a WHERE wire_a.attrelid = wire_i.indrelid AND list_contains(wire_i.indkey, wire_a.attnum)) || ')' FROM wire_pg.pg_index wire_i JOIN wire_pg.pg_class wire_c ON wire_c.oid = wire_i.indexrelid JOIN wire_pg.pg_class wire_r ON wire_r.oid = wire_i.indrelid WHERE wire_i.indexrelid = o)",
    "CREATE MACRO wire_pg.pg_get_serial_sequence(t, c) AS NULL::VARCHAR",
    "CREATE MACRO wire_pg.pg_get_partkeydef(o) AS NULL::VARCHAR",
    "CREATE MACRO wire_pg.pg_tablespace_location(o) AS ''",
    `CREATE MACRO wire_pg.current_schemas(b) AS CASE WHEN b THEN ['pg_catalog', ${
      quoteLiteral(snapshot.defaultSchema)
    }] ELSE [${quoteLiteral(snapshot.defaultSchema)}] END`,
    `CREATE MACRO wire_pg.current_schema() AS ${quoteLiteral(snapshot.defaultSchema)}`,
    `CREATE MACRO wire_pg.current_database() AS ${quoteLiteral(snapshot.database)}`,
    `CREATE MACRO wire_pg.current_user() AS ${quoteLiteral(snapshot.user)}`,
    `CREATE MACRO wire_pg.session_user() AS ${quoteLiteral(snapshot.user)}`,
    "CREATE MACRO wire_pg.quote_ident(x) AS CASE WHEN regexp_matches(x, '^[a-z_][a-z0-9_]*$') THEN x ELSE '\"' || replace(x, '\"', '\"\"') || '\"' END",
    "CREATE MACRO wire_pg.array_lower(a, d) AS 1",
    "CREATE MACRO wire_pg.array_upper(a, d) AS len(a)",
    "CREATE MACRO wire_pg.pg_relation_size(o) AS 0",
    "CREATE MACRO wire_is._pg_expandarray(a) AS unnest(list_transform(generate_series(1, len(a)), lambda i: {'x': a[i], 'n': i}))",
    "CREATE MACRO wire_pg.pg_relation_is_publishable(o) AS false",
    // No table is a partition: a table's only ancestor is itself (psql asks in a select list).
    "CREATE MACRO wire_pg.pg_partition_ancestors(o) AS wire_pg.to_regclass(o)",
    "CREATE MACRO wire_pg.pg_get_statisticsobjdef_columns(o) AS NULL::VARCHAR",
    "CREATE MACRO wire_pg.pg_get_ruledef(o) AS NULL::VARCHAR, (o, p) AS NULL::VARCHAR",
    "CREATE MACRO wire_pg.pg_get_triggerdef(o) AS NULL::VARCHAR, (o, p) AS NULL::VARCHAR",
    "CREATE MACRO wire_pg.pg_get_viewdef(o) AS NULL::VARCHAR, (o, p) AS NULL::VARCHAR",
    "CREATE MACRO wire_pg.pg_total_relation_size(o) AS 0",
    `SET search_path = 'wire_pg,wire_is,main'`,
  ];
}

/** `name` as a PostgreSQL identifier in a definition's text. */
function quoteName(name: string): string {
  return /^[a-z_][a-z0-9_]*$/.test(name) ? name : `"${name.replaceAll('"', '""')}"`;
}

/**
 * A catalog query respelled for the emulation, outside its string literals and quoted names.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { catalogRewrite } from "./wire_catalog.ts";
 *
 * assert.equal(
 *   catalogRewrite("SELECT 'pg_catalog.x' FROM pg_catalog.pg_class c WHERE c.relname OPERATOR(pg_catalog.~) '^(t)$' COLLATE pg_catalog.default AND c.oid = 't'::pg_catalog.regclass"),
 *   "SELECT 'pg_catalog.x' FROM wire_pg.pg_class c WHERE c.relname ~ '(?s).*(?:^(t)$).*'  AND c.oid = wire_pg.to_regclass('t')",
 * );
 * ```
 */
export function catalogRewrite(sql: string): string {
  // Cut into literals and the rest; only the rest is respelled.
  const parts = sql.split(/('(?:[^']|'')*'|"(?:[^"]|"")*")/);
  // PostgreSQL's `~` finds the pattern anywhere; DuckDB's matches the whole text: a literal
  // pattern after `~`, `!~`, `~*` or `!~*` is widened to match anywhere.
  for (let i = 0; i + 1 < parts.length; i += 2) {
    const operator = /(!?)~(\*?)\s*$/.exec(
      parts[i]!.replace(/OPERATOR\s*\(\s*(?:pg_catalog\s*\.\s*)?(!?~\*?)\s*\)\s*$/i, "$1"),
    );
    const pattern = parts[i + 1]!;
    if (!operator || !pattern.startsWith("'")) continue;
    parts[i] = parts[i]!.replace(
      /(?:OPERATOR\s*\(\s*(?:pg_catalog\s*\.\s*)?)?!?~\*?\s*\)?\s*$/i,
      `${operator[1]}~ `,
    );
    parts[i + 1] = `'(?s${operator[2] ? "i" : ""}).*(?:${pattern.slice(1, -1)}).*'`;
  }
  const rewritten = parts.map((part, i) => {
    if (i % 2 === 1) {
      return part === '"pg_catalog"'
        ? "wire_pg"
        : part === '"information_schema"'
        ? "wire_is"
        : part;
    }
    return part
      .replace(/OPERATOR\s*\(\s*(?:pg_catalog\s*\.\s*)?([~!=<>*]+)\s*\)/gi, "$1")
      .replace(/COLLATE\s+(?:pg_catalog\s*\.\s*)?(?:default|"default"|"C"|C)\b/gi, "")
      .replace(/::\s*pg_catalog\s*\./gi, "::")
      .replace(/::\s*(oid|regproc|regnamespace|xid|cid)\b(\[\])?/gi, "::BIGINT$2")
      .replace(/::\s*(name|"char"|text)\b/gi, "::VARCHAR")
      .replace(/::\s*int2vector\b/gi, "::INTEGER[]")
      .replace(/\bpg_catalog\s*\.\s*(?=\w+\s*\()/gi, "")
      .replace(/\bpg_catalog\s*\./gi, "wire_pg.")
      .replace(/\binformation_schema\s*\./gi, "wire_is.")
      .replace(/\bjson_build_object\s*\(/gi, "json_object(")
      // An int2vector's text is its numbers apart by blanks; `x = ANY(list)` in a join's
      // condition is a subquery to DuckDB, which an outer join cannot take.
      .replace(
        /([\w.]*\b(?:indkey|indoption))\s*::\s*(?:varchar|text)\b/gi,
        "array_to_string($1, ' ')",
      )
      .replace(/([\w.]+)\s*=\s*ANY\s*\(\s*([\w.]+)\s*\)/gi, "list_contains($2, $1)");
  });
  // `x::regclass` and `x::regtype` after a literal, a name or a parenthesis; a set-returning
  // function's alias names its column too, as in PostgreSQL (`generate_series(…) s`).
  return rewritten.join("")
    .replace(
      /(generate_series\s*\((?:[^()]|\([^()]*(?:\([^()]*\)[^()]*)*\))*\))\s+(?:AS\s+)?(\w+)\b(?!\s*\()/gi,
      (whole, call: string, alias: string) =>
        /^(ON|WHERE|JOIN|LEFT|CROSS|INNER|GROUP|ORDER|UNION|LIMIT)$/i.test(alias)
          ? whole
          : `${call} AS ${alias}(${alias})`,
    )
    .replace(/\s*::\s*(regclass|regtype)\b/gi, "::$1")
    .split(/(?=::(?:regclass|regtype)\b)/i)
    .reduce((done, piece) => {
      const cast = /^::(regclass|regtype)\b/i.exec(piece);
      if (!cast) return done + piece;
      const start = operandStart(done);
      return `${done.slice(0, start)}wire_pg.to_${cast[1]!.toLowerCase()}(${done.slice(start)})${
        piece.slice(cast[0].length)
      }`;
    }, "");
}

/**
 * Where the operand that ends `text` begins: a literal, a parenthesised expression (and the
 * function name before it), or a name.
 */
function operandStart(text: string): number {
  let at = text.length - 1;
  if (text[at] === "'") {
    at--;
    while (at >= 0 && !(text[at] === "'" && text[at - 1] !== "'")) at -= text[at] === "'" ? 2 : 1;
    return Math.max(at, 0);
  }
  if (text[at] === ")") {
    let depth = 0;
    for (; at >= 0; at--) {
      if (text[at] === ")") depth++;
      else if (text[at] === "(" && --depth === 0) break;
    }
  }
  while (at > 0 && /[\w.]/.test(text[at - 1]!)) at--;
  return Math.max(at, 0);
}

/** An emulated catalog, ready for queries. */
export interface CatalogDatabase {
  /** The columns of a catalog query and the oids of its parameters. */
  describe(request: QueryRequest): Promise<{ columns: WireColumn[]; params: number[] }>;
  /** The rows of a catalog query. */
  open(request: QueryRequest): Promise<WireRows>;
}

/** Emulated catalogs kept, by what they hold, the least recently used closed first. */
const kept = new Map<string, Promise<DuckDBInstance>>();
const KEPT = 16;

async function instanceOf(snapshot: CatalogSnapshot): Promise<DuckDBInstance> {
  const key = JSON.stringify(snapshot);
  let instance = kept.get(key);
  if (instance) {
    kept.delete(key);
    kept.set(key, instance);
    return await instance;
  }
  instance = (async () => {
    const db = await DuckDBInstance.create(":memory:", {
      autoinstall_known_extensions: "false",
      autoload_known_extensions: "false",
      threads: "1",
      memory_limit: "64MB",
    });
    const connection = await db.connect();
    try {
      for (const statement of catalogStatements(snapshot)) await connection.run(statement);
      // Each table written again whole: DuckDB 1.5.5 crashed the process scanning, from
      // another connection, a boolean column of an in-memory table that ALTER or UPDATE had
      // touched (UpdateSegment::FetchUpdates); a table made by one CREATE … AS has no updates.
      const tables = await connection.runAndReadAll(
        "SELECT schema_name, table_name FROM duckdb_tables() WHERE schema_name IN ('wire_pg', 'wire_is')",
      );
      for (const [schema, name] of tables.getRows() as [string, string][]) {
        const table = `${schema}.${name}`;
        await connection.run(`CREATE TABLE ${schema}.wire_copy AS SELECT * FROM ${table}`);
        await connection.run(`DROP TABLE ${table}`);
        await connection.run(`ALTER TABLE ${schema}.wire_copy RENAME TO ${name}`);
      }
      await connection.run("SET enable_external_access = false");
      await connection.run("SET lock_configuration = true");
    } finally {
      connection.closeSync();
    }
    return db;
  })();
  kept.set(key, instance);
  // The oldest is forgotten, not closed: a query may still be running on it, and closing an
  // instance under a connection crashes the process; it closes when collected.
  if (kept.size > KEPT) kept.delete(kept.keys().next().value!);
  try {
    return await instance;
  } catch (error) {
    kept.delete(key);
    throw error;
  }
}

/** A catalog query's failure as a 400 quoting DuckDB, as `POST /query` answers one. */
function failure(error: unknown): unknown {
  if (error instanceof ApiError) return error;
  return ApiError.badRequest(`The query failed: ${engineMessage(error)}`);
}

/** Idle connections of each emulated catalog, their search path set. */
const idle = new WeakMap<DuckDBInstance, DuckDBConnection[]>();

/**
 * A connection of `db`, from its idle ones when there is one: connections are kept and used
 * again rather than closed after each query, as the store's own pool does.
 */
async function connect(db: DuckDBInstance): Promise<DuckDBConnection> {
  const connection = idle.get(db)?.pop();
  if (connection) return connection;
  const made = await db.connect();
  await made.run("SET search_path = 'wire_pg,wire_is,main'");
  return made;
}

/** Gives `connection` back to `db`'s idle ones. */
function release(db: DuckDBInstance, connection: DuckDBConnection): void {
  let list = idle.get(db);
  if (!list) idle.set(db, list = []);
  if (list.length < 4) list.push(connection);
}

/**
 * The emulated catalog of `snapshot`, built once for what it holds: each query runs on its
 * own connection, under the request's deadline.
 */
export async function catalogDatabase(snapshot: CatalogSnapshot): Promise<CatalogDatabase> {
  const db = await instanceOf(snapshot);
  const values = (request: QueryRequest) =>
    request.params.map((p) => typeof p === "bigint" ? Number(p) : p);
  return {
    async describe(request) {
      const connection = await connect(db);
      try {
        const prepared = await connection.prepare(catalogRewrite(request.sql));
        const columns: { name: string; type: string }[] = [];
        for (let i = 0; i < prepared.columnCount; i++) {
          let type = "VARCHAR";
          try {
            const t = prepared.columnType(i);
            type = t.alias ?? String(t);
          } catch {
            // Typed only by a parameter.
          }
          columns.push({ name: prepared.columnName(i), type });
        }
        const params = new Array(prepared.parameterCount).fill(0);
        prepared.destroySync();
        return { columns: wireColumns(columns), params };
      } catch (error) {
        throw failure(error);
      } finally {
        release(db, connection);
      }
    },
    async open(request) {
      const connection = await connect(db);
      const deadline = interruptAfter(connection, request.timeoutMs);
      try {
        const sql = catalogRewrite(request.sql);
        const reader = await connection.runAndReadAll(
          `SELECT * FROM (${sql}) AS "described" LIMIT 0`,
          bound(values(request)),
        );
        const types = reader.columnTypes();
        const columns = wireColumns(
          reader.columnNames().map((name, i) => ({
            name,
            type: types[i]!.alias ?? String(types[i]),
          })),
        );
        const all = await connection.runAndReadAll(
          wireSelect(sql, columns),
          bound(values(request)),
        );
        let rows = all.getRows() as (string | null)[][];
        return {
          columns,
          next(count) {
            const batch = rows.slice(0, count);
            rows = rows.slice(count);
            return Promise.resolve(batch);
          },
          close() {
            rows = [];
            return Promise.resolve();
          },
        };
      } catch (error) {
        throw deadline.error() ?? failure(error);
      } finally {
        deadline.clear();
        release(db, connection);
      }
    },
  };
}
