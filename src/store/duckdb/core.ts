/**
 * The DuckDB engine as the shared operations see it (shared/core.ts): changes wait for the
 * process's own locks, then run in one transaction; a change that may alter descriptions
 * drops the cached ones its locks cover.
 *
 * @module
 */

import type { Core } from "../shared/core.ts";
import { DUCKDB_ESTIMATES } from "./estimates.ts";
import { noted, type StoreContext } from "./context.ts";
import type { Session } from "./database.ts";
import { keepAnswer } from "./idempotency.ts";
import { allSchemas, findSchema, META, pageOfTables } from "./metadata.ts";
import { describeTables } from "./metadata_describe.ts";
import { heldBy } from "./store_locks.ts";

/** The shared operations' view of the store working with `context`. */
export function duckdbCore(context: StoreContext): Core<Session> {
  return {
    read: (work) => context.database.withSession(work),
    snapshot: (work) => context.database.transaction(work),
    change(locks, keyedWrite, work, options) {
      const keyed = noted(context, keyedWrite);
      const transaction = () =>
        context.database.transaction(async (session) => {
          return await keepAnswer(session, keyed, await work(session));
        });
      return context.locks.run(
        locks,
        () =>
          options?.redescribes
            ? context.descriptions.changing(transaction, { affects: heldBy(locks) })
            : transaction(),
      );
    },
    estimates: DUCKDB_ESTIMATES,
    metadata: {
      allSchemas,
      describeTables,
      findSchema,
      pageOfTables,
      nextTemplateId: `nextval('${META}.template_ids')::INTEGER`,
    },
  };
}
