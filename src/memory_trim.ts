/**
 * Hands native memory the process has freed back to the system.
 *
 * Everything native outside DuckDB's buffers (DuckDB's C++ objects and query vectors, Deno's
 * HTTP server, the Node-API bindings) allocates with glibc's malloc. glibc returns a heap's
 * free memory only from its top, and only past a threshold that rises to as much as 64 MiB as
 * large blocks are freed; memory freed below the top stays resident. Under steady load the
 * service's glibc heaps grew by about 50 MB over a 5-minute soak while the memory in use in
 * them did not grow at all. `malloc_trim(0)` gives back every whole free page, wherever it
 * lies, so it runs on a timer, on a thread of Deno's blocking pool: the event loop never waits
 * for it.
 *
 * @module
 */

import type { Logger } from "./log.ts";

/**
 * Calls glibc's `malloc_trim(0)` every `intervalMs` until the returned function is called.
 * Where glibc is not the C library (macOS, musl), or `intervalMs` is 0, it does nothing.
 * The timer does not keep the process alive, and a call never starts before the last ended.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { createLogger } from "./log.ts";
 * import { startMemoryTrim } from "./memory_trim.ts";
 *
 * const stop = startMemoryTrim(0, createLogger("error"));
 * assert.equal(typeof stop, "function");
 * stop();
 * ```
 */
export function startMemoryTrim(intervalMs: number, logger: Logger): () => void {
  if (intervalMs <= 0) return () => {};
  let libc;
  try {
    libc = Deno.dlopen("libc.so.6", {
      malloc_trim: { parameters: ["usize"], result: "i32", nonblocking: true },
    });
  } catch (error) {
    logger.log("debug", "memory trim unavailable: no glibc", { error: String(error) });
    return () => {};
  }
  const trim = libc.symbols.malloc_trim;
  let running = false;
  const timer = setInterval(async () => {
    if (running) return;
    running = true;
    const started = performance.now();
    try {
      const released = await trim(0n);
      logger.log("debug", "memory trimmed", {
        released: released === 1,
        ms: Math.round(performance.now() - started),
      });
    } finally {
      running = false;
    }
  }, intervalMs);
  Deno.unrefTimer(timer);
  // The library stays open: closing it could pull it from under a call still running, and the
  // process holds libc anyway.
  return () => clearInterval(timer);
}
