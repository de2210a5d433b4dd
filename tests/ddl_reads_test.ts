import assert from "node:assert/strict";
import { beforeDeadline } from "../src/deadline.ts";
import { ENGINE } from "./helpers/engine.ts";
import { samples, value } from "./helpers/metrics.ts";
import { type Answer, errorOf, errorShapeProblem, ok, TestServer } from "./helpers/server.ts";

/** Every version of the table holds these ids, each with the value 10 × id. */
const IDS = [1, 2, 3];

/** What is wrong with a page of records, or undefined when it is one version of the table. */
function pageProblem(answer: Answer): string | undefined {
  const { records, total } = answer.body ?? {};
  if (total !== IDS.length || !Array.isArray(records) || records.length !== IDS.length) {
    return "not the table's three records";
  }
  // One version: the same two columns in every record, and values of one type.
  const keys = Object.keys(records[0]);
  if (keys.length !== 2 || keys[0] !== "id") return `columns ${JSON.stringify(keys)}`;
  const type = typeof records[0][keys[1]!];
  for (const [i, record] of records.entries()) {
    const value = record[keys[1]!];
    if (JSON.stringify(Object.keys(record)) !== JSON.stringify(keys)) return "mixed columns";
    if (record.id !== IDS[i] || typeof value !== type || String(value) !== String(10 * IDS[i]!)) {
      return `record ${JSON.stringify(record)}`;
    }
  }
}

/** What is wrong with a CSV export, or undefined when it is one version of the table. */
function csvProblem(answer: Answer): string | undefined {
  const [header, ...rows] = answer.text.trimEnd().split("\n");
  if (!/^id,[nmk]$/.test(header ?? "")) return `header ${JSON.stringify(header)}`;
  if (JSON.stringify(rows) !== JSON.stringify(IDS.map((id) => `${id},${10 * id}`))) {
    return `rows ${JSON.stringify(rows)}`;
  }
}

/** The definition of the table, its second column named `name` and typed `type`. */
function definition(name: string, type: string, ids?: [number, number]) {
  return {
    columns: [
      { ...(ids && { id: ids[0] }), name: "id", type: "integer" },
      { ...(ids && { id: ids[1] }), name, type },
    ],
    constraints: { primary_key: { columns: ["id"] } },
  };
}

/**
 * One round of DDL on `t`: renames, retypes both ways, then a drop and a re-creation with
 * the second column under another name, so each answer can tell which version it read.
 */
async function evolve(server: TestServer, round: number): Promise<void> {
  const put = async (name: string, type: string) => {
    const { table } = ok(await server.request("GET", "table/t"));
    const ids: [number, number] = [table.columns[0].id, table.columns[1].id];
    ok(await server.request("PUT", "table/t", { body: { table: definition(name, type, ids) } }));
  };
  const second = round % 2 === 0 ? "n" : "k";
  await put("m", "integer");
  await put("m", "varchar");
  await put(second, "integer");
  ok(await server.request("DELETE", "table/t"));
  ok(
    await server.request("POST", "table/t/upload/json", {
      body: {
        table: definition(round % 2 === 0 ? "k" : "n", "integer"),
        data: IDS.map((id) => [id, 10 * id]),
      },
    }),
  );
}

Deno.test("reads racing renames, retypes and re-creation see one version of the table or 404", async () => {
  const server = await TestServer.start();
  try {
    ok(
      await server.request("POST", "table/t/upload/json", {
        body: { table: definition("n", "integer"), data: IDS.map((id) => [id, 10 * id]) },
      }),
    );
    let writing = true;
    const problems: string[] = [];
    const seen = { page: 0, csv: 0, missing: 0 };
    const read = async () => {
      for (let i = 0; writing; i++) {
        const csv = i % 2 === 0;
        const answer = await server.request("GET", csv ? "table/t/records/csv" : "table/t/records");
        let problem: string | undefined;
        if (answer.status === 404) {
          problem = errorShapeProblem(answer);
          seen.missing++;
        } else if (answer.status !== 200) {
          problem = `status ${answer.status}`;
        } else {
          problem = csv ? csvProblem(answer) : pageProblem(answer);
          seen[csv ? "csv" : "page"]++;
        }
        if (problem) problems.push(`${csv ? "CSV" : "page"}: ${problem}: ${answer.text}`);
      }
    };
    const readers = Array.from({ length: 6 }, read);
    try {
      for (let round = 0; round < 5; round++) await evolve(server, round);
    } finally {
      writing = false;
      await Promise.all(readers);
    }
    console.log(`${JSON.stringify(seen)}, ${problems.length} wrong`);
    assert.equal(problems.length, 0, problems.slice(0, 5).join("\n"));
    // The race happened: both kinds of read succeeded, and some found the table gone.
    assert.ok(seen.page > 0 && seen.csv > 0 && seen.missing > 0, JSON.stringify(seen));
  } finally {
    await server.dispose();
  }
});

Deno.test("a CSV export reads its version to the end while the table is dropped", async () => {
  const server = await TestServer.start();
  try {
    const columns = [
      { name: "id", type: "integer" },
      { name: "s", type: "varchar", default: `'${"x".repeat(1000)}'` },
    ];
    ok(await server.request("POST", "table/big", { body: { table: { columns } } }));
    // About 32 MB of CSV: more than the sockets between server and client hold.
    const rows = 32_000;
    ok(
      await server.request("POST", "table/big/records", {
        body: Array.from({ length: rows }, (_, id) => ({ id })),
      }),
    );
    // Uncompressed: gzip would shrink the repeated text to a few buffers' worth.
    const response = await fetch(`${server.base}/api/v1/table/big/records/csv`, {
      headers: { authorization: `Bearer ${server.token}`, "accept-encoding": "identity" },
    });
    assert.equal(response.status, 200);
    const reader = response.body!.pipeThrough(new TextDecoderStream()).getReader();
    let text = (await reader.read()).value ?? "";
    const metrics = samples((await server.request("GET", "/metrics")).text);
    assert.ok(value(metrics, "table_service_open_transactions") > 0, "the export is under way");

    const dropped = server.request("DELETE", "table/big");
    const readToEnd = async () => {
      for (let read = await reader.read(); !read.done; read = await reader.read()) {
        text += read.value;
      }
    };
    if (ENGINE === "postgres") {
      // On PostgreSQL DDL waits for the exports of its table under way (docs/api.md).
      const early = await Promise.race([
        dropped.then(() => "dropped"),
        new Promise((r) => setTimeout(() => r("waiting"), 1_000)),
      ]);
      assert.equal(early, "waiting", "DELETE did not wait for the export");
      await readToEnd();
      ok(await beforeDeadline(dropped, 10_000, () => new Error("DELETE waited past the export")));
      errorOf(await server.request("GET", "table/big/records/csv"), 404);
    } else {
      // DDL does not wait for the export; later readers find the table gone.
      ok(await beforeDeadline(dropped, 10_000, () => new Error("DELETE waited for the export")));
      errorOf(await server.request("GET", "table/big/records/csv"), 404);
      await readToEnd();
    }
    const lines = text.trimEnd().split("\n");
    assert.equal(lines.length, rows + 1);
    assert.equal(lines[0], "id,s");
    assert.equal(lines.at(-1), `${rows - 1},${"x".repeat(1000)}`);
  } finally {
    await server.dispose();
  }
});
