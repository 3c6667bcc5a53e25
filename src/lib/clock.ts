/** Injected time source, so tests can move time without waiting. */
export interface Clock {
  now(): Date;
}

export const systemClock: Clock = { now: () => new Date() };

/** A clock that only moves when told to; for tests and the simulator. */
export class ManualClock implements Clock {
  #ms: number;
  constructor(start: Date | number = Date.UTC(2026, 0, 1)) {
    this.#ms = typeof start === "number" ? start : start.getTime();
  }
  now(): Date {
    return new Date(this.#ms);
  }
  advance(ms: number): void {
    this.#ms += ms;
  }
  set(to: Date | number): void {
    this.#ms = typeof to === "number" ? to : to.getTime();
  }
}
