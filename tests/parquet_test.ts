import assert from "node:assert/strict";
import { assertSpoolEmpty, errorOf, ok, TestServer } from "./helpers/server.ts";
import { onDuckDB } from "./helpers/engine.ts";

onDuckDB.test(
  "parquet: a negative interval is 422 naming it, before any byte, on exports and queries",
  async () => {
    const server = await TestServer.start();
    try {
      const columns = [{ name: "id", type: "integer" }, { name: "span", type: "interval" }];
      ok(await server.request("POST", "table/spans", { body: { table: { columns } } }));
      const body = [{ id: 1, span: "1 day" }, { id: 2, span: "-1 day" }];
      ok(await server.request("POST", "table/spans/records", { body }));

      for (
        const answer of [
          await server.request("GET", "table/spans/records/parquet"),
          await server.request("POST", "query?format=parquet", {
            body: { sql: "SELECT INTERVAL '-1 day' AS x" },
          }),
        ]
      ) {
        const error = errorOf(answer, 422);
        assert.equal(error.type, "invalid_data");
        assert.match(error.message, /Parquet files do not support negative intervals/);
        assert.match(error.message, /csv, ndjson or json/);
      }
      // The half-written file is gone.
      await assertSpoolEmpty(server);
      // Positive intervals are written, and the other formats take the negative one.
      const positive = await server.request("GET", "table/spans/records/parquet?id=eq.1");
      assert.equal(positive.status, 200);
      const csv = await server.request("GET", "table/spans/records/csv?select=span&order=id");
      assert.equal(csv.status, 200, csv.text);
      assert.equal(csv.text.split("\n").length, 4);
    } finally {
      await server.dispose();
    }
  },
);
