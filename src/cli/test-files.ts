/**
 * Test files resolved from the workspace for the cases a report names by classname only (Maven
 * Surefire, Gradle, pytest's xunit2), so that the service's CODEOWNERS gives them owners. A
 * classname becomes a file only when exactly one file of the workspace fits it:
 * - a JVM class `com.acme.CartTest` (inner classes `CartTest$Nested` stand for their outer class)
 *   is `**∕com/acme/CartTest.{java,kt,groovy,scala}`;
 * - a pytest classname `tests.test_cart` or `tests.test_cart.TestCart` is the longest module
 *   prefix that is a file, `**∕tests/test_cart.py`.
 * Two files that fit, or none, give no file. gotestsum's classnames are Go packages, which name a
 * directory, not a file: CODEOWNERS matches a test's file as a file, so they are left alone.
 *
 * A test's identity does not change (src/lib/test-identity.ts): it uses the file only when the
 * classname is absent, and only cases with a classname are given one. The workspace is indexed
 * once per upload, lazily (not at all when every case has a file), with bounds: at most
 * MAX_WORKSPACE_ENTRIES directory entries and WORKSPACE_BUDGET_MS; past either nothing is resolved,
 * since a file unique in part of the workspace may not be unique in all of it. docs/uploader-cli.md
 * ("Test files") has the rules for users.
 */
import { readdirSync } from "node:fs";
import { join } from "node:path";
import { SaxesParser, type SaxesTagPlain } from "saxes";
import { REPORT_LIMITS, cleanOptionalText } from "../ingest/report";

/** Directory entries (files and directories) read at most: a large monorepo has a few hundred thousand. */
export const MAX_WORKSPACE_ENTRIES = 300_000;
/** Time the index may take in all. */
const WORKSPACE_BUDGET_MS = 10_000;

/**
 * Directories never read: dependencies, version control and build output (copies of the sources
 * and generated ones would make every class ambiguous). Hidden directories (`.git`, `.gradle`,
 * `.venv`, `.tox`…) are skipped too, and symbolic links are never followed.
 */
const SKIPPED_DIRECTORIES = new Set([
  "node_modules",
  "bower_components",
  "vendor",
  "build",
  "target",
  "out",
  "dist",
  "bin",
  "obj",
  "__pycache__",
  "venv",
  "site-packages",
]);

const JVM_EXTENSIONS = [".java", ".kt", ".groovy", ".scala"];
const PYTHON_EXTENSION = ".py";
const INDEXED_EXTENSIONS = new Set([...JVM_EXTENSIONS, PYTHON_EXTENSION]);

export type WorkspaceIndex = {
  /** Source files' paths from the root, with `/`, by file name (`CartTest.java`). */
  byName: Map<string, string[]>;
  /**
   * The same by their directory's name and theirs (`cart/CartTest.java`): a lookup reads only the
   * files that already end like the classname, not every `CartTest.java` of a large workspace.
   */
  byParentAndName: Map<string, string[]>;
  /** Entries read. */
  entries: number;
  /** Why the index is incomplete (and nothing is resolved), or null. */
  incomplete: string | null;
};

/**
 * The workspace's JVM and Python source files below `root`, read once, breadth first.
 * @param options bounds and clock, for tests
 */
export function indexWorkspace(root: string, options: { maxEntries?: number; budgetMs?: number; now?: () => number } = {}): WorkspaceIndex {
  const maxEntries = options.maxEntries ?? MAX_WORKSPACE_ENTRIES;
  const now = options.now ?? Date.now;
  const deadline = now() + (options.budgetMs ?? WORKSPACE_BUDGET_MS);
  const index: WorkspaceIndex = { byName: new Map(), byParentAndName: new Map(), entries: 0, incomplete: null };
  const add = (map: Map<string, string[]>, key: string, path: string) => {
    const paths = map.get(key);
    if (paths) paths.push(path);
    else map.set(key, [path]);
  };
  const pending: string[] = [""];
  for (let next = 0; next < pending.length; next++) {
    const directory = pending[next]!;
    let names;
    try {
      names = readdirSync(directory === "" ? root : join(root, directory), { withFileTypes: true });
    } catch {
      continue; // unreadable: its files are not known, like a skipped directory's
    }
    for (const entry of names) {
      if (++index.entries > maxEntries) {
        index.incomplete = `the workspace has more than ${maxEntries.toLocaleString("en-US")} files and directories`;
        return index;
      }
      const name = entry.name;
      const path = directory === "" ? name : `${directory}/${name}`;
      if (entry.isDirectory()) {
        if (!name.startsWith(".") && !SKIPPED_DIRECTORIES.has(name)) pending.push(path);
        continue;
      }
      if (!entry.isFile()) continue;
      const dot = name.lastIndexOf(".");
      if (dot <= 0 || !INDEXED_EXTENSIONS.has(name.slice(dot))) continue;
      add(index.byName, name, path);
      if (directory !== "") add(index.byParentAndName, `${directory.slice(directory.lastIndexOf("/") + 1)}/${name}`, path);
    }
    if (now() > deadline) {
      index.incomplete = `indexing the workspace took more than ${(options.budgetMs ?? WORKSPACE_BUDGET_MS) / 1000} s`;
      return index;
    }
  }
  return index;
}

/** Dotted names of letters, digits, `_`, `$` and `-`: what a JVM class or a pytest module path looks like. */
const DOTTED_NAME = /^[\p{L}\p{N}_$-]+(?:\.[\p{L}\p{N}_$-]+)*$/u;

/** The files whose path is `segments` joined by `/`, or ends with `/` and them (`**∕com/acme/CartTest.java`). */
function filesAt(index: WorkspaceIndex, segments: string[]): string[] {
  const name = segments.at(-1)!;
  if (segments.length === 1) return index.byName.get(name) ?? [];
  const relative = segments.join("/");
  const paths = index.byParentAndName.get(`${segments.at(-2)}/${name}`) ?? [];
  return paths.filter((path) => path === relative || path.endsWith(`/${relative}`));
}

/** The files a classname may name, as a JVM class and as a pytest module path (its longest prefix that is a file). */
function candidates(index: WorkspaceIndex, classname: string): Set<string> {
  const found = new Set<string>();
  if (classname.length > REPORT_LIMITS.maxNameLength || !DOTTED_NAME.test(classname)) return found;
  const segments = classname.split(".");
  // JVM: an inner class (`Outer$Inner`, Scala's `Object$`) is in its outer class's file.
  const outer = segments.at(-1)!.split("$")[0]!;
  if (outer !== "" && segments.slice(0, -1).every((s) => !s.includes("$"))) {
    const packages = segments.slice(0, -1);
    for (const extension of JVM_EXTENSIONS) for (const file of filesAt(index, [...packages, outer + extension])) found.add(file);
  }
  // pytest: `tests.test_cart.TestCart.TestNested` is tests/test_cart.py; the longest prefix that is a file wins.
  if (!classname.includes("$")) {
    for (let length = segments.length; length >= 1; length--) {
      const files = filesAt(index, [...segments.slice(0, length - 1), segments[length - 1]! + PYTHON_EXTENSION]);
      if (files.length === 0) continue;
      for (const file of files) found.add(file);
      break;
    }
  }
  return found;
}

export type FileResolver = {
  /** The one workspace file `classname` names, or null (none, or several). */
  fileOf(classname: string): string | null;
  /** The index once built (null until a classname was looked up). */
  index(): WorkspaceIndex | null;
};

/**
 * A resolver over the workspace below `root`, indexed on the first lookup; each classname is
 * looked up once.
 */
export function fileResolver(root: string, options: Parameters<typeof indexWorkspace>[1] = {}): FileResolver {
  let index: WorkspaceIndex | null = null;
  const known = new Map<string, string | null>();
  return {
    index: () => index,
    fileOf(classname) {
      const trimmed = classname.trim();
      let file = known.get(trimmed);
      if (file === undefined) {
        index ??= indexWorkspace(root, options);
        const found = index.incomplete === null ? candidates(index, trimmed) : new Set<string>();
        file = found.size === 1 ? [...found][0]! : null;
        known.set(trimmed, file);
      }
      return file;
    },
  };
}

/** A classname as the service reads it (cut, cleaned, empty → none). */
const classnameOf = (value: unknown) => (typeof value === "string" ? cleanOptionalText(value, REPORT_LIMITS.maxNameLength) : null);

/**
 * JSON suites (`{"suites": [...]}`, as parsed): each case with a classname and no file (absent,
 * null or empty, as the service reads it) gets the file `resolver` gives, in place. Anything
 * malformed is left for the service's validation. Returns how many cases got one.
 */
export function addFilesToSuites(suites: unknown[], resolver: FileResolver): number {
  let added = 0;
  const pending: unknown[] = [...suites];
  while (pending.length > 0) {
    const suite = pending.pop();
    if (!suite || typeof suite !== "object") continue;
    const { cases, suites: nested } = suite as { cases?: unknown; suites?: unknown };
    if (Array.isArray(nested)) pending.push(...nested);
    if (!Array.isArray(cases)) continue;
    for (const item of cases) {
      if (!item || typeof item !== "object" || Array.isArray(item)) continue;
      const testCase = item as Record<string, unknown>;
      const classname = classnameOf(testCase.classname);
      if (classname === null || (testCase.file !== undefined && testCase.file !== null && testCase.file !== "")) continue;
      const file = resolver.fileOf(classname);
      if (file === null) continue;
      testCase.file = file;
      added++;
    }
  }
  return added;
}

/** C0 controls XML forbids, raw or as references: the service's parser replaces them, so here they become spaces of the same length. */
const RAW_CONTROLS = /[\u0000-\u0008\u000B\u000C\u000E-\u001F]/g;
const CHARACTER_REFERENCES = /&#(?:[xX]([0-9a-fA-F]{1,8})|([0-9]{1,10}));/g;

export function withoutForbiddenControls(text: string): string {
  return text
    .replace(RAW_CONTROLS, " ")
    .replace(CHARACTER_REFERENCES, (reference, hex: string | undefined, decimal: string | undefined) => {
      const code = hex !== undefined ? parseInt(hex, 16) : Number(decimal);
      return code < 0x20 && code !== 0x09 && code !== 0x0a && code !== 0x0d ? " ".repeat(reference.length) : reference;
    });
}

/** A file path as an XML attribute value. */
export function attributeValue(path: string): string {
  return path.replace(/[&<>"\t\n\r]/g, (c) => `&#${c.charCodeAt(0)};`);
}

/**
 * A JUnit XML document with `file="…"` added to each `<testcase>` that has a classname and no
 * file of its own or of an enclosing `<testsuite>` (the service gives a case its suite's file), when
 * `resolver` gives one; and how many were added. Only those start tags change: the rest of the
 * text is kept byte for byte, and the document is read with saxes the way the service reads it
 * (elements inside a case are not cases). A document saxes cannot read is returned as is: the
 * service will say what is wrong with it.
 */
export function addFilesToJUnit(text: string, resolver: FileResolver): { text: string; added: number } {
  if (!text.includes("<testcase")) return { text, added: 0 };
  // Same length as `text`: the parser's positions are positions in `text`.
  const scanned = withoutForbiddenControls(text);
  const parser = new SaxesParser({ xmlns: false, position: true });
  const insertions: { at: number; file: string }[] = [];
  /** The file of each open `<testsuite>` (its own, else its parent's), innermost last. */
  const suiteFiles: (string | null)[] = [];
  const open: ("suite" | "case" | "other")[] = [];
  let inCase = false;
  parser.on("doctype", () => {
    throw new Error("a document type declaration");
  });
  parser.on("opentag", (tag: SaxesTagPlain) => {
    const attributes = tag.attributes as Record<string, string>;
    if (inCase || (tag.name !== "testsuite" && tag.name !== "testcase")) {
      open.push("other");
      return;
    }
    if (tag.name === "testsuite") {
      suiteFiles.push(cleanOptionalText(attributes.file, REPORT_LIMITS.maxNameLength) ?? suiteFiles.at(-1) ?? null);
      open.push("suite");
      return;
    }
    open.push("case");
    inCase = true;
    const classname = classnameOf(attributes.classname);
    if (classname === null || Object.hasOwn(attributes, "file") || (suiteFiles.at(-1) ?? null) !== null) return;
    const file = resolver.fileOf(classname);
    // The tag ends where the parser is; `<` cannot occur inside it (not even in an attribute value).
    const start = scanned.lastIndexOf("<", parser.position - 1);
    if (file !== null && start >= 0 && scanned.startsWith("<testcase", start)) insertions.push({ at: start + "<testcase".length, file });
  });
  parser.on("closetag", () => {
    const kind = open.pop();
    if (kind === "suite") suiteFiles.pop();
    else if (kind === "case") inCase = false;
  });
  try {
    parser.write(scanned).close();
  } catch {
    return { text, added: 0 };
  }
  if (insertions.length === 0) return { text, added: 0 };
  const parts: string[] = [];
  let from = 0;
  for (const { at, file } of insertions) {
    parts.push(text.slice(from, at), ` file="${attributeValue(file)}"`);
    from = at;
  }
  parts.push(text.slice(from));
  return { text: parts.join(""), added: insertions.length };
}
