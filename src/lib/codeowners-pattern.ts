/**
 * One CODEOWNERS pattern, compiled once and matched without regular expressions (docs/codeowners.md).
 *
 * Patterns come from users, so matching must not backtrack: a pattern is a list of path segments
 * (a literal name, a glob of `*` and `?` within one name, or `**` for any number of directories),
 * matched against a path's segments by keeping the set of positions reached so far (a path of n
 * segments has n + 1 positions), and a glob against one name by the two-pointer walk that resumes
 * after its last `*`. A pattern against a path costs at most (segments × positions) globs, each at
 * most (glob × name) steps; every step is counted against a budget the caller sets.
 *
 * The rules are gitignore's, as the `ignore` package reads them (the tests hold the two equal on
 * random patterns and paths): a pattern with a slash before its end is anchored to the root, one
 * without matches at any depth; a trailing slash matches directories only; `**` as a whole
 * segment matches any number of directories (at least one at the end: `a/**` is what is inside
 * `a`); `*` and `?` never match a slash; a backslash makes the next character literal. A path
 * matches when the pattern matches it or a directory above it, except GitHub's `/*` rule: a
 * pattern ending in `/*` owns the files directly in that directory, not the directories it names.
 */

/** A glob atom that is not a character code: any one character, or any run of characters. */
const ANY_ONE = -1;
export const ANY_RUN = -2;

export type GlobSegment = {
  kind: "glob";
  atoms: Int32Array;
  /** Characters a name needs at least (atoms other than `*`). */
  fixed: number;
  /** The glob's longest run of literal characters: a name without it cannot match (a native search first). */
  run: string;
  /** A glob of one `*` and literal text around it (`*`, `*.ts`, `module-*`, `test_*.py`): matched by comparing its ends. */
  ends: { prefix: string; suffix: string } | null;
  /** Answers by name id (OwnersMatcher's), where a pattern is tried against many paths that share directories: the walk's cost × 2, plus 1 for a match. */
  known: Map<number, number>;
};
export type PatternSegment = { kind: "literal"; text: string } | GlobSegment | { kind: "globstar" };

export type CompiledPattern = {
  /** Segments from the root; a pattern that matches at any depth starts with a globstar. */
  segments: PatternSegment[];
  /** A trailing slash: only directories match (and so own the files below them). */
  dirOnly: boolean;
  /** GitHub's `dir/*`: only files directly there match, not the directories the `*` names. */
  filesOnly: boolean;
  /** A pattern that can match nothing (an escaped trailing slash, an empty pattern). */
  never: boolean;
  /** Literal text a matching path must contain (the longest runs of its segments, at most 4, longest first): a native search rules most paths out at once. */
  needs: readonly string[];
};

/** Steps a rule costs to try once its literal text is found in the path, before any name is compared: what it costs beside a character compared. */
const TRY_STEPS = 8;
/** Steps a glob costs to begin walking a name that has its literal text. */
const WALK_STEPS = 4;

/** Counts the steps of matching; `exhausted` once more were taken than allowed. */
export class StepBudget {
  steps = 0;
  constructor(public limit: number) {}
  get exhausted(): boolean {
    return this.steps > this.limit;
  }
}

/** A segment as read: its atoms, its wildcards, and where it starts in the pattern (its text, when it has no escape). */
type RawSegment = { atoms: number[]; stars: number; wildcards: number; escapedOrOther: boolean; escaped: boolean; start: number };
const rawSegment = (start: number): RawSegment => ({ atoms: [], stars: 0, wildcards: 0, escapedOrOther: false, escaped: false, start });

/** Splits a pattern at its unescaped slashes into segments of atoms (escapes resolved). */
function splitPattern(pattern: string): { raw: RawSegment[]; leadingSlash: boolean; trailingSlash: boolean; never: boolean } {
  const raw: RawSegment[] = [];
  let current = rawSegment(0);
  let leadingSlash = false;
  let never = false;
  for (let i = 0; i < pattern.length; i++) {
    const code = pattern.charCodeAt(i);
    if (code === 0x5c /* \ */) {
      if (i + 1 >= pattern.length) {
        never = true;
        break;
      }
      const next = pattern.charCodeAt(++i);
      // gitignore reads an escaped slash as a separator, and one at the end as matching nothing.
      if (next === 0x2f) {
        if (i === pattern.length - 1) never = true;
        raw.push(current);
        current = rawSegment(i + 1);
        continue;
      }
      current.atoms.push(next);
      current.escapedOrOther = true;
      current.escaped = true;
    } else if (code === 0x2f /* / */) {
      if (i === 0) {
        leadingSlash = true;
        current = rawSegment(1);
      } else {
        raw.push(current);
        current = rawSegment(i + 1);
      }
    } else if (code === 0x2a /* * */) {
      current.stars++;
      if (current.atoms.at(-1) !== ANY_RUN) {
        current.atoms.push(ANY_RUN);
        current.wildcards++;
      }
    } else {
      current.atoms.push(code === 0x3f /* ? */ ? ANY_ONE : code);
      if (code === 0x3f) current.wildcards++;
      current.escapedOrOther = true;
    }
  }
  const trailingSlash = current.atoms.length === 0 && raw.length > 0 && !never;
  if (!trailingSlash) raw.push(current);
  return { raw, leadingSlash, trailingSlash, never };
}

/** The text of literal atoms (character codes), a chunk at a time: a pattern may be megabytes long. */
function textOf(atoms: readonly number[], from = 0, to = atoms.length): string {
  let text = "";
  for (let i = from; i < to; i += 4096) text += String.fromCharCode(...atoms.slice(i, Math.min(to, i + 4096)));
  return text;
}

function segmentOf(raw: RawSegment, pattern: string): PatternSegment {
  if (!raw.escapedOrOther && raw.stars >= 2) return GLOBSTAR;
  // Most segments are plain names: without an escape, their text is the pattern's, one character per atom.
  if (raw.wildcards === 0)
    return { kind: "literal", text: raw.escaped ? textOf(raw.atoms) : pattern.slice(raw.start, raw.start + raw.atoms.length) };
  const { atoms } = raw;
  let run = "";
  let runStart = 0;
  for (let i = 0; i <= atoms.length; i++) {
    if (i < atoms.length && atoms[i]! >= 0) continue;
    // The first longest run, as before: a later run of the same length does not replace it.
    if (i - runStart > run.length) run = textOf(atoms, runStart, i);
    runStart = i + 1;
  }
  const star = atoms.indexOf(ANY_RUN);
  const oneStar = star !== -1 && raw.wildcards === 1;
  const ends = oneStar ? { prefix: textOf(atoms, 0, star), suffix: textOf(atoms, star + 1) } : null;
  return {
    kind: "glob",
    atoms: Int32Array.from(atoms),
    fixed: atoms.length - (raw.stars > 0 ? count(atoms, ANY_RUN) : 0),
    run,
    ends,
    known: new Map(),
  };
}

function count(atoms: readonly number[], atom: number): number {
  let found = 0;
  for (const each of atoms) if (each === atom) found++;
  return found;
}

const GLOBSTAR: PatternSegment = { kind: "globstar" };

/** Compiles a pattern (as parsed from CODEOWNERS: no `!`, no `[ ]`) into segments. Linear in its length. */
export function compilePattern(pattern: string): CompiledPattern {
  const plain = namesOf(pattern);
  if (plain !== null) return compileNames(plain);
  const { raw, leadingSlash, trailingSlash, never } = splitPattern(pattern);
  const segments: PatternSegment[] = [];
  // Anchored when a slash comes before the end; otherwise the pattern may start at any depth.
  if (!leadingSlash && raw.length === 1) segments.push(GLOBSTAR);
  for (const piece of raw) {
    const segment = segmentOf(piece, pattern);
    // Consecutive globstars are one.
    if (segment.kind === "globstar" && segments.at(-1)?.kind === "globstar") continue;
    segments.push(segment);
  }
  const filesOnly = pattern.endsWith("/*") && !pattern.endsWith("**");
  return { segments, dirOnly: trailingSlash, filesOnly, never: never || isEmpty(segments), needs: neededText(segments) };
}

/** A pattern of names only: its literal segments, whether anchored (else at any depth), whether for directories only. */
export type PlainNames = { names: string[]; anchored: boolean; dirOnly: boolean };

/**
 * A pattern of names only (no wildcard, no escape: most lines of a large file) split at its
 * slashes, as compilePattern reads it; null for any other pattern. It never matches when it is
 * anchored and its one name is empty (`/`).
 */
export function namesOf(pattern: string): PlainNames | null {
  if (pattern.includes("*") || pattern.includes("?") || pattern.includes("\\")) return null;
  const names = pattern.split("/");
  const leadingSlash = pattern.startsWith("/");
  if (leadingSlash) names.shift();
  const dirOnly = names.length > 1 && names.at(-1) === "";
  if (dirOnly) names.pop();
  return { names, anchored: leadingSlash || names.length > 1, dirOnly };
}

/** compilePattern for a pattern of names only (namesOf): the same segments, without reading it a character at a time. */
function compileNames({ names, anchored, dirOnly }: PlainNames): CompiledPattern {
  const segments: PatternSegment[] = anchored ? [] : [GLOBSTAR];
  for (const text of names) segments.push({ kind: "literal", text });
  return { segments, dirOnly, filesOnly: false, never: isEmpty(segments), needs: neededText(segments) };
}

const isEmpty = (segments: readonly PatternSegment[]) =>
  segments.length === 0 || (segments.length === 1 && segments[0]!.kind === "literal" && segments[0]!.text === "");

/** Most texts a pattern needs (CompiledPattern.needs). */
const NEEDS_KEPT = 4;

/**
 * Runs a pattern's paths must contain: the longest few of its segments' literal runs of two
 * characters or more, each once, the first found first among runs of one length. Kept while
 * reading the segments (a pattern may have a million), not sorted after.
 */
function neededText(segments: readonly PatternSegment[]): string[] {
  const needs: string[] = [];
  for (const segment of segments) {
    const run = segment.kind === "literal" ? segment.text : segment.kind === "glob" ? segment.run : "";
    if (run.length < 2 || needs.includes(run)) continue;
    // After the kept runs at least as long: a run found later comes after one of its length.
    let at = needs.length;
    while (at > 0 && needs[at - 1]!.length < run.length) at--;
    if (at >= NEEDS_KEPT) continue;
    if (needs.length < NEEDS_KEPT) needs.push(run);
    for (let k = needs.length - 1; k > at; k--) needs[k] = needs[k - 1]!;
    needs[at] = run;
  }
  return needs;
}

/** Whether a glob matches a whole name: the two-pointer walk that resumes after the last `*` (at most glob × name steps). */
function globMatches(glob: GlobSegment, name: string, id: number, budget: StepBudget): boolean {
  budget.steps++;
  const { ends } = glob;
  if (ends !== null) return name.length >= glob.fixed && name.startsWith(ends.prefix) && name.endsWith(ends.suffix);
  if (name.length < glob.fixed || !name.includes(glob.run)) return false;
  // A walk begun costs more than a character compared (a call, a search): counted so.
  budget.steps += WALK_STEPS;
  const known = id >= 0 ? glob.known.get(id) : undefined;
  if (known !== undefined) {
    // The walk's cost is charged again: a path spends the same budget whichever path came first.
    budget.steps += known >> 1;
    return !budget.exhausted && (known & 1) === 1;
  }
  const before = budget.steps;
  const matches = walkGlob(glob.atoms, name, budget);
  if (budget.exhausted) return false;
  if (id >= 0) {
    if (glob.known.size >= NAMES_KNOWN_PER_GLOB) glob.known.clear();
    glob.known.set(id, ((budget.steps - before) << 1) | (matches ? 1 : 0));
  }
  return matches;
}

/** Answers a glob keeps before it starts again: memory stays bounded. */
const NAMES_KNOWN_PER_GLOB = 10_000;

/**
 * The walk, one step per character position tried. The budget's count is kept in a local and
 * written back once. Right after a `*`, a literal atom that does not match moves the walk one
 * position at a time until it does: that scan is one native search (skipScan), counted as the
 * steps it replaces, so the walk costs the budget exactly what it did one position at a time
 * (exported for the test that holds the two equal).
 */
export function walkGlob(atoms: Int32Array, name: string, budget: StepBudget): boolean {
  const { limit } = budget;
  const length = name.length;
  const count = atoms.length;
  let steps = budget.steps;
  let atom = 0;
  let at = 0;
  let starAtom = -1;
  let starAt = 0;
  while (at < length) {
    const wanted = atom < count ? atoms[atom]! : NO_ATOM;
    if (wanted >= 0 && atom === starAtom + 1 && starAtom >= 0 && wanted !== name.charCodeAt(at)) {
      // Positions at, at + 1, … up to the next `wanted` (or the end): one step each.
      const next = name.indexOf(String.fromCharCode(wanted), at + 1);
      const end = next === -1 ? length : next;
      steps += end - at;
      if (steps > limit) {
        budget.steps = limit + 1;
        return false;
      }
      at = starAt = end;
      continue;
    }
    if (++steps > limit) {
      budget.steps = steps;
      return false;
    }
    if (wanted === ANY_RUN) {
      starAtom = atom++;
      starAt = at;
    } else if (wanted !== NO_ATOM && (wanted === ANY_ONE || wanted === name.charCodeAt(at))) {
      atom++;
      at++;
    } else if (starAtom >= 0) {
      atom = starAtom + 1;
      at = ++starAt;
    } else {
      budget.steps = steps;
      return false;
    }
  }
  budget.steps = steps;
  while (atom < count && atoms[atom] === ANY_RUN) atom++;
  return atom === count;
}

/** Past the glob's last atom (a number, so the walk's `wanted` keeps one type). */
const NO_ATOM = -3;

/**
 * Whether one pattern segment (not a globstar) matches one name. `id`: the name's id, under which
 * the answer is kept for the next path (directory names repeat across paths), or -1.
 */
export function segmentMatches(
  segment: Exclude<PatternSegment, { kind: "globstar" }>,
  name: string,
  id: number,
  budget: StepBudget,
): boolean {
  if (segment.kind === "literal") {
    budget.steps++;
    return segment.text === name;
  }
  return globMatches(segment, name, id, budget);
}

/**
 * Whether a pattern matches a path or a directory above it: `directory`'s names (`ids` their
 * ids), then the file's `name`. Returns false once the budget is exhausted: the caller checks
 * `budget.exhausted` to tell that from no match.
 */
export function patternMatches(
  pattern: CompiledPattern,
  path: string,
  directory: readonly string[],
  ids: readonly number[],
  name: string,
  budget: StepBudget,
): boolean {
  if (pattern.never) return false;
  const { needs } = pattern;
  // One step for the search, however many texts are searched: the budget spent depends on the path only.
  budget.steps++;
  for (let k = 0; k < needs.length; k++) if (!path.includes(needs[k]!)) return false;
  return tryPattern(pattern, directory, ids, name, budget);
}

/**
 * patternMatches once the path is known to have the pattern's literal text (`needs`, for which
 * the caller has charged the one step): the matcher checks that text by directory and file name.
 */
export function tryPattern(
  pattern: CompiledPattern,
  directory: readonly string[],
  ids: readonly number[],
  name: string,
  budget: StepBudget,
): boolean {
  budget.steps += TRY_STEPS;
  const m = directory.length;
  const n = m + 1;
  const { segments } = pattern;
  const last = segments.length - 1;
  // reached[j]: the segments so far match the path's first j names. Updated in place.
  const reached = reachedBuffer(n + 1);
  reached[0] = 1;
  let first = 0;
  for (let i = 0; i <= last; i++) {
    const segment = segments[i]!;
    if (segment.kind === "globstar") {
      // Any number of directories; at the end, at least one thing inside.
      const from = first + (i === last ? 1 : 0);
      for (let j = first; j <= n; j++) reached[j] = j >= from ? 1 : 0;
      budget.steps += n + 1 - first;
      first = from;
    } else {
      // Steps are taken only by names compared: a budget spent before the first is spent here.
      if (first < n && budget.exhausted) return false;
      // Descending, so reached[j] is still the previous segment's when reached[j + 1] is set.
      for (let j = n - 1; j >= first; j--) {
        if (reached[j] === 0) {
          reached[j + 1] = 0;
          continue;
        }
        const matched = j === m ? segmentMatches(segment, name, -1, budget) : segmentMatches(segment, directory[j]!, ids[j]!, budget);
        if (budget.exhausted) return false;
        reached[j + 1] = matched ? 1 : 0;
      }
      reached[first] = 0;
      do first++;
      while (first <= n && reached[first] === 0);
    }
    if (first > n) return false;
  }
  if (reached[n] === 1 && !pattern.dirOnly) return true;
  // `first` is the shallowest match; one above the file is a directory.
  return !pattern.filesOnly && first < n;
}

let shared = new Uint8Array(64);
/** One buffer for every match (JavaScript runs one at a time), cleared and grown as needed. */
function reachedBuffer(length: number): Uint8Array {
  if (shared.length < length) shared = new Uint8Array(length * 2);
  else shared.fill(0, 0, length);
  return shared;
}
