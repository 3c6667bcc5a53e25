/**
 * axe-core in a playwright page. The pages' Content-Security-Policy allows only scripts with the
 * answer's nonce, so a `<script>` added to the page (page.addScriptTag) would be blocked; the
 * source is evaluated through the DevTools protocol instead (page.evaluate), which the page's CSP
 * does not govern, and the test checks that `axe` is there before running it. The page under test
 * keeps its real CSP (no `bypassCSP`).
 *
 * Two modes: `seriousViolations` (every rule axe runs by default, only serious and critical
 * results) and `wcagViolations` (the WCAG 2.1 A and AA rules only, every impact: what issue 30
 * holds every page to; test/web/accessibility.browser.test.ts).
 */
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import type { Page } from "playwright-core";

const AXE_SOURCE = readFileSync(createRequire(import.meta.url).resolve("axe-core/axe.min.js"), "utf8");

export type AxeViolation = {
  id: string;
  impact: string | null;
  help: string;
  nodes: { target: unknown[]; html: string; summary?: string }[];
};

/** The rules of WCAG 2.0 and 2.1, levels A and AA (axe's tags). */
const WCAG_21_AA_TAGS = ["wcag2a", "wcag2aa", "wcag21a", "wcag21aa"] as const;

/** Loads axe into the page (once) and runs it with `options`; every violation it reports. */
async function runAxe(page: Page, options: Record<string, unknown>): Promise<AxeViolation[]> {
  const present = await page.evaluate(
    `(() => { if (typeof window.axe === "undefined") { ${AXE_SOURCE}\n } return typeof window.axe?.run === "function"; })()`,
  );
  if (present !== true) throw new Error("axe-core did not load in the page");
  return (await page.evaluate(
    `window.axe.run(document, ${JSON.stringify(options)}).then((results) => results.violations.map((v) => ({ id: v.id, impact: v.impact, help: v.help, nodes: v.nodes.map((n) => ({ target: n.target, html: n.html, summary: n.failureSummary })) })))`,
  )) as AxeViolation[];
}

/** Runs axe on the page as it is now; returns the serious and critical violations (the ones a page must not have). */
export async function seriousViolations(page: Page): Promise<AxeViolation[]> {
  const violations = await runAxe(page, { resultTypes: ["violations"] });
  return violations.filter((violation) => violation.impact === "serious" || violation.impact === "critical");
}

/** Runs axe's WCAG 2.1 A and AA rules on the page as it is now; returns every violation, whatever its impact. */
export async function wcagViolations(page: Page): Promise<AxeViolation[]> {
  return runAxe(page, { runOnly: { type: "tag", values: [...WCAG_21_AA_TAGS] }, resultTypes: ["violations"] });
}

/** A readable summary of violations for an assertion message. */
export const describeViolations = (violations: AxeViolation[]) =>
  violations
    .map(
      (v) =>
        `${v.impact} ${v.id}: ${v.help}\n  ${v.nodes.map((n) => `${n.html}${n.summary ? `\n    ${n.summary.replaceAll("\n", "\n    ")}` : ""}`).join("\n  ")}`,
    )
    .join("\n");
