import { lookup } from "node:dns/promises";

/**
 * Every address a host name resolves to: the one lookup of an outbound connection, whose
 * addresses are judged and then dialled (src/node/outbound-fetch.ts).
 */
export async function resolveHost(host: string): Promise<string[]> {
  return (await lookup(host, { all: true, verbatim: true })).map((entry) => entry.address);
}
