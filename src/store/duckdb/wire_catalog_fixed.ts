/**
 * The relations of the emulated catalog (wire_catalog_tables.ts) that hold nothing of the
 * token's: the access methods, collations and tablespace every PostgreSQL has, and the
 * relations clients look into that are empty here (no comments, enums, functions,
 * triggers, policies, publications, rules, partitions or sequences to list).
 *
 * @module
 */

import { quoteLiteral } from "./sql.ts";

/** The oid of schema `pg_catalog`. */
export const NAMESPACE_CATALOG = 11;

/** A literal of a JavaScript value for a VALUES list. */
function literal(value: string | number | boolean | null | readonly (string | number)[]): string {
  if (value === null) return "NULL";
  if (typeof value === "number") return String(value);
  if (typeof value === "boolean") return value ? "true" : "false";
  if (Array.isArray(value)) return `[${value.map((v) => literal(v)).join(", ")}]`;
  return quoteLiteral(value as string);
}

/** A table of `columns` (name and DuckDB type) filled with `rows`. */
export function table(
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

/** The statements of the catalog's relations that are the same for every token. */
export function fixedCatalogTables(): string[] {
  return [
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
      "oid BIGINT, proname VARCHAR, pronamespace BIGINT, proowner BIGINT, prolang BIGINT, prokind VARCHAR, prosecdef BOOLEAN, proleakproof BOOLEAN, provolatile VARCHAR, proparallel VARCHAR, pronargs SMALLINT, prorettype BIGINT, proretset BOOLEAN, proargtypes BIGINT[], proallargtypes BIGINT[], proargmodes VARCHAR[], proargnames VARCHAR[], prosrc VARCHAR, proacl VARCHAR[]",
      [],
    ),
    ...table(
      "wire_pg.pg_trigger",
      "oid BIGINT, tgrelid BIGINT, tgparentid BIGINT, tgname VARCHAR, tgfoid BIGINT, tgtype SMALLINT, tgenabled VARCHAR, tgisinternal BOOLEAN",
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
  ];
}
