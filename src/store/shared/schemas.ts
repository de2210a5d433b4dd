/**
 * Schemas on either engine: listing, resolving, creating and dropping them. A schema keeps
 * the spelling it was created with; lookups ignore case.
 *
 * @module
 */

import { DEFAULT_SCHEMA, nameKey } from "../../catalog/names.ts";
import { ApiError } from "../../errors.ts";
import type { KeyedWrite } from "../store.ts";
import type { Core, CoreMetadata, ListSession, SqlSession } from "./core.ts";
import { forgetTables, referencingTables, tablesInSchema } from "./metadata_tables.ts";
import { checkSchemaDrop } from "./drop_checks.ts";
import { schemaLock } from "./locks.ts";
import { quoteIdent } from "./sql.ts";

/** Schema names in order, without internal ones, filtered to `visible` when given. */
export function listSchemas<S extends SqlSession>(
  core: Core<S>,
  visible?: readonly string[],
): Promise<string[]> {
  const allowed = visible && new Set(visible.map(nameKey));
  return core.read(async (session) =>
    (await core.metadata.allSchemas(session)).filter((s) => !allowed || allowed.has(nameKey(s)))
  );
}

/** The stored spelling of an existing schema's name; 404 when there is none. */
export async function existingSchema<S>(
  metadata: Pick<CoreMetadata<S>, "findSchema">,
  session: S,
  name: string,
): Promise<string> {
  const schema = await metadata.findSchema(session, name);
  if (schema === undefined) throw ApiError.notFound(`Schema "${name}" does not exist`);
  return schema;
}

/** The stored spelling of an existing schema's name; 404 when there is none. */
export function resolveSchema<S extends SqlSession>(core: Core<S>, name: string): Promise<string> {
  return core.read((session) => existingSchema(core.metadata, session, name));
}

/** Creates a schema; 409 when it exists in any case. */
export function createSchema<S extends SqlSession>(
  core: Core<S>,
  name: string,
  keyed?: KeyedWrite<string>,
): Promise<string> {
  return core.change([schemaLock(name, "exclusive")], keyed, async (session) => {
    const existing = await core.metadata.findSchema(session, name);
    if (existing !== undefined) throw ApiError.conflict(`Schema "${existing}" already exists`);
    await session.run(`CREATE SCHEMA ${quoteIdent(name)}`);
    return name;
  });
}

/** Drops a schema; 409 when it is `public`, or holds tables and `cascade` is false. */
export async function dropSchema<S extends SqlSession & ListSession>(
  core: Core<S>,
  name: string,
  cascade: boolean,
  keyed?: KeyedWrite<string>,
): Promise<string> {
  if (nameKey(name) === DEFAULT_SCHEMA) {
    throw ApiError.conflict(`Schema "${DEFAULT_SCHEMA}" cannot be dropped`);
  }
  const { metadata } = core;
  // Exclusive on the schema: every change to one of its tables holds it shared.
  return await core.change([schemaLock(name, "exclusive")], keyed, async (session) => {
    const schema = await existingSchema(metadata, session, name);
    const tables = await tablesInSchema(session, schema);
    await checkSchemaDrop(schema, tables, cascade, (ids) => referencingTables(session, ids));
    await forgetTables(session, tables.map((t) => t.id));
    await session.run(`DROP SCHEMA ${quoteIdent(schema)} CASCADE`);
    return schema;
  }, { redescribes: true });
}
