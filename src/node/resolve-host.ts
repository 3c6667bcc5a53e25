import { lookup } from "node:dns/promises";

/** Every address a host name resolves to, so webhook deliveries can refuse private destinations. */
export async function resolveHost(host: string): Promise<string[]> {
  return (await lookup(host, { all: true, verbatim: true })).map((entry) => entry.address);
}
