/**
 * A query message's text cut into statements at the semicolons outside quotes, dollar quotes
 * and comments, and each statement's kind by its first word: a query for the store, a command
 * the listener answers itself (transactions, settings), or one a read-only session refuses.
 *
 * @module
 */

import { WireError } from "./errors.ts";

/**
 * The statements of `text`, each without its semicolon; a statement of only blanks and
 * comments is left out.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { splitStatements } from "./statements.ts";
 *
 * assert.deepEqual(
 *   splitStatements("SELECT ';'; -- a; b\nSELECT $x$;$x$ ;; "),
 *   ["SELECT ';'", "-- a; b\nSELECT $x$;$x$"],
 * );
 * ```
 */
export function splitStatements(text: string): string[] {
  const statements: string[] = [];
  let start = 0;
  let i = 0;
  const push = (end: number) => {
    const statement = text.slice(start, end).trim();
    if (stripComments(statement).trim() !== "") statements.push(statement);
    start = end + 1;
  };
  while (i < text.length) {
    const c = text[i]!;
    if (c === "'" || c === '"') {
      // E'…' strings take backslash escapes.
      const escapes = c === "'" && /[eE]/.test(text[i - 1] ?? "") &&
        !/\w/.test(text[i - 2] ?? "");
      i++;
      while (i < text.length) {
        if (escapes && text[i] === "\\") i += 2;
        else if (text[i] === c && text[i + 1] === c) i += 2;
        else if (text[i] === c) break;
        else i++;
      }
      i++;
    } else if (c === "-" && text[i + 1] === "-") {
      while (i < text.length && text[i] !== "\n") i++;
    } else if (c === "/" && text[i + 1] === "*") {
      let depth = 1;
      i += 2;
      while (i < text.length && depth > 0) {
        if (text[i] === "/" && text[i + 1] === "*") depth++, i += 2;
        else if (text[i] === "*" && text[i + 1] === "/") depth--, i += 2;
        else i++;
      }
    } else if (c === "$" && !/\w/.test(text[i - 1] ?? "")) {
      const tag = /^\$([A-Za-z_][A-Za-z0-9_]*)?\$/.exec(text.slice(i))?.[0];
      if (tag) {
        const end = text.indexOf(tag, i + tag.length);
        i = end < 0 ? text.length : end + tag.length;
      } else i++;
    } else if (c === ";") {
      push(i);
      i++;
    } else i++;
  }
  push(text.length);
  return statements;
}

/** `text` without its comments (quotes are not looked into: for the first words only). */
function stripComments(text: string): string {
  return text.replace(/--[^\n]*/g, " ").replace(/\/\*[\s\S]*?\*\//g, " ");
}

/** What a statement is, to the listener. */
export type StatementKind =
  | { readonly kind: "query" }
  | { readonly kind: "begin" }
  | { readonly kind: "commit" }
  | { readonly kind: "rollback" }
  | { readonly kind: "set"; readonly words: string }
  | { readonly kind: "show"; readonly name: string }
  | { readonly kind: "reset"; readonly name: string }
  | { readonly kind: "discard" }
  | { readonly kind: "deallocate"; readonly name: string }
  | { readonly kind: "write"; readonly command: string }
  | { readonly kind: "unsupported"; readonly command: string };

/** First words of statements that change the database: 25006 in a read-only session. */
const WRITES = new Set([
  "INSERT",
  "UPDATE",
  "DELETE",
  "MERGE",
  "UPSERT",
  "CREATE",
  "DROP",
  "ALTER",
  "TRUNCATE",
  "GRANT",
  "REVOKE",
  "COMMENT",
  "REINDEX",
  "VACUUM",
  "CLUSTER",
  "LOCK",
  "REFRESH",
  "SECURITY",
  "IMPORT",
  "REASSIGN",
]);

/** First words of statements a read-only session does not run: 0A000. */
const UNSUPPORTED = new Set([
  "COPY",
  "ATTACH",
  "DETACH",
  "CALL",
  "DO",
  "PRAGMA",
  "INSTALL",
  "LOAD",
  "EXPORT",
  "CHECKPOINT",
  "EXPLAIN",
  "PREPARE",
  "EXECUTE",
  "LISTEN",
  "NOTIFY",
  "UNLISTEN",
  "FETCH",
  "DECLARE",
  "CLOSE",
  "MOVE",
  "ANALYZE",
  "SAVEPOINT",
  "RELEASE",
  "USE",
  "DESCRIBE",
  "SUMMARIZE",
  "CHECKPOINT",
  "FORCE",
]);

/**
 * The kind of `statement` by its first words.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { statementKind } from "./statements.ts";
 *
 * assert.deepEqual(statementKind("/* hi *\/ insert into t values (1)"), {
 *   kind: "write",
 *   command: "INSERT",
 * });
 * assert.deepEqual(statementKind("start transaction read only"), { kind: "begin" });
 * assert.deepEqual(statementKind("SHOW TIME ZONE"), { kind: "show", name: "timezone" });
 * ```
 */
export function statementKind(statement: string): StatementKind {
  const text = stripComments(statement).trim();
  const words = text.split(/\s+/);
  const first = (words[0] ?? "").toUpperCase().replace(/\($/, "");
  const rest = text.slice(words[0]!.length).trim();
  switch (first) {
    case "SELECT":
    case "WITH":
    case "VALUES":
    case "TABLE":
    case "FROM":
      return { kind: "query" };
    case "BEGIN":
    case "START":
      return { kind: "begin" };
    case "COMMIT":
    case "END":
      return { kind: "commit" };
    case "ROLLBACK":
    case "ABORT":
      // ROLLBACK TO SAVEPOINT needs savepoints, which a read-only session has no use for.
      return /\bTO\b/i.test(rest)
        ? { kind: "unsupported", command: "ROLLBACK TO SAVEPOINT" }
        : { kind: "rollback" };
    case "SET":
      return { kind: "set", words: rest };
    case "SHOW":
      return { kind: "show", name: settingName(rest) };
    case "RESET":
      return { kind: "reset", name: settingName(rest) };
    case "DISCARD":
      return { kind: "discard" };
    case "DEALLOCATE":
      return {
        kind: "deallocate",
        name: rest.replace(/^PREPARE\s+/i, "").replace(/^"(.*)"$/, "$1"),
      };
    default:
      if (text.startsWith("(")) return { kind: "query" };
      if (WRITES.has(first)) return { kind: "write", command: first };
      if (UNSUPPORTED.has(first)) return { kind: "unsupported", command: first };
      // Not a statement at all: the guard's parser says where.
      return { kind: "query" };
  }
}

/** A setting's name as SHOW, SET and RESET take it: lower case, `TIME ZONE` as `timezone`. */
export function settingName(text: string): string {
  const name = text.trim().replace(/;$/, "").trim().toLowerCase();
  if (/^time\s+zone$/.test(name)) return "timezone";
  if (/^transaction\s+isolation\s+level$/.test(name)) return "transaction_isolation";
  return name.replace(/^"(.*)"$/, "$1");
}

/**
 * The command tag of a statement the store answered with `rows` rows.
 */
export function selectTag(rows: number): string {
  return `SELECT ${rows}`;
}

/**
 * What `SET` `words` sets: a setting and its value (undefined for `DEFAULT`), or undefined
 * for transaction characteristics, which a read-only session has already.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { setTo } from "./statements.ts";
 *
 * assert.deepEqual(setTo("application_name = 'it''s'"), { name: "application_name", value: "it's" });
 * assert.deepEqual(setTo("TIME ZONE 'UTC'"), { name: "timezone", value: "UTC" });
 * assert.deepEqual(setTo("application_name TO FooBar"), { name: "application_name", value: "foobar" });
 * assert.equal(setTo("SESSION CHARACTERISTICS AS TRANSACTION READ ONLY"), undefined);
 * ```
 *
 * @throws {WireError} 25006 for read-write characteristics, 42601 for no setting.
 */
export function setTo(words: string): { name: string; value: string | undefined } | undefined {
  const text = words.replace(/^(SESSION(?!\s+CHARACTERISTICS\b)|LOCAL)\s+/i, "").trim();
  if (/^(TRANSACTION|SESSION\s+CHARACTERISTICS\s+AS\s+TRANSACTION)\b/i.test(text)) {
    if (/\bREAD\s+WRITE\b/i.test(text)) {
      throw new WireError("25006", "transactions are read-only here");
    }
    return undefined;
  }
  const zone = /^TIME\s+ZONE\s+(.+)$/i.exec(text);
  const match = zone
    ? ["", "timezone", zone[1]!]
    : /^("?[\w.]+"?)\s*(?:=|\s+TO\s+|\s+)\s*(.+)$/is.exec(text);
  if (!match) throw new WireError("42601", `syntax error in SET ${words}`);
  const name = match[1]!.replace(/^"(.*)"$/, "$1");
  const raw = match[2]!.trim();
  // A word unquoted is an identifier: PostgreSQL folds it to lower case.
  const value = /^DEFAULT$/i.test(raw)
    ? undefined
    : name.toLowerCase() === "search_path"
    ? raw
    : /^'.*'$/s.test(raw)
    ? raw.slice(1, -1).replace(/''/g, "'")
    : /^".*"$/s.test(raw)
    ? raw.slice(1, -1).replace(/""/g, '"')
    : raw.toLowerCase();
  return { name, value };
}
