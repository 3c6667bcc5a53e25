/**
 * The weekly digest as it leaves (docs/notifications.md#the-weekly-digest): the JSON of a project's
 * week (`DigestPayload`, what a signed webhook receives, built by
 * src/services/notifications/digest.ts), and the same told in sentences for Slack, Teams and
 * e-mail (`digestMessage`, rendered by channel-messages.ts and email-messages.ts). Test names come
 * from uploaded output; each format escapes them.
 */
import type { ChannelMessage, Sentence } from "./message-types";

/** A test as the digest names it: enough to say it and link to its page, and its owners for a channel's owner filter. */
export type DigestTest = { id: string; name: string; classname: string | null; url: string; owners: string[] };

/** This week's figure and the week before's. */
type Trend<T> = { this_week: T; previous_week: T };

export type DigestPayload = {
  type: "digest.weekly";
  occurred_at: string;
  project_id: string;
  project: { id: string; name: string; url: string };
  /** The seven UTC days the digest covers: [from, to). */
  week: { from: string; to: string };
  /** The channel's owner filter the lists were cut to (the trend is the whole project's); null: every test. */
  owner_filter: string | null;
  trend: {
    runs: Trend<number>;
    /** Passed runs over processed runs, 0 to 1; null without runs. */
    pass_rate: Trend<number | null>;
    /** Flaky tests at the end of the week. */
    flaky_tests: Trend<number>;
    /** The cost of flakiness (docs/flakiness-cost.md), in ms of test time. */
    time_lost_ms: Trend<number>;
  };
  new_flaky_tests: DigestTest[];
  new_broken_tests: DigestTest[];
  /** Quarantines that end within the seven days after the digest. */
  quarantines_expiring: (DigestTest & { expires_at: string; reason: string | null })[];
  /** The week's most costly tests, with their share of the week's cost. */
  costly_tests: (DigestTest & { cost_ms: number; share: number })[];
};

/** Names listed per section; the rest is counted ("and 3 more"). */
const MAX_NAMED = 5;

const label = (test: DigestTest) => (test.classname ? `${test.classname} › ${test.name}` : test.name);

/** A duration of test time in words: "45 s", "12 min", "3.5 h". */
function durationText(ms: number): string {
  if (ms < 60_000) return `${Math.round(ms / 1000)} s`;
  if (ms < 3_600_000) return `${Math.round(ms / 60_000)} min`;
  return `${(ms / 3_600_000).toFixed(1)} h`;
}

const percent = (rate: number | null) => (rate === null ? "no runs" : `${Math.round(rate * 100)} %`);
const signed = (value: number, unit = "") => `${value > 0 ? "+" : value < 0 ? "−" : "±"}${Math.abs(value)}${unit}`;

/** The trend in one sentence: each figure with its change against the week before. */
function trendSentence(trend: DigestPayload["trend"]): Sentence {
  const { runs, pass_rate: rate, flaky_tests: flaky, time_lost_ms: lost } = trend;
  const rateChange =
    rate.this_week === null || rate.previous_week === null
      ? ""
      : ` (${signed(Math.round((rate.this_week - rate.previous_week) * 100), " pp")})`;
  const lostChange =
    lost.this_week === lost.previous_week
      ? "±0"
      : `${lost.this_week > lost.previous_week ? "+" : "−"}${durationText(Math.abs(lost.this_week - lost.previous_week))}`;
  return [
    `This week: ${runs.this_week} runs (${signed(runs.this_week - runs.previous_week)}), pass rate ${percent(rate.this_week)}${rateChange}, ` +
      `${flaky.this_week} flaky tests (${signed(flaky.this_week - flaky.previous_week)}), ${durationText(lost.this_week)} lost to flakiness (${lostChange}) against the week before.`,
  ];
}

/** "Heading: A, B (detail), … and 2 more." with each test linked to its page. */
function listSentence<T extends DigestTest>(heading: string, tests: T[], detail: (test: T) => string = () => ""): Sentence {
  const sentence: Sentence = [`${heading}: `];
  tests.slice(0, MAX_NAMED).forEach((test, index) => {
    if (index > 0) sentence.push(", ");
    sentence.push({ link: label(test), url: test.url });
    const more = detail(test);
    if (more) sentence.push(` (${more})`);
  });
  const others = tests.length - Math.min(tests.length, MAX_NAMED);
  sentence.push(others > 0 ? ` and ${others} more.` : ".");
  return sentence;
}

/** The digest of one project in sentences, with a button to the project's overview. */
export function digestMessage(body: Record<string, unknown>, footer: string): ChannelMessage {
  const digest = body as unknown as DigestPayload;
  const sentences: Sentence[] = [trendSentence(digest.trend)];
  if (digest.new_flaky_tests.length > 0) sentences.push(listSentence("Turned flaky", digest.new_flaky_tests));
  if (digest.new_broken_tests.length > 0) sentences.push(listSentence("Turned broken", digest.new_broken_tests));
  if (digest.quarantines_expiring.length > 0)
    sentences.push(
      listSentence("Quarantines ending this week", digest.quarantines_expiring, (test) => `ends ${test.expires_at.slice(0, 10)}`),
    );
  if (digest.costly_tests.length > 0)
    sentences.push(
      listSentence("Most costly", digest.costly_tests, (test) => `${durationText(test.cost_ms)}, ${Math.round(test.share * 100)} %`),
    );
  if (sentences.length === 1) sentences.push(["No test turned flaky or broken, and no quarantine ends this week."]);
  if (digest.owner_filter) sentences.push([`Tests owned by ${digest.owner_filter}; the figures are the whole project's.`]);
  return {
    title: `Weekly digest: ${digest.project.name}`.slice(0, 150),
    sentences,
    link: { label: "Open the project", url: digest.project.url },
    context: footer,
  };
}
