/**
 * The confirmation step of a destructive action (docs/web-app.md "Forms"): the page's button is a
 * GET form that leads here; this page says what will happen and carries the only form that POSTs
 * the action (checked for its origin as every page POST is). No script: it works under the strict CSP.
 */
import type { Child } from "hono/jsx";
import type { PageContext } from "./env";
import { Layout, type Section } from "./layout";

export type Confirmation = {
  title: string;
  /** What the action does and what cannot be undone. */
  consequence: Child;
  /** The app path the confirming form POSTs to. */
  action: string;
  button: string;
  /** The app path of the page to go back to. */
  cancel: string;
  section?: Section;
};

/** A GET form that looks like the action's button and leads to its confirmation page. */
export const ConfirmButton = ({
  page,
  to,
  label,
  ariaLabel,
  kind = "danger",
}: {
  page: PageContext;
  to: string;
  label: string;
  ariaLabel?: string;
  kind?: "danger" | "link";
}) => (
  <form method="get" action={page.paths.to(to)}>
    <button type="submit" class={kind} aria-label={ariaLabel}>
      {label}
    </button>
  </form>
);

export const ConfirmPage = ({ page, confirmation }: { page: PageContext; confirmation: Confirmation }) => (
  <Layout title={confirmation.title} page={page} section={confirmation.section}>
    <h1>{confirmation.title}</h1>
    <div class="notice" role="alert">
      {confirmation.consequence}
    </div>
    <div class="actions">
      <form method="post" action={page.paths.to(confirmation.action)}>
        <button type="submit" class="danger">
          {confirmation.button}
        </button>
      </form>
      <a href={page.paths.to(confirmation.cancel)}>Cancel</a>
    </div>
  </Layout>
);
