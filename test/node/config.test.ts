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

  it.each(["api.example.com", "ftp://api.example.com", "https://user:pw@api.example.com", "https://api.example.com/?x=1", "https://api.example.com/#top"])(
    "refuse %j at start",
    (value) => {
      expect(() => readNodeConfig({ PUBLIC_BASE_URL: value })).toThrow(/PUBLIC_BASE_URL/);
      expect(() => readNodeConfig({ WEB_APP_URL: value })).toThrow(/WEB_APP_URL/);
    },
  );
});
