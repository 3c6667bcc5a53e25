/**
 * Test files named by absolute paths under the workspace, sent relative to it (issue 31): a
 * report written on a runner names `/home/runner/work/app/app/src/cart.test.ts` where a laptop
 * names `/Users/ada/app/src/cart.test.ts`; both become `src/cart.test.ts`, so a test's identity
 * (a case without a classname is named by its file), its timings and the split plans' items do
 * not depend on where the CI checked the repository out. A path outside the workspace, or already
 * relative, is kept as written. docs/uploader-cli.md ("Test files") says so.
 */
import { posix, win32 } from "node:path";
import { SaxesParser, type SaxesTagPlain } from "saxes";
import { attributeValue, withoutForbiddenControls } from "./test-files";

/** `file` relative to `root` (forward slashes) when it is absolute and below root; null otherwise. */
export function relativeToWorkspace(file: string, root: string): string | null {
  const path = win32.isAbsolute(file) && !posix.isAbsolute(file) ? win32 : posix.isAbsolute(file) ? posix : null;
  if (path === null || !path.isAbsolute(root)) return null;
  const relative = path.relative(root, file);
  if (relative === "" || relative.startsWith("..") || path.isAbsolute(relative)) return null;
  return relative.split(path.sep).join("/");
}

/** Where the value of a tag's `file` attribute sits in `tag` (between its quotes), or null. One pass over the tag. */
function fileAttributeRange(tag: string): { from: number; to: number } | null {
  let i = 1;
  while (i < tag.length && !/[\s/>]/.test(tag[i]!)) i++;
  while (i < tag.length) {
    while (i < tag.length && /\s/.test(tag[i]!)) i++;
    const nameStart = i;
    while (i < tag.length && !/[\s=/>]/.test(tag[i]!)) i++;
    const name = tag.slice(nameStart, i);
    while (i < tag.length && /\s/.test(tag[i]!)) i++;
    if (name === "" || tag[i] !== "=") return null;
    i++;
    while (i < tag.length && /\s/.test(tag[i]!)) i++;
    const quote = tag[i];
    if (quote !== '"' && quote !== "'") return null;
    const end = tag.indexOf(quote, i + 1);
    if (end === -1) return null;
    if (name === "file") return { from: i + 1, to: end };
    i = end + 1;
  }
  return null;
}

/**
 * A JUnit XML document whose `<testsuite>` and `<testcase>` `file` attributes name paths relative to
 * `root` where they were absolute under it, and how many changed. Only those values change; the
 * rest of the text is kept byte for byte. A document saxes cannot read is returned as is.
 */
export function relativizeJUnitFiles(text: string, root: string): { text: string; changed: number } {
  if (!text.includes("file")) return { text, changed: 0 };
  const scanned = withoutForbiddenControls(text);
  const parser = new SaxesParser({ xmlns: false, position: true });
  const replacements: { from: number; to: number; value: string }[] = [];
  parser.on("doctype", () => {
    throw new Error("a document type declaration");
  });
  parser.on("opentag", (tag: SaxesTagPlain) => {
    if (tag.name !== "testsuite" && tag.name !== "testcase") return;
    const file = (tag.attributes as Record<string, string>).file;
    const relative = file === undefined ? null : relativeToWorkspace(file, root);
    if (relative === null) return;
    const start = scanned.lastIndexOf("<", parser.position - 1);
    const range = start < 0 ? null : fileAttributeRange(scanned.slice(start, parser.position));
    if (range !== null) replacements.push({ from: start + range.from, to: start + range.to, value: attributeValue(relative) });
  });
  try {
    parser.write(scanned).close();
  } catch {
    return { text, changed: 0 };
  }
  if (replacements.length === 0) return { text, changed: 0 };
  const parts: string[] = [];
  let at = 0;
  for (const { from, to, value } of replacements) {
    parts.push(text.slice(at, from), value);
    at = to;
  }
  parts.push(text.slice(at));
  return { text: parts.join(""), changed: replacements.length };
}

/** The same for JSON reports' suites and cases (`file` fields), in place; how many changed. */
export function relativizeSuiteFiles(suites: unknown[], root: string): number {
  let changed = 0;
  const relativize = (holder: Record<string, unknown>) => {
    const relative = typeof holder.file === "string" ? relativeToWorkspace(holder.file, root) : null;
    if (relative === null) return;
    holder.file = relative;
    changed++;
  };
  const pending: unknown[] = [...suites];
  while (pending.length > 0) {
    const suite = pending.pop();
    if (!suite || typeof suite !== "object" || Array.isArray(suite)) continue;
    relativize(suite as Record<string, unknown>);
    const { cases, suites: nested } = suite as { cases?: unknown; suites?: unknown };
    if (Array.isArray(nested)) pending.push(...nested);
    if (!Array.isArray(cases)) continue;
    for (const item of cases) if (item && typeof item === "object" && !Array.isArray(item)) relativize(item as Record<string, unknown>);
  }
  return changed;
}
