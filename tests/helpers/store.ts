/**
 * A store of its own for a unit test: a fresh DuckDB file in a temporary directory, closed
 * and removed however the test ends.
 *
 * @module
 */

import { type DuckDBStore, openStore } from "../../src/store/duckdb/mod.ts";

/** Runs `work` on a new store in a new temporary directory (`dir`), then removes both. */
export async function withTempStore<T>(
  work: (store: DuckDBStore, dir: string) => Promise<T>,
): Promise<T> {
  const dir = await Deno.makeTempDir();
  // One thread, as TestServer.start runs the service (see there).
  const store = await openStore({
    path: `${dir}/t.duckdb`,
    spoolDir: dir,
    tempDir: dir,
    threads: 1,
  });
  try {
    return await work(store, dir);
  } finally {
    await store.close();
    await Deno.remove(dir, { recursive: true });
  }
}
