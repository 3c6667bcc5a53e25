/**
 * Outbound requests on Node, held to the outbound policy (src/notifications/outbound-policy.ts)
 * down to the socket. Each new connection resolves its host once, is refused unless every address
 * is allowed, and dials one of those very addresses: nothing looks the name up a second time, so
 * an answer that changes between a check and the connection (DNS rebinding) cannot move a request
 * into the network. Only the dialled address is pinned: the Host header, the TLS server name
 * (SNI) and the certificate check still use the host name of the URL.
 *
 * undici is a direct dependency for this (the same library as Node's global fetch): its Agent
 * takes our connector, which the global fetch would take only from the undici build Node bundles
 * (Node 20 and 22 bundle other majors than the package), so both the fetch and the Agent come from
 * the package.
 */
import { isIP } from "node:net";
import { Agent, buildConnector, fetch as undiciFetch } from "undici";
import { type OutboundPolicy, OutboundRefusedError, connectionProblem, guardedFetch } from "../notifications/outbound-policy";
import { resolveHost } from "./resolve-host";

/** Every address a host name resolves to (src/node/resolve-host.ts; tests give their own). */
export type Resolver = (host: string) => Promise<string[]>;

/** Addresses tried per connection, in the resolver's order (IPv6 first may be unreachable here). */
const MAX_ADDRESSES_TRIED = 4;
/** Per address tried; a delivery's own timeout (10 s) bounds the whole request. */
const CONNECT_TIMEOUT_MS = 5_000;

/** The addresses a connection may dial, judged once; an OutboundRefusedError when the policy refuses them. */
async function checkedAddresses(policy: OutboundPolicy, resolve: Resolver, target: { hostname: string; port: number }): Promise<string[]> {
  const addresses = isIP(target.hostname) ? [target.hostname] : await resolve(target.hostname).catch(() => []);
  const problem = connectionProblem(policy, { host: target.hostname, port: target.port, addresses });
  if (problem) throw new OutboundRefusedError(problem);
  return addresses.slice(0, MAX_ADDRESSES_TRIED);
}

/** undici's connector, given the checked address to dial instead of the name (which it would resolve itself). */
function checkedConnector(policy: OutboundPolicy, resolve: Resolver = resolveHost): buildConnector.connector {
  const dial = buildConnector({ timeout: CONNECT_TIMEOUT_MS });
  return (options, callback) => {
    const port = Number(options.port) || (options.protocol === "https:" ? 443 : 80);
    checkedAddresses(policy, resolve, { hostname: options.hostname, port }).then(
      (addresses) => dialInTurn(dial, options, addresses, callback),
      (error: Error) => callback(error, null),
    );
  };
}

/** Dials the checked addresses one after the other until one answers. */
function dialInTurn(
  dial: buildConnector.connector,
  options: buildConnector.Options,
  addresses: string[],
  callback: buildConnector.Callback,
  index = 0,
): void {
  // `host` keeps the name (with its port): undici derives the TLS server name from it, never from the address.
  dial({ ...options, hostname: addresses[index]!, host: options.host ?? options.hostname }, (...result) => {
    if (result[0] && index + 1 < addresses.length) return dialInTurn(dial, options, addresses, callback, index + 1);
    callback(...result);
  });
}

/**
 * The fetch of outbound requests on Node: the policy's URL rules (guardedFetch: https, no
 * credentials, no redirects followed), then the checked connection. One Agent per fetch, so
 * pooled connections are reused only by requests held to the same policy.
 */
export function nodeOutboundFetch(policy: OutboundPolicy, options: { resolve?: Resolver } = {}): typeof fetch {
  const dispatcher = new Agent({ connect: checkedConnector(policy, options.resolve) });
  // undici's fetch takes the same arguments as the global one; only its declared types differ.
  const viaCheckedConnections = ((input: Parameters<typeof fetch>[0], init?: RequestInit) =>
    undiciFetch(input as Parameters<typeof undiciFetch>[0], {
      ...(init as Parameters<typeof undiciFetch>[1]),
      dispatcher,
    })) as unknown as typeof fetch;
  return guardedFetch(policy, viaCheckedConnections);
}
