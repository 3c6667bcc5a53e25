import { describe, expect, it } from "vitest";
import { signUpModeFrom } from "../../src/lib/sign-up-mode";
import { readNodeConfig } from "../../src/node/config";

describe("SIGN_UP", () => {
  it("unset or empty is open; the three modes are read whatever their case and spaces", () => {
    expect(signUpModeFrom(undefined)).toBe("open");
    expect(signUpModeFrom("  ")).toBe("open");
    expect(signUpModeFrom(" Invite-Only ")).toBe("invite-only");
    expect(signUpModeFrom("off")).toBe("off");
    expect(signUpModeFrom("open")).toBe("open");
  });

  it("anything else stops the start, naming the variable and the modes", () => {
    expect(() => signUpModeFrom("closed")).toThrow("SIGN_UP must be one of open, invite-only, off; it is 'closed'.");
    expect(() => readNodeConfig({ SIGN_UP: "invite" })).toThrow(/SIGN_UP must be one of/);
    expect(readNodeConfig({ SIGN_UP: "invite-only" }).signUp).toBe("invite-only");
    expect(readNodeConfig({}).signUp).toBe("open");
  });
});
