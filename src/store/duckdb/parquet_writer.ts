/**
 * Parquet written by DuckDB for another engine: a CSV file of text values becomes a Parquet
 * file of typed columns, in a throwaway in-memory DuckDB hardened as the store's own is.
 *
 * @module
 */

import { openInstance } from "./database_open.ts";
import { quoteIdent, quoteLiteral } from "./sql.ts";

/** A column of the Parquet file: its name and its DuckDB type. */
export interface ParquetColumn {
  readonly name: string;
  /** A DuckDB type (`BIGINT`, `DECIMAL(10,2)`, `TIMESTAMP WITH TIME ZONE`, `INTEGER[]`, …). */
  readonly type: string;
}

/** How a cell's text becomes the column's value. */
function fromText(cell: string, type: string): string {
  if (type === "BLOB") return `from_base64(${cell})`;
  return `CAST(${cell} AS ${type})`;
}

/**
 * Writes `outFile`, a Parquet file of `columns`, from `csvFile`: no header, one line per row,
 * comma-separated, every value quoted (`""` doubling a quote) and NULL an empty unquoted cell;
 * each cell is the value's text as DuckDB casts it to the column's type (`true`, ISO 8601
 * times, JSON text for JSON and lists), base64 for a BLOB. Both files must lie in `dir`, the
 * only directory the DuckDB may reach. A value the type cannot take fails the write.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { writeParquet } from "./parquet_writer.ts";
 *
 * const dir = await Deno.realPath(await Deno.makeTempDir());
 * await Deno.writeTextFile(`${dir}/in.csv`, '"1","a"\n,"b"\n');
 * await writeParquet(`${dir}/in.csv`, [{ name: "n", type: "BIGINT" }, { name: "s", type: "VARCHAR" }], `${dir}/out.parquet`, dir);
 * const bytes = await Deno.readFile(`${dir}/out.parquet`);
 * assert.equal(new TextDecoder().decode(bytes.subarray(0, 4)), "PAR1");
 * await Deno.remove(dir, { recursive: true });
 * ```
 */
export async function writeParquet(
  csvFile: string,
  columns: readonly ParquetColumn[],
  outFile: string,
  dir: string,
): Promise<void> {
  const instance = await openInstance({
    path: ":memory:",
    spoolDir: dir,
    tempDir: dir,
    threads: 1,
  });
  const connection = await instance.connect();
  try {
    const read = columns.length === 0
      ? 'SELECT 1 AS "empty" WHERE false'
      : `SELECT ${
        columns.map((c, i) => `${fromText(quoteIdent(`c${i}`), c.type)} AS ${quoteIdent(c.name)}`)
          .join(", ")
      } FROM read_csv(${quoteLiteral(csvFile)}, header = false, delim = ',', quote = '"', ` +
        `escape = '"', allow_quoted_nulls = false, auto_detect = false, columns = {${
          columns.map((_, i) => `${quoteLiteral(`c${i}`)}: 'VARCHAR'`).join(", ")
        }})`;
    await connection.run(`COPY (${read}) TO ${quoteLiteral(outFile)} (FORMAT parquet)`);
  } finally {
    connection.closeSync();
    instance.closeSync();
  }
}
