import assert from "node:assert/strict";
import { type DuckDBBlobVector, DuckDBInstance } from "@duckdb/node-api";
import { blobBytes, stringsOf } from "./wire_session.ts";

Deno.test("blobBytes() reads each BLOB of a chunk as the bindings' getItemBytes does", async () => {
  const instance = await DuckDBInstance.create(":memory:");
  const connection = await instance.connect();
  try {
    // Lengths around the 12 bytes kept inline, bytes of every value, an empty BLOB.
    const result = await connection.stream(
      "SELECT CASE WHEN i = 0 THEN ''::BLOB ELSE encode(repeat(chr(CAST(i % 200 + 40 AS INTEGER)), CAST(i % 40 AS INTEGER))) " +
        "|| unhex('00ff') END AS b FROM range(5000) r(i)",
    );
    let rows = 0;
    for (let chunk = await result.fetchChunk(); chunk && chunk.rowCount > 0;) {
      const vector = chunk.getColumnVector(0) as DuckDBBlobVector;
      // The pinned bindings' layout that the fast path reads: without it the comparison below
      // would compare getItemBytes with itself.
      assert.ok(stringsOf(vector), "the bindings no longer keep a BLOB vector's dataView");
      const read = blobBytes(vector, chunk.rowCount);
      assert.equal(read.length, chunk.rowCount);
      for (let i = 0; i < chunk.rowCount; i++) {
        assert.deepEqual(read[i], new Uint8Array(vector.getItemBytes(i)!), `row ${rows + i}`);
      }
      rows += chunk.rowCount;
      chunk = await result.fetchChunk();
    }
    assert.equal(rows, 5000);
  } finally {
    connection.closeSync();
    instance.closeSync();
  }
});
