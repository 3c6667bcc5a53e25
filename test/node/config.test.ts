import { describe, expect, it } from "vitest";
import { publicUrls, readNodeConfig } from "../../src/node/config";

describe("PUBLIC_BASE_URL and WEB_APP_URL", () => {
  it("default to the listening origin, and the web app's to the public base", () => {
    const config = readNodeConfig({ PORT: "0" });
    expect(publicUrls(config, 41234)).toEqual({ publicBaseUrl: "http://localhost:41234", webAppUrl: "http://localhost:41234" });
  });

  it("are taken as configured, without a trailing slash, a path prefix kept", () => {
    const config = readNodeConfig({ PUBLIC_BASE_URL: "https://api.example.com/ci/", WEB_APP_URL: "https://app.example.com/" });
    expect(publicUrls(config, 8787)).toEqual({ publicBaseUrl: "https://api.example.com/ci", webAppUrl: "https://app.example.com" });
  });

  it.each([
    "api.example.com",
    "ftp://api.example.com",
    "https://user:pw@api.example.com",
    "https://api.example.com/?x=1",
    "https://api.example.com/#top",
  ])("refuse %j at start", (value) => {
    expect(() => readNodeConfig({ PUBLIC_BASE_URL: value })).toThrow(/PUBLIC_BASE_URL/);
    expect(() => readNodeConfig({ WEB_APP_URL: value })).toThrow(/WEB_APP_URL/);
  });
});

describe("the outbound policy (docs/outbound-policy.md)", () => {
  it("allows no host by default, loopback included, with the default caps", () => {
    expect(readNodeConfig({}).outbound).toEqual({ allowHosts: [], webhooksPerOrganization: 10, deliveriesPerMinute: 600 });
  });

  it("takes OUTBOUND_ALLOW_HOSTS and the caps from the environment, and refuses malformed ones at start", () => {
    const config = readNodeConfig({
      OUTBOUND_ALLOW_HOSTS: "127.0.0.1, localhost:8080",
      WEBHOOKS_PER_ORGANIZATION: "3",
      WEBHOOK_DELIVERIES_PER_MINUTE: "120",
    });
    expect(config.outbound).toEqual({ allowHosts: ["127.0.0.1", "localhost:8080"], webhooksPerOrganization: 3, deliveriesPerMinute: 120 });
    expect(() => readNodeConfig({ OUTBOUND_ALLOW_HOSTS: "https://localhost" })).toThrow(/OUTBOUND_ALLOW_HOSTS/);
    expect(() => readNodeConfig({ WEBHOOKS_PER_ORGANIZATION: "-1" })).toThrow(/WEBHOOKS_PER_ORGANIZATION/);
  });
});

describe("the quotas per organization (docs/quotas.md)", () => {
  it("are read from QUOTA_*, QUOTA_STORED_CASES included; a malformed one fails the start, naming it", () => {
    expect(readNodeConfig({}).quotas).toEqual({ projects: 1_000, uploadsPerHour: 10_000, concurrentExports: 2, storedCases: 50_000_000 });
    expect(readNodeConfig({ QUOTA_STORED_CASES: "250000", QUOTA_PROJECTS: "unlimited" }).quotas).toMatchObject({
      storedCases: 250_000,
      projects: null,
    });
    expect(() => readNodeConfig({ QUOTA_STORED_CASES: "-5" })).toThrow(/QUOTA_STORED_CASES/);
  });
});

describe("TRUSTED_PROXIES (docs/web-app.md#the-client-address)", () => {
  it("none by default; addresses and CIDR ranges of both families; a malformed entry fails the start naming the variable", () => {
    expect(readNodeConfig({}).trustedProxies).toEqual([]);
    expect(readNodeConfig({ TRUSTED_PROXIES: "10.0.0.0/8, ::1" }).trustedProxies.map((range) => [range.version, range.prefix])).toEqual([
      [4, 8],
      [6, 128],
    ]);
    expect(() => readNodeConfig({ TRUSTED_PROXIES: "10.0.0.0/8,proxy.internal" })).toThrow(
      /^TRUSTED_PROXIES must list IP addresses or CIDR ranges.*'proxy\.internal' is not one\.$/,
    );
  });
});

describe("SCALE_OUT (docs/scale-out.md)", () => {
  const shared = {
    DATABASE_URL: "postgres://postgres@127.0.0.1:5432/shared",
    SECRETS_KEY: "scale-out-secrets-key-0123456789abcdef",
    CURSOR_SECRET: "scale-out-cursor-secret-0123",
  };

  it("is off by default, and on with a Postgres server and both shared secrets", () => {
    expect(readNodeConfig({}).scaleOut).toBe(false);
    expect(readNodeConfig({ ...shared, SCALE_OUT: "false" }).scaleOut).toBe(false);
    expect(readNodeConfig({ ...shared, SCALE_OUT: "true" }).scaleOut).toBe(true);
  });

  it("refuses an embedded PGlite database, which is one process's", () => {
    expect(() => readNodeConfig({ ...shared, SCALE_OUT: "true", DATABASE_URL: "" })).toThrow(/SCALE_OUT=true needs DATABASE_URL=postgres/);
    expect(() => readNodeConfig({ ...shared, SCALE_OUT: "true", DATABASE_URL: "memory://" })).toThrow(/DATABASE_URL=postgres/);
  });

  it("refuses to start without SECRETS_KEY or CURSOR_SECRET in the environment, naming what is missing", () => {
    expect(() => readNodeConfig({ ...shared, SCALE_OUT: "true", SECRETS_KEY: undefined })).toThrow(/needs SECRETS_KEY set/);
    expect(() => readNodeConfig({ ...shared, SCALE_OUT: "true", CURSOR_SECRET: undefined })).toThrow(/needs CURSOR_SECRET set/);
    expect(() => readNodeConfig({ DATABASE_URL: shared.DATABASE_URL, SCALE_OUT: "true" })).toThrow(
      /needs SECRETS_KEY and CURSOR_SECRET set/,
    );
  });

  it("refuses a value other than true or false", () => {
    expect(() => readNodeConfig({ ...shared, SCALE_OUT: "yes" })).toThrow(/SCALE_OUT must be true or false/);
  });
});
