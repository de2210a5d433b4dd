/**
 * The service's own state: is its database engine alive, does it take writes, and what it
 * holds open.
 *
 * @module
 */

import { ApiError } from "../errors.ts";
import type { Store } from "../store/store.ts";

/** Throws 503 when the database engine failed and reopening it failed too. */
export async function checkLiveness(store: Store): Promise<void> {
  if (await store.health.healthy()) return;
  throw ApiError.unavailable("The database failed and cannot be reopened; restart the service");
}

/** Throws 503 when the database is closed or refuses writes. */
export async function checkReadiness(store: Store): Promise<void> {
  if (await store.health.ready()) return;
  throw ApiError.unavailable("The database is not writable");
}

/** The store's gauges for the metrics: open transactions, and engine memory by use. */
export async function storageGauges(
  store: Store,
): Promise<{ openTransactions: number; storageMemory: Map<string, number> }> {
  return {
    openTransactions: store.health.openTransactions(),
    storageMemory: await store.health.memoryByUse(),
  };
}
