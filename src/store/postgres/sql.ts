/**
 * SQL text helpers for PostgreSQL: quoting (shared with DuckDB, in `../shared/sql.ts`) and
 * the default of a sequence-backed column.
 *
 * @module
 */

import { quoteLiteral } from "../shared/sql.ts";

export { qualified, quoteIdent, quoteLiteral } from "../shared/sql.ts";

/**
 * The default of a column drawing from a sequence, as the service shows it on every engine.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { sequenceDefault } from "./sql.ts";
 *
 * assert.equal(sequenceDefault({ schema: "public", name: "t_id_seq" }), "nextval('public.t_id_seq')");
 * ```
 */
export function sequenceDefault(
  sequence: { readonly schema: string; readonly name: string },
): string {
  return `nextval(${quoteLiteral(`${sequence.schema}.${sequence.name}`)})`;
}
