/**
 * PostgreSQL's catalog functions in the emulated catalog (wire_catalog.ts), as DuckDB macros
 * over its tables, as far as clients' catalog queries call them.
 *
 * @module
 */

import { catalogSettings, type CatalogSnapshot } from "../shared/wire_catalog.ts";
import { quoteLiteral } from "./sql.ts";

/**
 * Whether the token may do `privilege` (a list, any of which will do) on the relation named
 * `relation`: read it, when the catalog holds it; nothing else, as the protocol only reads.
 */
function readable(relation: string, privilege: string): string {
  return `(regexp_matches(lower(${privilege}), 'select') AND EXISTS (SELECT 1 FROM wire_pg.pg_class wire_hc WHERE wire_hc.oid = wire_pg.to_regclass(${relation})))`;
}

/** Whether the token may do `privilege` in the schema `schema` (a name or oid): use it. */
function usable(schema: string, privilege: string): string {
  return `(regexp_matches(lower(${privilege}), 'usage') AND EXISTS (SELECT 1 FROM wire_pg.pg_namespace wire_n WHERE wire_n.nspname = CAST(${schema} AS VARCHAR) OR CAST(wire_n.oid AS VARCHAR) = CAST(${schema} AS VARCHAR)))`;
}

/** The macros of `snapshot`'s emulated catalog: its schema, database and user are the token's. */
export function catalogMacros(snapshot: CatalogSnapshot): string[] {
  const visibleSchemas = [snapshot.defaultSchema];
  // The session's own value (wire_catalog.ts sets it on the query's connection), else the
  // value a session starts with.
  const settingCase = `coalesce(getvariable('wire_settings')[lower(n)], CASE lower(n) ${
    catalogSettings(snapshot).map(([name, value]) =>
      `WHEN ${quoteLiteral(name.toLowerCase())} THEN ${quoteLiteral(value)}`
    ).join(" ")
  } END)`;
  const identParts = `list_transform(regexp_extract_all(x, '"(?:[^"]|"")*"|[^."]+'), ` +
    `lambda p: CASE WHEN p[1] = '"' THEN replace(p[2:-2], '""', '"') ELSE lower(trim(p)) END)`;
  return [
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
    // What the token may read is what the emulated catalog holds: a table may be read and a
    // schema used exactly when it is there; nothing may be written.
    `CREATE MACRO wire_pg.has_table_privilege(a, b) AS ${readable("a", "b")}, (u, a, b) AS ${
      readable("a", "b")
    }`,
    `CREATE MACRO wire_pg.has_any_column_privilege(a, b) AS ${readable("a", "b")}, (u, a, b) AS ${
      readable("a", "b")
    }`,
    `CREATE MACRO wire_pg.has_column_privilege(a, c, b) AS ${readable("a", "b")}, (u, a, c, b) AS ${
      readable("a", "b")
    }`,
    `CREATE MACRO wire_pg.has_schema_privilege(a, b) AS ${usable("a", "b")}, (u, a, b) AS ${
      usable("a", "b")
    }`,
    // A session may connect and make temporary tables, as PostgreSQL grants every role; no more.
    "CREATE MACRO wire_pg.has_database_privilege(a, b) AS regexp_matches(lower(b), 'connect|temp'), (u, a, b) AS regexp_matches(lower(b), 'connect|temp')",
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
    // … and in a FROM clause `WITH ORDINALITY AS a(relid, depth)`, which DuckDB's table macros
    // take as the macro's own columns.
    "CREATE MACRO wire_pg.pg_partition_ancestors(o) AS TABLE SELECT wire_pg.to_regclass(o) AS relid, 1 AS depth",
    "CREATE MACRO wire_pg.pg_get_statisticsobjdef_columns(o) AS NULL::VARCHAR",
    "CREATE MACRO wire_pg.pg_get_ruledef(o) AS NULL::VARCHAR, (o, p) AS NULL::VARCHAR",
    "CREATE MACRO wire_pg.pg_get_triggerdef(o) AS NULL::VARCHAR, (o, p) AS NULL::VARCHAR",
    "CREATE MACRO wire_pg.pg_get_viewdef(o) AS NULL::VARCHAR, (o, p) AS NULL::VARCHAR",
    "CREATE MACRO wire_pg.pg_total_relation_size(o) AS 0",
    // Sizes are not told (0 bytes): the tables live in the engine, not in PostgreSQL's files.
    "CREATE MACRO wire_pg.pg_table_size(o) AS 0",
    "CREATE MACRO wire_pg.pg_indexes_size(o) AS 0",
    "CREATE MACRO wire_pg.pg_database_size(d) AS 0",
    // PostgreSQL's rounding: bytes below 10 kB, then each unit while below 10 of the next.
    "CREATE MACRO wire_pg.pg_size_pretty(b) AS CASE WHEN abs(b) < 10240 THEN b || ' bytes' " +
    // Divided as fractions: the catalog divides integers as integers (wire_catalog.ts).
    "WHEN abs(b) < 10240 * 1024 THEN CAST(round(b / 1024.0) AS BIGINT) || ' kB' " +
    "WHEN abs(b) < 10240 * 1024 ^ 2 THEN CAST(round(b / 1024.0 ^ 2) AS BIGINT) || ' MB' " +
    "WHEN abs(b) < 10240 * 1024 ^ 3 THEN CAST(round(b / 1024.0 ^ 3) AS BIGINT) || ' GB' " +
    "ELSE CAST(round(b / 1024.0 ^ 4) AS BIGINT) || ' TB' END",
    // A CASE, not a subquery of pg_settings: a table function's arguments take no subquery
    // (Grafana's `generate_series(array_lower(string_to_array(current_setting(…)…`).
    `CREATE MACRO wire_pg.current_setting(n) AS ${settingCase}, (n, m) AS ${settingCase}`,
    // A name, qualified or not, as its parts: quoted parts as they are, others folded.
    `CREATE MACRO wire_pg.parse_ident(x) AS ${identParts}, (x, s) AS ${identParts}`,
    // SQL's key words, as DuckDB knows them, in PostgreSQL's categories (pgJDBC asks).
    "CREATE MACRO wire_pg.pg_get_keywords() AS TABLE SELECT keyword_name AS word, CASE keyword_category WHEN 'reserved' THEN 'R' WHEN 'unreserved' THEN 'U' WHEN 'column_name' THEN 'C' ELSE 'T' END AS catcode, keyword_category = 'reserved' AS barelabel, keyword_category AS catdesc, keyword_category AS baredesc FROM duckdb_keywords()",
    // No function is the token's to list (\df): pg_proc is empty.
    "CREATE MACRO wire_pg.pg_function_is_visible(o) AS true",
    "CREATE MACRO wire_pg.pg_get_function_result(o) AS NULL::VARCHAR",
    "CREATE MACRO wire_pg.pg_get_function_arguments(o) AS NULL::VARCHAR",
    "CREATE MACRO wire_pg.pg_get_function_identity_arguments(o) AS NULL::VARCHAR",
    // A relation as PostgreSQL prints a regclass: its name, with its schema unless visible
    // (after the macros it calls, which DuckDB binds as it creates it; its aliases are its own, as
    // a macro's expansion would take a caller's alias of the same name).
    "CREATE MACRO wire_pg.regclass_name(x) AS (SELECT CASE WHEN wire_pg.pg_table_is_visible(wire_rc.oid) THEN wire_pg.quote_ident(wire_rc.relname) ELSE wire_pg.quote_ident(wire_rn.nspname) || '.' || wire_pg.quote_ident(wire_rc.relname) END FROM wire_pg.pg_class wire_rc JOIN wire_pg.pg_namespace wire_rn ON wire_rn.oid = wire_rc.relnamespace WHERE wire_rc.oid = wire_pg.to_regclass(x))",
  ];
}
