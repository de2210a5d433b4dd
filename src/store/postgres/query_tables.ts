/**
 * The tables a client's query reads, read without their hidden column. Every table of the
 * store has one, ddl.ts {@link INSERTION_COLUMN}; dropping it from the answer's columns left
 * it in every value made of a whole row: `to_json(t)`, `row_to_json(t)`, `SELECT t FROM t`,
 * `ROW(t.*)`, `json_agg(t)`, a `NATURAL JOIN` of two tables (which joined on it). So each
 * place the query names a table (`FROM t AS a`) is rewritten to name a subquery of its
 * visible columns under the same name (`FROM (SELECT "x", "y" FROM "public"."t") AS a`); an
 * unaliased table gets its own name as alias, so `t.x` and the whole row `t` still resolve.
 * `ONLY`, `TABLESAMPLE` (moved inside the subquery) and `TABLE t` (made `SELECT * FROM …`)
 * keep their meaning.
 *
 * The rewrite splices the client's text, so its literals, comments and `$n` stay as written,
 * and then proves itself: the new text is parsed and must give the tree the guard checked,
 * each table replaced by its subquery, or the query is refused. A splice cut wrong can fail a
 * query, never change what it reads. What no longer works: a column written with its schema
 * (`public.t.x`, use `t.x`), system columns (`ctid`), and one unaliased name in two schemas
 * (`FROM a.t, b.t`, alias one).
 *
 * @module
 */

import { printable } from "../../catalog/names.ts";
import { ApiError } from "../../errors.ts";
import type { Session } from "./database.ts";
import { INSERTION_COLUMN } from "./ddl.ts";
import type { CheckedPostgresQuery, Node, TableRead } from "./query_guard.ts";
import type { TableRef } from "../../catalog/model.ts";
import { isNode } from "./query_guard.ts";
import type { PostgresParser } from "./query_parser.ts";
import { indexOfByte, type Token, tokenize } from "../shared/sql_tokens.ts";
import { qualified, quoteIdent } from "./sql.ts";

/** The visible columns of tables, in their order, keyed by {@link tableKey}. */
export type VisibleColumns = ReadonlyMap<string, readonly string[]>;

/**
 * Longest rewritten text, in characters: each read of a table writes out its columns, and a
 * query may read a wide table many times (1,600 columns of 63-byte names are 100 KB a read).
 */
export const MAX_REWRITTEN_LENGTH = 2_000_000;

/** The key of a table in {@link VisibleColumns}. */
export function tableKey(table: TableRef): string {
  return `${table.schema}\u0000${table.name}`;
}

/**
 * The visible columns of `tables` (tables, views, materialized and foreign tables), read in
 * the query's snapshot.
 *
 * @throws {ApiError} 400 naming the first that is none of those, as DuckDB answers an unknown
 * table.
 */
export async function visibleColumns(
  session: Session,
  tables: readonly TableRef[],
): Promise<VisibleColumns> {
  const columns = new Map<string, readonly string[]>();
  if (tables.length === 0) return columns;
  const rows = await session.rows(
    `SELECT q.s, q.t, c.oid IS NOT NULL AS found,
            ARRAY(SELECT a.attname::text FROM pg_catalog.pg_attribute a
                   WHERE a.attrelid = c.oid AND a.attnum > 0 AND NOT a.attisdropped
                     AND a.attname <> $3
                   ORDER BY a.attnum) AS columns
       FROM unnest($1::text[], $2::text[]) WITH ORDINALITY AS q(s, t, n)
       LEFT JOIN (pg_catalog.pg_class c
                  JOIN pg_catalog.pg_namespace ns ON ns.oid = c.relnamespace)
         ON ns.nspname = q.s AND c.relname = q.t AND c.relkind IN ('r', 'p', 'v', 'm', 'f')
      ORDER BY q.n`,
    [tables.map((t) => t.schema), tables.map((t) => t.name), INSERTION_COLUMN],
  );
  for (const row of rows) {
    const table = { schema: String(row.s), name: String(row.t) };
    if (row.found !== true) {
      throw ApiError.badRequest(
        `The query reads "${printable(table.schema)}.${
          printable(table.name)
        }", which is not a table`,
      );
    }
    columns.set(tableKey(table), row.columns as string[]);
  }
  return columns;
}

/** A replacement of `text[start, end)`. */
interface Splice {
  readonly start: number;
  readonly end: number;
  readonly text: string;
}

/**
 * `sql` with each table `checked` reads replaced by a subquery of its `columns`, proved by
 * `parser` to give the checked tree with those subqueries.
 *
 * @throws {ApiError} 400 when a name is written in a form this cannot splice, or the text
 * would pass {@link MAX_REWRITTEN_LENGTH}.
 */
export function withoutHiddenColumns(
  sql: string,
  checked: CheckedPostgresQuery,
  columns: VisibleColumns,
  parser: PostgresParser,
): string {
  if (checked.reads.length === 0) return sql;
  const tokens = tokenize(sql);
  const index = indexOfByte(sql);
  const reads = checked.reads.map((read) => ({
    read,
    ...readSplices(sql, tokens, index, read, columns),
  }));
  const splices = reads.flatMap(({ splice, sample }) => sample ? [splice, sample] : [splice]);
  const grown = splices.reduce((length, s) => length + s.text.length - (s.end - s.start), 0);
  if (sql.length + grown > MAX_REWRITTEN_LENGTH) throw tooLong();
  splices.sort((a, b) => b.start - a.start);
  let text = sql;
  let bound = Infinity;
  for (const splice of splices) {
    // Splices of one query never overlap; two that did would mean a token read wrong.
    if (splice.end > bound) throw cannotRewrite();
    text = text.slice(0, splice.start) + splice.text + text.slice(splice.end);
    bound = splice.start;
  }
  // What the text must parse to: the checked tree, each read replaced by its subquery.
  const subqueries = new Map<string, unknown>();
  const replaced = new Map<Node, Node>();
  for (const { read, inner } of reads) {
    if (!subqueries.has(inner)) subqueries.set(inner, statementOf(parser.parseSync(inner)));
    replaced.set(read.sample ?? read.node, {
      RangeSubselect: {
        subquery: subqueries.get(inner),
        alias: read.node.alias ?? { aliasname: String(read.node.relname) },
      },
    });
  }
  const expected = replacing(checked.statement, replaced);
  let got: unknown;
  try {
    got = statementOf(parser.parseSync(text));
  } catch (error) {
    if (!(error instanceof SyntaxError)) throw error;
    throw cannotRewrite();
  }
  if (!sameTree(expected, got)) throw cannotRewrite();
  return text;
}

/**
 * The splices of one read: its name (with `ONLY`, `*` or `TABLE` around it) replaced by the
 * subquery, and its `TABLESAMPLE` clause moved into it; and the subquery's own text.
 */
function readSplices(
  sql: string,
  tokens: readonly Token[],
  index: (byte: number) => number,
  read: TableRead,
  columns: VisibleColumns,
): { splice: Splice; sample?: Splice; inner: string } {
  const { node } = read;
  const fail = () => cannotRewrite(read);
  let first = tokenAt(tokens, index(Number(node.location)));
  if (first < 0) throw fail();
  let last = first + (typeof node.schemaname === "string" ? 2 : 0);
  if (!isName(tokens[first]) || !isName(tokens[last])) throw fail();
  if (last > first && tokens[first + 1]?.text !== ".") throw fail();
  const only = node.inh !== true;
  if (only) {
    if (isWord(tokens[first - 1], "only")) first--;
    else if (
      tokens[first - 1]?.text === "(" && isWord(tokens[first - 2], "only") &&
      tokens[last + 1]?.text === ")"
    ) {
      first -= 2;
      last++;
    } else throw fail();
  } else if (tokens[last + 1]?.text === "*") last++;
  const table = isWord(tokens[first - 1], "table");
  if (table) first--;
  let sample: Splice | undefined;
  let sampled = "";
  if (read.sample) {
    // The clause's location is its method's; TABLESAMPLE comes before it.
    const start = tokenAt(tokens, index(Number(read.sample.location))) - 1;
    const end = sampleEnd(tokens, start);
    if (start < 0 || end < 0 || !isWord(tokens[start], "tablesample")) throw fail();
    sample = { start: tokens[start]!.start, end: tokens[end]!.end, text: "" };
    sampled = ` ${sql.slice(sample.start, sample.end)}`;
  }
  const visible = columns.get(tableKey(read));
  if (visible === undefined) throw fail();
  const inner = `SELECT ${visible.map(quoteIdent).join(", ")} FROM ${only ? "ONLY " : ""}${
    qualified(read.schema, read.name)
  }${sampled}`;
  const name = quoteIdent(String(node.relname));
  const text = table
    ? `SELECT * FROM (${inner}) AS ${name}`
    : `(${inner})${node.alias === undefined ? ` AS ${name}` : ""}`;
  return {
    splice: { start: tokens[first]!.start, end: tokens[last]!.end, text },
    ...(sample ? { sample } : {}),
    inner,
  };
}

/** The index of the token beginning at `at`, or -1. */
function tokenAt(tokens: readonly Token[], at: number): number {
  let low = 0;
  let high = tokens.length - 1;
  while (low <= high) {
    const middle = (low + high) >> 1;
    const start = tokens[middle]!.start;
    if (start === at) return middle;
    if (start < at) low = middle + 1;
    else high = middle - 1;
  }
  return -1;
}

function isName(token: Token | undefined): boolean {
  return token !== undefined && (token.kind === "word" || token.kind === "quoted");
}

function isWord(token: Token | undefined, word: string): boolean {
  return token?.kind === "word" && token.text.toLowerCase() === word;
}

/**
 * The last token of the `TABLESAMPLE method (args) [REPEATABLE (seed)]` at `start`, or -1.
 */
function sampleEnd(tokens: readonly Token[], start: number): number {
  let i = start + 1;
  while (isName(tokens[i]) && tokens[i + 1]?.text === ".") i += 2;
  if (!isName(tokens[i])) return -1;
  let end = closing(tokens, i + 1);
  if (end >= 0 && isWord(tokens[end + 1], "repeatable")) end = closing(tokens, end + 2);
  return end;
}

/** The index of the `)` closing the `(` at `open`, or -1. */
function closing(tokens: readonly Token[], open: number): number {
  if (tokens[open]?.text !== "(") return -1;
  let level = 0;
  for (let i = open; i < tokens.length; i++) {
    const text = tokens[i]!.text;
    if (text === "(") level++;
    else if (text === ")" && --level === 0) return i;
  }
  return -1;
}

/** The one statement of a parsed text. */
function statementOf(tree: unknown): unknown {
  const statements = isNode(tree) && Array.isArray(tree.stmts) ? tree.stmts : [];
  return statements.length === 1 && isNode(statements[0]) ? statements[0].stmt : undefined;
}

/** `tree` with each node whose body `replaced` maps given as its replacement. */
function replacing(tree: unknown, replaced: ReadonlyMap<Node, Node>): unknown {
  if (Array.isArray(tree)) return tree.map((item) => replacing(item, replaced));
  if (!isNode(tree)) return tree;
  const [only, ...more] = Object.values(tree);
  if (more.length === 0 && isNode(only) && replaced.has(only)) return replaced.get(only);
  return Object.fromEntries(
    Object.entries(tree).map(([key, value]) => [key, replacing(value, replaced)]),
  );
}

/** Whether two trees are the same but for where their nodes are written (`location`). */
function sameTree(a: unknown, b: unknown): boolean {
  if (Array.isArray(a)) {
    return Array.isArray(b) && a.length === b.length && a.every((x, i) => sameTree(x, b[i]));
  }
  if (!isNode(a) || !isNode(b)) return a === b;
  const keys = (node: Node) => Object.keys(node).filter((k) => k !== "location").sort();
  const ka = keys(a);
  const kb = keys(b);
  return ka.length === kb.length && ka.every((k, i) => k === kb[i] && sameTree(a[k], b[k]));
}

/** 400 for a table named where or as the splice cannot tell; `read` when it is known. */
function cannotRewrite(read?: TableRead): ApiError {
  const table = read ? `table "${printable(read.schema)}.${printable(read.name)}"` : "a table";
  return ApiError.badRequest(
    `The query names ${table} in a form the service cannot read without its hidden ` +
      "column; write it as FROM schema.table AS alias",
  );
}

function tooLong(): ApiError {
  return ApiError.badRequest(
    `The query reads too many columns: with each table's columns written out it passes ` +
      `${MAX_REWRITTEN_LENGTH} characters`,
  );
}
