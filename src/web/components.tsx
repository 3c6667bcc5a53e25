/**
 * Pieces shared by the run, test and alert pages: badges, durations, links that only follow
 * http(s), the "next page" link, one-line notices after a form post, and alert metadata shown as
 * text. Everything goes through JSX (escaped); nothing from uploads becomes markup.
 */
import type { Child, FC } from "hono/jsx";
import { type CaseStatus, type QuarantineVia, type TestHealth, healthText } from "../lib/vocabulary";
import { utcText } from "./format";

/** Text only screen readers read (a cell of the history strip, an icon's meaning). */
export const VisuallyHidden: FC<{ children?: Child }> = ({ children }) => <span class="visually-hidden">{children}</span>;

/**
 * A table that scrolls sideways in its own box on a narrow screen, never the page (styles.ts
 * `.table-scroll`); the box is a named region and focusable, so that a keyboard scrolls it too.
 * Written in place of `<table>` (the rows inside stay as they are).
 */
export const WideTable: FC<{ label: string; class?: string; children?: Child }> = (props) => (
  <div class="table-scroll" tabindex={0} role="region" aria-label={props.label}>
    <table class={props.class}>{props.children}</table>
  </div>
);

const STATUS_LABELS: Record<CaseStatus, string> = { passed: "Passed", failed: "Failed", errored: "Errored", skipped: "Skipped" };
export const statusLabel = (status: CaseStatus) => STATUS_LABELS[status];

export const StatusBadge: FC<{ status: CaseStatus }> = ({ status }) => (
  <span class={`badge status-${status}`}>{STATUS_LABELS[status]}</span>
);

const HEALTH_LABELS: Record<TestHealth, string> = { healthy: "Healthy", flaky: "Flaky", broken: "Broken" };
export const healthLabel = (health: TestHealth) => HEALTH_LABELS[health];

/**
 * The test's health as a badge: "Failing (3 in a row)" for a healthy test whose latest
 * default-branch executions failed (`failing_streak`, src/lib/vocabulary.ts healthText).
 */
export const HealthBadge: FC<{ health: TestHealth; failingStreak?: number }> = ({ health, failingStreak = 0 }) => {
  const text = healthText(health, failingStreak);
  const failing = text !== health;
  return (
    <span class={`badge health-${failing ? "failing" : health}`}>
      {failing ? text[0]!.toUpperCase() + text.slice(1) : HEALTH_LABELS[health]}
    </span>
  );
};

export const QuarantinedBadge: FC = () => <span class="badge quarantined">Quarantined</span>;

/** Who quarantined a test, as the quarantine object records it (docs/quarantine.md, "Who quarantined it"). */
export type QuarantinedBy = { via: QuarantineVia; id: string | null; name: string | null; email: string | null } | null;

/**
 * "by Ada Lovelace (ada@example.com)", "by the API key Default (through the API)", "by the service
 * (auto-quarantine)"; a quarantine made before who was recorded says so rather than guess.
 */
export function quarantinedByText(by: QuarantinedBy): string {
  if (by === null) return "by someone not recorded (quarantined before the service kept who)";
  switch (by.via) {
    case "page":
      return `by ${by.name ?? "a person"}${by.email ? ` (${by.email})` : ""}`;
    case "api":
      return `by the API key ${by.name ? `“${by.name}”` : "since removed"} (through the API)`;
    case "mcp":
      return `by the API key ${by.name ? `“${by.name}”` : "since removed"} (through the MCP server)`;
    case "auto":
      return "by the service (auto-quarantine)";
  }
}

/** 950 ms, 12.3 s, 4 min 05 s; "—" when unknown. */
export function durationText(ms: number | null | undefined): string {
  if (ms === null || ms === undefined) return "—";
  if (ms < 1000) return `${ms} ms`;
  if (ms < 60_000) return `${(ms / 1000).toFixed(1)} s`;
  const minutes = Math.floor(ms / 60_000);
  const seconds = Math.round((ms % 60_000) / 1000);
  return `${minutes} min ${String(seconds).padStart(2, "0")} s`;
}

export const percent = (rate: number | null) => (rate === null ? "—" : `${(rate * 100).toFixed(rate > 0 && rate < 0.01 ? 1 : 0)} %`);

export const When: FC<{ at: Date | string | null }> = ({ at }) => {
  if (at === null) return <span class="muted">—</span>;
  const date = typeof at === "string" ? new Date(at) : at;
  return <time datetime={date.toISOString()}>{utcText(date)}</time>;
};

/** A URL from an upload (a build link) as a link only when it is http or https; anything else (javascript:, data:) is shown as text. */
function httpUrl(value: string | null): string | null {
  if (!value) return null;
  try {
    const url = new URL(value);
    return url.protocol === "http:" || url.protocol === "https:" ? url.toString() : null;
  } catch {
    return null;
  }
}

export const ExternalLink: FC<{ href: string | null; children?: Child }> = ({ href, children }) => {
  const safe = httpUrl(href);
  if (safe === null) return href ? <span>{href}</span> : <span class="muted">—</span>;
  return (
    <a href={safe} rel="noopener noreferrer nofollow">
      {children ?? href}
    </a>
  );
};

/** The links under a paginated table: the first page (when not on it) and the next one (when there is one). */
export const PageLinks: FC<{ first: string | null; next: string | null; label: string }> = ({ first, next, label }) =>
  first === null && next === null ? null : (
    <nav aria-label={`${label} pages`} class="page-links">
      {first !== null ? <a href={first}>First page</a> : null}
      {next !== null ? <a href={next}>Next page</a> : null}
    </nav>
  );

/** A one-line message after a form post; `role="status"` so assistive technology announces it. */
export const Notice: FC<{ text: string | null; kind?: "done" | "error" }> = ({ text, kind = "done" }) =>
  text === null ? null : (
    <p class={kind === "done" ? "notice-done" : "notice"} role={kind === "done" ? "status" : "alert"}>
      {text}
    </p>
  );

/** A notice chosen by key from the page's own list: the query string never supplies the text. */
export const noticeFor = (messages: Record<string, string>, key: string | undefined) =>
  key !== undefined && Object.hasOwn(messages, key) ? messages[key]! : null;

const valueText = (value: unknown): string => {
  if (value === null || value === undefined) return "—";
  if (typeof value === "string") return value;
  if (typeof value === "number" || typeof value === "boolean") return String(value);
  if (Array.isArray(value) && value.every((item) => typeof item !== "object" || item === null))
    return value.map((item) => valueText(item)).join(", ");
  return JSON.stringify(value);
};

const keyText = (key: string) => key.replaceAll("_", " ");

/** What tripped an alert: its event's metadata, each key with its value as text (objects as JSON). */
export const Metadata: FC<{ metadata: Record<string, unknown> }> = ({ metadata }) => {
  const entries = Object.entries(metadata);
  if (entries.length === 0) return <span class="muted">No details.</span>;
  return (
    <dl class="metadata">
      {entries.map(([key, value]) => (
        <>
          <dt>{keyText(key)}</dt>
          <dd>
            {typeof value === "object" && value !== null && !Array.isArray(value) ? <code>{valueText(value)}</code> : valueText(value)}
          </dd>
        </>
      ))}
    </dl>
  );
};
