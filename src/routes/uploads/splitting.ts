/**
 * /uploads/v1/timings and /uploads/v1/split_plans (docs/splitting.md): the history CI splits its
 * suite by, and the one plan per build that all its shards share. Schema first; the handlers only
 * read the request and call src/services/splitting.
 */
import { type OpenAPIHono, createRoute, z } from "@hono/zod-openapi";
import { variantFilter } from "../../contract/schemas";
import { MAX_ITEM_LENGTH, MAX_SHARDS, MAX_SPLIT_ITEMS, SPLIT_BY } from "../../lib/split";
import { MAX_RAW_VARIANT_LENGTH, MAX_VARIANT_LENGTH, normalizeVariant } from "../../lib/variant";
import { splitPlanFor } from "../../services/splitting/split-plans";
import { MAX_TIMING_KEYS, TIMING_RUNS, readTimings, timingRuns, timingsTag } from "../../services/splitting/timings";
import { ifNoneMatchNames } from "../../lib/entity-tags";
import { limitBody } from "../../middleware/json-body";
import { errorResponses } from "../responses";
import type { UploadEnv } from "./upload-env";

/** A split plan's request body at most (docs/splitting.md). */
const SPLIT_PLAN_BODY_LIMIT = 8 * 1024 * 1024;

const tokenSecurity = [{ uploadToken: [] }];
const NO_CONTROL = /^[^\u0000-\u001F\u007F]*$/;

const ByQuery = z
  .enum(SPLIT_BY, { error: "must be file or classname" })
  .default("file")
  .openapi({
    param: { name: "by", in: "query" },
    description: "`file` (default): per test file; `classname`: per class, for JVM reports whose cases carry no file.",
  });

const TimingsSchema = z
  .object({
    by: z.enum(SPLIT_BY),
    variant: z.string(),
    runs_count: z
      .number()
      .int()
      .openapi({ description: `The default branch's recent processed runs the timings come from (at most ${TIMING_RUNS}).` }),
    default_ms: z
      .number()
      .int()
      .openapi({ description: "The project's median expected duration: what a key never seen is expected to take (0 without history)." }),
    data: z
      .array(
        z.object({
          key: z.string().openapi({ description: "The file or class as the reports wrote it." }),
          expected_ms: z.number().int().openapi({ description: "The median, over the runs that had it, of its duration in a run." }),
          samples: z.number().int().openapi({ description: "The runs that had it." }),
        }),
      )
      .openapi({ description: `By key, at most ${MAX_TIMING_KEYS}.` }),
  })
  .openapi("Timings");

const timingsRoute = createRoute({
  method: "get",
  path: "/timings",
  operationId: "listTimings",
  tags: ["Uploads"],
  summary: "How long each test file (or class) takes, for splitting a suite across shards",
  description: [
    `Per file (or class), the expected duration from the default branch's last ${TIMING_RUNS} processed runs of the variant: per run, the sum of its cases' durations, or its suite's own time where the report gives one and the suite holds only that key (it includes setup); per key, the median over the runs that had it. \`default_ms\` is the project's median, for keys never seen. Keys are as the reports wrote them; docs/splitting.md says how items are matched to them.`,
    "Conditional requests: an `ETag` names the runs the timings come from; send it back in `If-None-Match` and unchanged timings are a 304 without a body.",
  ].join("\n\n"),
  security: tokenSecurity,
  request: {
    query: z.object({
      by: ByQuery,
      variant: variantFilter('The variant whose runs are read (docs/tests.md, "Variants"); absent or empty: runs without one.'),
    }),
    headers: z.object({ "If-None-Match": z.string().optional().openapi({ description: "The `ETag` of the timings you hold." }) }),
  },
  responses: {
    200: {
      description: "The timings.",
      headers: { ETag: { description: "Names the runs the timings come from.", schema: { type: "string" } } },
      content: { "application/json": { schema: TimingsSchema } },
    },
    304: {
      description: "Unchanged since the `If-None-Match` tag: no body.",
      headers: { ETag: { description: "The current tag (the one sent).", schema: { type: "string" } } },
    },
    ...errorResponses(400, 401, 429, 500, 503),
  },
});

const SplitPlanBodySchema = z
  .object({
    key: z.string().min(1).max(255).regex(NO_CONTROL, "must not contain control characters").openapi({
      description:
        "Names the build: every shard of it sends the same key (the uploader's default: the CI's run id and job, without the attempt).",
      example: "github-actions:1234:test",
    }),
    shards: z
      .number()
      .int()
      .min(1)
      .max(MAX_SHARDS)
      .openapi({ description: `How many shards (1 to ${MAX_SHARDS}).` }),
    by: z.enum(SPLIT_BY, { error: "must be file or classname" }).default("file"),
    variant: z
      .string()
      .max(MAX_RAW_VARIANT_LENGTH)
      .regex(NO_CONTROL, "must not contain control characters")
      .transform(normalizeVariant)
      .refine((v) => v.length <= MAX_VARIANT_LENGTH, `is too long (maximum is ${MAX_VARIANT_LENGTH} characters once normalized)`)
      .default("")
      .openapi({ description: "The variant whose timings plan the split; absent or empty: runs without one.", type: "string" }),
    items: z
      .array(z.string().min(1).max(MAX_ITEM_LENGTH).regex(NO_CONTROL, "must not contain control characters"))
      .min(1)
      .max(MAX_SPLIT_ITEMS)
      .openapi({
        description: `The files (or classes) to split, as the runner lists them (1 to ${MAX_SPLIT_ITEMS}; duplicates count once).`,
      }),
  })
  .openapi("SplitPlanRequest");

const SplitPlanSchema = z
  .object({
    key: z.string(),
    by: z.enum(SPLIT_BY),
    variant: z.string(),
    shards_count: z.number().int(),
    items_count: z.number().int(),
    unknown_items_count: z.number().int().openapi({ description: "Items the history does not know, planned at the project's median." }),
    created: z.boolean().openapi({ description: "True when this call made the plan; false when it is the stored one." }),
    created_at: z.string().datetime(),
    expires_at: z.string().datetime(),
    shards: z
      .array(
        z.object({
          shard: z.number().int().openapi({ description: "1-based." }),
          items: z.array(z.string()),
          expected_ms: z.number().int(),
        }),
      )
      .openapi({ description: "Every shard's items, in the order they were placed, and their expected time." }),
  })
  .openapi("SplitPlan");

const splitPlanRoute = createRoute({
  method: "post",
  path: "/split_plans",
  operationId: "createSplitPlan",
  tags: ["Uploads"],
  summary: "The split plan of a build: made once per key, the same for every shard",
  description: [
    "The first call for a key makes the plan (longest-processing-time-first over the timings, ties broken by name and shard index) and stores it; every later call with the key, within 24 hours, gets that same plan, whatever the history became, so all shards of a build agree.",
    "A later call whose items (as a set), `shards` or `by` differ from the stored plan's is a 409 `split_plan_mismatch` that names the difference. After 24 hours the key's plan is made anew.",
  ].join("\n\n"),
  security: tokenSecurity,
  request: { body: { required: true, content: { "application/json": { schema: SplitPlanBodySchema } } } },
  responses: {
    200: { description: "The plan (made now, or stored).", content: { "application/json": { schema: SplitPlanSchema } } },
    ...errorResponses(400, 401, 409, 413, 415, 422, 429, 500, 503),
  },
});

/** Registers the timings and the split plans on the uploads API (authenticated by its middleware). */
export function registerSplitting(api: OpenAPIHono<UploadEnv>): void {
  // 50,000 items of a path's usual length fit; a list far above that is refused before it is parsed.
  api.use("/split_plans", limitBody(SPLIT_PLAN_BODY_LIMIT, `A split plan's request exceeds ${SPLIT_PLAN_BODY_LIMIT} bytes (8 MiB).`));
  api.openapi(timingsRoute, async (c) => {
    const { db } = c.env;
    const query = c.req.valid("query");
    const input = { projectId: c.get("uploader").projectId, by: query.by, variant: query.variant ?? "" };
    const runIds = await timingRuns(db, input);
    const etag = timingsTag(input, runIds);
    const headers = { ETag: etag, "Cache-Control": "private, no-cache" };
    if (ifNoneMatchNames(c.req.header("if-none-match"), etag)) return c.body(null, 304, headers);
    return c.json(await readTimings(db, input, runIds), 200, headers);
  });

  api.openapi(splitPlanRoute, async (c) => {
    const { db, clock } = c.env;
    const body = c.req.valid("json");
    return c.json(await splitPlanFor({ db, clock }, { projectId: c.get("uploader").projectId, ...body }), 200);
  });
}
