/**
 * Hands native memory the process has freed back to the system.
 *
 * Everything native outside DuckDB's buffers (DuckDB's C++ objects and query vectors, Deno's
 * HTTP server, the Node-API bindings) allocates with glibc's malloc. glibc returns a heap's
 * free memory only from its top, and only past a threshold that rises to as much as 64 MiB as
 * large blocks are freed; memory freed below the top stays resident. Under steady load the
 * service's glibc heaps grew by about 50 MB over a 5-minute soak while the memory in use in
 * them did not grow at all. `malloc_trim(0)` gives back every whole free page, wherever it
 * lies, so it runs on a timer, off the event loop, on a thread of Deno's blocking pool. While
 * it trims a heap, glibc holds that heap's lock, so an allocation in it waits that long.
 *
 * @module
 */

import type { Logger } from "./log.ts";

/**
 * Calls glibc's `malloc_trim(0)` every `intervalMs` until the returned function is called;
 * that function resolves once a call still running has ended. Where glibc's `malloc_trim`
 * cannot be loaded (macOS, musl), or `intervalMs` is 0, it does nothing. The timer does not
 * keep the process alive, and a call never starts before the last ended.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { createLogger } from "./log.ts";
 * import { startMemoryTrim } from "./memory_trim.ts";
 *
 * const stop = startMemoryTrim(0, createLogger("error"));
 * assert.equal(await stop(), undefined);
 * ```
 */
export function startMemoryTrim(intervalMs: number, logger: Logger): () => Promise<void> {
  if (intervalMs <= 0) return () => Promise.resolve();
  let libc;
  try {
    libc = Deno.dlopen("libc.so.6", {
      malloc_trim: { parameters: ["usize"], result: "i32", nonblocking: true },
    });
  } catch (error) {
    logger.log("info", "memory trim off: glibc's malloc_trim cannot be loaded", {
      error: String(error),
    });
    return () => Promise.resolve();
  }
  const trim = libc.symbols.malloc_trim;
  let running: Promise<void> | undefined;
  const timer = setInterval(() => {
    if (running) return;
    // Cleared in a later microtask, after this assignment, however the call ends.
    running = (async () => {
      const started = performance.now();
      try {
        const released = await trim(0n);
        logger.log("debug", "memory trimmed", {
          released: released === 1,
          ms: Math.round(performance.now() - started),
        });
      } catch (error) {
        logger.log("warn", "memory trim failed", { error: String(error) });
      }
    })().finally(() => running = undefined);
  }, intervalMs);
  Deno.unrefTimer(timer);
  let stopped: Promise<void> | undefined;
  return () =>
    stopped ??= (async () => {
      clearInterval(timer);
      await running;
      try {
        libc.close();
      } catch (error) {
        logger.log("warn", "memory trim: cannot close libc", { error: String(error) });
      }
    })();
}
