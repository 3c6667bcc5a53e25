/**
 * zod's own classic entry (zod/v4/classic/external.js, zod pinned at 4.6.7) with `locales`
 * holding English only. @hono/zod-openapi passes the whole `z` namespace to
 * `extendZodWithOpenApi`, so a bundler must keep every export of it alive, and zod's ~40 locales
 * (about 260 KiB of the minified Worker) came along although only English is ever used (zod
 * registers it itself). The Worker's build aliases "zod" to this folder (./index.ts and the subpaths) (wrangler.toml `[alias]`);
 * Node and the tests use zod unchanged. test/worker/zod-alias.test.ts checks that this entry
 * exports exactly what zod's does.
 */
export * as core from "./core-without-locales";
export * from "../../../node_modules/zod/v4/classic/schemas.js";
export * from "../../../node_modules/zod/v4/classic/checks.js";
export * from "../../../node_modules/zod/v4/classic/errors.js";
export * from "../../../node_modules/zod/v4/classic/parse.js";
export * from "../../../node_modules/zod/v4/classic/compat.js";
export {
  globalRegistry,
  registry,
  config,
  memoizer,
  $output,
  $input,
  $brand,
  clone,
  regexes,
  treeifyError,
  prettifyError,
  formatError,
  flattenError,
  TimePrecision,
  util,
  NEVER,
  INVALID,
  toZod,
  compile,
  withParser,
  ZodCompileAsyncError,
  ZodCompileUnsupportedError,
  getDiscriminatedOption,
} from "../../../node_modules/zod/v4/core/index.js";
export { toJSONSchema } from "../../../node_modules/zod/v4/core/json-schema-processors.js";
export { fromJSONSchema } from "../../../node_modules/zod/v4/classic/from-json-schema.js";
export { deepPartial } from "../../../node_modules/zod/v4/classic/deep-partial.js";
export { input, output } from "../../../node_modules/zod/v4/classic/in-out.js";
export * as locales from "./english-locale";
export { ZodISODateTime, ZodISODate, ZodISOTime, ZodISODuration } from "../../../node_modules/zod/v4/classic/iso.js";
export * as iso from "../../../node_modules/zod/v4/classic/iso.js";
export * as coerce from "../../../node_modules/zod/v4/classic/coerce.js";
