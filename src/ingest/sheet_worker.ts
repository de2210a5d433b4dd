/**
 * Reads a sheet off the main thread: SheetJS parses synchronously, for seconds on a large
 * workbook, and the service keeps answering meanwhile. Spawned by {@link readSheetApart}.
 *
 * @module
 */

/// <reference lib="deno.worker" />

import { ApiError } from "../errors.ts";
import { readSheet, type ReadSheetOptions } from "./sheet.ts";

self.onmessage = async (event: MessageEvent<{ bytes: Uint8Array; options: ReadSheetOptions }>) => {
  try {
    const rows = await readSheet(event.data.bytes, event.data.options);
    self.postMessage({ rows });
  } catch (error) {
    self.postMessage({
      error: error instanceof ApiError
        ? { status: error.status, type: error.type, message: error.message, details: error.details }
        : { message: error instanceof Error ? error.message : String(error) },
    });
  }
};
