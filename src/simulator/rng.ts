/**
 * The simulator's random numbers: distributions drawn from mulberry32 only (nothing reads
 * Math.random or the clock), so the same seed always gives the same stream.
 */
import { mulberry32 } from "../lib/seeded-random";

/** Distributions on top of mulberry32. */
export class Rng {
  private readonly source: () => number;
  private spare: number | null = null;

  constructor(seed: number) {
    this.source = mulberry32(seed);
  }

  next(): number {
    return this.source();
  }

  uniform(low = 0, high = 1): number {
    return low + (high - low) * this.source();
  }

  /** An integer in [low, high]. */
  int(low: number, high: number): number {
    return low + Math.floor(this.source() * (high - low + 1));
  }

  chance(p: number): boolean {
    return this.source() < p;
  }

  /** Standard normal (Box–Muller, the second value kept for the next call). */
  normal(): number {
    if (this.spare !== null) {
      const value = this.spare;
      this.spare = null;
      return value;
    }
    let u = 0;
    while (u <= Number.EPSILON) u = this.source();
    const v = this.source();
    const radius = Math.sqrt(-2 * Math.log(u));
    this.spare = radius * Math.sin(2 * Math.PI * v);
    return radius * Math.cos(2 * Math.PI * v);
  }

  lognormal(median: number, sigma: number): number {
    return median * Math.exp(sigma * this.normal());
  }

  exponential(mean: number): number {
    let u = 0;
    while (u <= Number.EPSILON) u = this.source();
    return -mean * Math.log(u);
  }

  /** Gamma(shape, 1), Marsaglia–Tsang (with the shape < 1 boost). */
  gamma(shape: number): number {
    if (shape < 1) {
      let u = 0;
      while (u <= Number.EPSILON) u = this.source();
      return this.gamma(shape + 1) * u ** (1 / shape);
    }
    const d = shape - 1 / 3;
    const c = 1 / Math.sqrt(9 * d);
    for (;;) {
      let x: number;
      let v: number;
      do {
        x = this.normal();
        v = 1 + c * x;
      } while (v <= 0);
      v = v * v * v;
      const u = this.source();
      if (u < 1 - 0.0331 * x * x * x * x) return d * v;
      if (Math.log(u) < 0.5 * x * x + d * (1 - v + Math.log(v))) return d * v;
    }
  }

  beta(a: number, b: number): number {
    const x = this.gamma(a);
    const y = this.gamma(b);
    return x + y > 0 ? x / (x + y) : 0;
  }

  binomial(n: number, p: number): number {
    if (p <= 0 || n <= 0) return 0;
    if (p >= 1) return n;
    let count = 0;
    for (let i = 0; i < n; i++) if (this.source() < p) count++;
    return count;
  }

  poisson(mean: number): number {
    const limit = Math.exp(-mean);
    let k = 0;
    let product = this.source();
    while (product > limit) {
      k++;
      product *= this.source();
    }
    return k;
  }

  pick<T>(items: readonly T[]): T {
    if (items.length === 0) throw new Error("pick() from an empty list");
    return items[Math.floor(this.source() * items.length)] as T;
  }

  /** k distinct items (a partial Fisher–Yates on a copy), in draw order. */
  sample<T>(items: readonly T[], k: number): T[] {
    const copy = items.slice();
    const count = Math.min(k, copy.length);
    for (let i = 0; i < count; i++) {
      const j = i + Math.floor(this.source() * (copy.length - i));
      [copy[i], copy[j]] = [copy[j] as T, copy[i] as T];
    }
    return copy.slice(0, count);
  }

  hex(length: number): string {
    let out = "";
    while (out.length < length)
      out += Math.floor(this.source() * 0x100000000)
        .toString(16)
        .padStart(8, "0");
    return out.slice(0, length);
  }
}
