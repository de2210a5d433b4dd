/**
 * What the listener answers without the store: `SHOW`, and the `SELECT`s of session facts
 * that drivers and tools send on connecting (`version()`, `current_schema()`,
 * `current_database()`, `current_user`, `current_setting(…)`), alone in their select list.
 *
 * @module
 */

import { type WireColumn, wireOid } from "../service/wire.ts";
import { SERVER_VERSION, type Settings } from "./settings.ts";
import type { StatementKind } from "./statements.ts";

/** A result the listener made: its columns, its rows as text, and its tag when not SELECT. */
export interface Answered {
  readonly columns: readonly WireColumn[];
  readonly rows: readonly (readonly (string | null)[])[];
  readonly tag?: string;
}

/** What `version()` answers. */
export const VERSION =
  `PostgreSQL ${SERVER_VERSION} (table-service, read-only) on x86_64-pc-linux-gnu, 64-bit`;

/** Who is asking, for the session functions. */
export interface SessionFacts {
  readonly user: string;
  readonly database: string;
  readonly pid: number;
}

function column(name: string, type = "text"): WireColumn {
  return { name, type, oid: wireOid(type), typmod: -1 };
}

const FACT = new RegExp(
  String.raw`^(?:pg_catalog\.)?(version|current_schema|current_database|current_catalog|` +
    String.raw`current_user|session_user|user|pg_backend_pid|current_setting)` +
    String.raw`\s*(?:\(\s*(?:'([^']*)'(?:\s*,\s*\w+)?)?\s*\))?` +
    String.raw`(?:\s+(?:AS\s+)?("[^"]+"|\w+))?$`,
  "i",
);

/** The facts of a select list such as `version() AS v, current_schema()`, or undefined. */
function facts(
  list: string,
  settings: Settings,
  session: SessionFacts,
): { columns: WireColumn[]; row: string[] } | undefined {
  const columns: WireColumn[] = [];
  const row: string[] = [];
  for (const item of list.split(",")) {
    const match = FACT.exec(item.trim());
    if (!match) return undefined;
    const fn = match[1]!.toLowerCase();
    const alias = match[3]?.replace(/^"(.*)"$/, "$1");
    const name = alias ?? (fn === "current_catalog" ? "current_database" : fn);
    switch (fn) {
      case "version":
        columns.push(column(name));
        row.push(VERSION);
        break;
      case "current_schema":
        columns.push(column(name, "name"));
        row.push(settings.defaultSchema);
        break;
      case "current_database":
      case "current_catalog":
        columns.push(column(name, "name"));
        row.push(session.database);
        break;
      case "current_user":
      case "session_user":
      case "user":
        columns.push(column(name, "name"));
        row.push(session.user);
        break;
      case "pg_backend_pid":
        columns.push(column(name, "int4"));
        row.push(String(session.pid));
        break;
      case "current_setting":
        if (match[2] === undefined) return undefined;
        columns.push(column(name));
        row.push(settings.get(match[2]));
        break;
    }
  }
  return { columns, row };
}

/**
 * The answer to `sql` when the listener gives it itself, else undefined.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { answeredQuery } from "./session_queries.ts";
 * import { Settings } from "./settings.ts";
 * import { statementKind } from "./statements.ts";
 *
 * const settings = new Settings("ann", undefined, 30_000);
 * const facts = { user: "ann", database: "db", pid: 7 };
 * const sql = "select pg_catalog.version(), current_schema() AS s";
 * const answer = answeredQuery(statementKind(sql), sql, settings, facts);
 * assert.match(answer!.rows[0]![0]!, /^PostgreSQL 15\./);
 * assert.deepEqual(answer!.columns.map((c) => c.name), ["version", "s"]);
 * ```
 */
export function answeredQuery(
  kind: StatementKind,
  sql: string,
  settings: Settings,
  session: SessionFacts,
): Answered | undefined {
  if (kind.kind === "show") {
    if (kind.name === "all") {
      return {
        columns: [column("name"), column("setting"), column("description")],
        rows: settings.all().map(([name, value]) => [name, value, ""]),
        tag: "SHOW",
      };
    }
    return { columns: [column(kind.name)], rows: [[settings.get(kind.name)]], tag: "SHOW" };
  }
  if (kind.kind !== "query") return undefined;
  const select = /^\s*SELECT\s+([\s\S]+?)\s*;?\s*$/i.exec(sql);
  if (!select || /\bFROM\b/i.test(select[1]!)) return undefined;
  const found = facts(select[1]!, settings, session);
  return found && { columns: found.columns, rows: [found.row] };
}
