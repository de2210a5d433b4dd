import assert from "node:assert/strict";
import { planTable } from "../../catalog/definition.ts";
import type { TableRef } from "../../catalog/model.ts";
import { ApiError } from "../../errors.ts";
import { freshDatabase, postgresTest } from "../../../tests/helpers/postgres.ts";
import { rowsInParts } from "../../../tests/helpers/rows.ts";
import { openStaging } from "../duckdb/mod.ts";
import type { OnConflict } from "../store.ts";
import type { StoreContext } from "./context.ts";
import { Database } from "./database.ts";
import { directRows, insertDirect } from "./direct_inserts.ts";
import { describeTables } from "./metadata_describe.ts";
import { openPostgresStore, type PostgresStore } from "./postgres_store.ts";
import { insert, insertRecords } from "./records.ts";
import { existingTable } from "./tables.ts";

/** Values sent, one per row, into a column of each type, and whether each goes straight in. */
const CASES: readonly { type: string; direct: readonly string[]; staged: readonly string[] }[] = [
  { type: "boolean", direct: ["true", "false", "null"], staged: ['"true"', '"t"', "1", "0", "2"] },
  {
    type: "integer",
    direct: ["1", "-5", "0", "-0", "2147483647"],
    staged: ["1.0", "1.5", "2.5", "-2.5", "1e2", '"12"', "2147483648", "true"],
  },
  {
    type: "double precision",
    direct: [
      "1.5",
      "0.1",
      "3",
      "-0.5",
      "1e-7",
      "1E300",
      "12.345",
      "9007199254740993",
      "0.30000000000000004",
      "2.2250738585072014e-308",
      "5e-324",
      "123456789012345678901234567890",
    ],
    staged: ["-0", "-0.0", "-0e3", "1e400", '"1.5"', "true", '"NaN"'],
  },
  { type: "real", direct: [], staged: ["1.5", "0.1", "3.4028235e38"] },
  { type: "smallint", direct: ["32767"], staged: ["32768", "-32769"] },
  {
    type: "bigint",
    direct: ["9007199254740993", "-9223372036854775808"],
    staged: ["9223372036854775808", "1.5"],
  },
  {
    type: "text",
    direct: ['"a"', '""', '"with \\"quote\\"\\n and \\\\"', '"üñí😀 \\u00e9"', '" padded "'],
    staged: ["1", "1.50", "true", '{"a": 1}', "[1, 2]", '"\\u0000"'],
  },
  { type: "varchar(3)", direct: ['"abc"'], staged: ['"abcd"', "12"] },
  {
    type: "date",
    direct: ['"2024-02-29"', '"0001-01-01"', '"9999-12-31"'],
    staged: ['"2023-02-29"', '"2024-1-1"', '"0000-01-01"', '"2024-01-01T00:00:00"', "20240101"],
  },
  {
    type: "timestamp",
    direct: ['"2024-01-01T10:00:00"', '"2024-01-01 10:00:00.123456"', '"2024-01-01T23:59:59.5"'],
    staged: [
      '"2024-01-01T10:00:00.1234567"',
      '"2024-01-01T10:00:00+05:00"',
      '"2024-01-01T24:00:00"',
      '"2024-01-01T23:59:60"',
      '"2024-13-01T00:00:00"',
    ],
  },
  {
    type: "timestamptz",
    direct: [
      '"2024-01-01T10:00:00Z"',
      '"2024-01-01T10:00:00+05:30"',
      '"2024-01-01 10:00:00.25-15:59"',
    ],
    staged: ['"2024-01-01T10:00:00+16:00"', '"2024-01-01T10:00:00"', '"2024-01-01T10:00:00z"'],
  },
  {
    type: "uuid",
    direct: ['"a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11"', '"A0EEBC99-9C0B-4EF8-BB6D-6BB9BD380A11"'],
    staged: ['"{a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11}"', '"a0eebc999c0b4ef8bb6d6bb9bd380a11"'],
  },
  { type: "numeric(6,2)", direct: [], staged: ["1.5", "1.005", '"2.5"'] },
];

interface Bench {
  readonly store: PostgresStore;
  readonly context: StoreContext;
  readonly dir: string;
}

/** A store, and a context of its own on the same database for the two ways of inserting. */
async function withBench(url: string, work: (bench: Bench) => Promise<void>) {
  const dir = await Deno.realPath(await Deno.makeTempDir({ prefix: "pgdirect-" }));
  const store = await openPostgresStore({ url, spoolDir: dir });
  const database = await Database.open({ url, maxConnections: 4 });
  const staging = await openStaging({ spoolDir: dir, tempDir: dir });
  try {
    await work({
      store,
      context: { database, staging, spoolDir: dir, readTimeoutMs: 10_000 },
      dir,
    });
  } finally {
    await staging.close();
    await database.close();
    await store.close();
    await Deno.remove(dir, { recursive: true });
  }
}

function arriving(dir: string, body: string) {
  return rowsInParts(new Blob([body]).stream(), dir);
}

/** Inserts `rows` the staging's way only. */
function insertStaged(
  context: StoreContext,
  ref: TableRef,
  rows: ReturnType<typeof arriving>,
  onConflict: OnConflict,
) {
  return insert(context, ref, () => rows.whole(), onConflict);
}

/** What an insert did: the column's values as PostgreSQL prints them, or the error's parts. */
type Outcome = { stored: (string | null)[] } | {
  status: number;
  message: string;
  details?: unknown;
};

async function outcome(bench: Bench, ref: TableRef, insert: () => Promise<unknown>) {
  try {
    await insert();
  } catch (error) {
    if (!(error instanceof ApiError)) throw error;
    return { status: error.status, message: error.message, details: error.details };
  }
  const rows = await bench.context.database.withSession((s) =>
    s.rows(`SELECT v::text AS v FROM "${ref.schema}"."t" ORDER BY id`)
  );
  return { stored: rows.map((r) => r.v as string | null) };
}

/** Tries `body` on the direct path alone, in a transaction rolled back: whether it took it. */
async function takenDirectly(bench: Bench, ref: TableRef, body: string, onConflict: OnConflict) {
  const spooled = arriving(bench.dir, body);
  const small = (await spooled.inMemory())!;
  let taken = false;
  await bench.context.database.transaction(async (session) => {
    const table = (await describeTables(session, [await existingTable(session, ref)]))[0]!;
    const direct = await directRows(table, small, small.bytes);
    if (direct) {
      await session.run("SAVEPOINT direct");
      taken = await insertDirect(session, table, direct, onConflict).then(() => true, () => false);
      await session.run("ROLLBACK TO SAVEPOINT direct");
    }
  });
  return taken;
}

await postgresTest("Direct inserts", async (t, server) => {
  const url = await freshDatabase(server);
  await withBench(url, async (bench) => {
    await t.step(
      "skip and update: the direct path counts and keeps the rows the staging keeps",
      async () => {
        for (const onConflict of ["skip", "update"] as const) {
          const outcomes = [];
          for (const schema of [`direct_${onConflict}`, `staged_${onConflict}`]) {
            await bench.store.createSchema(schema);
            const ref = { schema, name: "t" };
            await bench.store.createTable(
              planTable(ref, {
                columns: [{ name: "id", type: "integer" }, { name: "v", type: "text" }],
                constraints: { primary_key: { columns: ["id"] } },
              }),
              { ifNotExists: false },
            );
            await insertStaged(
              bench.context,
              ref,
              arriving(bench.dir, '[{"id": 1, "v": "old"}, {"id": 2, "v": "old"}]'),
              "fail",
            );
            const body = '[{"id": 2, "v": "a"}, {"id": 3, "v": "b"}, {"id": 3, "v": "c"}, ' +
              '{"id": 4, "v": "e"}]';
            if (schema.startsWith("direct")) {
              assert.equal(await takenDirectly(bench, ref, body, onConflict), true);
            }
            let counts: unknown;
            const stored = await outcome(bench, ref, async () => {
              counts = schema.startsWith("direct")
                ? await insertRecords(bench.context, ref, arriving(bench.dir, body), onConflict)
                : await insertStaged(
                  bench.context,
                  ref,
                  arriving(bench.dir, body),
                  onConflict,
                );
            });
            const { table: _, ...rest } = counts as Record<string, unknown>;
            outcomes.push({ stored, counts: rest });
          }
          assert.deepEqual(outcomes[0], outcomes[1], onConflict);
        }
      },
    );

    for (const { type, direct, staged } of CASES) {
      await t.step(
        `${type}: the direct path takes exactly the plain values, storing what the staging stores`,
        async () => {
          for (const schema of ["direct_", "staged_"]) {
            await bench.store.createSchema(`${schema}${type.replace(/\W/g, "_")}`).catch(() => {});
          }
          for (const value of [...direct, ...staged]) {
            const refs = ["direct_", "staged_"].map((s) => ({
              schema: `${s}${type.replace(/\W/g, "_")}`,
              name: "t",
            }));
            for (const ref of refs) {
              await bench.store.dropTable(ref).catch(() => {});
              await bench.store.createTable(
                planTable(ref, {
                  columns: [{ name: "id", type: "serial" }, { name: "v", type }],
                  constraints: { primary_key: { columns: ["id"] } },
                }),
                { ifNotExists: false },
              );
            }
            // Two rows, so that row numbers in errors are the second row's.
            const body = `[{"v": null}, {"v": ${value}}]`;
            const taken = await takenDirectly(bench, refs[0]!, body, "fail");
            assert.equal(taken, direct.includes(value), `${type} ${value}: taken directly`);
            const viaDirect = await outcome(
              bench,
              refs[0]!,
              () => insertRecords(bench.context, refs[0]!, arriving(bench.dir, body), "fail"),
            );
            const viaStaging = await outcome(
              bench,
              refs[1]!,
              () =>
                insertStaged(
                  bench.context,
                  refs[1]!,
                  arriving(bench.dir, body),
                  "fail",
                ),
            );
            assert.deepEqual(viaDirect, viaStaging, `${type} ${value}`);
          }
        },
      );
    }
  });
});
