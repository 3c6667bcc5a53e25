/**
 * What the sign-in forms (`/sign-in`, an invitation's sign-in) say when the sign-in throttle
 * (src/services/tenancy/sign-in-throttle.ts) refuses an attempt, or a wrong password starts the
 * e-mail's lock: a 429 with this message and `Retry-After` in seconds.
 */
const plural = (count: number, unit: string) => `${count} ${unit}${count === 1 ? "" : "s"}`;

export function signInRefusal(refusedFor: "address" | "account" | null, until: Date, now: Date): { message: string; retryAfter: number } {
  const seconds = Math.max(1, Math.ceil((until.getTime() - now.getTime()) / 1000));
  const message =
    refusedFor === "address"
      ? `Too many failed sign-in attempts from your network. Try again in ${seconds < 60 ? plural(seconds, "second") : plural(Math.ceil(seconds / 60), "minute")}.`
      : `Too many failed sign-in attempts for this e-mail. Signing in with it is blocked for ${plural(Math.ceil(seconds / 60), "more minute")}; try again later.`;
  return { message, retryAfter: seconds };
}
