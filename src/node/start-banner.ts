/** What `npm start` and `npm run dev` print once serving: where, which database, the demo's people and key with a curl line. */
export function printStartBanner(input: {
  base: string;
  /**
   * Where the pages are to be opened (WEB_APP_URL, by default the public base URL): their form
   * posts are accepted from this origin only, so the banner names it rather than the listening address.
   */
  webAppUrl: string;
  databaseDescription: string;
  runtimeLine?: string;
  adminEnabled: boolean;
  /** Where the secrets key comes from when SECRETS_KEY is not set (src/node/secrets-key.ts). */
  secretsKeyNotice?: string | null;
  demoKey: string | null;
  /** The demo's people and their passwords, made when the demo was seeded (empty otherwise). */
  demoPeople?: readonly { email: string; password: string; role: string }[];
  seedDemo: boolean;
  /** Where e-mail goes when no SMTP server is configured (the outbox), or null. */
  mailNotice?: string | null;
  /** SIGN_UP (docs/accounts.md); unset or open: the banner points to /sign-up. */
  signUp?: "open" | "invite-only" | "off";
}): void {
  const { base } = input;
  console.log(`CI analytics API listening on ${base}/api/v1 (database: ${input.databaseDescription})`);
  const signUp = input.signUp ?? "open";
  console.log(
    signUp === "open"
      ? `Web app: ${input.webAppUrl}/ (sign up at ${input.webAppUrl}/sign-up)`
      : `Web app: ${input.webAppUrl}/ (SIGN_UP=${signUp}: ${signUp === "off" ? "no new accounts" : "new accounts through invitations only"})`,
  );
  if (input.runtimeLine) console.log(input.runtimeLine);
  console.log(`OpenAPI document: ${base}/api/v1/openapi.json (interactive reference: ${base}/docs)`);
  console.log(input.adminEnabled ? `Admin API enabled at ${base}/admin/v1` : "Admin API disabled (set ADMIN_TOKEN to enable it).");
  if (input.secretsKeyNotice) console.warn(input.secretsKeyNotice);
  if (input.mailNotice) console.log(input.mailNotice);
  if (input.demoKey) {
    console.log("");
    console.log("Created the demo organization. Its API key (printed only now; its admin can reveal it again on the team page):");
    console.log(`  ${input.demoKey}`);
    console.log("Try:");
    console.log(`  curl -H "Authorization: Bearer ${input.demoKey}" ${base}/api/v1/projects`);
    if (input.demoPeople && input.demoPeople.length > 0) {
      console.log(`Sign in to the demo at ${input.webAppUrl}/sign-in (these passwords are shown only this once):`);
      for (const person of input.demoPeople) console.log(`  ${person.role.padEnd(6)}  ${person.email}  password: ${person.password}`);
    }
  } else if (input.seedDemo) {
    console.log("The database already has data; the demo key and passwords were printed when it was first created.");
  }
}
