/**
 * Schemas in DuckDB: listing, resolving, creating and dropping them.
 *
 * @module
 */

import { DEFAULT_SCHEMA, nameKey } from "../../catalog/names.ts";
import { ApiError } from "../../errors.ts";
import type { KeyedWrite } from "../store.ts";
import { existingSchema } from "./catalog_rows.ts";
import { noted, type StoreContext } from "./context.ts";
import { keepAnswer } from "./idempotency.ts";
import { allSchemas, findSchema, forgetTables, tablesInSchema } from "./metadata.ts";
import { referencingTables } from "./metadata_constraints.ts";
import { checkSchemaDrop } from "../shared/drop_checks.ts";
import { quoteIdent } from "./sql.ts";
import { heldBy, schemaLock } from "./store_locks.ts";

/** Schema names in order, without internal ones, filtered to `visible` when given. */
export function listSchemas(
  { database }: StoreContext,
  visible?: readonly string[],
): Promise<string[]> {
  const allowed = visible && new Set(visible.map(nameKey));
  return database.withSession(async (session) =>
    (await allSchemas(session)).filter((s) => !allowed || allowed.has(nameKey(s)))
  );
}

/** The stored spelling of an existing schema's name; 404 when there is none. */
export function resolveSchema({ database }: StoreContext, name: string): Promise<string> {
  return database.withSession((session) => existingSchema(session, name));
}

/** Creates a schema; 409 when it exists. */
export function createSchema(
  context: StoreContext,
  name: string,
  keyedWrite?: KeyedWrite<string>,
): Promise<string> {
  const keyed = noted(context, keyedWrite);
  return context.locks.run(
    [schemaLock(name, "exclusive")],
    () =>
      context.database.transaction(async (session) => {
        const existing = await findSchema(session, name);
        if (existing !== undefined) {
          throw ApiError.conflict(`Schema "${existing}" already exists`);
        }
        await session.run(`CREATE SCHEMA ${quoteIdent(name)}`);
        if (keyed) await keepAnswer(session, keyed, name);
        return name;
      }),
  );
}

/** Drops a schema; 409 when it holds tables and `cascade` is false. */
export function dropSchema(
  context: StoreContext,
  name: string,
  cascade: boolean,
  keyedWrite?: KeyedWrite<string>,
): Promise<string> {
  const keyed = noted(context, keyedWrite);
  if (nameKey(name) === DEFAULT_SCHEMA) {
    throw ApiError.conflict(`Schema "${DEFAULT_SCHEMA}" cannot be dropped`);
  }
  const locks = [schemaLock(name, "exclusive")];
  return context.locks.run(
    locks,
    () =>
      context.descriptions.changing(() =>
        context.database.transaction(async (session) => {
          const schema = await existingSchema(session, name);
          const tables = await tablesInSchema(session, schema);
          await checkSchemaDrop(schema, tables, cascade, (ids) => referencingTables(session, ids));
          await forgetTables(session, tables.map((t) => t.id));
          await session.run(`DROP SCHEMA ${quoteIdent(schema)} CASCADE`);
          if (keyed) await keepAnswer(session, keyed, schema);
          return schema;
        }), { affects: heldBy(locks) }),
  );
}
