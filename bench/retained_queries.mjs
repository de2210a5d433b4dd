/**
 * The table and page query that `deno task bench retained` runs both in a bare Deno process
 * (retained.ts) and under Node (retained_node.mjs): one text for both, so the two measure the
 * same statement. Plain JavaScript, for Node to import as it is.
 *
 * @module
 */

/** 200,000 rows of four columns, with no index. */
export const WIDE_TABLE = `CREATE TABLE wide AS SELECT i AS id, 'name-' || i AS name,
  i * 0.5 AS price, 'note number ' || i AS note FROM range(200000) r(i)`;

/** A page of whole rows by key: DuckDB plans it as a late-materialized top-N. */
export const PAGE = "SELECT * FROM wide ORDER BY id LIMIT 10";
