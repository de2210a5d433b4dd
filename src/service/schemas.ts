/**
 * Schemas: list the ones a token may see, create, drop.
 *
 * @module
 */

import type { KeyedWrite, Store } from "../store/store.ts";

/** Schema names in order; only those in `visible` when the token is confined to some. */
export async function listSchemas(
  store: Store,
  visible?: readonly string[],
): Promise<string[]> {
  return await store.schemas.list(visible);
}

/** Creates a schema (409 when it exists) and returns its stored name. */
export async function createSchema(
  store: Store,
  name: string,
  keyed?: KeyedWrite<string>,
): Promise<string> {
  return await store.schemas.create(name, keyed);
}

/** Drops a schema (409 when it holds tables and `cascade` is false); returns its name. */
export async function dropSchema(
  store: Store,
  name: string,
  cascade: boolean,
  keyed?: KeyedWrite<string>,
): Promise<string> {
  return await store.schemas.drop(name, cascade, keyed);
}
