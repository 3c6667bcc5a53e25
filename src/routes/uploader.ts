/**
 * The uploader CLI this service version was built with (docs/uploader-cli.md, "Getting it"),
 * served by the service itself so that the command its pages show installs from here and from
 * nowhere else (the package is not on the npm registry, and its name there is not ours):
 * - GET /uploader/ci-test-analytics.tgz: the package tarball, for
 *   `npx --yes --package=<base>/uploader/ci-test-analytics.tgz ci-test-analytics upload …`;
 * - GET /uploader/ci-test-analytics.mjs: its one file, for `node ci-test-analytics.mjs upload …`.
 * Public (no key, no rate limit: the files hold no secret), the same bytes on Node and on the
 * Worker (src/lib/uploader-package.ts), the ETag their SHA-256 (the one the pages show), cached
 * for a few minutes, then revalidated. Other paths below /uploader/ are the app's 404.
 */
import { type Context, Hono } from "hono";
import type { AppEnv } from "../app-env";
import { namesTag, parseIfNoneMatch } from "../lib/entity-tags";
import {
  UPLOADER_BUNDLE_PATH,
  UPLOADER_BUNDLE_SHA256,
  UPLOADER_TARBALL_PATH,
  UPLOADER_TARBALL_SHA256,
  uploaderFiles,
} from "../lib/uploader-package";
import { addMethodNotAllowed } from "./method-not-allowed";

/** Long enough for a CI fleet's burst, short enough that a new version reaches everyone soon after a deploy. */
const UPLOADER_CACHE_CONTROL = "public, max-age=300";

function serve(c: Context<AppEnv>, bytes: Uint8Array, sha256: string, headers: Record<string, string>): Response {
  const etag = `"${sha256}"`;
  const common = { ETag: etag, "Cache-Control": UPLOADER_CACHE_CONTROL };
  const condition = parseIfNoneMatch(c.req.header("if-none-match"));
  if (condition && (condition.any || namesTag(condition, etag))) return c.body(null, 304, common);
  return c.body(bytes as Uint8Array<ArrayBuffer>, 200, { ...common, ...headers, "Content-Length": String(bytes.length) });
}

export function createUploaderRoutes() {
  const uploader = new Hono<AppEnv>();

  uploader.get(UPLOADER_BUNDLE_PATH, async (c) =>
    serve(c, (await uploaderFiles()).bundle, UPLOADER_BUNDLE_SHA256, { "Content-Type": "text/javascript; charset=utf-8" }),
  );

  uploader.get(UPLOADER_TARBALL_PATH, async (c) =>
    serve(c, (await uploaderFiles()).tarball, UPLOADER_TARBALL_SHA256, {
      "Content-Type": "application/gzip",
      "Content-Disposition": 'attachment; filename="ci-test-analytics.tgz"',
    }),
  );

  addMethodNotAllowed(uploader);
  return uploader;
}
