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

/**
 * CPU time `pid` has used so far, user and system, in ms (from /proc/<pid>/stat); with
 * `children`, also that of its children it has waited for (a postmaster's ended backends, the
 * commands a bench ran to their end).
 */
export function cpuMs(pid: number | "self", children = false): number {
  const stat = Deno.readTextFileSync(`/proc/${pid}/stat`);
  // The fields after the command's name, which is in parentheses and may hold spaces.
  const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ").map(Number);
  const [utime, stime, cutime, cstime] = fields.slice(11, 15) as [number, number, number, number];
  return (utime + stime + (children ? cutime + cstime : 0)) * 10; // clock ticks of 10 ms
}

/** CPU time every `postgres` process has used so far, with its ended children's, in ms. */
export function postgresCpuMs(): number {
  let total = 0;
  for (const entry of Deno.readDirSync("/proc")) {
    if (!/^[0-9]+$/.test(entry.name)) continue;
    try {
      if (Deno.readTextFileSync(`/proc/${entry.name}/comm`).trim() !== "postgres") continue;
      total += cpuMs(Number(entry.name), true);
    } catch {
      // It ended meanwhile.
    }
  }
  return total;
}
