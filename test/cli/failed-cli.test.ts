/**
 * `ci-test-analytics failed` (docs/splitting.md, "Re-running only failures"): every format run
 * against the real report of that runner in test/fixtures/junit/ (Vitest has none there: a
 * report written as its JUnit reporter writes one), nothing when nothing failed, and --run reading
 * every page of a stored run's failures from the service.
 */
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { run } from "../../src/cli/main";
import { type Harness, createHarness } from "../support/harness";

const FIXTURES = fileURLToPath(new URL("../fixtures/junit/", import.meta.url));

function sink() {
  let text = "";
  return {
    write: (chunk: string) => ((text += chunk), true),
    get text() {
      return text;
    },
  };
}

async function failed(args: string[], options: { cwd?: string; env?: Record<string, string>; fetch?: typeof fetch } = {}) {
  const stdout = sink();
  const stderr = sink();
  const code = await run(["failed", ...args], {
    env: options.env ?? {},
    cwd: options.cwd ?? FIXTURES,
    stdout,
    stderr,
    fetch: options.fetch,
    baseDelayMs: 0,
  });
  return { code, stdout: stdout.text, stderr: stderr.text };
}

describe("failed, from the reports", () => {
  const cases: [string, string, string][] = [
    [
      "pytest",
      "pytest.xml",
      "tests/test_legacy_api.py\ntests/test_orders.py::TestRefunds::test_refund_after_settlement\n'tests/test_orders.py::test_order_total[0-0.00]'\ntests/test_payments.py::test_webhook_signature\n",
    ],
    // A file that failed to run at all: the failed files run whole.
    [
      "jest",
      "jest-junit.xml",
      "src/cart/__tests__/cart.test.ts\nsrc/legacy/__tests__/payment-form.test.tsx\nsrc/orders/__tests__/OrderHistory.test.tsx\n",
    ],
    [
      "playwright",
      "playwright.xml",
      "checkout.spec.ts\nsearch.spec.ts\n--grep\n'Checkout.*shows validation errors for an empty form|search.*handles network failure'\n",
    ],
    ["go", "gotestsum.xml", "-run\n'^(?:TestPriceCacheExpiry)$'\ngithub.com/acme/shop/internal/cart\n"],
    [
      "rspec",
      "rspec.xml",
      "spec/models/user_spec.rb\nspec/services/orders/checkout_spec.rb\n-e\n'Orders::Checkout#call when the card is declined returns a failure result'\n-e\n'User validations requires an email'\n",
    ],
    ["maven", "maven-surefire.xml", "-Dtest=com.acme.billing.InvoiceServiceTest#loadsInvoiceFromRepository+roundsHalfEven\n"],
    [
      "gradle",
      "gradle.xml",
      "--tests\ncom.acme.inventory.StockLedgerTest.handlesConcurrentReservations\n--tests\ncom.acme.inventory.StockLedgerTest.rejectsOverdraw\n",
    ],
  ];
  for (const [format, report, expected] of cases) {
    it(`${format}: ${report}`, async () => {
      const res = await failed(["--format", format, report]);
      expect(res.code, res.stderr).toBe(0);
      expect(res.stdout).toBe(expected);
    });
  }

  it("jest without a file that failed to run: the files and a pattern of the full names", async () => {
    const dir = mkdtempSync(join(tmpdir(), "cta-failed-"));
    writeFileSync(
      join(dir, "junit.xml"),
      `<testsuites><testsuite name="Cart"><testcase classname="Cart adds (1)" name="Cart adds (1)" file="src/cart.test.ts"><failure>x</failure></testcase><testcase classname="Cart ok" name="Cart ok" file="src/cart.test.ts"/></testsuite></testsuites>`,
    );
    const res = await failed(["--format", "jest", "junit.xml"], { cwd: dir });
    expect(res.stdout).toBe("src/cart.test.ts\n--testNamePattern\n'^(?:Cart adds \\(1\\))$'\n");
  });

  it("vitest: its JUnit reporter's file classname and ' > ' names", async () => {
    const dir = mkdtempSync(join(tmpdir(), "cta-failed-"));
    writeFileSync(
      join(dir, "junit.xml"),
      `<testsuites name="vitest tests"><testsuite name="test/cart.test.ts"><testcase classname="test/cart.test.ts" name="Cart &gt; adds an item" time="0.01"><failure message="expected 1 to be 2"/></testcase><testcase classname="test/cart.test.ts" name="Cart &gt; removes"/></testsuite></testsuites>`,
    );
    const res = await failed(["--format", "vitest", "junit.xml"], { cwd: dir });
    expect(res.stdout).toBe("test/cart.test.ts\n-t\n'^(?:Cart adds an item)$'\n");
  });

  it("nothing failed: empty output and exit 0; no --format: exit 2", async () => {
    const dir = mkdtempSync(join(tmpdir(), "cta-failed-"));
    writeFileSync(join(dir, "junit.xml"), `<testsuite name="s"><testcase classname="a.B" name="ok"/></testsuite>`);
    for (const format of ["pytest", "jest", "vitest", "playwright", "go", "rspec", "maven", "gradle"]) {
      const res = await failed(["--format", format, "junit.xml"], { cwd: dir });
      expect(res).toEqual({ code: 0, stdout: "", stderr: "" });
    }
    expect((await failed(["junit.xml"], { cwd: dir })).code).toBe(2);
  });
});

describe("failed --run, from the service", () => {
  let h: Harness;
  beforeAll(async () => {
    h = await createHarness();
  });
  afterAll(() => h.close());

  it("every page of the run's failures (250 > one page), never cut", async () => {
    const { organization } = await h.newOrganization();
    const { project, uploadToken } = await h.newProject(organization.id);
    const cases = Array.from({ length: 250 }, (_, i) => ({
      name: `t${String(i).padStart(3, "0")}`,
      classname: "com.acme.BigTest",
      status: "failed" as const,
    }));
    const runRow = await h.newRun(project.id, {
      meta: { branch: "main" },
      report: { suites: [{ name: "s", cases: [...cases, { name: "ok", classname: "com.acme.BigTest", status: "passed" as const }] }] },
    });
    const res = await failed(["--format", "gradle", "--run", String(runRow.number)], {
      env: { CTA_URL: "http://cta.test", CTA_UPLOAD_TOKEN: uploadToken },
      fetch: ((url: string | URL, init?: RequestInit) => h.app.request(String(url), init)) as typeof fetch,
    });
    expect(res.code, res.stderr).toBe(0);
    const lines = res.stdout
      .trim()
      .split("\n")
      .filter((l) => l !== "--tests");
    expect(lines).toHaveLength(250);
    expect(lines).toContain("com.acme.BigTest.t249");
  });
});
