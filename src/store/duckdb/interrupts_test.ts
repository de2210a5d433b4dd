import assert from "node:assert/strict";
import { withTempStore } from "../../../tests/helpers/store.ts";
import { ApiError } from "../../errors.ts";
import { boundMemory } from "./interrupts.ts";

const MIB = 1024 ** 2;

Deno.test("a read that grows the process past the memory bound is 503, and the store goes on", async () => {
  await withTempStore(async (store) => {
    // The store sets the bound from its memory limit; a small one here, so that values built
    // from the rows (about 100 MB of them a chunk, each freed after it) pass it at once.
    boundMemory(32 * MIB);
    try {
      const growing = {
        sql: "SELECT max(length(repeat('x', (x % 100)::INTEGER * 1000))) AS n " +
          "FROM range(1000000000) t(x)",
        params: [],
        defaultSchema: "main",
        timeoutMs: 60_000,
      };
      await assert.rejects(store.queries.read(growing, 1), (error) => {
        assert.ok(error instanceof ApiError, String(error));
        assert.equal(error.status, 503);
        assert.match(error.message, /more memory than the service allows/);
        return true;
      });
    } finally {
      boundMemory(undefined);
    }
    const page = await store.queries.read(
      { sql: "SELECT 42 AS n", params: [], defaultSchema: "main", timeoutMs: 30_000 },
      1,
    );
    assert.equal(page.json, '[{"n":42}]');
  });
});
