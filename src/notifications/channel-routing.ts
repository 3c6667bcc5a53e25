/**
 * Which channel hears what (docs/notifications.md#events-and-owners): the events it chose, and its
 * owner filter matched against the owners CODEOWNERS gives a test (docs/codeowners.md), without
 * case. Slack and Teams channels hear a test's health change only when it turns flaky or broken;
 * a signed webhook hears every change (its receiver decides).
 */
import type { ChannelEvent, ChannelKind, TestEventType } from "../lib/vocabulary";

type ChannelRoute = { kind: ChannelKind; events: readonly ChannelEvent[]; ownerFilter: string | null };

/** Whether `owners` (a test's, or an alert event's `owners`) include the filter; no filter: always. */
export function ownerMatches(filter: string | null, owners: unknown): boolean {
  if (filter === null) return true;
  if (!Array.isArray(owners)) return false;
  const wanted = filter.toLowerCase();
  return owners.some((owner) => typeof owner === "string" && owner.toLowerCase() === wanted);
}

/** Whether the channel hears a test's event, given the test as the event presents it. */
export function hearsTestEvent(channel: ChannelRoute, type: TestEventType, test: { health: string; owners: unknown }): boolean {
  const category = type === "test.health_changed" ? "health" : "quarantine";
  if (!channel.events.includes(category)) return false;
  if (category === "health" && channel.kind !== "webhook" && test.health !== "flaky" && test.health !== "broken") return false;
  return ownerMatches(channel.ownerFilter, test.owners);
}
