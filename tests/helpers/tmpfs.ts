/**
 * Test support: a small tmpfs to fill up, for what a full disk does.
 *
 * @module
 */

/** Why a tmpfs cannot be mounted here, or undefined when it can. */
export const unmountable: string | undefined = Deno.build.os !== "linux"
  ? "mounting a tmpfs needs Linux"
  : Deno.uid() !== 0
  ? "mounting a tmpfs needs root"
  : undefined;

/** Runs `command` with `args`; throws with its message when it fails. */
async function run(command: string, ...args: string[]): Promise<void> {
  const { success, stderr } = await new Deno.Command(command, { args, stderr: "piped" }).output();
  if (!success) throw new Error(`${command} failed: ${new TextDecoder().decode(stderr)}`);
}

/** Runs `work` on a new directory with a tmpfs of `megabytes` mounted; unmounts it after. */
export async function withTmpfs(
  megabytes: number,
  work: (dir: string) => Promise<void>,
): Promise<void> {
  const dir = await Deno.makeTempDir({ prefix: "table-service-tmpfs-" });
  try {
    await run("mount", "-t", "tmpfs", "-o", `size=${megabytes}m`, "tmpfs", dir);
    try {
      await work(dir);
    } finally {
      await run("umount", dir);
    }
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}

/** Writes zeros to a new file at `path` until `bytes` are written or the disk is full to its last byte. */
export async function fill(path: string, bytes = Infinity): Promise<void> {
  const file = await Deno.open(path, { write: true, createNew: true });
  try {
    let written = 0;
    // Ever smaller writes once a larger one no longer fits: the last bytes of the disk too.
    for (let size = 1 << 16; size >= 1 && written < bytes;) {
      try {
        written += await file.write(new Uint8Array(Math.min(size, bytes - written)));
      } catch (error) {
        if ((error as { code?: string }).code !== "ENOSPC") throw error;
        size >>= 1;
      }
    }
  } finally {
    file.close();
  }
}
