/**
 * Schemas on PostgreSQL: listing, resolving, creating and dropping them. A schema is a
 * PostgreSQL schema whose name keeps the spelling it was created with; lookups ignore case,
 * as on DuckDB.
 *
 * @module
 */

import { DEFAULT_SCHEMA, nameKey } from "../../catalog/names.ts";
import { ApiError } from "../../errors.ts";
import type { KeyedWrite } from "../store.ts";
import type { StoreContext } from "./context.ts";
import type { Session } from "./database.ts";
import { keepAnswer, keyedTransaction } from "./idempotency.ts";
import { schemaLock, takeLocks } from "./locks.ts";
import { allSchemas, findSchema, forgetTables, tablesInSchema } from "./metadata.ts";
import { referencingTables } from "./metadata_constraints.ts";
import { checkSchemaDrop } from "../shared/drop_checks.ts";
import { quoteIdent } from "./sql.ts";

/** The stored name of schema `name`; 404 when there is none. */
export async function existingSchema(session: Session, name: string): Promise<string> {
  const schema = await findSchema(session, name);
  if (schema === undefined) throw ApiError.notFound(`Schema "${name}" does not exist`);
  return schema;
}

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

/** Creates a schema; 409 when it exists in any case. */
export function createSchema(
  { database }: StoreContext,
  name: string,
  keyed?: KeyedWrite<string>,
): Promise<string> {
  return keyedTransaction(database, keyed, async (session) => {
    await takeLocks(session, [schemaLock(name, "exclusive")]);
    const existing = await findSchema(session, name);
    if (existing !== undefined) throw ApiError.conflict(`Schema "${existing}" already exists`);
    await session.run(`CREATE SCHEMA ${quoteIdent(name)}`);
    if (keyed) await keepAnswer(session, keyed, name);
    return name;
  });
}

/** Drops a schema; 409 when it holds tables and `cascade` is false, or is `public`. */
export function dropSchema(
  { database }: StoreContext,
  name: string,
  cascade: boolean,
  keyed?: KeyedWrite<string>,
): Promise<string> {
  if (nameKey(name) === DEFAULT_SCHEMA) {
    return Promise.reject(ApiError.conflict(`Schema "${DEFAULT_SCHEMA}" cannot be dropped`));
  }
  return keyedTransaction(database, keyed, async (session) => {
    // Exclusive on the schema: every change to one of its tables holds it shared.
    await takeLocks(session, [schemaLock(name, "exclusive")]);
    const schema = await existingSchema(session, name);
    const tables = await tablesInSchema(session, schema);
    await checkSchemaDrop(schema, tables, cascade, (ids) => referencingTables(session, ids));
    await forgetTables(session, tables.map((t) => t.id));
    await session.run(`DROP SCHEMA ${quoteIdent(schema)} CASCADE`);
    if (keyed) await keepAnswer(session, keyed, schema);
    return schema;
  });
}
