/**
 * SQL text helpers for PostgreSQL: quoting, and the default of a sequence-backed column as
 * the service shows it, both shared with DuckDB in `../shared/sql.ts`.
 *
 * @module
 */

export { qualified, quoteIdent, quoteLiteral, sequenceDefault } from "../shared/sql.ts";
