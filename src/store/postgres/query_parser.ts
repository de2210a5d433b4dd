/**
 * PostgreSQL's parser: libpg_query 15 (the parser of the PostgreSQL 15 the engine runs) as
 * WebAssembly, the one parser of clients' queries (query_guard.ts, query_tables.ts) and of
 * column defaults (defaults.ts). Importing this module opens nothing.
 *
 * The package's own `parseSync` keeps one instance for the process. A tree deep enough
 * (`1+1+…+1` with about 12,000 terms, well under the 100,000 characters a query may have) runs the
 * instance out of stack; the error unwinds past its C code's own cleanup, and after a few
 * dozen such queries every parse failed ("memory access out of bounds") or gave another tree
 * than the text's, until the process restarted. So this module builds instances from the
 * package's factory itself, and throws away one whose parse failed otherwise than with
 * PostgreSQL's own syntax error: {@link withPostgresParser} makes a fresh one for the next
 * use (about 30 ms).
 *
 * @module
 */

import createModule from "libpg-query/wasm/libpg-query.js";

/** A parse of one text: its tree as libpg_query writes it, plain JSON. */
export interface PostgresParser {
  /**
   * The tree of `sql`: `{ version, stmts: [{ stmt, stmt_len? }] }`.
   *
   * @throws {SyntaxError} PostgreSQL's message, for text its grammar refuses.
   * @throws {ParserExhausted} when the tree was too deep for the parser's stack.
   */
  parseSync(sql: string): unknown;
}

/** A parse that ran out of stack: the text nests too deep (the instance was thrown away). */
export class ParserExhausted extends Error {
  constructor(cause: unknown) {
    super("PostgreSQL's parser ran out of stack", { cause });
    this.name = "ParserExhausted";
  }
}

/** A parser used after another use of it ran out of stack and it was thrown away. */
class ParserReplaced extends Error {
  constructor() {
    super("PostgreSQL's parser was replaced: take the current one");
    this.name = "ParserReplaced";
  }
}

/** What this module uses of an Emscripten instance of libpg_query. */
interface Instance {
  _malloc(bytes: number): number;
  _free(pointer: number): void;
  _wasm_parse_query_raw(text: number): number;
  _wasm_free_parse_result(result: number): void;
  getValue(pointer: number, type: "i32"): number;
  lengthBytesUTF8(text: string): number;
  stringToUTF8(text: string, pointer: number, bytes: number): void;
  UTF8ToString(pointer: number): string;
}

let loaded: PostgresParser | undefined;
let loading: Promise<PostgresParser> | undefined;

/** The parser in use, or one made now: callers arriving meanwhile wait for the same one. */
function loadPostgresParser(): Promise<PostgresParser> {
  if (loaded !== undefined) return Promise.resolve(loaded);
  loading ??= (createModule() as Promise<Instance>).then(
    (instance) => {
      loading = undefined;
      loaded = parserOf(instance);
      return loaded;
    },
    (error) => {
      loading = undefined;
      throw error;
    },
  );
  return loading;
}

/** Attempts of {@link withPostgresParser} at a parser other uses keep breaking. */
const ATTEMPTS = 3;

/**
 * `use`'s answer, run at once (it must not wait) with PostgreSQL's parser, made when none is
 * loaded. Another request may break the parser between the load and `use` (a parse of its own
 * that ran out of stack): `use` is run again with the fresh one.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { withPostgresParser } from "./query_parser.ts";
 *
 * assert.ok(await withPostgresParser((parser) => parser.parseSync("SELECT 1")));
 * await assert.rejects(withPostgresParser((parser) => parser.parseSync("SELEC 1")), SyntaxError);
 * ```
 */
export async function withPostgresParser<T>(use: (parser: PostgresParser) => T): Promise<T> {
  for (let attempt = 1;; attempt++) {
    const parser = await loadPostgresParser();
    try {
      return use(parser);
    } catch (error) {
      if (!(error instanceof ParserReplaced) || attempt === ATTEMPTS) throw error;
    }
  }
}

function parserOf(instance: Instance): PostgresParser {
  let broken = false;
  const parser: PostgresParser = {
    parseSync(sql) {
      if (broken) throw new ParserReplaced();
      const bytes = instance.lengthBytesUTF8(sql) + 1;
      const text = instance._malloc(bytes);
      instance.stringToUTF8(sql, text, bytes);
      let result: number;
      try {
        result = instance._wasm_parse_query_raw(text);
      } catch (error) {
        // Nothing of this instance is freed or used again: its state is not to be trusted.
        broken = true;
        if (loaded === parser) loaded = undefined;
        throw error instanceof RangeError ? new ParserExhausted(error) : error;
      }
      try {
        // struct { char* parse_tree; char* stderr_buffer; PgQueryError* error; }
        const tree = instance.getValue(result, "i32");
        const error = instance.getValue(result + 8, "i32");
        if (error) {
          // struct { char* message; … }
          const message = instance.getValue(error, "i32");
          throw new SyntaxError(message ? instance.UTF8ToString(message) : "syntax error");
        }
        return JSON.parse(instance.UTF8ToString(tree));
      } finally {
        instance._free(text);
        instance._wasm_free_parse_result(result);
      }
    },
  };
  return parser;
}
