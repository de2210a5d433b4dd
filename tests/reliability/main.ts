/**
 * `deno task reliability`: the hostile catalogue, the SIGKILL crashes and the concurrent
 * clients, each against a service of its own, summed up in one table. Exits 1 when
 * anything failed, after listing what.
 *
 * @module
 */

import { TestServer } from "../helpers/server.ts";
import { runConcurrency } from "./concurrency.ts";
import { runCrashes } from "./crash.ts";
import { HOSTILE_ENV, runCatalogue, seed } from "./hostile.ts";

async function withServer<T>(
  env: Record<string, string>,
  work: (server: TestServer) => Promise<T>,
): Promise<T> {
  const server = await TestServer.spawn(env);
  try {
    return await work(server);
  } finally {
    await server.dispose();
  }
}

const progress = (line: string) => console.error(line);

const hostile = await withServer(HOSTILE_ENV, async (server) => {
  await seed(server);
  return await runCatalogue(server, progress);
});
const crashes = await runCrashes({ log: progress });
const concurrency = await withServer({}, (server) => runConcurrency(server));

const rows: [string, string, string][] = [
  [
    "hostile requests",
    "tried / answered correctly",
    `${hostile.tried} / ${hostile.correct}`,
  ],
  [
    "SIGKILL during replace, insert, rebuild",
    "kills / survived / acknowledged rows lost",
    `${crashes.kills} / ${crashes.survived} / ${crashes.rowsLost}`,
  ],
  [
    `concurrent clients for ${concurrency.seconds} s`,
    "clients / requests / 5xx / lost rows / lost columns",
    `${concurrency.clients} / ${concurrency.requests} / ${concurrency.serverErrors} / ${concurrency.lostRows} / ${concurrency.lostColumns}`,
  ],
];
const header: [string, string, string] = ["check", "measure", "result"];
const widths = [0, 1, 2].map((i) => Math.max(...[header, ...rows].map((r) => r[i]!.length)));
const line = (cells: string[]) => `| ${cells.map((c, i) => c.padEnd(widths[i]!)).join(" | ")} |`;
console.log(line(header));
console.log(line(widths.map((w) => "-".repeat(w))));
for (const row of rows) console.log(line(row));

const failures = [...hostile.failures, ...crashes.failures, ...concurrency.failures];
if (failures.length > 0) {
  console.error(`\n${failures.length} failures:\n${failures.map((f) => `- ${f}`).join("\n")}`);
  Deno.exit(1);
}
