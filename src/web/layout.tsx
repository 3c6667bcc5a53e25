/**
 * The pages' frame: the document, the header (the organization's name, the navigation, the
 * person and the sign-out button) and the error pages. Everything shown goes through JSX, which
 * escapes text and attribute values; no page puts data into raw HTML.
 */
import type { Child, FC } from "hono/jsx";
import { raw } from "hono/html";
import type { PageContext, WebPaths } from "./env";

/** The doctype is the only raw HTML of the pages: a constant. */
const DOCTYPE = raw("<!DOCTYPE html>");

const Document: FC<{ title: string; paths: WebPaths; children?: Child }> = ({ title, paths, children }) => (
  <>
    {DOCTYPE}
    <html lang="en">
      <head>
        <meta charset="utf-8" />
        <meta name="viewport" content="width=device-width, initial-scale=1" />
        <title>{`${title} · CI test analytics`}</title>
        <link rel="stylesheet" href={paths.to("/assets/app.css")} />
      </head>
      <body>{children}</body>
    </html>
  </>
);

export type Section = "projects" | "alerts" | "team";

const NAV: { section: Section; label: string; path: string }[] = [
  { section: "projects", label: "Projects", path: "/" },
  { section: "alerts", label: "Alerts", path: "/alerts" },
  { section: "team", label: "Team", path: "/settings/team" },
];

/** A signed-in page: the header with the organization's name, the navigation and sign-out, then the content. */
export const Layout: FC<{ title: string; page: PageContext; section?: Section; children?: Child }> = ({
  title,
  page,
  section,
  children,
}) => (
  <Document title={title} paths={page.paths}>
    <header class="site">
      <a class="org" href={page.paths.to("/organizations")} title="Your organizations: switch between them">
        {page.membership?.organizationName ?? "No organization"}
      </a>
      <nav aria-label="Main">
        <ul>
          {NAV.map((item) => (
            <li>
              <a href={page.paths.to(item.path)} aria-current={item.section === section ? "page" : undefined}>
                {item.label}
              </a>
            </li>
          ))}
        </ul>
      </nav>
      <div class="account">
        <span>{page.person.name}</span>
        <form method="post" action={page.paths.to("/sign-out")}>
          <button type="submit" class="link">
            Sign out
          </button>
        </form>
      </div>
    </header>
    <main>{children}</main>
  </Document>
);

/** A page of the signed-out part (sign-in, sign-up) or an error without a session. */
export const PlainPage: FC<{ title: string; paths: WebPaths; children?: Child }> = ({ title, paths, children }) => (
  <Document title={title} paths={paths}>
    <main class="auth-main">{children}</main>
  </Document>
);

/** The message of an error page; inside the layout when the person is known. */
export const ErrorContent: FC<{ heading: string; message: string; paths: WebPaths }> = ({ heading, message, paths }) => (
  <>
    <h1>{heading}</h1>
    <p>{message}</p>
    <p>
      <a href={paths.to("/")}>Back to your projects</a>
    </p>
  </>
);
