/**
 * Test support: the requests the PUT tests of both engines send about one table.
 *
 * @module
 */

import { ok, type TestServer } from "./server.ts";

// deno-lint-ignore no-explicit-any -- a table's JSON, as loose as the tests read it
type Json = any;

/**
 * Sends `table` as the new definition of `name` (`PUT /table/{name}`, `query` appended, `?`
 * included) and answers the service's answer, whatever its status.
 *
 * @example
 * ```ts ignore
 * ok(await put(server, "customers", { name: "Clients" }, "?schema=public"));
 * ```
 */
export async function put(
  server: TestServer,
  name: string,
  table: Json,
  query = "",
): Promise<Json> {
  return await server.request("PUT", `table/${name}${query}`, { body: { table } });
}

/**
 * The columns of table `name` in `schema`, as `GET /table/{name}` answers them.
 *
 * @example
 * ```ts ignore
 * const columns = await columnsOf(server, "customers");
 * ```
 */
export async function columnsOf(
  server: TestServer,
  name: string,
  schema = "public",
): Promise<Json[]> {
  return ok(await server.request("GET", `table/${name}?schema=${schema}`)).table.columns;
}
