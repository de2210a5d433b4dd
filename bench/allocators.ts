/**
 * Preloaded into the service by `deno task bench load` and `deno task bench retained`
 * (`deno run --preload`). On SIGUSR2 it writes what the process's two native allocators and
 * V8's heap hold, as one JSON object, to the file named by `BENCH_ALLOCATOR_STATS`:
 *
 * - DuckDB allocates its buffers with the jemalloc built into its Linux library (symbols
 *   prefixed `duckdb_je_`), read here with its `mallctl`. `allocated` is what DuckDB holds,
 *   `resident` adds the pages it freed that jemalloc has not yet returned to the system.
 * - Everything else native (DuckDB's C++ objects, Deno, array buffers) uses glibc's malloc,
 *   read with `mallinfo2`: `heap` is what its arenas span, split into `inUse` and `free`.
 * - V8's heap, with `node:v8`'s statistics: `physical` is what it holds resident, of which
 *   `used` are live or not yet collected objects; `external` is memory outside the heap that
 *   JavaScript objects own (array buffers among it), allocated with glibc's malloc.
 *
 * It reads on demand rather than on a timer so that it costs the service nothing between
 * readings. Elsewhere than Linux with glibc the file holds `{ "error": … }` instead.
 *
 * When the service runs with `--v8-flags=--expose-gc` (`deno task bench retained` does), each
 * reading first collects all garbage, so that native memory owned by unreachable JavaScript
 * objects has been handed back by their finalizers: what remains is memory kept.
 *
 * The benches import it too: {@link allocators} asks the service from their side, and
 * `retained`'s bare process reads its own allocators with {@link readAllocators}. Without
 * `BENCH_ALLOCATOR_STATS`, as there, it installs no listener.
 *
 * @module
 */

import { getHeapStatistics } from "node:v8";
import { memory } from "./measure.ts";

const path = Deno.env.get("BENCH_ALLOCATOR_STATS");
const MB = 1024 ** 2;
const encoder = new TextEncoder();

/** Figures in MB; the bench reads the same shape. */
export interface AllocatorFigures {
  jemalloc: { allocated: number; resident: number };
  glibc: { heap: number; inUse: number; free: number };
  v8: { physical: number; used: number; external: number };
  /** When asked for: the process's RSS before and after a `malloc_trim(0)` run after reading. */
  trim?: { before: number; after: number };
}

/** As read from the bench's side: with the service's resident memory by kind. */
export interface ServiceMemory extends AllocatorFigures {
  /** From `/proc/<pid>/status`, which the service itself may not read. */
  rss: { anonymous: number; file: number };
}

export type AllocatorStats = ServiceMemory | { error: string };

/** What the preloaded module writes: its figures, or why it could not read them. */
type Written = AllocatorFigures | { error: string };

/** Opened at the first reading and kept: the process holds both libraries anyway. */
let libraries: ReturnType<typeof open> | undefined;

function open() {
  return {
    // By soname: the library the DuckDB bindings loaded, not a second copy.
    duckdb: Deno.dlopen("libduckdb.so", {
      duckdb_je_mallctl: {
        parameters: ["buffer", "buffer", "buffer", "buffer", "usize"],
        result: "i32",
      },
    }),
    libc: Deno.dlopen("libc.so.6", {
      mallinfo2: { parameters: [], result: { struct: new Array(10).fill("usize") } },
      malloc_trim: { parameters: ["usize"], result: "i32" },
    }),
  };
}

/** What the process's native allocators hold now, in MB. */
export function readAllocators(): AllocatorFigures {
  libraries ??= open();
  const mallctl = libraries.duckdb.symbols.duckdb_je_mallctl;
  const name = (text: string) => encoder.encode(`${text}\0`);
  // jemalloc's statistics are a snapshot taken when the epoch advances.
  const epoch = new BigUint64Array([1n]);
  mallctl(name("epoch"), null, null, new Uint8Array(epoch.buffer), 8n);
  const stat = (key: string) => {
    const value = new BigUint64Array(1);
    const length = new BigUint64Array([8n]);
    const failed = mallctl(
      name(`stats.${key}`),
      new Uint8Array(value.buffer),
      new Uint8Array(length.buffer),
      null,
      0n,
    );
    if (failed) throw new Error(`mallctl("stats.${key}") failed with ${failed}`);
    return Number(value[0]) / MB;
  };
  // struct mallinfo2: arena, ordblks, smblks, hblks, hblkhd, usmblks, fsmblks, uordblks,
  // fordblks, keepcost, each a size_t.
  const heap = getHeapStatistics();
  const info = new BigUint64Array(
    (libraries.libc.symbols.mallinfo2() as Uint8Array<ArrayBuffer>).buffer,
  );
  return {
    jemalloc: { allocated: stat("allocated"), resident: stat("resident") },
    glibc: { heap: Number(info[0]) / MB, inUse: Number(info[7]) / MB, free: Number(info[8]) / MB },
    v8: {
      physical: heap.total_physical_size / MB,
      used: heap.used_heap_size / MB,
      external: heap.external_memory / MB,
    },
  };
}

/**
 * Collects all garbage when the process was started with `--expose-gc`, and waits for the
 * finalizers the collection queued; otherwise does nothing.
 */
export async function collectGarbage(): Promise<void> {
  const gc = (globalThis as { gc?: () => void }).gc;
  if (typeof gc !== "function") return;
  for (let round = 0; round < 4; round++) {
    gc();
    await new Promise((resolve) => setTimeout(resolve, 150));
  }
}

/**
 * What the native allocators and V8's heap of the service `pid` hold, asked from the bench's
 * side, with its resident memory by kind: this module, preloaded into the service, answers
 * SIGUSR2 by writing them to `file`. With `trim`, the service then runs glibc's
 * `malloc_trim(0)` and adds its RSS before and after: how much of what glibc kept could have
 * been handed back.
 */
export async function allocators(
  pid: number,
  file: string,
  trim = false,
): Promise<AllocatorStats> {
  await Deno.remove(file).catch(() => {});
  if (trim) await Deno.writeTextFile(`${file}.trim`, "");
  // Read here, just before the service reads its allocators (and trims, if asked).
  const rss = { anonymous: memory(pid, "RssAnon"), file: memory(pid, "RssFile") };
  Deno.kill(pid, "SIGUSR2");
  for (let waited = 0; waited < 5_000; waited += 50) {
    await new Promise((r) => setTimeout(r, 50));
    const text = await Deno.readTextFile(file).catch(() => "");
    if (!text) continue;
    const figures: Written = JSON.parse(text);
    return "error" in figures ? figures : { ...figures, rss };
  }
  return { error: "the service did not write them within 5 s of SIGUSR2" };
}

/** Removes `file`; false when there was none. */
function removed(file: string): boolean {
  try {
    Deno.removeSync(file);
    return true;
  } catch (error) {
    if (error instanceof Deno.errors.NotFound) return false;
    throw error;
  }
}

if (path) {
  Deno.addSignalListener("SIGUSR2", async () => {
    let stats: Written;
    try {
      await collectGarbage();
      stats = readAllocators();
      if (removed(`${path}.trim`)) {
        const before = Deno.memoryUsage().rss / MB;
        libraries!.libc.symbols.malloc_trim(0n);
        stats.trim = { before, after: Deno.memoryUsage().rss / MB };
      }
    } catch (error) {
      stats = { error: error instanceof Error ? error.message : String(error) };
    }
    // Whole or not at all: the bench polls for the file.
    Deno.writeTextFileSync(`${path}.part`, JSON.stringify(stats));
    Deno.renameSync(`${path}.part`, path);
  });
}
