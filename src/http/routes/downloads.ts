/**
 * The redemption of a download ticket (`POST …/records/{format}/ticket` issues them): a `GET`
 * without a token, because a browser following a link to a file sends none; the ticket is the
 * credential, good once and for a minute. Mounted before the token check.
 *
 * @module
 */

import { createRoute, OpenAPIHono, z } from "@hono/zod-openapi";
import { streamedResponse } from "../observe.ts";
import type { RowsDeps } from "../../service/bodies.ts";
import * as downloads from "../../service/downloads.ts";
import { CONTENT_TYPES } from "./exports.ts";
import { errorResponses } from "./shapes.ts";
import { validationHook } from "./validation.ts";
import type { Env } from "./rows.ts";

const download = createRoute({
  method: "get",
  operationId: "download",
  path: "/download/{ticket}",
  summary: "Redeem a download ticket: the export it stands for, streamed whole",
  description: "No token: the ticket is the credential. It works once, within " +
    `${downloads.TICKET_SECONDS} seconds of being issued, for the export (table, format, ` +
    "filters, columns, order) it was issued for and with the rights of the token that asked " +
    "for it; a `HEAD` looks at it without using it. Every row is streamed, as the export " +
    "route streams them, with `Content-Disposition: attachment`.",
  tags: ["rows"],
  security: [],
  request: {
    params: z.object({
      ticket: z.string().openapi({ description: "The ticket a `…/ticket` call answered" }),
    }),
  },
  responses: {
    200: {
      description: "The export, with `Content-Disposition: attachment`",
      content: {
        "text/csv": { schema: z.string() },
        "application/x-ndjson": { schema: z.string() },
        "application/json": { schema: z.array(z.record(z.string(), z.unknown())) },
        "application/vnd.apache.parquet": { schema: z.string().openapi({ format: "binary" }) },
      },
    },
    ...errorResponses(403, 404, 408, 422),
  },
});

/** The download route over `deps.store`, to mount before the token check. */
export function downloadRoutes(deps: RowsDeps): OpenAPIHono<Env> {
  const app = new OpenAPIHono<Env>({ defaultHook: validationHook });
  app.openapi(download, async (c) => {
    const { ticket } = c.req.valid("param");
    const peek = c.req.method === "HEAD";
    const { stream, fileName, format } = await downloads.redeemTicket(deps, ticket, peek);
    const headers = {
      "content-type": CONTENT_TYPES[format],
      "content-disposition": `attachment; filename="${fileName}"`,
      // The ticket is spent: nothing may keep or replay this answer, or leak its URL onward.
      "cache-control": "no-store",
      "referrer-policy": "no-referrer",
    };
    if (!stream) return c.body(null, 200, headers) as never;
    return streamedResponse(c, stream, headers) as never;
  });
  return app;
}
