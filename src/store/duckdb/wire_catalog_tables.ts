/**
 * The tables and views of the emulated catalog (wire_catalog.ts): PostgreSQL's `pg_catalog`
 * relations in schema `wire_pg` and `information_schema`'s in `wire_is`, filled from a
 * snapshot of the token's schemas and tables, with PostgreSQL's oids and type names.
 *
 * @module
 */

import { catalogSettings, type CatalogSnapshot } from "../shared/wire_catalog.ts";
import { typeCategory, WIRE_TYPES } from "../shared/wire_types.ts";
import { quoteLiteral } from "./sql.ts";
import { catalogMacros } from "./wire_catalog_macros.ts";
import { fixedCatalogTables, NAMESPACE_CATALOG, table } from "./wire_catalog_fixed.ts";

const NAMESPACE_PUBLIC = 2200;
const NAMESPACE_INFORMATION = 13_000;
const FIRST_OID = 16_384;

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
      2,
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
    typeCategory(t.name, t.element),
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
    // A fixed-length value is stored plain, as PostgreSQL's types say (\d+ shows it).
    "UPDATE wire_pg.pg_attribute SET attstorage = 'p', attbyval = attlen <= 8 WHERE attlen > 0",
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
    // A foreign key is kept by triggers on both its tables in PostgreSQL, and psql's \d asks
    // for foreign keys only of a table with triggers.
    "UPDATE wire_pg.pg_class SET relhastriggers = true WHERE oid IN (SELECT conrelid FROM wire_pg.pg_constraint WHERE contype = 'f' UNION SELECT confrelid FROM wire_pg.pg_constraint WHERE contype = 'f')",
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
    ...table(
      "wire_pg.pg_auth_members",
      "roleid BIGINT, member BIGINT, grantor BIGINT, admin_option BOOLEAN",
      [],
    ),
    "CREATE VIEW wire_pg.pg_user AS SELECT rolname AS usename, oid AS usesysid, rolcreatedb AS usecreatedb, rolsuper AS usesuper FROM wire_pg.pg_roles",
    "CREATE VIEW wire_pg.pg_authid AS SELECT * FROM wire_pg.pg_roles",
    ...fixedCatalogTables(),
    ...table(
      "wire_pg.wire_start_settings",
      "name VARCHAR, setting VARCHAR, source VARCHAR, boot_val VARCHAR, reset_val VARCHAR",
      catalogSettings(snapshot).map(([name, value, source]) => [
        name,
        value,
        source,
        name === "search_path" ? '"$user", public' : value,
        value,
      ]),
    ),
    // A session's own values (wire_catalog.ts sets them on the query's connection) over
    // those it starts with.
    "CREATE VIEW wire_pg.pg_settings AS SELECT name, " +
    "coalesce(getvariable('wire_settings')[lower(name) || ':setting'], " +
    "getvariable('wire_settings')[lower(name)], setting) AS setting, " +
    "CASE lower(name) WHEN 'statement_timeout' THEN 'ms' END AS unit, " +
    "CASE WHEN getvariable('wire_settings')[lower(name)] IS NULL THEN source " +
    "ELSE 'session' END AS source, boot_val, reset_val FROM wire_pg.wire_start_settings",
    "CREATE VIEW wire_pg.pg_tables AS SELECT n.nspname AS schemaname, c.relname AS tablename, " +
    `${
      quoteLiteral(snapshot.user)
    } AS tableowner, NULL::VARCHAR AS tablespace, c.relhasindex AS hasindexes, false AS hasrules, false AS hastriggers, false AS rowsecurity ` +
    "FROM wire_pg.pg_class c JOIN wire_pg.pg_namespace n ON n.oid = c.relnamespace WHERE c.relkind = 'r'",
    // The engine's estimate of each table's rows, where PostgreSQL keeps its own.
    ...table(
      "wire_pg.wire_estimates",
      "oid BIGINT, n BIGINT",
      snapshot.tables.map((t) => [tableOid.get(`${t.schema}.${t.name}`)!, t.rowsEstimate]),
    ),
    "UPDATE wire_pg.pg_class SET reltuples = e.n FROM wire_pg.wire_estimates e WHERE e.oid = pg_class.oid",
    "CREATE VIEW wire_pg.pg_stat_user_tables AS SELECT c.oid AS relid, n.nspname AS schemaname, c.relname, CAST(c.reltuples AS BIGINT) AS n_live_tup, 0::BIGINT AS n_dead_tup, 0::BIGINT AS seq_scan, 0::BIGINT AS idx_scan " +
    "FROM wire_pg.pg_class c JOIN wire_pg.pg_namespace n ON n.oid = c.relnamespace WHERE c.relkind = 'r'",
    "CREATE VIEW wire_pg.pg_stat_all_tables AS SELECT * FROM wire_pg.pg_stat_user_tables",
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
    ...catalogMacros(snapshot),
    `SET search_path = 'wire_pg,wire_is,main'`,
  ];
}

/** `name` as a PostgreSQL identifier in a definition's text. */
function quoteName(name: string): string {
  return /^[a-z_][a-z0-9_]*$/.test(name) ? name : `"${name.replaceAll('"', '""')}"`;
}
