/**
 * Unit tests of the statistics helpers (src/checks/statistics.ts) against values with a stated
 * source: closed forms, hand enumeration (worked in the comments), published tables, or
 * arbitrary-precision references (mpmath at 40 digits; scipy's exhaustive permutation test).
 */
import { describe, expect, it } from "vitest";
import {
  MWU_EXACT_MAX_N,
  betaBinomialCriticalCount,
  betaBinomialLogPmf,
  betaBinomialUpperTail,
  erfc,
  lgamma,
  mad,
  mannKendall,
  mannWhitneyUGreater,
  mannWhitneyUGreaterApproximateP,
  median,
  normalUpperTail,
  senSlope,
  wilsonInterval,
} from "../../src/checks/statistics";

/** |actual − expected| ≤ rel · |expected| (plus a tiny absolute slack for values near zero). */
function expectRelClose(actual: number, expected: number, rel: number) {
  expect(Math.abs(actual - expected)).toBeLessThanOrEqual(rel * Math.abs(expected) + 1e-300);
}

describe("median and MAD", () => {
  it("median of odd and even lengths, NaN when empty", () => {
    expect(median([3, 1, 2])).toBe(2);
    expect(median([4, 1, 3, 2])).toBe(2.5);
    expect(median([])).toBeNaN();
  });

  it("does not reorder its input", () => {
    const values = [3, 1, 2];
    median(values);
    expect(values).toEqual([3, 1, 2]);
  });

  it("MAD of (1, 1, 2, 2, 4, 6, 9) is 1 (Wikipedia, 'Median absolute deviation', worked example)", () => {
    // median 2; absolute deviations (1, 1, 0, 0, 2, 4, 7); their median is 1.
    expect(mad([1, 1, 2, 2, 4, 6, 9])).toBe(1);
    expect(mad([5, 5, 5])).toBe(0);
  });
});

describe("lgamma (Lanczos)", () => {
  it("matches closed forms", () => {
    expect(Math.abs(lgamma(1))).toBeLessThan(1e-14); // Γ(1) = 1
    expect(Math.abs(lgamma(2))).toBeLessThan(1e-14); // Γ(2) = 1
    expectRelClose(lgamma(0.5), 0.5 * Math.log(Math.PI), 1e-13); // Γ(½) = √π
    expectRelClose(lgamma(10), Math.log(362880), 1e-13); // Γ(10) = 9!
  });

  it("matches mpmath.loggamma (40 digits)", () => {
    expectRelClose(lgamma(100), 359.1342053695754, 1e-13); // ln 99! = 359.13420536957539877604…
    expectRelClose(lgamma(0.001), 6.907178885383853, 1e-12); // 6.90717888538385368251…, reflection branch
    expectRelClose(lgamma(1e5), 1051287.7089736569, 1e-13); // Stirling region
  });

  it("matches tabulated Γ values: Γ(0.1) = 9.513507698668732, Γ(1/3) = 2.678938534707748 (A&S table 6.1)", () => {
    expectRelClose(lgamma(0.1), Math.log(9.513507698668732), 1e-12);
    expectRelClose(lgamma(1 / 3), Math.log(2.678938534707748), 1e-12);
  });

  it("satisfies ln Γ(x+1) − ln Γ(x) = ln x", () => {
    for (const x of [0.3, 1.7, 4.2, 25.5, 310.25]) expectRelClose(lgamma(x + 1) - lgamma(x), Math.log(x), 1e-11);
  });
});

describe("normal tail", () => {
  it("matches the standard quantiles 1.959964 → 0.025, 3.090232 → 0.001, 4.753424 → 1e-6", () => {
    expectRelClose(normalUpperTail(1.959963984540054), 0.025, 1e-6);
    expectRelClose(normalUpperTail(3.090232306167813), 0.001, 1e-6);
    expectRelClose(normalUpperTail(4.753424308822899), 1e-6, 1e-6);
    expect(normalUpperTail(0)).toBeCloseTo(0.5, 7);
    expect(erfc(-1) + erfc(1)).toBeCloseTo(2, 12);
  });
});

describe("beta-binomial", () => {
  it("with a = b = 1 is uniform on 0..n, so P(X ≥ k) = (n − k + 1)/(n + 1)", () => {
    expectRelClose(betaBinomialUpperTail(3, 10, 1, 1), 8 / 11, 1e-12);
    expectRelClose(betaBinomialUpperTail(99_990, 100_000, 1, 1), 11 / 100_001, 1e-9); // large n stays stable
    expect(betaBinomialUpperTail(0, 10, 1, 1)).toBe(1);
    expect(betaBinomialUpperTail(11, 10, 1, 1)).toBe(0);
  });

  it("matches a hand computation: n = 2, a = 1, b = 2", () => {
    // B(1,2) = 1/2; P(X=0) = B(1,4)/B(1,2) = (1/4)/(1/2) = 1/2; P(X=2) = B(3,2)/B(1,2) = (1/12)/(1/2) = 1/6.
    expectRelClose(Math.exp(betaBinomialLogPmf(0, 2, 1, 2)), 1 / 2, 1e-12);
    expectRelClose(betaBinomialUpperTail(2, 2, 1, 2), 1 / 6, 1e-12);
    expectRelClose(betaBinomialUpperTail(1, 2, 1, 2), 1 / 2, 1e-12);
  });

  it("tends to the binomial for large a + b: Binomial(10, ½), P(X ≥ 8) = 56/1024", () => {
    // a = b = 5e5 (ρ = 1/(a+b+1) ≈ 1e-6): mpmath direct sum 0.05468837890537108…, within 1e-5 of 56/1024.
    const tail = betaBinomialUpperTail(8, 10, 5e5, 5e5);
    expectRelClose(tail, 0.05468837890537108, 1e-8);
    expectRelClose(tail, 56 / 1024, 1e-4);
  });

  it("matches direct summation in mpmath (40 digits)", () => {
    // Σ_{k=20}^{50} C(50,k) B(k+0.99, 50−k+98.01) / B(0.99, 98.01): the check's "40 % of 50 failing" case.
    expectRelClose(betaBinomialUpperTail(20, 50, 0.99, 98.01), 1.672600202996118e-11, 1e-9);
    expectRelClose(betaBinomialUpperTail(5, 200, 0.5, 20), 0.3414402322288137, 1e-10);
  });

  it("critical count: the smallest k with P(X ≥ k) ≤ α (uniform case by hand)", () => {
    // Uniform on 0..10: P(X ≥ 9) = 2/11 ≈ 0.18 ≤ 0.2 < P(X ≥ 8) = 3/11.
    expect(betaBinomialCriticalCount(10, 1, 1, 0.2)).toBe(9);
    // P(X = 10) = 1/11 > 0.05: no count is significant.
    expect(betaBinomialCriticalCount(10, 1, 1, 0.05)).toBe(11);
    const k = betaBinomialCriticalCount(50, 0.99, 98.01, 1e-3);
    expect(betaBinomialUpperTail(k, 50, 0.99, 98.01)).toBeLessThanOrEqual(1e-3);
    expect(betaBinomialUpperTail(k - 1, 50, 0.99, 98.01)).toBeGreaterThan(1e-3);
  });
});

describe("Mann–Whitney U (one-sided, second sample greater)", () => {
  it("complete separation of 3 vs 3: p = 1/C(6,3) = 0.05", () => {
    const result = mannWhitneyUGreater([1, 2, 3], [4, 5, 6]);
    expect(result).toMatchObject({ u: 9, method: "exact" });
    expectRelClose(result.p, 1 / 20, 1e-12);
  });

  it("3 vs 3 without ties, U = 8: p = 2/20 (hand enumeration)", () => {
    // The 20 arrangements give U = 0..9 with frequencies 1,1,2,3,3,3,3,2,1,1, so P(U ≥ 8) = 2/20.
    const result = mannWhitneyUGreater([1, 2, 4], [3.5, 5, 6]);
    expect(result.u).toBe(8);
    expectRelClose(result.p, 0.1, 1e-12);
  });

  it("exact conditional p with ties: x = (1,2,2), y = (2,3,3) → p = 3/20 (hand enumeration)", () => {
    // Mid-ranks: 1 → 1, the three 2s → 3, the two 3s → 5.5; W_y = 3 + 5.5 + 5.5 = 14, U = 14 − 6 = 8.
    // Of the 20 ways to pick 3 ranks from {1,3,3,3,5.5,5.5}, only {5.5,5.5,3} (3 ways) reaches 14.
    const result = mannWhitneyUGreater([1, 2, 2], [2, 3, 3]);
    expect(result.u).toBe(8);
    expectRelClose(result.p, 3 / 20, 1e-12);
  });

  it("30 vs 8, complete separation: p = 1/C(38,8) = 1/48,903,492", () => {
    const baseline = Array.from({ length: 30 }, (_, i) => i);
    const recent = Array.from({ length: 8 }, (_, i) => 100 + i);
    expectRelClose(mannWhitneyUGreater(baseline, recent).p, 1 / 48_903_492, 1e-9);
    // …and 1 − 1/C(38,8) the other way round (p counts P(U ≥ 0)).
    expect(mannWhitneyUGreater(recent, baseline).p).toBe(1);
  });

  it("20 vs 8 with one tie: matches scipy's exhaustive permutation test", () => {
    // scipy 1.17.1: mannwhitneyu(y, x, alternative="greater", method=PermutationMethod(n_resamples=inf)).
    const x = [1.1, 2.3, 0.4, 5.5, 3.3, 2.2, 1.9, 4.4, 0.7, 3.8, 2.9, 1.5, 6.1, 2.0, 3.1, 4.9, 0.3, 2.6, 1.2, 3.6];
    const y = [4.1, 5.2, 3.9, 6.3, 2.8, 5.9, 4.4, 7.2];
    const result = mannWhitneyUGreater(x, y);
    expect(result.u).toBe(136.5);
    expectRelClose(result.p, 0.0013632100588622327, 1e-9);
  });

  it("large samples use the normal approximation with tie and continuity corrections", () => {
    // x: 40 zeros; y: 10 zeros and 10 ones (N = 60 > MWU_EXACT_MAX_N).
    // U_y = 10·40 (ones over zeros) + ½·10·40 (tied zeros) = 600; mean = 40·20/2 = 400.
    // Ties: t = 50 and t = 10, Σ(t³ − t) = 124,950 + 990 = 125,940.
    // Var = 800/12 · (61 − 125,940/(60·59)) = 1,694.915…; z = (600 − 400 − ½)/√Var = 4.84584…
    // p = P(Z ≥ 4.84584) = 6.3039e-7 (scipy 1.17.1 mannwhitneyu, method="asymptotic": 6.303913073448669e-7).
    const x = new Array<number>(40).fill(0);
    const y = [...new Array<number>(10).fill(0), ...new Array<number>(10).fill(1)];
    expect(x.length + y.length).toBeGreaterThan(MWU_EXACT_MAX_N);
    const result = mannWhitneyUGreater(x, y);
    expect(result).toMatchObject({ u: 600, method: "normal" });
    const variance = (800 / 12) * (61 - 125_940 / (60 * 59));
    expectRelClose(result.p, normalUpperTail(199.5 / Math.sqrt(variance)), 1e-12);
    expectRelClose(result.p, 6.303913073448669e-7, 1e-5);
  });

  it("all values tied gives p = 1", () => {
    expect(mannWhitneyUGreater([1, 1, 1], [1, 1]).p).toBe(1);
  });

  it("the normal approximation equals the large-sample branch, and p = 1 without data or variance", () => {
    const x = Array.from({ length: 40 }, (_, i) => i % 7);
    const y = Array.from({ length: 20 }, (_, i) => 3 + (i % 5));
    expect(mannWhitneyUGreaterApproximateP(x, y)).toBe(mannWhitneyUGreater(x, y).p);
    expect(mannWhitneyUGreaterApproximateP([], [1])).toBe(1);
    expect(mannWhitneyUGreaterApproximateP([2, 2], [2, 2])).toBe(1);
  });

  it("as a screen it never drops a result the exact test would pass: approximate p ≤ max(0.02, 1000 α) whenever exact p ≤ α", () => {
    // The regression check's windows (15–30 vs 8, 15–20 vs 20), seeded shifts from none to full separation, with ties.
    let random = 12345;
    const next = () => {
      random = (random * 1103515245 + 12345) % 2147483648;
      return random / 2147483648;
    };
    let exactPasses = 0;
    for (const [nx, ny] of [
      [15, 8],
      [30, 8],
      [15, 20],
      [20, 20],
    ] as const) {
      for (let trial = 0; trial < 300; trial++) {
        const shift = (trial % 30) / 6;
        const x = Array.from({ length: nx }, () => Math.round(next() * 20) / 4);
        const y = Array.from({ length: ny }, () => Math.round((next() + shift) * 20) / 4);
        const exact = mannWhitneyUGreater(x, y).p;
        const approximate = mannWhitneyUGreaterApproximateP(x, y);
        for (const alpha of [1e-3, 1e-4, 1e-5, 1e-6]) {
          if (exact <= alpha) {
            exactPasses++;
            expect(approximate).toBeLessThanOrEqual(Math.max(0.02, 1000 * alpha));
          }
        }
      }
    }
    expect(exactPasses).toBeGreaterThan(500);
  });
});

describe("Mann–Kendall and Sen slope", () => {
  it("strictly increasing 1..5: S = 10, Var = 5·4·15/18, z = 9/√16.67 = 2.2045, p = 0.01374 (normal table)", () => {
    const result = mannKendall([1, 2, 3, 4, 5]);
    expect(result.s).toBe(10);
    expectRelClose(result.variance, 50 / 3, 1e-12);
    expectRelClose(result.z, 9 / Math.sqrt(50 / 3), 1e-12);
    expectRelClose(result.pIncreasing, 0.013743, 1e-4); // table: Q(2.20) = 0.01390, Q(2.21) = 0.01355
  });

  it("tie-corrected variance: (1, 1, 2, 2) → S = 4, Var = (156 − 36)/18 (hand)", () => {
    // Pairs: (1,1) 0, four (1,2) pairs +1 each, (2,2) 0 → S = 4. Ties: two blocks of t = 2, each 2·1·9 = 18.
    const result = mannKendall([1, 1, 2, 2]);
    expect(result.s).toBe(4);
    expectRelClose(result.variance, 120 / 18, 1e-12);
    expectRelClose(result.z, 3 / Math.sqrt(120 / 18), 1e-12);
  });

  it("no trend and degenerate inputs give p ≥ 0.5 or 1", () => {
    expect(mannKendall([5, 5, 5, 5]).pIncreasing).toBe(1);
    expect(mannKendall([1, 2]).pIncreasing).toBe(1);
    expect(mannKendall([5, 4, 3, 2, 1]).pIncreasing).toBeGreaterThan(0.98);
  });

  it("Sen slope is the median pairwise slope", () => {
    expect(senSlope([1, 2, 3, 4, 5])).toBe(1);
    // (1, 3, 2, 10): slopes 2, 0.5, 3, −1, 3.5, 8 → sorted −1, 0.5, 2, 3, 3.5, 8 → median 2.5 (hand).
    expect(senSlope([1, 3, 2, 10])).toBe(2.5);
    expect(senSlope([7])).toBe(0);
  });
});

describe("Wilson score interval", () => {
  it("matches Newcombe (1998), Statistics in Medicine 17:857–872, Table I, method 3 (score)", () => {
    const cases: [number, number, number, number][] = [
      [81, 263, 0.2553, 0.3662],
      [15, 148, 0.0624, 0.1605],
      [0, 20, 0, 0.1611],
      [1, 29, 0.0061, 0.1718],
    ];
    for (const [x, n, low, high] of cases) {
      const interval = wilsonInterval(x, n);
      expect(interval.low).toBeCloseTo(low, 4);
      expect(interval.high).toBeCloseTo(high, 4);
    }
  });

  it("0/20 upper bound is z²/(n + z²) (closed form)", () => {
    const z = 1.959963984540054;
    expectRelClose(wilsonInterval(0, 20).high, (z * z) / (20 + z * z), 1e-12);
  });
});
