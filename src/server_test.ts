import assert from "node:assert/strict";
import { parseConfig } from "./config.ts";
import { createLogger } from "./log.ts";
import { startService, StartupError } from "./server.ts";

const SECRET = "s".repeat(32);

Deno.test("startService() refuses a file that is not a database with a StartupError, leaving nothing open", async () => {
  const dir = await Deno.makeTempDir();
  try {
    await Deno.writeTextFile(`${dir}/tables.duckdb`, "not a database\n".repeat(500));
    const probe = Deno.listen({ hostname: "127.0.0.1", port: 0 });
    const { port } = probe.addr;
    probe.close();
    const config = parseConfig({ PORT: String(port), DATA_DIR: dir, AUTH_JWT_SECRET: SECRET });
    const printed: string[] = [];
    await assert.rejects(
      startService(config, createLogger("error"), { print: (line) => printed.push(line) }),
      (error) => error instanceof StartupError && /^Cannot open database /.test(error.message),
    );
    assert.deepEqual(printed, []);
    // The port is free again: the service let it go before it gave up.
    Deno.listen({ hostname: "127.0.0.1", port }).close();
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("startService() refuses an unreachable DATABASE_URL with a StartupError that hides its password", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const probe = Deno.listen({ hostname: "127.0.0.1", port: 0 });
    const { port } = probe.addr;
    probe.close();
    const config = parseConfig({
      PORT: "0",
      DATA_DIR: dir,
      AUTH_JWT_SECRET: SECRET,
      DATABASE_URL: `postgres://me:hunter2@127.0.0.1:${port}/tables`,
    });
    await assert.rejects(
      startService(config, createLogger("error"), { print: () => {} }),
      (error) =>
        error instanceof StartupError &&
        error.message.startsWith(
          `Cannot open database "postgres://me:%E2%80%A6@127.0.0.1:${port}/tables"`,
        ) &&
        !error.message.includes("hunter2"),
    );
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("startService()'s stop() closes once, however often it is called", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const config = parseConfig({ PORT: "0", DATA_DIR: dir, AUTH_JWT_SECRET: SECRET });
    const service = await startService(config, createLogger("error"), { print: () => {} });
    const first = service.stop();
    assert.equal(service.stop(), first);
    await first;
    await assert.rejects(fetch(`http://127.0.0.1:${service.addr.port}/healthz`));
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
