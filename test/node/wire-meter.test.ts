import { describe, expect, it } from "vitest";
import { WireMeter, emptyCounters } from "../../src/node/local-neon/wire-meter";

/** A typed message: type byte, int32 length (itself included), body. */
function message(type: string, body: Buffer | string = Buffer.alloc(0)): Buffer {
  const data = typeof body === "string" ? Buffer.from(`${body}\0`) : body;
  const header = Buffer.alloc(5);
  header.write(type, 0, "latin1");
  header.writeInt32BE(4 + data.length, 1);
  return Buffer.concat([header, data]);
}
function startup(): Buffer {
  const params = Buffer.from("user\0postgres\0database\0db\0\0");
  const head = Buffer.alloc(8);
  head.writeInt32BE(8 + params.length, 0);
  head.writeInt32BE(196608, 4);
  return Buffer.concat([head, params]);
}
const authentication = (code: number) => message("R", Buffer.from([0, 0, 0, code]));
const ready = message("Z", Buffer.from("I"));
const extended = Buffer.concat([
  message("P", "\0select 1\0\0\0"),
  message("B", Buffer.alloc(10)),
  message("E", Buffer.alloc(5)),
  message("S"),
]);

describe("the bridge's wire meter", () => {
  it("counts one flight for a pipelined connect and first query, one per later exchange, and each Parse/Query as a statement", () => {
    const counters = emptyCounters();
    const meter = new WireMeter(counters, { handshakeRtts: 3 });
    const first = Buffer.concat([startup(), message("p", "secret"), extended]);
    // Split at awkward places: the meter keeps its place across chunks.
    const forwarded = [first.subarray(0, 3), first.subarray(3, 40), first.subarray(40)].flatMap((chunk) => meter.fromClient(chunk));
    // The pipelined password waits for the server's first answer.
    expect(Buffer.concat(forwarded)).toEqual(startup());
    const released = meter.fromServer(Buffer.concat([authentication(0), ready]));
    // AuthenticationOk: the password the server did not ask for is dropped, the query goes on.
    expect(Buffer.concat(released)).toEqual(extended);
    meter.deliveredToClient();
    expect(counters).toMatchObject({ flights: 1, statements: 1 });

    meter.fromClient(message("Q", "begin"));
    meter.fromServer(ready);
    meter.deliveredToClient();
    meter.fromClient(extended);
    meter.fromServer(ready);
    meter.deliveredToClient();
    meter.fromClient(message("X"));
    expect(counters).toEqual({ connections: 1, handshakeRoundTrips: 3, flights: 3, statements: 3 });
  });

  it("counts a session under its application_name too", () => {
    const totals = emptyCounters();
    const named = emptyCounters();
    const meter = new WireMeter(totals, { handshakeRtts: 3, countersOf: (name) => (name === "worker:fetch" ? named : emptyCounters()) });
    const params = Buffer.from("user\0postgres\0application_name\0worker:fetch\0\0");
    const head = Buffer.alloc(8);
    head.writeInt32BE(8 + params.length, 0);
    head.writeInt32BE(196608, 4);
    meter.fromClient(Buffer.concat([head, params, message("Q", "select 1")]));
    expect(named).toEqual({ connections: 1, handshakeRoundTrips: 3, flights: 1, statements: 1 });
    expect(totals).toEqual(named);
  });

  it("forwards a pipelined password when the server asks for one", () => {
    const meter = new WireMeter(emptyCounters(), { handshakeRtts: 3 });
    meter.fromClient(Buffer.concat([startup(), message("p", "secret"), message("Q", "select 1")]));
    expect(Buffer.concat(meter.fromServer(authentication(3)))).toEqual(Buffer.concat([message("p", "secret"), message("Q", "select 1")]));
  });

  it("counts a burst sent before the answer arrived in the same flight", () => {
    const counters = emptyCounters();
    const meter = new WireMeter(counters, { handshakeRtts: 3 });
    meter.fromClient(startup());
    meter.fromServer(Buffer.concat([authentication(0), ready]));
    meter.deliveredToClient();
    meter.fromClient(message("Q", "begin"));
    meter.fromClient(extended);
    meter.fromClient(message("Q", "commit"));
    expect(counters).toMatchObject({ flights: 2, statements: 3 });
  });
});
