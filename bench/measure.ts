/**
 * Small measuring helpers the benchmark parts share.
 *
 * @module
 */

/** A memory figure of a process in MB, from /proc/<pid>/status. */
export function memory(pid: number, field: "VmHWM" | "VmRSS" | "RssAnon" | "RssFile"): number {
  const status = Deno.readTextFileSync(`/proc/${pid}/status`);
  const match = new RegExp(`^${field}:\\s+(\\d+) kB`, "m").exec(status);
  return match ? Number(match[1]) / 1024 : NaN;
}

/** The value at fraction `p` of ascending `sorted` samples. */
export function percentile(sorted: ArrayLike<number>, p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * p))]!;
}
