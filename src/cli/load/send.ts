/**
 * The upload's request, sent through `node:http` so that a stream body keeps its
 * `Content-Length`, with a watchdog for a service that stops reading or answering.
 *
 * @module
 */

import http from "node:http";
import https from "node:https";
import type { LoadOptions } from "./args.ts";
import { LoadError } from "./error.ts";

/** An answer from the service. */
export interface Answer {
  readonly status: number;
  readonly contentType: string;
  readonly text: string;
}

/**
 * POSTs `body` with the headers (chunked when they give no `Content-Length`), calling
 * `onSent` with each chunk's size as the request takes it and `onEnd` after the last. An answer that comes before the body is sent (a 401, a 413) stops the
 * upload and is returned. With `idleSeconds` above 0, gives up with a {@link LoadError} once
 * nothing has been sent or received for that long.
 */
export function post(
  url: string,
  headers: Record<string, string>,
  body: ReadableStream<Uint8Array>,
  onSent: (bytes: number) => void,
  onEnd: () => void,
  idleSeconds: number,
): Promise<Answer> {
  const { promise, resolve, reject } = Promise.withResolvers<Answer>();
  const reader = body.getReader();
  let answered = false;
  const send = url.startsWith("https:") ? https.request : http.request;
  let lastActive = performance.now();
  let sentAll = false;
  const idleMs = idleSeconds * 1000;
  const request = send(url, { method: "POST", headers }, (response) => {
    lastActive = performance.now();
    const chunks: Uint8Array[] = [];
    response.on("data", (chunk: Uint8Array) => {
      lastActive = performance.now();
      chunks.push(chunk);
    });
    response.on("error", reject);
    response.on("end", () => {
      answered = true;
      const bytes = new Uint8Array(chunks.reduce((n, c) => n + c.length, 0));
      let at = 0;
      for (const chunk of chunks) bytes.set(chunk, (at += chunk.length) - chunk.length);
      resolve({
        status: response.statusCode ?? 0,
        contentType: String(response.headers["content-type"] ?? ""),
        text: new TextDecoder().decode(bytes),
      });
      reader.cancel().catch(() => {});
      request.destroy();
    });
  });
  request.on("error", (error) => {
    if (!answered) reject(error);
  });

  // A check every second at most, or twice per timeout when shorter (but not more often than
  // every 10 ms): a chunk sent costs a clock read, not a new timer.
  const watchdog = idleMs > 0
    ? setInterval(() => {
      if (performance.now() - lastActive < idleMs) return;
      const error = new LoadError(
        `Gave up: nothing sent to or received from ${url} for ${idleSeconds} s` +
          (sentAll ? ", after the whole file was sent" : ""),
        (sentAll
          ? "the service may still load it: look at the table before sending it again; "
          : "the service may be stuck; ") +
          "pass a longer --timeout, or 0 to wait as long as it takes",
      );
      reject(error);
      request.destroy(error);
    }, Math.max(10, Math.min(idleMs / 2, 1_000)))
    : undefined;
  promise.finally(() => clearInterval(watchdog)).catch(() => {});

  const drained = () =>
    new Promise<void>((done) => {
      const finish = () => {
        request.off("drain", finish);
        request.off("close", finish);
        done();
      };
      request.on("drain", finish);
      request.on("close", finish);
    });
  (async () => {
    for (;;) {
      const { done, value } = await reader.read();
      if (answered || request.destroyed) return;
      if (done) {
        request.end();
        sentAll = true;
        onEnd();
        return;
      }
      if (!request.write(value)) await drained();
      lastActive = performance.now();
      onSent(value.length);
    }
  })().catch((error) => {
    request.destroy(error);
    reject(error);
  });
  return promise;
}

/** Network failures in words. */
export function unreachable(error: unknown, options: LoadOptions): LoadError {
  if (error instanceof LoadError) return error;
  const code = (error as { code?: unknown })?.code;
  const reason = code === "ECONNREFUSED"
    ? "connection refused"
    : code === "ENOTFOUND" || code === "EAI_AGAIN"
    ? "host not found"
    : code === "ECONNRESET" || code === "EPIPE"
    ? "the connection was closed before an answer came"
    : error instanceof Error
    ? error.message
    : String(error);
  return new LoadError(
    `Cannot reach the service at ${options.url}: ${reason}`,
    "is the service running there? pass --url or set TABLE_SERVICE_URL",
  );
}
