/**
 * What the PostgreSQL protocol's listener (src/pgwire/) asks of the store: a connection
 * holding one read snapshot, whose queries are checked as `POST /query` checks them, and
 * PostgreSQL's built-in types, by which the store describes their columns.
 *
 * @module
 */

import type { Store, WireSession } from "../store/store.ts";

export type {
  QueryParam,
  QueryRequest,
  Store,
  WireColumn,
  WireRows,
  WireSession,
} from "../store/store.ts";
export { numericTypmod, WIRE_TYPES, wireOid, type WireType } from "../store/shared/wire_types.ts";

/** A connection holding one read snapshot (or for one statement, `single`) until it is ended. */
export async function openWireSession(
  deps: { readonly store: Store },
  options: { readonly single?: boolean } = {},
): Promise<WireSession> {
  return await deps.store.queries.session(options);
}
