/**
 * Structured logging: one JSON object per line on standard error.
 *
 * @module
 */

import { LOG_LEVELS, type LogLevel } from "./config.ts";

/** Writes log lines at or above its level. */
export interface Logger {
  log(level: LogLevel, message: string, fields?: Record<string, unknown>): void;
}

/**
 * A logger that writes JSON lines through `write` (standard error by default).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { createLogger } from "./log.ts";
 *
 * const lines: string[] = [];
 * const logger = createLogger("warn", (line) => lines.push(line));
 * logger.log("info", "ignored");
 * logger.log("error", "kept", { request_id: "r1" });
 * assert.equal(lines.length, 1);
 * assert.equal(JSON.parse(lines[0]!).request_id, "r1");
 * ```
 */
export function createLogger(
  level: LogLevel,
  write: (line: string) => void = (line) => console.error(line),
): Logger {
  const threshold = LOG_LEVELS.indexOf(level);
  return {
    log(lineLevel, message, fields = {}) {
      if (LOG_LEVELS.indexOf(lineLevel) < threshold) return;
      write(
        JSON.stringify({ time: new Date().toISOString(), level: lineLevel, message, ...fields }),
      );
    },
  };
}
