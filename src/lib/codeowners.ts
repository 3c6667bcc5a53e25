/**
 * CODEOWNERS as GitHub reads it (docs/codeowners.md): which owners a file path has.
 *
 * Each line is a pattern and zero or more owners (`@user`, `@org/team`, an e-mail address); `#`
 * starts a comment (a whole line, or from an owner position to the end of the line); blank lines
 * are skipped. Patterns follow gitignore's rules, case-sensitively (src/lib/codeowners-pattern.ts
 * matches them without regular expressions: the file comes from users). The last rule whose
 * pattern matches a path (the path itself or a directory above it) gives its owners; a rule with
 * no owners gives none. Departures from gitignore, as GitHub documents them: a pattern ending in
 * `/*` matches the files directly in that directory, not deeper ones; `!` (negation), `[ ]`
 * (character ranges) and a `\#` escape do not work: such lines are ignored and reported, as are
 * lines whose owners are not owners.
 *
 * Every request and run does bounded work, whatever the file (GitHub's 3 MB of adversarial
 * patterns included): reading the file is linear in its length, and most rules are found by hash
 * lookups rather than tried one by one (OwnersMatcher). The rules that must be tried (wildcards
 * other than one leading or trailing `*` of a name) are at most MAX_WILDCARD_RULES per file, and
 * trying them costs each name at most NAME_STEP_BUDGET steps and each path PATH_STEP_BUDGET.
 */
import {
  ANY_RUN,
  type CompiledPattern,
  type GlobSegment,
  type PatternSegment,
  StepBudget,
  compilePattern,
  namesOf,
  patternMatches,
  type PlainNames,
  segmentMatches,
  tryPattern,
} from "./codeowners-pattern";
import { NameGrams, gramsOf } from "./codeowners-grams";

/** Largest CODEOWNERS accepted: GitHub ignores a CODEOWNERS file of 3 MB or more. */
export const CODEOWNERS_LIMIT_BYTES = 3 * 1024 * 1024;
/**
 * Rules applied per file whose pattern must be tried against each path (see isTriedRule); later
 * ones are ignored and reported. Real files have a handful; the bound keeps a file of thousands
 * from costing every path thousands of tries.
 */
export const MAX_WILDCARD_RULES = 200;
/** Longest pattern of such a rule: a test's file keeps at most 1,000 characters. */
const MAX_WILDCARD_PATTERN_LENGTH = 1_000;
/**
 * Steps (rules tried, names compared, characters walked) that trying rules may cost: for each name
 * of a path, the rules tried on names alone, and for the path, the rules tried on the whole path.
 * A real name or path against a real file costs a few tens. Past it, the name or path keeps the
 * latest rule found before (OwnersMatcher.pathsOverBudget). Each budget is spent the same way
 * whatever was matched before, so a path's owners never depend on the order paths come in.
 */
const NAME_STEP_BUDGET = 1_000;
const PATH_STEP_BUDGET = 1_000;

export type CodeownersRule = { line: number; pattern: string; owners: string[] };
/** A line that is neither blank, a comment nor a rule GitHub would apply: its number (from 1) and why. */
export type IgnoredLine = { line: number; reason: string };
export type Codeowners = { rules: CodeownersRule[]; ignoredLines: IgnoredLine[] };

/** A GitHub login or team slug character: `[A-Za-z0-9_.-]`. */
function isSlugChar(code: number): boolean {
  return (
    (code >= 0x30 && code <= 0x39) ||
    (code >= 0x41 && code <= 0x5a) ||
    (code >= 0x61 && code <= 0x7a) ||
    code === 0x5f ||
    code === 0x2e ||
    code === 0x2d
  );
}

/** Whether `text` from `from` to `to` is a non-empty slug (isSlugChar). */
function isSlug(text: string, from: number, to: number): boolean {
  if (to <= from) return false;
  for (let i = from; i < to; i++) if (!isSlugChar(text.charCodeAt(i))) return false;
  return true;
}

/**
 * `@user` or `@org/team` (GitHub logins and team slugs; `_` for enterprise-managed users), or an
 * e-mail address (one `@`, no slash, a dot inside the domain). One pass over the token: a
 * backtracking expression took quadratic time on `a@a.a.a…@`.
 */
export function isOwner(token: string): boolean {
  if (token.startsWith("@")) {
    const slash = token.indexOf("/");
    return slash === -1 ? isSlug(token, 1, token.length) : isSlug(token, 1, slash) && isSlug(token, slash + 1, token.length);
  }
  const at = token.indexOf("@");
  if (at <= 0 || token.indexOf("@", at + 1) !== -1 || token.includes("/") || /\s/.test(token)) return false;
  const domain = token.slice(at + 1);
  const dot = domain.indexOf(".", 1);
  return dot !== -1 && dot < domain.length - 1;
}

/** A line's tokens: split on whitespace not escaped by a backslash (`path\ with\ spaces/` is one pattern). */
function tokensOf(line: string): string[] {
  const tokens: string[] = [];
  let start = -1;
  for (let i = 0; i <= line.length; i++) {
    const char = line[i];
    const blank = char === undefined || char === " " || char === "\t" || char === "\f" || char === "\v";
    if (!blank && start === -1) start = i;
    if (blank && start !== -1) {
      tokens.push(line.slice(start, i));
      start = -1;
    }
    if (char === "\\" && i + 1 < line.length) i++;
  }
  return tokens;
}

/** Whether a pattern has a `[` that a backslash does not escape (a character range, which GitHub does not support). */
function hasCharacterRange(pattern: string): boolean {
  for (let i = 0; i < pattern.length; i++) {
    if (pattern[i] === "\\") i++;
    else if (pattern[i] === "[") return true;
  }
  return false;
}

/** Whether a pattern ends in a backslash that escapes nothing (an odd run of them at its end). */
function endsWithLoneBackslash(pattern: string): boolean {
  let run = 0;
  while (run < pattern.length && pattern[pattern.length - 1 - run] === "\\") run++;
  return run % 2 === 1;
}

/** Why GitHub would not apply this pattern, or null when it would. */
function patternProblem(pattern: string): string | null {
  if (pattern.startsWith("!")) return "GitHub does not support `!` (negation) in CODEOWNERS";
  if (pattern.startsWith("\\#")) return "GitHub does not support escaping a leading `#` in CODEOWNERS";
  if (hasCharacterRange(pattern)) return "GitHub does not support `[ ]` character ranges in CODEOWNERS";
  if (endsWithLoneBackslash(pattern)) return "a pattern cannot end with a lone `\\`";
  return null;
}

/** Why a rule that must be tried one by one is not applied, or null when it is. */
function wildcardRuleProblem(pattern: string, triedSoFar: number): string | null {
  if (pattern.length > MAX_WILDCARD_PATTERN_LENGTH)
    return `a pattern with wildcards inside a name or \`**\` between directories is at most ${MAX_WILDCARD_PATTERN_LENGTH} characters`;
  if (triedSoFar >= MAX_WILDCARD_RULES)
    return `more than ${MAX_WILDCARD_RULES} patterns with wildcards inside a name or \`**\` between directories: the later ones are not applied`;
  return null;
}

/** Reads a CODEOWNERS file: its rules in file order, and the lines GitHub would not apply (or we do not). Never throws; linear in its length. */
export function parseCodeowners(text: string): Codeowners {
  const rules: CodeownersRule[] = [];
  const ignoredLines: IgnoredLine[] = [];
  const lines = (text.startsWith("\uFEFF") ? text.slice(1) : text).split("\n");
  let tried = 0;
  for (let index = 0; index < lines.length; index++) {
    const line = index + 1;
    const raw = lines[index]!;
    const tokens = tokensOf(raw.endsWith("\r") ? raw.slice(0, -1) : raw);
    const pattern = tokens[0];
    // Blank lines and comments; `\#…` is a pattern (which GitHub does not support), not a comment.
    if (pattern === undefined || pattern.startsWith("#")) continue;
    // The owners are the tokens after the pattern, up to a comment.
    let end = 1;
    while (end < tokens.length && !tokens[end]!.startsWith("#")) end++;
    let invalid: string | undefined;
    for (let k = 1; k < end && invalid === undefined; k++) if (!isOwner(tokens[k]!)) invalid = tokens[k];
    const unsupported = patternProblem(pattern);
    const triedRule = unsupported === null && mayBeTried(pattern) && isTriedRule(compilePattern(pattern));
    const problem =
      unsupported ??
      (invalid === undefined ? null : `\`${invalid.slice(0, 100)}\` is not an owner: use @user, @org/team or an e-mail address`) ??
      (triedRule ? wildcardRuleProblem(pattern, tried) : null);
    if (problem !== null) {
      ignoredLines.push({ line, reason: problem });
      continue;
    }
    if (triedRule) tried++;
    rules.push({ line, pattern, owners: distinct(tokens, 1, end) });
  }
  return { rules, ignoredLines };
}

/** `tokens` from `from` to `to`, each once, in order: compared one by one when few (most lines have one owner), by a set when many. */
function distinct(tokens: readonly string[], from: number, to: number): string[] {
  if (to - from > 16) return [...new Set(tokens.slice(from, to))];
  const kept: string[] = [];
  for (let k = from; k < to; k++) if (!kept.includes(tokens[k]!)) kept.push(tokens[k]!);
  return kept;
}
/**
 * A test's file as a path from the repository's root, or null when it has none: backslashes
 * become `/`, repeated slashes one, and a leading `./` goes. An absolute path (`/home/ci/…`,
 * `C:\…`) is read from the root of its file system as if that were the repository's: unanchored
 * patterns (`*.ts`, `docs/`) can match it, anchored ones (`/src/`) only if the path
 * happens to start there. A path that leaves its root (`../x`) has no owners.
 */
export function normalizeTestPath(file: string | null): string | null {
  if (file === null) return null;
  // Most paths are already relative and clean: no copy, no regular expression.
  if (
    file !== "" &&
    !file.includes("\\") &&
    !file.includes("//") &&
    !file.startsWith("/") &&
    !file.startsWith("./") &&
    !file.startsWith("../") &&
    file !== "." &&
    file !== ".." &&
    file.charCodeAt(1) !== 0x3a
  )
    return file;
  let path = file
    .replace(/\\/g, "/")
    .replace(/^[A-Za-z]:\//, "/")
    .replace(/\/{2,}/g, "/");
  while (path.startsWith("./") || path.startsWith("/")) path = path.slice(path.startsWith("./") ? 2 : 1);
  if (path === "" || path === "." || path === ".." || path.startsWith("../")) return null;
  return path;
}

/** The latest rule that matches, by where it may match: any name or path (`any`), or only as a directory (`dir`, a trailing slash). */
type Latest = { any: number; dir: number };
const none = (): Latest => ({ any: -1, dir: -1 });
const later = (latest: Latest, index: number, dirOnly: boolean) => {
  if (dirOnly) latest.dir = Math.max(latest.dir, index);
  else latest.any = Math.max(latest.any, index);
};

/** A name's latest rules, and whether trying them ran out of the name's budget. */
type NameLatest = Latest & { overBudget: boolean };

/** Where a rule is found: by a hash lookup on a path's names or leading directories, or tried against each path (isTriedRule). */
type Placement =
  | { kind: "never" }
  | { kind: "everywhere"; dirOnly: boolean }
  | { kind: "name"; by: "literal" | "prefix" | "suffix"; text: string; dirOnly: boolean }
  | { kind: "anchored"; prefix: string[]; tail: "exact" | "inside" | "files" | "directories"; dirOnly: boolean }
  | { kind: "tried-name"; segment: NameSegment; dirOnly: boolean }
  /** Tried against the paths below `prefix` (its literal leading directories) that have a name `key` (a literal segment after a wildcard). */
  | { kind: "tried"; prefix: string[]; key: string | null };

type NameSegment = Exclude<PatternSegment, { kind: "globstar" }>;

/** A glob that is one `*` before or after literal text (`*.ts`, `test_*`), as the text and which side. */
function affixOf({ ends }: GlobSegment): { by: "prefix" | "suffix"; text: string } | null {
  // A lone `*` has neither (it matches everywhere); `a*b` has both (tried per name).
  if (ends === null || (ends.prefix === "") === (ends.suffix === "")) return null;
  return ends.prefix === "" ? { by: "suffix", text: ends.suffix } : { by: "prefix", text: ends.prefix };
}

const isStar = (segment: PatternSegment | undefined) =>
  segment?.kind === "glob" && segment.atoms.length === 1 && segment.atoms[0] === ANY_RUN;

/** How a pattern that matches a name at any depth (`name`, `**` + `/name/**`) is found, or null for any other pattern. */
function namePlacement(pattern: CompiledPattern): Placement | null {
  const [first, name, inside, ...more] = pattern.segments;
  if (first?.kind !== "globstar" || name === undefined || name.kind === "globstar" || pattern.filesOnly || more.length > 0) return null;
  // `**` + `/name/**` is what is inside a directory of that name: `name/`.
  if (inside !== undefined && (inside.kind !== "globstar" || pattern.dirOnly)) return null;
  const dirOnly = pattern.dirOnly || inside !== undefined;
  if (name.kind === "literal") return { kind: "name", by: "literal", text: name.text, dirOnly };
  if (isStar(name)) return { kind: "everywhere", dirOnly };
  const affix = affixOf(name);
  return affix === null ? { kind: "tried-name", segment: name, dirOnly } : { kind: "name", ...affix, dirOnly };
}

function placementOf(pattern: CompiledPattern): Placement {
  const { segments } = pattern;
  if (pattern.never) return { kind: "never" };
  if (segments.length === 1 && segments[0]!.kind === "globstar") return { kind: "everywhere", dirOnly: pattern.dirOnly };
  const byName = namePlacement(pattern);
  if (byName !== null) return byName;
  const prefix: string[] = [];
  for (const segment of segments) {
    if (segment.kind !== "literal") break;
    prefix.push(segment.text);
  }
  const rest = segments.slice(prefix.length);
  const { dirOnly } = pattern;
  if (rest.length === 0) return { kind: "anchored", prefix, tail: "exact", dirOnly };
  if (rest.length === 1 && rest[0]!.kind === "globstar") return { kind: "anchored", prefix, tail: "inside", dirOnly };
  if (rest.length === 1 && isStar(rest[0]) && (pattern.filesOnly || dirOnly))
    return { kind: "anchored", prefix, tail: dirOnly ? "directories" : "files", dirOnly };
  const key = rest.findLast((segment) => segment.kind === "literal");
  return { kind: "tried", prefix, key: key?.kind === "literal" ? key.text : null };
}

/**
 * placementOf a pattern of names only (namesOf), without compiling it: a name at any depth, or
 * literal directories from the root; `/` matches nothing.
 */
function placementOfNames({ names, anchored, dirOnly }: PlainNames): Placement {
  if (!anchored) return { kind: "name", by: "literal", text: names[0]!, dirOnly };
  if (names.length === 1 && names[0] === "") return { kind: "never" };
  return { kind: "anchored", prefix: names, tail: "exact", dirOnly };
}

/**
 * Whether a pattern has a wildcard character: one without (most lines of a large file) is found by
 * a lookup whatever its slashes, so reading the file need not compile it to know.
 */
const mayBeTried = (pattern: string) => pattern.includes("*") || pattern.includes("?");

/** Whether a rule must be tried against each path rather than found by a lookup (so counts against MAX_WILDCARD_RULES). */
function isTriedRule(pattern: CompiledPattern): boolean {
  const kind = placementOf(pattern).kind;
  return kind === "tried" || kind === "tried-name";
}

/** Which affixes a name may have: a bit per (first, last) character of the affixes in use (lowest 8 bits of each). */
const edgeOf = (first: number, last: number) => ((first & 0xff) << 8) | (last & 0xff);

/** Rules found by a path's names (a name anywhere in the path): literal, `*suffix`, `prefix*`, and globs tried per name. */
class NameRules {
  private readonly literal = new Map<string, Latest>();
  private readonly affixes = { prefix: new Map<string, Latest>(), suffix: new Map<string, Latest>() };
  private readonly lengths = { prefix: [] as number[], suffix: [] as number[] };
  /**
   * The first and last characters of the names, and of the affixes in use (edgeOf): a name whose
   * characters there match none is not one of those names, nor has one of those affixes, so is
   * not cut and looked up (the lookups of a file's unique name were a slice and a hash each).
   */
  private readonly edges = { literal: new Uint8Array(0x10000), prefix: new Uint8Array(0x10000), suffix: new Uint8Array(0x10000) };
  /** Globs tried against each name, latest first, with the bits of their longest literal run (gramsOf). */
  private readonly tried: { index: number; segment: NameSegment; dirOnly: boolean; grams: Int32Array }[] = [];
  /** What is known of directory names, by id (a file's own name is seldom seen twice: not kept). */
  private readonly known = new Map<number, NameLatest>();
  /** One budget, started again for each name. */
  private readonly budget = new StepBudget(NAME_STEP_BUDGET);
  /** Whether the latest latestForFile ran out of the name's budget. */
  fileOverBudget = false;

  add(placement: Extract<Placement, { kind: "name" | "tried-name" }>, index: number): void {
    if (placement.kind === "tried-name") {
      const { segment, dirOnly } = placement;
      this.tried.unshift({ index, segment, dirOnly, grams: gramsOf(segment.kind === "glob" ? segment.run : "") });
      return;
    }
    const { by, text } = placement;
    const map = by === "literal" ? this.literal : this.affixes[by];
    if (by !== "literal" && !this.lengths[by].includes(text.length)) this.lengths[by].push(text.length);
    this.edges[by][edgeOf(text.charCodeAt(0), text.charCodeAt(text.length - 1))] = 1;
    let latest = map.get(text);
    if (latest === undefined) map.set(text, (latest = none()));
    later(latest, index, placement.dirOnly);
  }

  /** The rules found by lookups for one name: literal, then each prefix and suffix length in use whose edges fit. */
  private lookup(name: string, latest: Latest): void {
    const { prefix, suffix } = this.lengths;
    const length = name.length;
    const first = name.charCodeAt(0);
    const last = name.charCodeAt(length - 1);
    if (this.edges.literal[edgeOf(first, last)] === 1) merge(latest, this.literal.get(name));
    for (const size of prefix)
      if (size <= length && this.edges.prefix[edgeOf(first, name.charCodeAt(size - 1))] === 1)
        merge(latest, this.affixes.prefix.get(name.slice(0, size)));
    for (const size of suffix)
      if (size <= length && this.edges.suffix[edgeOf(name.charCodeAt(length - size), last)] === 1)
        merge(latest, this.affixes.suffix.get(name.slice(length - size)));
  }

  /**
   * The latest rules matching a directory's name, within the name's own step budget
   * (NAME_STEP_BUDGET): the answer depends on the name only, so it is kept by its id (up to a bound).
   */
  latestForDirectory(name: string, id: number): NameLatest {
    const remembered = this.known.get(id);
    if (remembered !== undefined) return remembered;
    const latest: NameLatest = { any: -1, dir: -1, overBudget: false };
    this.lookup(name, latest);
    const budget = this.budget;
    budget.steps = 0;
    for (const { index, segment, dirOnly } of this.tried) {
      if ((dirOnly ? latest.dir : latest.any) >= index) continue;
      if (segmentMatches(segment, name, -1, budget)) later(latest, index, dirOnly);
      if (budget.exhausted) {
        latest.overBudget = true;
        break;
      }
    }
    this.known.set(id, latest);
    return latest;
  }

  /** Whether globs are tried against names (then a file's NameGrams are worth filling). */
  get triesNames(): boolean {
    return this.tried.length > 0;
  }

  /**
   * The latest rule matching a file's own name (rules for directories only do not apply), within
   * the name's budget; fileOverBudget tells whether it ran out. Not kept: a file's name is seldom
   * seen twice. `grams`: the name's, filled.
   */
  latestForFile(name: string, grams: NameGrams): number {
    const latest = this.fileLatest;
    latest.any = -1;
    latest.dir = -1;
    this.lookup(name, latest);
    const budget = this.budget;
    budget.steps = 0;
    this.fileOverBudget = false;
    for (const { index, segment, dirOnly, grams: runGrams } of this.tried) {
      // Latest first: once a rule is found, none after it can be later.
      if (latest.any >= index) break;
      if (dirOnly) continue;
      // A name without the glob's run: the one step segmentMatches takes to find that out.
      if (!grams.mayHave(runGrams)) budget.steps++;
      else if (segmentMatches(segment, name, -1, budget)) latest.any = index;
      if (budget.exhausted) {
        this.fileOverBudget = true;
        break;
      }
    }
    return latest.any;
  }
  private readonly fileLatest = none();

  /** Forgets what is known by name id (the ids are about to be given again). */
  forget(): void {
    this.known.clear();
  }
}

/** Takes the later of each of `found`'s rules into `latest`. */
function merge(latest: Latest, found: Latest | undefined): void {
  if (found === undefined) return;
  if (found.any > latest.any) latest.any = found.any;
  if (found.dir > latest.dir) latest.dir = found.dir;
}

const NO_TEXT_LACKING = new Uint8Array(0);

/**
 * The rules of lists that are latest first, latest first: the one list itself when there is one
 * (most directories), not a copy; a few merged (a node's own rules and those it keeps by a name
 * the path has); many sorted.
 */
function merged(lists: readonly (readonly number[])[]): readonly number[] {
  let result = NO_RULES;
  let count = 0;
  for (const list of lists) {
    if (list.length === 0) continue;
    if (++count > LISTS_MERGED) return lists.flat().sort((a, b) => b - a);
    result = result.length === 0 ? list : mergeTwo(result, list);
  }
  return result;
}

/** Lists merged one into the other before sorting them all is cheaper. */
const LISTS_MERGED = 4;

function mergeTwo(a: readonly number[], b: readonly number[]): number[] {
  const out: number[] = [];
  let i = 0;
  let j = 0;
  while (i < a.length && j < b.length) out.push(a[i]! >= b[j]! ? a[i++]! : b[j++]!);
  while (i < a.length) out.push(a[i++]!);
  while (j < b.length) out.push(b[j++]!);
  return out;
}

/** Names a matcher gives ids (and remembers answers for) before it starts again: memory stays bounded. */
const NAMES_REMEMBERED = 100_000;
/** Directories whose facts a matcher keeps before it starts again. */
const DIRECTORIES_REMEMBERED = 50_000;

/** What a directory contributes to the files directly in it (OwnersMatcher.directoryFacts). */
type DirectoryFacts = {
  parts: string[];
  ids: number[];
  /** The latest rule matching a file there by the directory's names or the anchored rules along it. */
  latest: number;
  /** Rules to try, found along the directories (latest first). */
  tried: readonly number[];
  /**
   * For each of `tried`, which of the literal texts it needs (CompiledPattern.needs, a bit each)
   * the directory lacks: a path has a text when its directory or its file's name does (no text has
   * a slash), so a file is ruled out by searching its name, not the whole path, for each rule.
   */
  lacking: Uint8Array;
  /** The nodes passed whose rules found by name also look up the file's own name. */
  byName: PrefixNode[];
  /** The node of the directory itself, where the file's name may lead one node further. */
  end: PrefixNode | undefined;
  /** A name of the directory ran out of its budget. */
  overBudget: boolean;
};

/**
 * Anchored rules by their literal leading directories. A large file has a node for most of its
 * lines: what a node has none of is null or -1, not an empty map or object of its own.
 */
type PrefixNode = {
  children: Map<string, PrefixNode> | null;
  /** `/a/b` and `/a/b/`: the path at this depth, or a directory. */
  exactAny: number;
  exactDir: number;
  /** `/a/b/**`: anything inside. */
  insideAny: number;
  insideDir: number;
  /** `/a/b/*`: the files directly inside (GitHub's rule). */
  files: number;
  /** `/a/b/*\/`: the directories directly inside. */
  directories: number;
  /** Rules with wildcards after these directories, tried against the paths below: without a literal name after the wildcard, and by that name. */
  tried: number[] | null;
  triedByName: Map<string, number[]> | null;
};
const prefixNode = (): PrefixNode => ({
  children: null,
  exactAny: -1,
  exactDir: -1,
  insideAny: -1,
  insideDir: -1,
  files: -1,
  directories: -1,
  tried: null,
  triedByName: null,
});
const NO_RULES: readonly number[] = [];

/**
 * Owners of paths under one CODEOWNERS' rules. A path's rule is the latest of:
 * - rules that match at any depth by a name (`e2e/`, `*.ts`, `test_*`, `*`): one hash lookup per
 *   name of the path (and per length of prefix or suffix in use), remembered per name;
 * - anchored rules of literal directories with at most a `*` or `**` after (`/src/`, `docs/*`,
 *   `/packages/cart/**`): found along the path's own leading directories;
 * - the rest (wildcards inside a name, `**` between directories): tried one by one, latest first,
 *   only those after the latest rule found so far, within the path's step budget.
 * Keeps what it learns (answers by path, names up to a bound): build one per CODEOWNERS and batch.
 */
export class OwnersMatcher {
  /** The patterns of the rules that are tried, by rule (undefined for the others). */
  private readonly compiled: (CompiledPattern | undefined)[];
  /**
   * The texts the rules tried need, each once (many rules need the same), with their bits
   * (gramsOf); each rule's by number, in CompiledPattern.needs's order.
   */
  private readonly texts: string[] = [];
  private readonly textGrams: Int32Array[] = [];
  private readonly needIds: (number[] | undefined)[];
  /** Whether the directory being worked out has each text (textHas), when textStamp is its number (directoryCount). */
  private textStamp = new Int32Array(0);
  private textHas = new Uint8Array(0);
  private directoryCount = 0;
  /** The current file name's characters and pairs. */
  private readonly grams = new NameGrams();
  private readonly everywhere = none();
  private readonly names = new NameRules();
  private readonly anchored = prefixNode();
  /** The nodes with rules to try. */
  private readonly triedNodes = new Set<PrefixNode>();
  private lastPath: string | null = null;
  private lastOwners: readonly string[] = [];
  /** The previous path's directory (directoryOf). */
  private lastDirectory: { name: string; facts: DirectoryFacts } | null = null;
  /** One budget, started again for each path. */
  private readonly budget = new StepBudget(PATH_STEP_BUDGET);
  /** Directory names by id: the answers kept per name are kept by id (a number compares faster than a string). */
  private readonly ids = new Map<string, number>();
  private readonly directories = new Map<string, DirectoryFacts>();
  /** Paths whose tries ran out of PATH_STEP_BUDGET (they keep the latest rule found before). */
  pathsOverBudget = 0;

  constructor(private readonly rules: readonly CodeownersRule[]) {
    this.compiled = new Array<CompiledPattern | undefined>(rules.length);
    this.needIds = new Array<number[] | undefined>(rules.length);
    const textIds = new Map<string, number>();
    for (let index = 0; index < rules.length; index++) {
      // Most lines of a large file are names only: placed as they are split, not compiled.
      const plain = namesOf(rules[index]!.pattern);
      if (plain !== null) {
        this.place(index, placementOfNames(plain));
        continue;
      }
      const pattern = compilePattern(rules[index]!.pattern);
      // Only the rules tried are matched by their pattern; the others are placed and their pattern let go.
      if (!this.place(index, placementOf(pattern))) continue;
      this.compiled[index] = pattern;
      this.needIds[index] = pattern.needs.map((text) => {
        if (!textIds.has(text)) textIds.set(text, this.texts.push(text) - 1);
        this.textGrams[textIds.get(text)!] ??= gramsOf(text);
        return textIds.get(text)!;
      });
    }
    this.textStamp = new Int32Array(this.texts.length);
    this.textHas = new Uint8Array(this.texts.length);
    // Paths try rules latest first: the lists, built in file order, are turned once.
    for (const node of this.triedNodes) {
      node.tried?.reverse();
      for (const list of node.triedByName?.values() ?? []) list.reverse();
    }
  }

  /** Files a rule where paths find it; true when it is tried (by patternMatches) rather than found by a lookup. */
  private place(index: number, placement: Placement): boolean {
    if (placement.kind === "never") return false;
    if (placement.kind === "everywhere") later(this.everywhere, index, placement.dirOnly);
    else if (placement.kind === "name" || placement.kind === "tried-name") this.names.add(placement, index);
    else {
      let node = this.anchored;
      for (const segment of placement.prefix) {
        let child = node.children?.get(segment);
        if (child === undefined) (node.children ??= new Map()).set(segment, (child = prefixNode()));
        node = child;
      }
      if (placement.kind === "tried") {
        if (placement.key === null) (node.tried ??= []).push(index);
        else {
          const byName = (node.triedByName ??= new Map());
          byName.set(placement.key, [...(byName.get(placement.key) ?? []), index]);
        }
        this.triedNodes.add(node);
        return true;
      }
      if (placement.tail === "exact") {
        if (placement.dirOnly) node.exactDir = Math.max(node.exactDir, index);
        else node.exactAny = Math.max(node.exactAny, index);
      } else if (placement.tail === "inside") {
        if (placement.dirOnly) node.insideDir = Math.max(node.insideDir, index);
        else node.insideAny = Math.max(node.insideAny, index);
      } else if (placement.tail === "files") node.files = index;
      else node.directories = index;
    }
    return false;
  }

  /** The owners of a test's file (normalizeTestPath); `[]` without a file, or when no rule matches or the last that does has none. */
  ownersOf(file: string | null): readonly string[] {
    const path = normalizeTestPath(file);
    if (path === null || this.rules.length === 0) return [];
    // A run's tests come file by file: the same path again is answered at once.
    if (path === this.lastPath) return this.lastOwners;
    const slash = path.lastIndexOf("/");
    const directory = this.directoryOf(path, slash);
    const budget = this.budget;
    budget.steps = 0;
    const latest = this.latestRule(path, path.slice(slash + 1), directory, budget);
    if (this.names.fileOverBudget || directory.overBudget || budget.exhausted) this.pathsOverBudget++;
    const owners = latest === -1 ? [] : this.rules[latest]!.owners;
    this.lastPath = path;
    this.lastOwners = owners;
    return owners;
  }

  /**
   * The facts of a path's directory: those of the previous path's when it is the same (files come
   * directory by directory), compared as strings (faster than a hash lookup, or than startsWith).
   */
  private directoryOf(path: string, slash: number): DirectoryFacts {
    const name = slash === -1 ? "" : path.slice(0, slash);
    const last = this.lastDirectory;
    if (last !== null && name === last.name) return last.facts;
    const facts = this.directoryFacts(name);
    this.lastDirectory = { name, facts };
    return facts;
  }

  /** The latest rule for a file directly in `directory`: what the directory contributes, then the file's own name, then the rules to try. */
  private latestRule(path: string, name: string, directory: DirectoryFacts, budget: StepBudget): number {
    const n = directory.parts.length + 1;
    if (this.names.triesNames || directory.tried.length > 0) this.grams.fill(name);
    let latest = Math.max(directory.latest, this.names.latestForFile(name, this.grams));
    // Rules found by the file's name along the directories, and below the directory's node.
    let more: (readonly number[])[] | null = null;
    const child = directory.end?.children?.get(name);
    if (child !== undefined) {
      latest = Math.max(latest, this.latestAt(child, n, n));
      if (child.tried !== null) more = [child.tried];
    }
    for (const node of directory.byName) {
      const found = node.triedByName!.get(name);
      if (found !== undefined) (more ??= []).push(found);
    }
    return this.tryRules(path, name, directory, more === null ? NO_RULES : merged(more), latest, budget);
  }

  /**
   * Tries the directory's rules and `more` (both latest first, merged), those after `latest`, as
   * long as the budget lasts: the later of `latest` and the last that matches. A rule found twice
   * is tried once.
   */
  private tryRules(
    path: string,
    name: string,
    directory: DirectoryFacts,
    more: readonly number[],
    latest: number,
    budget: StepBudget,
  ): number {
    const { tried, lacking, parts, ids } = directory;
    let k = 0;
    let q = 0;
    let previous = -1;
    while (k < tried.length || q < more.length) {
      const fromDirectory = q >= more.length || (k < tried.length && tried[k]! >= more[q]!);
      const index = fromDirectory ? tried[k]! : more[q]!;
      if (index <= latest || budget.exhausted) break;
      const lacks = fromDirectory ? lacking[k++]! : -1;
      if (!fromDirectory) q++;
      if (index === previous) continue;
      previous = index;
      const pattern = this.compiled[index]!;
      if (lacks === -1) {
        if (patternMatches(pattern, path, parts, ids, name, budget)) latest = index;
        continue;
      }
      // One step, as patternMatches counts the search for the text.
      budget.steps++;
      if ((lacks === 0 || this.hasNeeded(name, index, lacks)) && tryPattern(pattern, parts, ids, name, budget)) latest = index;
    }
    return latest;
  }

  /**
   * What a directory contributes to the files directly in it, worked out for the first of them:
   * the latest rule matching its names or its leading directories, and the rules found along them
   * to try.
   */
  private directoryFacts(directory: string): DirectoryFacts {
    const known = this.directories.get(directory);
    if (known !== undefined) return known;
    const parts = directory === "" ? [] : directory.split("/");
    const ids = this.idsOf(parts);
    const n = parts.length + 1;
    const facts: DirectoryFacts = {
      parts,
      ids,
      latest: Math.max(this.everywhere.any, n >= 2 ? this.everywhere.dir : -1),
      tried: NO_RULES,
      lacking: NO_TEXT_LACKING,
      byName: [],
      end: undefined,
      overBudget: false,
    };
    for (let j = 0; j < parts.length; j++) {
      const found = this.names.latestForDirectory(parts[j]!, ids[j]!);
      facts.latest = Math.max(facts.latest, found.any, found.dir);
      facts.overBudget ||= found.overBudget;
    }
    const lists: (readonly number[])[] = [];
    let node: PrefixNode | undefined = this.anchored;
    for (let depth = 0; node !== undefined; depth++) {
      facts.latest = Math.max(facts.latest, this.latestAt(node, depth, n));
      if (node.tried !== null) lists.push(node.tried);
      if (node.triedByName !== null) {
        facts.byName.push(node);
        for (let j = depth; j < parts.length; j++) lists.push(node.triedByName.get(parts[j]!) ?? NO_RULES);
      }
      if (depth === parts.length) facts.end = node;
      node = depth < parts.length ? node.children?.get(parts[depth]!) : undefined;
    }
    facts.tried = merged(lists);
    facts.lacking = this.textsLacking(directory, facts.tried);
    if (this.directories.size >= DIRECTORIES_REMEMBERED) this.directories.clear();
    this.directories.set(directory, facts);
    return facts;
  }

  /**
   * For each rule of `tried`, which of its needed texts `directory` lacks (a bit each, as
   * CompiledPattern.needs orders them). A text many rules need is searched for once, and not at
   * all when the directory lacks one of its characters or pairs (NameGrams).
   */
  private textsLacking(directory: string, tried: readonly number[]): Uint8Array {
    const lacking = new Uint8Array(tried.length);
    if (tried.length === 0) return lacking;
    const stamp = ++this.directoryCount;
    const { textStamp, textHas, texts, textGrams, grams } = this;
    // The directory's characters and pairs (the file's name is set after): most texts are ruled out by them.
    grams.fill(directory);
    for (let k = 0; k < tried.length; k++) {
      const ids = this.needIds[tried[k]!]!;
      for (let t = 0; t < ids.length; t++) {
        const id = ids[t]!;
        if (textStamp[id] !== stamp) {
          textStamp[id] = stamp;
          textHas[id] = grams.mayHave(textGrams[id]!) && directory.includes(texts[id]!) ? 1 : 0;
        }
        if (textHas[id] === 0) lacking[k]! |= 1 << t;
      }
    }
    return lacking;
  }

  /** Whether a file's `name` (its bits in `grams`) has each text rule `index` needs whose bit `lacks` has (textsLacking). */
  private hasNeeded(name: string, index: number, lacks: number): boolean {
    const ids = this.needIds[index]!;
    for (let t = 0; t < ids.length; t++) {
      if ((lacks & (1 << t)) === 0) continue;
      const id = ids[t]!;
      if (!this.grams.mayHave(this.textGrams[id]!) || !name.includes(this.texts[id]!)) return false;
    }
    return true;
  }

  /** Ids of directory names; past NAMES_REMEMBERED, everything kept by id is forgotten and ids start again. */
  private idsOf(parts: readonly string[]): number[] {
    if (this.ids.size + parts.length > NAMES_REMEMBERED) {
      this.ids.clear();
      this.directories.clear();
      this.names.forget();
      for (const pattern of this.compiled)
        for (const segment of pattern?.segments ?? []) if (segment.kind === "glob") segment.known.clear();
    }
    return parts.map((name) => {
      let id = this.ids.get(name);
      if (id === undefined) this.ids.set(name, (id = this.ids.size));
      return id;
    });
  }

  /** The latest anchored rule of a node `depth` directories down that matches a path of `n` names passing through it. */
  private latestAt(node: PrefixNode, depth: number, n: number): number {
    return Math.max(
      depth >= 1 ? node.exactAny : -1,
      depth >= 1 && depth < n ? node.exactDir : -1,
      n >= depth + 1 ? node.insideAny : -1,
      n >= depth + 2 ? node.insideDir : -1,
      n === depth + 1 ? node.files : -1,
      n >= depth + 2 ? node.directories : -1,
    );
  }
}
