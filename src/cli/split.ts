/**
 * `ci-test-analytics split` (docs/splitting.md): prints this shard's items of the build's split
 * plan, which the service makes once per key from the measured durations. When the service cannot
 * be reached (or no token, URL or key is at hand) it falls back to the documented deterministic
 * split, says so on stderr, and exits 0: splitting never fails the build.
 */
import { readFileSync } from "node:fs";
import { relative } from "node:path";
import { shardOf } from "../ingest/report";
import { MAX_ITEM_LENGTH, MAX_SPLIT_ITEMS, SPLIT_BY, type SplitBy, compareStrings, fallbackShard } from "../lib/split";
import { type OptionValues, uploadsBase, variantChoice } from "./args";
import type { CiProvider, Env } from "./ci-metadata";
import { EXIT_OK, UsageError } from "./exit-codes";
import { nonEmpty } from "./format";
import { type RetryOptions, describeHttpError, requestWithRetry } from "./http-retry";
import type { Output } from "./output";
import { defaultRunKey, parallelShard } from "./run-key";

const FORMATS = ["lines", "space", "json"] as const;
type Format = (typeof FORMATS)[number];
/** One quick retry: a shard waiting on the service costs the whole build its time; the fallback is always there. */
const SPLIT_RETRIES = 1;
const SPLIT_TIMEOUT_MS = 10_000;

type SplitSettings = {
  shard: { index: number; total: number };
  key: string | undefined;
  by: SplitBy;
  format: Format;
  variant: string;
  planUrl: URL | undefined;
  token: string | undefined;
};

/** The split's settings from the flags and the CI; a missing or malformed --shard is a UsageError (exit 2). */
function splitSettings(input: {
  values: OptionValues;
  env: Env;
  ci: CiProvider | null;
  baseUrl: string | undefined;
  token: string | undefined;
}): SplitSettings {
  const { values, env, ci } = input;
  const shardText = nonEmpty(values.shard) ?? parallelShard(ci, env);
  if (shardText === undefined)
    throw new UsageError(
      "split needs --shard I/N (1-based, as Jest's and Playwright's), or a CI that names it (CircleCI, Buildkite, GitLab parallel jobs)",
    );
  const shard = shardOf(shardText);
  if (!shard) throw new UsageError(`--shard must be I/N with 1 ≤ I ≤ N ≤ 1000, e.g. 2/4 (got "${shardText}")`);
  const by = (values.by ?? "file") as SplitBy;
  if (!(SPLIT_BY as readonly string[]).includes(by))
    throw new UsageError(`--by must be one of: ${SPLIT_BY.join(", ")} (got "${values.by}")`);
  const format = (values.format ?? "lines") as Format;
  if (!(FORMATS as readonly string[]).includes(format))
    throw new UsageError(`--format must be one of: ${FORMATS.join(", ")} (got "${values.format}")`);
  const variant = variantChoice(values, env);
  const key = nonEmpty(values.key) ?? defaultRunKey({ ci, env, variant });
  if (key !== undefined && (key.length > 255 || /\p{Cc}/u.test(key)))
    throw new UsageError(`--key must be 1 to 255 characters without control characters (got "${key}")`);
  const planUrl = input.baseUrl === undefined ? undefined : new URL("split_plans", uploadsBase(input.baseUrl));
  return { shard, key, by, format, variant, planUrl, token: input.token };
}

/**
 * The items to split: from the patterns (files, relative to the working directory) or, with `-`,
 * from stdin, one per line as runners list them. Sorted and distinct; at most MAX_SPLIT_ITEMS.
 */
async function readItems(patterns: string[], input: { cwd: string; readStdin: () => string }): Promise<string[]> {
  let items: string[];
  if (patterns.length === 1 && patterns[0] === "-") {
    items = input
      .readStdin()
      .split(/\r?\n/)
      .map((line) => line.trim());
  } else if (patterns.length === 0) {
    throw new UsageError('split needs the items: quoted globs of test files, or "-" to read them from stdin, one per line');
  } else {
    const { glob } = await import("tinyglobby");
    const found = await glob(patterns, { cwd: input.cwd, absolute: true, onlyFiles: true });
    items = found.map((path) => relative(input.cwd, path).split("\\").join("/"));
  }
  const distinct = [...new Set(items.filter((item) => item !== ""))].sort(compareStrings);
  if (distinct.length > MAX_SPLIT_ITEMS) throw new UsageError(`split takes at most ${MAX_SPLIT_ITEMS} items (got ${distinct.length})`);
  const long = distinct.find((item) => item.length > MAX_ITEM_LENGTH || /\p{Cc}/u.test(item));
  if (long !== undefined)
    throw new UsageError(`an item must be 1 to ${MAX_ITEM_LENGTH} characters without control characters: "${long.slice(0, 80)}…"`);
  return distinct;
}

/** This shard's items: the plan's, else the fallback's (with the reason on stderr). */
async function shardItems(
  items: string[],
  settings: SplitSettings,
  context: { out: Output; headers: Record<string, string>; retryOptions: RetryOptions },
): Promise<string[]> {
  const { out } = context;
  const { index, total } = settings.shard;
  const fallback = (why: string) => {
    out.warn(
      `split: ${why}; falling back to the deterministic split (sorted items, round-robin): shard ${index}/${total} runs ${Math.ceil((items.length - index + 1) / total)} of ${items.length} items. If other shards got the plan, items can run twice or not at all (docs/splitting.md)`,
    );
    return fallbackShard(items, index, total);
  };
  if (items.length === 0) return [];
  if (settings.planUrl === undefined) return fallback("no service URL (--url or CTA_URL)");
  if (settings.token === undefined) return fallback("no upload token (--token or CTA_UPLOAD_TOKEN)");
  if (settings.key === undefined) return fallback("no plan key (--key, or a CI that gives its run id and job)");
  const body = JSON.stringify({ key: settings.key, shards: total, by: settings.by, variant: settings.variant, items });
  out.debug(`POST ${settings.planUrl.href} (key ${settings.key}, ${items.length} items, ${total} shards)`);
  const result = await requestWithRetry(
    settings.planUrl.href,
    { method: "POST", headers: { ...context.headers, "content-type": "application/json" }, body },
    {
      ...context.retryOptions,
      retries: Math.min(SPLIT_RETRIES, context.retryOptions.retries ?? SPLIT_RETRIES),
      timeoutMs: SPLIT_TIMEOUT_MS,
    },
  );
  if (result.kind === "network-error") return fallback(`the service is unreachable (${result.message})`);
  if (result.status !== 200) return fallback(`the service answered ${describeHttpError(result)}`);
  const planned = (result.json as { shards?: { shard: number; items: string[] }[] } | null)?.shards?.[index - 1]?.items;
  if (!Array.isArray(planned)) return fallback("the service's answer holds no plan for this shard");
  out.info(`split: shard ${index}/${total} of plan "${settings.key}": ${planned.length} of ${items.length} items`);
  return planned;
}

/** The items as the test command takes them. */
function formatItems(items: string[], format: Format): string {
  if (format === "json") return `${JSON.stringify(items)}\n`;
  if (items.length === 0) return "";
  return format === "space" ? `${items.join(" ")}\n` : `${items.join("\n")}\n`;
}

/** The whole `split` command once its flags are read: always EXIT_OK unless the command line is wrong. */
export async function runSplit(input: {
  values: OptionValues;
  patterns: string[];
  env: Env;
  ci: CiProvider | null;
  cwd: string;
  baseUrl: string | undefined;
  token: string | undefined;
  out: Output;
  headers: Record<string, string>;
  retryOptions: RetryOptions;
  readStdin?: () => string;
}): Promise<number> {
  const settings = splitSettings(input);
  const items = await readItems(input.patterns, { cwd: input.cwd, readStdin: input.readStdin ?? (() => readFileSync(0, "utf8")) });
  const mine = await shardItems(items, settings, input);
  input.out.raw(formatItems(mine, settings.format));
  return EXIT_OK;
}
