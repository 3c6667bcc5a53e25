/**
 * Sends the repository's CODEOWNERS before the reports (`PUT /uploads/v1/codeowners`), so the
 * service gives the run's tests their owners when it processes the run. Never decides the exit
 * code: owners are an extra, and a failure here (unreadable file, outage, a file the service
 * refuses) is a warning.
 */
import { readFileSync } from "node:fs";
import { displayPath } from "./format";
import { type RetryOptions, describeHttpError, requestWithRetry } from "./http-retry";
import type { Output } from "./output";

/** One retry: the upload that follows has the full retries and says whether the service is away. */
const CODEOWNERS_RETRIES = 1;

export async function sendCodeowners(input: {
  file: string;
  url: URL;
  headers: Record<string, string>;
  retryOptions: RetryOptions;
  out: Output;
  cwd: string;
}): Promise<void> {
  const { file, out } = input;
  const shown = displayPath(file, input.cwd);
  let content: string;
  try {
    content = readFileSync(file, "utf8");
  } catch (error) {
    out.warn(`CODEOWNERS not sent: cannot read ${shown} (${(error as Error).message})`);
    return;
  }
  const result = await requestWithRetry(
    input.url.href,
    { method: "PUT", headers: { ...input.headers, "content-type": "text/plain; charset=utf-8" }, body: content },
    { ...input.retryOptions, retries: Math.min(CODEOWNERS_RETRIES, input.retryOptions.retries ?? CODEOWNERS_RETRIES), onRetry: undefined },
  );
  if (result.kind === "network-error") {
    out.warn(`CODEOWNERS not sent (${result.message}); the tests keep the owners they had`);
    return;
  }
  if (result.status !== 200) {
    out.warn(`CODEOWNERS not sent: ${describeHttpError(result)}; the tests keep the owners they had`);
    return;
  }
  const body = (result.json ?? {}) as {
    rules_count?: number;
    ignored_lines_count?: number;
    tests_with_owners_count?: number;
    files_over_budget_count?: number;
    changed?: boolean;
  };
  const ignored = body.ignored_lines_count ? `, ${body.ignored_lines_count} line(s) ignored (see the service's answer with --verbose)` : "";
  out.info(
    `CODEOWNERS: sent ${shown} (${body.rules_count ?? "?"} rules${ignored}; ${body.changed === false ? "unchanged" : `${body.tests_with_owners_count ?? "?"} tests with owners`})`,
  );
  if (body.ignored_lines_count) out.debug(`CODEOWNERS answer: ${result.text}`);
  if (body.files_over_budget_count)
    out.warn(
      `CODEOWNERS: ${body.files_over_budget_count} test file(s) ran out of the matching budget and may lack owners: simplify the patterns with wildcards inside names or \`**\` between directories`,
    );
}
