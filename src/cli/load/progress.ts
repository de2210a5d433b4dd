/**
 * The progress of an upload on standard error: a bar redrawn on a terminal, a few plain
 * lines elsewhere.
 *
 * @module
 */

/**
 * A byte count for people, in decimal units.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { formatBytes } from "./progress.ts";
 *
 * assert.equal(formatBytes(512), "512 B");
 * assert.equal(formatBytes(20_000_000), "20.0 MB");
 * assert.equal(formatBytes(1_500_000_000), "1.50 GB");
 * ```
 */
export function formatBytes(bytes: number): string {
  if (bytes < 1000) return `${Math.round(bytes)} B`;
  if (bytes < 1e6) return `${(bytes / 1e3).toFixed(1)} kB`;
  if (bytes < 1e9) return `${(bytes / 1e6).toFixed(1)} MB`;
  return `${(bytes / 1e9).toFixed(2)} GB`;
}

/**
 * A duration in seconds as `m:ss` or `h:mm:ss`; `--:--` when unknown.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { formatDuration } from "./progress.ts";
 *
 * assert.equal(formatDuration(5.2), "0:06");
 * assert.equal(formatDuration(3725), "1:02:05");
 * assert.equal(formatDuration(undefined), "--:--");
 * ```
 */
export function formatDuration(seconds: number | undefined): string {
  if (seconds === undefined || !Number.isFinite(seconds)) return "--:--";
  const whole = Math.ceil(Math.max(0, seconds));
  const h = Math.floor(whole / 3600);
  const m = Math.floor(whole / 60) % 60;
  const s = String(whole % 60).padStart(2, "0");
  return h > 0 ? `${h}:${String(m).padStart(2, "0")}:${s}` : `${m}:${s}`;
}

/**
 * One progress line: a bar, the percentage, bytes sent of the total, the rate and the time
 * left at that rate. Without a total (standard input) only the bytes sent and the rate,
 * and the time taken once `finished`.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { formatProgress } from "./progress.ts";
 *
 * assert.equal(
 *   formatProgress(10_000_000, 20_000_000, 2000),
 *   "[############------------]  50%  10.0 MB / 20.0 MB  5.0 MB/s  0:02 left",
 * );
 * assert.equal(formatProgress(10_000_000, undefined, 2000), "10.0 MB  5.0 MB/s");
 * ```
 */
export function formatProgress(
  sent: number,
  total: number | undefined,
  elapsedMs: number,
  finished = total !== undefined && sent >= total,
): string {
  const taken = `sent in ${
    // Elapsed time to a tenth under a minute: rounded up like the time left, a 0.2 s upload
    // would read "0:01".
    elapsedMs < 60_000 ? `${(elapsedMs / 1000).toFixed(1)} s` : formatDuration(elapsedMs / 1000)}`;
  const rate = elapsedMs > 0 ? sent / (elapsedMs / 1000) : 0;
  if (total === undefined) {
    return `${formatBytes(sent)}  ${formatBytes(rate)}/s${finished ? `  ${taken}` : ""}`;
  }
  const width = 24;
  const fraction = total > 0 ? Math.min(1, sent / total) : 1;
  const filled = Math.floor(fraction * width);
  const percent = `${Math.floor(fraction * 100)}%`.padStart(4);
  const left = rate > 0 ? (total - sent) / rate : undefined;
  const time = finished ? taken : `${formatDuration(left)} left`;
  return `[${"#".repeat(filled)}${"-".repeat(width - filled)}] ${percent}  ` +
    `${formatBytes(sent)} / ${formatBytes(total)}  ${formatBytes(rate)}/s  ${time}`;
}

/** Where {@link Progress} writes. */
export interface ProgressSink {
  write(text: string): void;
  /** A terminal gets one line redrawn in place; anything else a few plain lines. */
  readonly terminal: boolean;
  /** Milliseconds, for tests; `performance.now` by default. */
  readonly now?: () => number;
}

/** Smaller bodies go in a blink: they get the final line only. */
const STEPS_FROM_BYTES = 1_000_000;
/** Least time between two redraws on a terminal. */
const REDRAW_MS = 100;
/** Most time between two plain lines when not on a terminal. */
const PLAIN_LINE_MS = 10_000;

/**
 * A progress display of an upload of `total` bytes: on a terminal one line redrawn at most
 * ten times a second; elsewhere a plain line at each quarter (and every 10 s). A body under
 * 1 MB gets only the final line. Without a total (standard input), the terminal line is
 * redrawn as bytes go and plain lines come every 10 s.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { Progress } from "./progress.ts";
 *
 * let out = "";
 * let clock = 0;
 * const total = 10_000_000;
 * const sink = { write: (t: string) => out += t, terminal: false, now: () => clock };
 * const progress = new Progress(total, sink);
 * for (let sent = total / 10; sent < total; sent += total / 10) {
 *   clock += 50;
 *   progress.update(sent);
 * }
 * progress.finish(total);
 * assert.equal(out.split("\n").filter(Boolean).length, 4); // 25%, 50%, 75%, 100%
 * ```
 */
export class Progress {
  readonly #total: number | undefined;
  readonly #sink: ProgressSink;
  readonly #now: () => number;
  readonly #started: number;
  #lastDraw: number;
  #nextQuarter = 1;
  #drawn = false;
  #done = false;

  constructor(total: number | undefined, sink: ProgressSink) {
    this.#total = total;
    this.#sink = sink;
    this.#now = sink.now ?? (() => performance.now());
    this.#started = this.#now();
    this.#lastDraw = this.#started;
  }

  /** Reports `sent` bytes so far; draws when it is time to. */
  update(sent: number): void {
    if (this.#done || (this.#total ?? Infinity) < STEPS_FROM_BYTES) return;
    const now = this.#now();
    if (this.#sink.terminal) {
      if (now - this.#lastDraw < REDRAW_MS) return;
      this.#draw(sent, now, false);
      return;
    }
    const quarter = this.#total === undefined
      ? 0
      : this.#total > 0
      ? Math.floor((sent / this.#total) * 4)
      : 4;
    if ((quarter >= this.#nextQuarter && quarter < 4) || now - this.#lastDraw >= PLAIN_LINE_MS) {
      this.#nextQuarter = quarter + 1;
      this.#draw(sent, now, true);
    }
  }

  /** Draws the final line: the whole body was sent. */
  finish(sent: number): void {
    if (this.#done) return;
    this.#draw(sent, this.#now(), true, true);
    this.#done = true;
  }

  /** Ends the display without a final line (the upload stopped early). */
  stop(): void {
    if (this.#done) return;
    if (this.#sink.terminal && this.#drawn) this.#sink.write("\n");
    this.#done = true;
  }

  #draw(sent: number, now: number, newline: boolean, finished = false): void {
    const line = formatProgress(sent, this.#total, now - this.#started, finished);
    if (this.#sink.terminal) this.#sink.write(`\r${line}\x1b[K${newline ? "\n" : ""}`);
    else this.#sink.write(`${line}\n`);
    this.#lastDraw = now;
    this.#drawn = !newline;
  }
}
