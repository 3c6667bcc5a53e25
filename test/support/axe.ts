/**
 * axe-core in a playwright page. The pages' Content-Security-Policy allows only scripts with the
 * answer's nonce, so a `<script>` added to the page (page.addScriptTag) would be blocked; the
 * source is evaluated through the DevTools protocol instead (page.evaluate), which the page's CSP
 * does not govern, and the test checks that `axe` is there before running it. The page under test
 * keeps its real CSP (no `bypassCSP`).
 */
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import type { Page } from "playwright-core";

const AXE_SOURCE = readFileSync(createRequire(import.meta.url).resolve("axe-core/axe.min.js"), "utf8");

export type AxeViolation = { id: string; impact: string | null; help: string; nodes: { target: unknown[]; html: string }[] };

/** Runs axe on the page as it is now; returns the serious and critical violations (the ones a page must not have). */
export async function seriousViolations(page: Page): Promise<AxeViolation[]> {
  const present = await page.evaluate(
    `(() => { if (typeof window.axe === "undefined") { ${AXE_SOURCE}\n } return typeof window.axe?.run === "function"; })()`,
  );
  if (present !== true) throw new Error("axe-core did not load in the page");
  const violations = (await page.evaluate(
    `window.axe.run(document, { resultTypes: ["violations"] }).then((results) => results.violations.map((v) => ({ id: v.id, impact: v.impact, help: v.help, nodes: v.nodes.map((n) => ({ target: n.target, html: n.html })) })))`,
  )) as AxeViolation[];
  return violations.filter((violation) => violation.impact === "serious" || violation.impact === "critical");
}

/** A readable summary of violations for an assertion message. */
export const describeViolations = (violations: AxeViolation[]) =>
  violations.map((v) => `${v.impact} ${v.id}: ${v.help}\n  ${v.nodes.map((n) => n.html).join("\n  ")}`).join("\n");
