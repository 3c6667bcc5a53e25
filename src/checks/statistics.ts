/**
 * Small, dependency-free statistics for the alert checks (docs/alert-checks.md). Everything here
 * is a pure function of its arguments; none of it keeps state or reads the clock. The inputs are
 * the checks' bounded windows (tens of points), so the simple O(n log n) and O(n²) algorithms
 * below cost the same whatever the length of a project's history.
 */

/** Consistency constant: 1.4826 · MAD estimates σ for normal data (1 / Φ⁻¹(3/4)). */
export const MAD_TO_SIGMA = 1.4826;

function sortedCopy(values: readonly number[]): number[] {
  return [...values].sort((a, b) => a - b);
}

/** Median of a sorted array (mean of the two middle values for an even length); NaN when empty. */
function medianOfSorted(sorted: readonly number[]): number {
  const n = sorted.length;
  if (n === 0) return Number.NaN;
  const mid = n >> 1;
  return n % 2 === 1 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
}

/** Median (mean of the two middle values for an even length); NaN for an empty input. */
export function median(values: readonly number[]): number {
  return medianOfSorted(sortedCopy(values));
}

/**
 * Median absolute deviation around the median, unscaled (multiply by MAD_TO_SIGMA for a σ
 * estimate). NaN for an empty input.
 */
export function mad(values: readonly number[]): number {
  if (values.length === 0) return Number.NaN;
  const center = median(values);
  return median(values.map((value) => Math.abs(value - center)));
}

/** Nearest-rank percentile (`fraction` of 1, e.g. 0.9 for the 90th) of a small list; 0 when empty. */
export function nearestRankPercentile(values: readonly number[], fraction: number): number {
  const sorted = values.slice().sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.ceil(fraction * sorted.length) - 1)] ?? 0;
}

// ---------------------------------------------------------------------------------------------
// Special functions

/**
 * Lanczos approximation (g = 7, 9 coefficients; the widely published set, e.g. Numerical
 * Recipes / Wikipedia "Lanczos approximation"), relative error ≈ 1e-15 for x > 0.
 */
const LANCZOS_G = 7;
const LANCZOS = [
  0.99999999999980993, 676.5203681218851, -1259.1392167224028, 771.32342877765313, -176.61502916214059, 12.507343278686905,
  -0.13857109526572012, 9.9843695780195716e-6, 1.5056327351493116e-7,
];

/** ln Γ(x) for x > 0 (reflection formula below 0.5). NaN for x ≤ 0 at the poles or non-finite x. */
export function lgamma(x: number): number {
  if (Number.isNaN(x)) return Number.NaN;
  if (x === Number.POSITIVE_INFINITY) return Number.POSITIVE_INFINITY;
  if (x <= 0 && Number.isInteger(x)) return Number.POSITIVE_INFINITY;
  if (x < 0.5) {
    // Γ(x)Γ(1−x) = π / sin(πx)
    return Math.log(Math.PI / Math.abs(Math.sin(Math.PI * x))) - lgamma(1 - x);
  }
  const z = x - 1;
  let sum = LANCZOS[0]!;
  for (let i = 1; i < LANCZOS_G + 2; i++) sum += LANCZOS[i]! / (z + i);
  const t = z + LANCZOS_G + 0.5;
  return 0.5 * Math.log(2 * Math.PI) + (z + 0.5) * Math.log(t) - t + Math.log(sum);
}

/** ln B(a, b) = ln Γ(a) + ln Γ(b) − ln Γ(a + b). */
function lbeta(a: number, b: number): number {
  return lgamma(a) + lgamma(b) - lgamma(a + b);
}

/** ln C(n, k). */
function lchoose(n: number, k: number): number {
  return lgamma(n + 1) - lgamma(k + 1) - lgamma(n - k + 1);
}

/**
 * Complementary error function. Numerical Recipes (2nd ed., §6.2) `erfcc`: a Chebyshev fit
 * with fractional error below 1.2e-7 everywhere, which is ample for p-values compared with
 * thresholds such as 1e-3 or 1e-5.
 */
export function erfc(x: number): number {
  const z = Math.abs(x);
  const t = 1 / (1 + 0.5 * z);
  const r =
    t *
    Math.exp(
      -z * z -
        1.26551223 +
        t *
          (1.00002368 +
            t *
              (0.37409196 +
                t *
                  (0.09678418 +
                    t * (-0.18628806 + t * (0.27886807 + t * (-1.13520398 + t * (1.48851587 + t * (-0.82215223 + t * 0.17087277)))))))),
    );
  return x >= 0 ? r : 2 - r;
}

/** Upper tail of the standard normal, P(Z ≥ z). */
export function normalUpperTail(z: number): number {
  if (Number.isNaN(z)) return Number.NaN;
  return 0.5 * erfc(z / Math.SQRT2);
}

/** log(Σ exp(terms)), stable for very negative terms. */
function logSumExp(a: number, b: number): number {
  if (a === Number.NEGATIVE_INFINITY) return b;
  if (b === Number.NEGATIVE_INFINITY) return a;
  const hi = Math.max(a, b);
  return hi + Math.log1p(Math.exp(Math.min(a, b) - hi));
}

// ---------------------------------------------------------------------------------------------
// Beta-binomial

/** ln [P(X = j+1) / P(X = j)] for X ~ BetaBinomial(n, a, b). */
function logPmfRatio(j: number, n: number, a: number, b: number): number {
  return Math.log(n - j) + Math.log(j + a) - Math.log(j + 1) - Math.log(n - j - 1 + b);
}

/** ln P(X = k) for X ~ BetaBinomial(n, a, b): ln C(n,k) + ln B(k+a, n−k+b) − ln B(a, b). */
export function betaBinomialLogPmf(k: number, n: number, a: number, b: number): number {
  if (k < 0 || k > n) return Number.NEGATIVE_INFINITY;
  return lchoose(n, k) + lbeta(k + a, n - k + b) - lbeta(a, b);
}

/**
 * Upper tail P(X ≥ k) for X ~ BetaBinomial(n, a, b), a, b > 0, integer 0 ≤ k ≤ n.
 *
 * Computed in log space: the first term ln P(X = k) comes from lgamma, the later ones from the
 * exact ratio P(X = j+1)/P(X = j) = (n−j)(j+a) / ((j+1)(n−j−1+b)), and the terms are
 * accumulated with log-sum-exp, so neither tiny tails (1e-300) nor large n (10⁵ tests)
 * underflow or overflow. The sum runs over all n − k + 1 terms (no early stop: with a or b
 * below 1 the distribution can be U-shaped, so a decreasing stretch does not bound the rest).
 * O(n − k) with four logarithms per term; the failure-rate check only calls it for runs that
 * already passed its cheap guards.
 */
export function betaBinomialUpperTail(k: number, n: number, a: number, b: number): number {
  if (k <= 0) return 1;
  if (k > n) return 0;
  let logTerm = betaBinomialLogPmf(k, n, a, b);
  let logSum = logTerm;
  for (let j = k; j < n; j++) {
    logTerm += logPmfRatio(j, n, a, b);
    logSum = logSumExp(logSum, logTerm);
  }
  return Math.min(1, Math.exp(logSum));
}

/**
 * The smallest k with P(X ≥ k) ≤ alpha (n + 1 when even P(X = n) exceeds alpha), found in one
 * pass from the top of the support down. Used to report the count a run would have needed.
 */
export function betaBinomialCriticalCount(n: number, a: number, b: number, alpha: number): number {
  const logAlpha = Math.log(alpha);
  let logTerm = betaBinomialLogPmf(n, n, a, b);
  let logSum = logTerm;
  if (logSum > logAlpha) return n + 1;
  let k = n;
  while (k > 0) {
    const j = k - 1;
    logTerm -= logPmfRatio(j, n, a, b); // ln P(X = j) from ln P(X = j + 1)
    const next = logSumExp(logSum, logTerm);
    if (next > logAlpha) break;
    logSum = next;
    k = j;
  }
  return k;
}

// ---------------------------------------------------------------------------------------------
// Mann–Whitney U

export type MannWhitneyResult = {
  /** U of the second sample: #pairs (x, y) with y > x, plus ½ per tie. */
  u: number;
  /** One-sided p-value for "the second sample is stochastically greater". */
  p: number;
  method: "exact" | "normal";
};

/** Samples up to this pooled size get the exact permutation distribution; larger ones the normal approximation. */
export const MWU_EXACT_MAX_N = 50;

/** Mid-ranks, doubled so that they are integers (a tie block over ranks i..j gets i + j). */
function doubledMidRanks(pooled: readonly number[]): { ranks: number[]; tieTerm: number } {
  const order = pooled.map((value, index) => ({ value, index })).sort((a, b) => a.value - b.value || a.index - b.index);
  const ranks = new Array<number>(pooled.length);
  let tieTerm = 0; // Σ (t³ − t) over tie blocks
  let i = 0;
  while (i < order.length) {
    let j = i;
    while (j + 1 < order.length && order[j + 1]!.value === order[i]!.value) j++;
    const doubled = i + 1 + (j + 1);
    for (let m = i; m <= j; m++) ranks[order[m]!.index] = doubled;
    const t = j - i + 1;
    tieTerm += t * t * t - t;
    i = j + 1;
  }
  return { ranks, tieTerm };
}

/** U of y over x, with the pooled doubled mid-ranks (x first) and the tie term. */
function rankSums(x: readonly number[], y: readonly number[]): { u: number; ranks: number[]; tieTerm: number; n: number } {
  const pooled = [...x, ...y];
  const n = pooled.length;
  const { ranks, tieTerm } = doubledMidRanks(pooled);
  let doubledRankSumY = 0;
  for (let i = x.length; i < n; i++) doubledRankSumY += ranks[i]!;
  return { u: doubledRankSumY / 2 - (y.length * (y.length + 1)) / 2, ranks, tieTerm, n };
}

/** The normal approximation: tie-corrected variance, continuity correction ½; 1 without variance. */
function normalApproximateP(sums: { u: number; tieTerm: number; n: number }, nx: number, ny: number): number {
  const { u, tieTerm, n } = sums;
  const variance = ((nx * ny) / 12) * (n + 1 - tieTerm / (n * (n - 1)));
  if (variance <= 0) return 1;
  return Math.min(1, normalUpperTail((u - (nx * ny) / 2 - 0.5) / Math.sqrt(variance)));
}

/**
 * The normal approximation's one-sided p at any size: a cheap screen before the exact test,
 * which costs O(N · k · Σranks).
 */
export function mannWhitneyUGreaterApproximateP(x: readonly number[], y: readonly number[]): number {
  if (x.length === 0 || y.length === 0) return 1;
  return normalApproximateP(rankSums(x, y), x.length, y.length);
}

/**
 * One-sided Mann–Whitney U test of H1 "y is stochastically greater than x".
 *
 * - Pooled size ≤ MWU_EXACT_MAX_N (the checks' 30-vs-8 windows always are): the exact
 *   permutation distribution of the rank sum of the smaller sample, conditional on the observed
 *   ties (mid-ranks, doubled to integers, counted by dynamic programming over
 *   "k items chosen with rank sum s": O(N · k · Σranks)). Without ties this is the classical exact
 *   Mann–Whitney distribution; with ties it is the exact conditional test (as in R's coin /
 *   StatXact), not an approximation. Exactness matters here: with 15 vs 8 points the normal
 *   approximation cannot go below ≈ 6e-5 even for complete separation, which would make the
 *   Bonferroni-corrected per-test α (1e-3/m) unreachable.
 * - Larger samples: the normal approximation with the tie-corrected variance
 *   n₁n₂/12 · ((N+1) − Σ(t³−t)/(N(N−1))) and a continuity correction of ½.
 */
export function mannWhitneyUGreater(x: readonly number[], y: readonly number[]): MannWhitneyResult {
  const nx = x.length;
  const ny = y.length;
  if (nx === 0 || ny === 0) return { u: Number.NaN, p: 1, method: "exact" };
  const sums = rankSums(x, y);
  const { u, ranks, n } = sums;
  const doubledRankSumY = 2 * u + ny * (ny + 1);
  if (n > MWU_EXACT_MAX_N) return { u, p: normalApproximateP(sums, nx, ny), method: "normal" };
  // Exact: enumerate the smaller sample's rank sum. P(W_y ≥ w) = P(W_x ≤ total − w).
  const useY = ny <= nx;
  const k = useY ? ny : nx;
  const totalDoubled = n * (n + 1);
  // The largest rank sum k items can reach bounds the table's width.
  const maxSum = [...ranks]
    .sort((a, b) => b - a)
    .slice(0, k)
    .reduce((acc, r) => acc + r, 0);
  // ways[c][s]: number of ways to choose c of the items seen so far with doubled rank sum s.
  const width = maxSum + 1;
  const ways = new Float64Array((k + 1) * width);
  ways[0] = 1;
  for (let i = 0; i < n; i++) {
    const r = ranks[i]!;
    for (let c = Math.min(i + 1, k); c >= 1; c--) {
      const row = c * width;
      const prev = (c - 1) * width;
      for (let s = maxSum; s >= r; s--) {
        const add = ways[prev + s - r]!;
        if (add !== 0) ways[row + s] = ways[row + s]! + add;
      }
    }
  }
  let total = 0;
  let tail = 0;
  const row = k * width;
  for (let s = 0; s <= maxSum; s++) {
    const count = ways[row + s]!;
    if (count === 0) continue;
    total += count;
    if (useY ? s >= doubledRankSumY : s <= totalDoubled - doubledRankSumY) tail += count;
  }
  return { u, p: Math.min(1, tail / total), method: "exact" };
}

// ---------------------------------------------------------------------------------------------
// Trend: Mann–Kendall and Sen slope

export type MannKendallResult = {
  s: number;
  variance: number;
  z: number;
  /** One-sided p-value for an increasing trend. */
  pIncreasing: number;
};

/**
 * Mann–Kendall trend test on a series in time order: S = Σ_{i<j} sign(x_j − x_i), tie-corrected
 * Var(S) = [n(n−1)(2n+5) − Σ t(t−1)(2t+5)] / 18, z = (S − sign(S)) / √Var (continuity
 * correction), one-sided p = P(Z ≥ z) for an increasing trend (Hirsch, Slack & Smith 1982;
 * Gilbert 1987 §16.4). O(n²). With fewer than 3 points, or all values tied, p = 1.
 */
export function mannKendall(values: readonly number[]): MannKendallResult {
  const n = values.length;
  let s = 0;
  for (let i = 0; i < n - 1; i++) {
    for (let j = i + 1; j < n; j++) s += Math.sign(values[j]! - values[i]!);
  }
  const counts = new Map<number, number>();
  for (const value of values) counts.set(value, (counts.get(value) ?? 0) + 1);
  let tieTerm = 0;
  for (const t of counts.values()) tieTerm += t * (t - 1) * (2 * t + 5);
  const variance = (n * (n - 1) * (2 * n + 5) - tieTerm) / 18;
  if (n < 3 || variance <= 0) return { s, variance: Math.max(0, variance), z: 0, pIncreasing: 1 };
  const z = s > 0 ? (s - 1) / Math.sqrt(variance) : s < 0 ? (s + 1) / Math.sqrt(variance) : 0;
  return { s, variance, z, pIncreasing: normalUpperTail(z) };
}

/** Sen (Theil–Sen) slope: the median of (x_j − x_i)/(j − i) over all i < j, per index step. 0 below 2 points. */
export function senSlope(values: readonly number[]): number {
  const slopes: number[] = [];
  for (let i = 0; i < values.length - 1; i++) {
    for (let j = i + 1; j < values.length; j++) slopes.push((values[j]! - values[i]!) / (j - i));
  }
  return slopes.length === 0 ? 0 : median(slopes);
}

// ---------------------------------------------------------------------------------------------
// Runs test

/**
 * Wald–Wolfowitz runs-test z for a sequence of n outcomes of two kinds, `k` of one kind, with
 * `changes` changes between neighbours (R = changes + 1 runs): E[R] = 1 + 2n₀n₁/n,
 * Var[R] = 2n₀n₁(2n₀n₁ − n)/(n²(n − 1)). Negative z: fewer runs than chance (clustered
 * outcomes), positive: more (alternating). Null when undefined (no variance).
 */
export function runsTestZ(n: number, k: number, changes: number): number | null {
  const n1 = k;
  const n0 = n - k;
  if (n < 2 || n0 <= 0 || n1 <= 0) return null;
  const expected = 1 + (2 * n0 * n1) / n;
  const variance = (2 * n0 * n1 * (2 * n0 * n1 - n)) / (n * n * (n - 1));
  if (!(variance > 0)) return null;
  return (changes + 1 - expected) / Math.sqrt(variance);
}

// ---------------------------------------------------------------------------------------------
// Proportions

/** Wilson score interval for `successes` out of `n` at normal quantile `z` (1.96 ≈ 95 %). */
export function wilsonInterval(successes: number, n: number, z = 1.959963984540054): { low: number; high: number } {
  if (n <= 0) return { low: 0, high: 1 };
  const p = successes / n;
  const z2 = z * z;
  const denominator = 1 + z2 / n;
  const center = (p + z2 / (2 * n)) / denominator;
  const half = (z / denominator) * Math.sqrt((p * (1 - p)) / n + z2 / (4 * n * n));
  return { low: Math.max(0, center - half), high: Math.min(1, center + half) };
}

/**
 * Wilson score 95 % interval for k successes in n trials, or null for n = 0 (where
 * wilsonInterval answers [0, 1]). Not written through wilsonInterval: its operations are ordered
 * differently, and the intervals already recorded in flakiness events would shift in the last bit.
 */
export function wilson95(k: number, n: number): { low: number; high: number } | null {
  if (n <= 0) return null;
  const z = 1.959963984540054;
  const p = k / n;
  const z2 = z * z;
  const denom = 1 + z2 / n;
  const center = (p + z2 / (2 * n)) / denom;
  const half = (z * Math.sqrt((p * (1 - p)) / n + z2 / (4 * n * n))) / denom;
  return { low: Math.max(0, center - half), high: Math.min(1, center + half) };
}
