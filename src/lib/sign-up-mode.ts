/**
 * Who may create an account (SIGN_UP, docs/accounts.md):
 * - `open`: anyone, at /sign-up, creating their own organization (the default: a fresh `npm start`);
 * - `invite-only`: only through an invitation's link (from an organization's admin, or from the
 *   operator through the admin API); /sign-up is closed. What a production instance should use
 *   unless it means to host strangers;
 * - `off`: nobody: existing people keep signing in, and an invitation can only be accepted by an
 *   existing account.
 */
const SIGN_UP_MODES = ["open", "invite-only", "off"] as const;
export type SignUpMode = (typeof SIGN_UP_MODES)[number];

/** SIGN_UP as written in the environment: unset or empty → `open`; anything else must be one of the modes. */
export function signUpModeFrom(text: string | undefined): SignUpMode {
  const trimmed = text?.trim().toLowerCase() ?? "";
  if (trimmed === "") return "open";
  const mode = SIGN_UP_MODES.find((candidate) => candidate === trimmed);
  if (!mode) throw new Error(`SIGN_UP must be one of ${SIGN_UP_MODES.join(", ")}; it is '${(text ?? "").trim().slice(0, 40)}'.`);
  return mode;
}
