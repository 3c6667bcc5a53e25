/**
 * The files under public/assets on Node: the Worker gets them from Cloudflare's static assets
 * (`[assets]` in wrangler.toml, served before the Worker runs); here a small Hono app serves them
 * with @hono/node-server's serveStatic (content types, ranges, no path traversal) and hands every
 * other request to the service, compressed when the client accepts it. Cached for an hour: file
 * names carry no hash.
 */
import { fileURLToPath } from "node:url";
import { serveStatic } from "@hono/node-server/serve-static";
import { Hono } from "hono";
import { compress } from "hono/compress";
import type { Connection, FetchHandler } from "./http-server";

const PUBLIC_DIR = fileURLToPath(new URL("../../public", import.meta.url));

export function withStaticAssets(fetchApp: FetchHandler): FetchHandler {
  const assets = new Hono<{ Bindings: Connection }>();
  // The vendored API reference is 4 MiB of JavaScript, about 1 MiB gzipped.
  assets.use("/assets/*", compress());
  assets.use("/assets/*", async (c, next) => {
    await next();
    if (c.res.status === 200) {
      c.res.headers.set("Cache-Control", "public, max-age=3600");
      c.res.headers.set("X-Content-Type-Options", "nosniff");
    }
  });
  assets.get("/assets/*", serveStatic({ root: PUBLIC_DIR }));
  assets.all("*", (c) => fetchApp(c.req.raw, c.env));
  return (request, connection) => assets.fetch(request, connection);
}
