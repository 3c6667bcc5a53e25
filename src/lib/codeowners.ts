/**
 * CODEOWNERS as GitHub reads it (docs/codeowners.md): which owners a file path has.
 *
 * Each line is a pattern and zero or more owners (`@user`, `@org/team`, an e-mail address); `#`
 * starts a comment (a whole line, or from an owner position to the end of the line); blank lines
 * are skipped. Patterns follow gitignore's rules, which the `ignore` package implements (the
 * matcher eslint and many others use), case-sensitively (`ignorecase: false`): no glob engine of
 * our own. The last rule whose pattern matches a path (the path itself or a directory above it)
 * gives its owners; a rule with no owners gives none. Two departures from gitignore, as GitHub
 * documents them:
 * - a pattern ending in `/*` matches the files directly in that directory, not deeper ones
 *   (`docs/*` matches `docs/a.md`, not `docs/build/b.md`);
 * - `!` (negation), `[ ]` (character ranges) and a `\#` escape do not work on GitHub: such lines
 *   are ignored and reported, as are lines whose owners are not owners.
 *
 * Matching is one `ignore` matcher per rule, tried from the last rule back, so the first to match
 * is the last in the file. Two things keep that affordable for large files and many paths:
 * - an anchored pattern with literal leading segments (`/services/cart/`, `src/app/*.ts`) can
 *   only match paths that start with them, so a path only tries those rules (found along its own
 *   segments) and the unanchored ones: a directory-per-team file of thousands of lines costs a
 *   path a handful of tries;
 * - a matcher caches its answer for every path and parent directory it was asked about; the
 *   matchers are renewed (sharing their compiled rules) every MATCHES_BEFORE_RENEWAL answers, so
 *   memory stays bounded however many paths are matched.
 */
import ignore, { type Ignore } from "ignore";

/** Largest CODEOWNERS accepted: GitHub ignores a CODEOWNERS file of 3 MB or more. */
export const CODEOWNERS_LIMIT_BYTES = 3 * 1024 * 1024;

export type CodeownersRule = { line: number; pattern: string; owners: string[] };
/** A line that is neither blank, a comment nor a rule GitHub would apply: its number (from 1) and why. */
export type IgnoredLine = { line: number; reason: string };
export type Codeowners = { rules: CodeownersRule[]; ignoredLines: IgnoredLine[] };

/** `@user` or `@org/team` (GitHub logins and team slugs; `_` for enterprise-managed users), or an e-mail address. */
const OWNER = /^(?:@[\w.-]+(?:\/[\w.-]+)?|[^\s@/]+@[^\s@/]+\.[^\s@/]+)$/;
const MATCHER_OPTIONS = { ignorecase: false } as const;
const MATCHES_BEFORE_RENEWAL = 50_000;

/** A line's tokens: split on whitespace not escaped by a backslash (`path\ with\ spaces/` is one pattern). */
function tokensOf(line: string): string[] {
  const tokens: string[] = [];
  let current = "";
  for (let i = 0; i < line.length; i++) {
    const char = line[i]!;
    if (char === "\\" && i + 1 < line.length) {
      current += char + line[i + 1];
      i++;
    } else if (char === " " || char === "\t" || char === "\f" || char === "\v") {
      if (current !== "") tokens.push(current);
      current = "";
    } else {
      current += char;
    }
  }
  if (current !== "") tokens.push(current);
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

/** Why GitHub would not apply this pattern, or null when it would. */
function patternProblem(pattern: string): string | null {
  if (pattern.startsWith("!")) return "GitHub does not support `!` (negation) in CODEOWNERS";
  if (pattern.startsWith("\\#")) return "GitHub does not support escaping a leading `#` in CODEOWNERS";
  if (hasCharacterRange(pattern)) return "GitHub does not support `[ ]` character ranges in CODEOWNERS";
  if (/(^|[^\\])(\\\\)*\\$/.test(pattern)) return "a pattern cannot end with a lone `\\`";
  return null;
}

/** Reads a CODEOWNERS file: its rules in file order, and the lines GitHub would not apply. Never throws. */
export function parseCodeowners(text: string): Codeowners {
  const rules: CodeownersRule[] = [];
  const ignoredLines: IgnoredLine[] = [];
  const lines = text.replace(/^\uFEFF/, "").split(/\r?\n/);
  for (const [index, raw] of lines.entries()) {
    const line = index + 1;
    const tokens = tokensOf(raw);
    const [pattern, ...rest] = tokens;
    // Blank lines and comments; `\#…` is a pattern (which GitHub does not support), not a comment.
    if (pattern === undefined || pattern.startsWith("#")) continue;
    const problem = patternProblem(pattern);
    if (problem !== null) {
      ignoredLines.push({ line, reason: problem });
      continue;
    }
    const comment = rest.findIndex((token) => token.startsWith("#"));
    const owners = comment === -1 ? rest : rest.slice(0, comment);
    const invalid = owners.find((owner) => !OWNER.test(owner));
    if (invalid !== undefined) {
      ignoredLines.push({ line, reason: `\`${invalid.slice(0, 100)}\` is not an owner: use @user, @org/team or an e-mail address` });
      continue;
    }
    rules.push({ line, pattern, owners: [...new Set(owners)] });
  }
  return { rules, ignoredLines };
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
  let path = file.replace(/\\/g, "/").replace(/^[A-Za-z]:\//, "/").replace(/\/{2,}/g, "/");
  while (path.startsWith("./") || path.startsWith("/")) path = path.slice(path.startsWith("./") ? 2 : 1);
  if (path === "" || path === "." || path === ".." || path.startsWith("../")) return null;
  return path;
}

/**
 * The literal leading segments an anchored pattern confines its matches to (`/services/cart/` →
 * `services`, `cart`; `src/app/*.ts` → `src`, `app`), or null when the pattern can match anywhere
 * (unanchored: no slash but a trailing one) or its first segment has a wildcard or an escape.
 * gitignore anchors a pattern with a leading or inner slash to the root, so a path it matches (or
 * a directory above that path) starts with those segments.
 */
function literalPrefixOf(pattern: string): string[] | null {
  const leading = pattern.startsWith("/");
  const segments = (leading ? pattern.slice(1) : pattern).replace(/\/+$/, "").split("/");
  if (!leading && segments.length === 1) return null;
  const literal: string[] = [];
  for (const segment of segments) {
    if (segment === "" || /[*?[\\]/.test(segment)) break;
    literal.push(segment);
  }
  return literal.length === 0 ? null : literal;
}

/** Rules by the literal leading segments of their patterns: a path collects those of the nodes along its own segments. */
type PrefixNode = { rules: number[]; children: Map<string, PrefixNode> };

/**
 * The patterns handed to `ignore` for one rule. A pattern ending in `/*` is followed by its own
 * negation for directories (the pattern, a trailing slash, and `!` before it), so the directories
 * it names do not carry its match to the files below them (GitHub's `docs/*`).
 */
function matcherPatterns(pattern: string): string[] {
  return /\/\*$/.test(pattern) && !pattern.endsWith("**") ? [pattern, `!${pattern}/`] : [pattern];
}

/** Whether a rule needs a matcher of its own: its `/*` companion (a negation) must not touch other rules. */
const needsOwnMatcher = (pattern: string) => matcherPatterns(pattern).length > 1;

/** One `ignore` matcher over several compiled matchers (sharing their rules), merged pairwise so building it copies O(n log n) rules. */
function combined(matchers: readonly Ignore[]): Ignore {
  let level = [...matchers];
  while (level.length > 1) {
    const next: Ignore[] = [];
    for (let i = 0; i < level.length; i += 2) next.push(i + 1 < level.length ? ignore(MATCHER_OPTIONS).add([level[i]!, level[i + 1]!]) : level[i]!);
    level = next;
  }
  return level[0] ?? ignore(MATCHER_OPTIONS);
}

/**
 * Owners of paths under one CODEOWNERS' rules. Keeps what it learns (answers by path, and the
 * matchers' caches up to a bound): build one per CODEOWNERS and batch of paths.
 *
 * A path's rule is the latest of two:
 * - the rules it is tried against one by one (newest first, the first match ends it): anchored
 *   rules whose literal leading segments it starts with, and unanchored rules ending in `/*`;
 * - the other unanchored rules (`*`, `*.md`, `docs/`, `**` + `/e2e/`…), which every path must be
 *   tried against, asked together: a matcher over those after some point tells whether any of
 *   them matches the path or a directory above it, and which one decides as gitignore would (the
 *   last matching the shallowest matching level). Asking again from just after that rule can only
 *   find a later rule at a deeper level, so at most one question per level of the path finds the
 *   last of them that matches, instead of one per rule.
 */
export class OwnersMatcher {
  /** Rules tried one by one: by the leading segments their anchored pattern requires, and those that may match anywhere. */
  private readonly anchored: PrefixNode = { rules: [], children: new Map() };
  private readonly looseOwn: number[] = [];
  /** Unanchored rules asked together, ascending. */
  private readonly loose: number[] = [];
  private readonly own = new Map<number, Ignore>();
  private readonly compiledLoose: Ignore[] = [];
  /** Combined matchers over `loose` from a position to its end. */
  private readonly suffixes = new Map<number, Ignore>();
  private readonly known = new Map<string, readonly string[]>();
  private answers = 0;

  constructor(private readonly rules: readonly CodeownersRule[]) {
    for (const [index, rule] of rules.entries()) {
      const prefix = literalPrefixOf(rule.pattern);
      if (prefix === null) {
        if (needsOwnMatcher(rule.pattern)) this.looseOwn.push(index);
        else this.loose.push(index);
        continue;
      }
      let node = this.anchored;
      for (const segment of prefix) {
        let child = node.children.get(segment);
        if (child === undefined) {
          child = { rules: [], children: new Map() };
          node.children.set(segment, child);
        }
        node = child;
      }
      node.rules.push(index);
    }
  }

  /** The owners of a test's file (normalizeTestPath); `[]` without a file, or when no rule matches or the last that does has none. */
  ownersOf(file: string | null): readonly string[] {
    const path = normalizeTestPath(file);
    if (path === null || this.rules.length === 0) return [];
    const known = this.known.get(path);
    if (known !== undefined) return known;
    const last = this.lastLoose(path, this.lastTriedAlone(path));
    const owners = last === -1 ? [] : this.rules[last]!.owners;
    this.known.set(path, owners);
    return owners;
  }

  /** The latest rule tried alone that matches the path, or -1. */
  private lastTriedAlone(path: string): number {
    const candidates = [...this.looseOwn];
    let node: PrefixNode | undefined = this.anchored;
    for (const segment of path.split("/")) {
      node = node.children.get(segment);
      if (node === undefined) break;
      candidates.push(...node.rules);
    }
    candidates.sort((a, b) => b - a);
    for (const index of candidates) {
      this.count();
      let matcher = this.own.get(index);
      if (matcher === undefined) {
        matcher = ignore(MATCHER_OPTIONS).add(matcherPatterns(this.rules[index]!.pattern));
        this.own.set(index, matcher);
      }
      if (matcher.ignores(path)) return index;
    }
    return -1;
  }

  /** The latest rule, `after` or an unanchored one after it that matches the path. */
  private lastLoose(path: string, after: number): number {
    let last = after;
    // The first unanchored rule after `last`, by binary search.
    let low = 0;
    let high = this.loose.length;
    while (low < high) {
      const mid = (low + high) >> 1;
      if (this.loose[mid]! <= last) low = mid + 1;
      else high = mid;
    }
    for (let from = low; from < this.loose.length; ) {
      this.count();
      const decided = this.suffix(from).test(path);
      if (!decided.ignored || decided.rule?.mark === undefined) break;
      last = Number(decided.rule.mark);
      from = this.loose.indexOf(last, from) + 1;
    }
    return last;
  }

  private suffix(from: number): Ignore {
    let matcher = this.suffixes.get(from);
    if (matcher === undefined) {
      for (let i = this.compiledLoose.length; i < this.loose.length; i++) {
        const index = this.loose[i]!;
        this.compiledLoose.push(ignore(MATCHER_OPTIONS).add({ pattern: this.rules[index]!.pattern, mark: String(index) }));
      }
      matcher = combined(this.compiledLoose.slice(from));
      this.suffixes.set(from, matcher);
    }
    return matcher;
  }

  /**
   * Counts a question to a matcher. Matchers cache their answers for every path and parent
   * directory asked: past MATCHES_BEFORE_RENEWAL questions they are dropped (the compiled rules
   * are kept), so memory stays bounded however many paths one matcher answers for.
   */
  private count(): void {
    if (++this.answers < MATCHES_BEFORE_RENEWAL) return;
    this.answers = 0;
    this.suffixes.clear();
    for (const [index, matcher] of this.own) this.own.set(index, ignore(MATCHER_OPTIONS).add(matcher));
  }
}
