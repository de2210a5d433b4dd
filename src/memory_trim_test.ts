import assert from "node:assert/strict";
import { createLogger } from "./log.ts";
import { startMemoryTrim } from "./memory_trim.ts";

Deno.test({
  name: "startMemoryTrim() calls glibc's malloc_trim on its timer until stopped",
  ignore: Deno.build.os !== "linux",
}, async () => {
  const lines: Record<string, unknown>[] = [];
  const trimmed = Promise.withResolvers<void>();
  const logger = createLogger("debug", (line) => {
    const entry = JSON.parse(line);
    lines.push(entry);
    if (lines.filter((l) => l.message === "memory trimmed").length === 2) trimmed.resolve();
  });
  // The trim's timer does not keep the process alive; this one does, until the calls came.
  const keepAlive = setTimeout(() => trimmed.reject(new Error("no call within 10 s")), 10_000);
  const stop = startMemoryTrim(5, logger);
  await trimmed.promise.finally(() => clearTimeout(keepAlive));
  await stop();
  const calls = lines.filter((l) => l.message === "memory trimmed");
  assert.deepEqual(lines.filter((l) => l.message !== "memory trimmed"), []);
  for (const call of calls) assert.equal(typeof call.released, "boolean");
  await new Promise((resolve) => setTimeout(resolve, 30));
  assert.equal(lines.length, calls.length, "no call after stop()");
});

Deno.test("startMemoryTrim() with an interval of 0 never calls", async () => {
  const lines: string[] = [];
  const stop = startMemoryTrim(0, createLogger("debug", (line) => lines.push(line)));
  await new Promise((resolve) => setTimeout(resolve, 30));
  await stop();
  assert.deepEqual(lines, []);
});
