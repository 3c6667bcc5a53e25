/**
 * `/digest/unsubscribe/:token`: the weekly digest's unsubscribe link (docs/notifications.md#the-weekly-digest),
 * without signing in. The token is signed and names one membership (digest-subscriptions.ts): an
 * altered or unknown one is a 404 page that changes nothing.
 *
 * - `GET` shows whose digest it is and one button; it changes nothing, because mail scanners and
 *   link previews open every link of a message, and a GET that unsubscribed would unsubscribe
 *   people who never clicked.
 * - `POST` turns the digest off: the page's button, and the RFC 8058 one-click POST a mail client
 *   sends from the `List-Unsubscribe` header (body `List-Unsubscribe=One-Click`). It is the one
 *   post of the pages exempt from the Origin check (index.tsx): a mail provider's request comes from
 *   no page of ours, the token is the authority, and all it can do is stop a digest.
 */
import type { Context, Hono } from "hono";
import { type DigestSubscription, subscriptionOfToken, unsubscribeWithToken } from "../services/notifications/digest-subscriptions";
import type { WebConfig, WebEnv, WebPaths } from "./env";
import { PlainPage } from "./layout";

const Invalid = ({ paths }: { paths: WebPaths }) => (
  <PlainPage title="Link not valid" paths={paths}>
    <h1>This unsubscribe link is not valid</h1>
    <p>It was altered, or its membership no longer exists. Signed in, you can turn the weekly digest on and off on the team page.</p>
    <p>
      <a href={paths.to("/settings/team")}>The team page</a>
    </p>
  </PlainPage>
);

const Confirm = ({ paths, token, subscription }: { paths: WebPaths; token: string; subscription: DigestSubscription }) => (
  <PlainPage title="Unsubscribe from the weekly digest" paths={paths}>
    <h1>Unsubscribe from the weekly digest</h1>
    <p>
      The weekly digest of the organization <strong>{subscription.organizationName}</strong> to <code>{subscription.email}</code>{" "}
      {subscription.keepsDigest ? "is on." : "is already off."}
    </p>
    {subscription.keepsDigest ? (
      <form method="post" action={paths.to(`/digest/unsubscribe/${token}`)}>
        <button type="submit">Unsubscribe</button>
      </form>
    ) : null}
  </PlainPage>
);

const Done = ({ paths, subscription }: { paths: WebPaths; subscription: DigestSubscription }) => (
  <PlainPage title="Unsubscribed" paths={paths}>
    <h1>You are unsubscribed</h1>
    <p role="status">
      <code>{subscription.email}</code> no longer receives the weekly digest of <strong>{subscription.organizationName}</strong>. To get it
      again, sign in and turn it on on the team page.
    </p>
    <p>
      <a href={paths.to("/settings/team")}>The team page</a>
    </p>
  </PlainPage>
);

export function registerDigestUnsubscribe(web: Hono<WebEnv>, config: WebConfig, paths: WebPaths): void {
  const deps = (c: Context<WebEnv>) => ({ db: c.env.db, secrets: config.secrets });

  web.get("/digest/unsubscribe/:token", async (c) => {
    const token = c.req.param("token");
    const subscription = await subscriptionOfToken(deps(c), token);
    if (!subscription) return c.html(<Invalid paths={paths} />, 404);
    return c.html(<Confirm paths={paths} token={token} subscription={subscription} />);
  });

  web.post("/digest/unsubscribe/:token", async (c) => {
    const subscription = await unsubscribeWithToken(deps(c), c.req.param("token"));
    if (!subscription) return c.html(<Invalid paths={paths} />, 404);
    return c.html(<Done paths={paths} subscription={subscription} />);
  });
}
