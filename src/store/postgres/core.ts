/**
 * The PostgreSQL engine as the shared operations see it (shared/core.ts): a change claims its
 * idempotency key, then takes its locks as advisory locks, all in its one transaction, so
 * every instance on the database takes turns.
 *
 * @module
 */

import type { Core } from "../shared/core.ts";
import { POSTGRES_ESTIMATES } from "./estimates.ts";
import type { StoreContext } from "./context.ts";
import type { Session } from "./database.ts";
import { keepAnswer, keyedTransaction } from "./idempotency.ts";
import { takeLocks } from "./locks.ts";
import { allSchemas, findSchema, pageOfTables } from "./metadata.ts";
import { describeTables } from "./metadata_describe.ts";

/** The shared operations' view of the store working with `context`. */
export function postgresCore({ database }: StoreContext): Core<Session> {
  return {
    read: (work) => database.withSession(work),
    snapshot: (work) =>
      database.transaction(async (session) => {
        await session.run("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ READ ONLY");
        return await work(session);
      }),
    change: (locks, keyed, work) =>
      keyedTransaction(database, keyed, async (session) => {
        await takeLocks(session, locks);
        return await keepAnswer(session, keyed, await work(session));
      }),
    estimates: POSTGRES_ESTIMATES,
    metadata: {
      allSchemas,
      describeTables,
      findSchema,
      pageOfTables,
    },
  };
}
