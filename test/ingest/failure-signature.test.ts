/**
 * Failure signatures (src/ingest/failure-signature.ts, rules in docs/failure-groups.md): the same
 * cause in two runs must hash alike whatever changed around it (timestamps, temp dirs, edited line
 * numbers, addresses, durations, checkout paths), and different causes must not. Fixtures are
 * written in the shapes the tools produce (Surefire, Gradle, pytest, jest, go test, .NET).
 */
import { createHash } from "node:crypto";
import { describe, expect, it } from "vitest";
import { type FailureSignatureInput, failureSignature, normalizeFailureText } from "../../src/ingest/failure-signature";

function signatureOf(input: FailureSignatureInput): string {
  const result = failureSignature(input);
  if (result === null) throw new Error("expected a signature");
  return result.signature;
}

/** One failure as two runs report it: the second differs only in what the rules mask. */
function expectSameCause(first: FailureSignatureInput, second: FailureSignatureInput) {
  expect(signatureOf(second)).toBe(signatureOf(first));
}

function expectDifferentCause(first: FailureSignatureInput, second: FailureSignatureInput) {
  expect(signatureOf(second)).not.toBe(signatureOf(first));
}

// ---------------------------------------------------------------------------------------------
// Fixtures

/** Surefire, JUnit 4: message attribute without the type, trace with it; JUnit and JDK frames around the test's. */
const junit4Assertion = (line: number, expected = 3, actual = 4, method = "totalsItems"): FailureSignatureInput => ({
  status: "failed",
  failureType: "java.lang.AssertionError",
  failureMessage: `expected:<${expected}> but was:<${actual}>`,
  failureText: `java.lang.AssertionError: expected:<${expected}> but was:<${actual}>
\tat org.junit.Assert.fail(Assert.java:89)
\tat org.junit.Assert.failNotEquals(Assert.java:835)
\tat org.junit.Assert.assertEquals(Assert.java:647)
\tat org.junit.Assert.assertEquals(Assert.java:633)
\tat com.acme.cart.CartTest.${method}(CartTest.java:${line})
\tat java.base/jdk.internal.reflect.NativeMethodAccessorImpl.invoke0(Native Method)
\tat java.base/java.lang.reflect.Method.invoke(Method.java:568)
\tat org.junit.runners.model.FrameworkMethod$1.runReflectiveCall(FrameworkMethod.java:59)
\tat org.apache.maven.surefire.junit4.JUnit4Provider.execute(JUnit4Provider.java:316)
`,
});

/** Surefire without a message attribute: the parser takes the element's text as the message. */
const npe = (frames: string): FailureSignatureInput => {
  const text = `java.lang.NullPointerException\n${frames}\tat sun.reflect.NativeMethodAccessorImpl.invoke0(Native Method)\n\tat org.junit.runners.ParentRunner.run(ParentRunner.java:363)\n`;
  return { status: "errored", failureType: "java.lang.NullPointerException", failureMessage: text, failureText: text };
};

const psqlConstraint = (id: string, at: string, constraint = "events_occurred_at_check"): FailureSignatureInput => {
  const message = `ERROR: new row for relation "events" violates check constraint "${constraint}"\n  Detail: Failing row contains (${id}, ${at}, login, null).`;
  return {
    status: "errored",
    failureType: "org.postgresql.util.PSQLException",
    failureMessage: message,
    failureText: `org.postgresql.util.PSQLException: ${message}
\tat org.postgresql.core.v3.QueryExecutorImpl.receiveErrorResponse(QueryExecutorImpl.java:2725)
\tat org.postgresql.core.v3.QueryExecutorImpl.processResults(QueryExecutorImpl.java:2412)
\tat org.postgresql.jdbc.PgStatement.executeInternal(PgStatement.java:517)
\tat com.acme.events.EventRepository.insert(EventRepository.java:64)
\tat com.acme.events.EventRepositoryTest.storesLoginEvents(EventRepositoryTest.java:40)
`,
  };
};

const psqlRefused = (hostPort: string, logTime: string): FailureSignatureInput => ({
  status: "errored",
  failureType: "org.postgresql.util.PSQLException",
  failureMessage: `Connection to ${hostPort} refused. Check that the hostname and port are correct and that the postmaster is accepting TCP/IP connections.`,
  failureText: `${logTime} WARN  [main] com.zaxxer.hikari.pool.HikariPool - HikariPool-1 - Pool is empty, failed to create/setup connection
org.postgresql.util.PSQLException: Connection to ${hostPort} refused. Check that the hostname and port are correct and that the postmaster is accepting TCP/IP connections.
\tat org.postgresql.core.v3.ConnectionFactoryImpl.openConnectionImpl(ConnectionFactoryImpl.java:352)
\tat org.postgresql.core.ConnectionFactory.openConnection(ConnectionFactory.java:54)
\tat com.zaxxer.hikari.pool.HikariPool.checkFailFast(HikariPool.java:562)
\tat com.acme.billing.InvoiceServiceTest.loadsInvoiceFromRepository(InvoiceServiceTest.java:74)
Caused by: java.net.ConnectException: Connection refused
\tat java.base/sun.nio.ch.Net.pollConnect(Native Method)
`,
});

/** JUnit 5 as Surefire writes it (message without the type) and as Gradle does (with it, frames prefixed `app//`). */
const junit5Boolean = (tool: "maven" | "gradle", expected: boolean, line = 51): FailureSignatureInput => {
  const message = `expected: <${expected}> but was: <${!expected}>`;
  const prefix = tool === "gradle" ? "app//" : "";
  return {
    status: "failed",
    failureType: "org.opentest4j.AssertionFailedError",
    failureMessage: tool === "gradle" ? `org.opentest4j.AssertionFailedError: ${message}` : message,
    failureText: `org.opentest4j.AssertionFailedError: ${message}
\tat ${prefix}org.junit.jupiter.api.AssertionFailureBuilder.build(AssertionFailureBuilder.java:151)
\tat ${prefix}org.junit.jupiter.api.AssertionFailureBuilder.buildAndThrow(AssertionFailureBuilder.java:132)
\tat ${prefix}org.junit.jupiter.api.AssertTrue.failNotTrue(AssertTrue.java:63)
\tat ${prefix}org.junit.jupiter.api.AssertTrue.assertTrue(AssertTrue.java:36)
\tat ${prefix}org.junit.jupiter.api.Assertions.assertTrue(Assertions.java:31)
\tat ${prefix}com.acme.inventory.StockLedgerTest.acceptsReservation(StockLedgerTest.java:${line})
\tat java.base@17.0.11/java.lang.reflect.Method.invoke(Method.java:568)
`,
  };
};

/** pytest's junitxml: message = the assertion, text = the long report with tmp_path and the location line. */
const pytestTmpPath = (tmpRoot: string, left = "3", right = "4", line = 18): FailureSignatureInput => ({
  status: "failed",
  failureMessage: `assert ${left} == ${right}\n +  where ${left} = count_lines(PosixPath('${tmpRoot}/data.txt'))`,
  failureText: `tmp_path = PosixPath('${tmpRoot}')

    def test_count_lines(tmp_path):
        path = tmp_path / "data.txt"
        path.write_text("a\\nb\\nc\\n")
>       assert count_lines(path) == ${right}
E       AssertionError: assert ${left} == ${right}
E        +  where ${left} = count_lines(PosixPath('${tmpRoot}/data.txt'))

tests/test_files.py:${line}: AssertionError`,
});

/** jest-junit writes no message attribute: message and text are the same, stack included. */
const jestToBe = (file: string, position: string, expected: string, received: string, colour = false): FailureSignatureInput => {
  const dim = (s: string) => (colour ? `\u001b[2m${s}\u001b[22m` : s);
  const green = (s: string) => (colour ? `\u001b[32m${s}\u001b[39m` : s);
  const red = (s: string) => (colour ? `\u001b[31m${s}\u001b[39m` : s);
  const text = `Error: ${dim("expect(")}${red("received")}${dim(").")}toBe${dim("(")}${green("expected")}${dim(")")} // Object.is equality

Expected: ${green(expected)}
Received: ${red(received)}
    at Object.<anonymous> (${file}:${position})
    at Promise.then.completed (${file.replace(/src\/.*$/, "")}node_modules/jest-circus/build/utils.js:298:28)
    at new Promise (<anonymous>)
    at callAsyncCircusFn (${file.replace(/src\/.*$/, "")}node_modules/jest-circus/build/utils.js:231:10)
    at processTicksAndRejections (node:internal/process/task_queues:95:5)`;
  return { status: "failed", failureMessage: text, failureText: text };
};

/** gotestsum: message "Failed", the test's output as text. */
const goFailure = (body: string, duration: string, name = "TestParse"): FailureSignatureInput => ({
  status: "failed",
  failureType: "",
  failureMessage: "Failed",
  failureText: `=== RUN   ${name}\n${body}--- FAIL: ${name} (${duration})\n`,
});

const goPanic = (goroutine: number, address: string, line: number): FailureSignatureInput =>
  goFailure(
    `--- FAIL: TestIndex (0.00s)
panic: runtime error: index out of range [5] with length 3 [recovered]
\tpanic: runtime error: index out of range [5] with length 3

goroutine ${goroutine} [running]:
testing.tRunner.func1.2({0x5f1c40, ${address}})
\t/usr/local/go/src/testing/testing.go:1545 +0x238
panic({0x5f1c40?, ${address}?})
\t/usr/local/go/src/runtime/panic.go:914 +0x21f
example.com/shop/cart.(*Cart).Item(...)
\t/home/runner/work/shop/shop/cart/cart.go:${line}
example.com/shop/cart.TestIndex(${address}?)
\t/home/runner/work/shop/shop/cart/cart_test.go:20 +0x1d
testing.tRunner(${address}, 0x62c0a8)
\t/usr/local/go/src/testing/testing.go:1595 +0xff
`,
    "0.00s",
    "TestIndex",
  );

/** JunitXml.TestLogger (xUnit): message with Expected/Actual, stack as text; Windows runners write CRLF and drive paths. */
const dotnetEqual = (path: string, line: number, eol = "\n"): FailureSignatureInput => ({
  status: "failed",
  failureType: "failure",
  failureMessage: ["Assert.Equal() Failure: Values differ", "Expected: 5", "Actual:   4"].join(eol),
  failureText: [
    `   at Acme.Tests.CalculatorTests.Add_ReturnsSum() in ${path}CalculatorTests.cs:line ${line}`,
    "   at System.RuntimeMethodHandle.InvokeMethod(Object target, Void** arguments, Signature sig, Boolean isConstructor)",
    "   at System.Reflection.MethodBaseInvoker.InvokeWithNoArgs(Object obj, BindingFlags invokeAttr)",
  ].join(eol),
});

const dotnetNullReference: FailureSignatureInput = {
  status: "errored",
  failureType: "failure",
  failureMessage: "System.NullReferenceException : Object reference not set to an instance of an object.",
  failureText: `   at Acme.Cart.PriceCache.Lookup(String sku) in /home/runner/work/acme/acme/src/PriceCache.cs:line 57
   at Acme.Tests.CartTests.Total_UsesCachedPrices() in /home/runner/work/acme/acme/tests/CartTests.cs:line 88
   at System.RuntimeMethodHandle.InvokeMethod(Object target, Void** arguments, Signature sig, Boolean isConstructor)`,
};

// ---------------------------------------------------------------------------------------------

describe("normalizeFailureText: one example per rule (the table in docs/failure-groups.md)", () => {
  const examples: [string, string, string][] = [
    ["ISO 8601 timestamps", "at 2024-03-12T10:15:32.123Z and 2024-03-12 10:15:32,123", "at <time> and <time>"],
    ["timestamps with offsets", "row (2024-03-12 10:15:32.123456+00, login)", "row (<time>, login)"],
    ["log timestamps", "12/Mar/2024:10:15:32 +0000 | Mar 12 10:15:32 host | 10:15:32.123 INFO", "<time> | <time> host | <time> INFO"],
    [
      "Date strings",
      "Tue Mar 12 10:15:32 UTC 2024 / Tue Mar 12 2024 10:15:32 GMT+0000 / Tue, 12 Mar 2024 10:15:32 GMT",
      "<time> / <time> / <time>",
    ],
    ["UUIDs", "order 550e8400-e29b-41d4-a716-446655440000 missing", "order <uuid> missing"],
    ["0x addresses", "Foo@0x7ffd5c1e, <Foo object at 0x7f3a2b1c9d60>", "Foo@<hex>, <Foo object at <hex>>"],
    ["Java identity hashes", "com.acme.Cart@1b6d3586 is not com.acme.Cart@7a81197d", "com.acme.Cart@<hex> is not com.acme.Cart@<hex>"],
    ["long hex runs", 'commit 9fceb02d0ae598e95dc970b74767f19372d61af8, etag "5e9f23b4c0"', 'commit <hex>, etag "<hex>"'],
    ["temp paths", "open /tmp/tmpa8b3kx_q/out.json: no such file", "open <tmp>/out.json: no such file"],
    ["macOS temp paths", "/private/var/folders/7x/k2_3n1p9q/T/jest_dy/cache", "<tmp>/cache"],
    ["Windows temp paths", "C:\\Users\\RUNNER~1\\AppData\\Local\\Temp\\tmp5A2F.tmp\\x.json", "<tmp>\\x.json"],
    ["pytest tmp_path", "/tmp/pytest-of-runner/pytest-12/test_count_lines0/data.txt", "<tmp>/data.txt"],
    ["file:line:col", "at Object.<anonymous> (src/foo.test.js:12:5)", "at Object.<anonymous> (src/foo.test.js:<n>)"],
    ["Java file:line", "at com.acme.CartTest.totals(CartTest.java:123)", "at com.acme.CartTest.totals(CartTest.java:<n>)"],
    ["durations", "took 1234ms, then 2.5s, then 1m30.5s (limit 30 seconds)", "took <n>ms, then <n>s, then <n>m<n>s (limit <n> seconds)"],
    ["sizes", "heap at 512MiB of 2GB", "heap at <n>MiB of <n>GB"],
    ["standalone numbers", "expected 3 but was 4; port 5432; 10.25 != -1", "expected <n> but was <n>; port <n>; <n>.<n> != -<n>"],
    ["digits inside identifiers", "utf8 sha256 Test3 v2 x64 test_x0 [param-3]", "utf8 sha256 Test3 v2 x64 test_x0 [param-<n>]"],
    ["terminal colours", "\u001b[31mexpected\u001b[39m \u001b[2m3\u001b[22m", "expected <n>"],
    ["whitespace", "  expected\t\t3 \r\n\r\n   but was 4  \n", "expected <n>\nbut was <n>"],
  ];
  for (const [rule, input, output] of examples) {
    it(rule, () => expect(normalizeFailureText(input)).toBe(output));
  }

  it("does not guess at random-looking words, short hex or paths outside temp directories", () => {
    const text = "token 'a8Kx_q2Lm' for ord_8f2a at short sha 9f8c2e1 in /home/ci/tmp/cache";
    expect(normalizeFailureText(text)).toBe(text);
  });

  it("keeps a time-like location apart from a time: `file.js:10:15` is a line and a column", () => {
    expect(normalizeFailureText("at a (x.js:10:15) at 10:15:32")).toBe("at a (x.js:<n>) at <time>");
  });

  it("is idempotent (normalizing twice changes nothing)", () => {
    for (const fixture of [
      junit4Assertion(42),
      pytestTmpPath("/tmp/pytest-of-runner/pytest-12/test_count_lines0"),
      goPanic(7, "0xc000018150", 31),
      jestToBe("/home/runner/work/app/app/src/foo.test.js", "12:5", "4", "3", true),
    ]) {
      const once = normalizeFailureText(fixture.failureText!);
      expect(normalizeFailureText(once)).toBe(once);
    }
  });

  it("normalizes 4,096 characters of pathological input in well under 50 ms", () => {
    const fill = (unit: string) => unit.repeat(Math.ceil(4096 / unit.length)).slice(0, 4096);
    // Each aims at one rule's repetition: long runs the look-behinds must not rescan, near-misses that fail late.
    const inputs = [
      fill("1"),
      fill("a1"),
      fill("a."),
      fill("1:"),
      fill("a.js:"),
      fill("/tmp/"),
      `/tmp/${fill("a")}`,
      fill("/var/folders/a/"),
      fill("C:\\Users\\a\\"),
      fill("2024-01-01T"),
      fill("Tue Mar 12 2024 "),
      fill("10:15:"),
      fill("aaaaaaaa-"),
      fill("a@abcde"),
      fill("0x"),
      fill("1m"),
      fill("1.5"),
      fill(" \t"),
      fill("\u001b["),
      fill("at x (/a/b.js:1:2)\n"),
    ];
    for (const input of inputs) {
      normalizeFailureText(input);
      const started = performance.now();
      normalizeFailureText(input);
      failureSignature({ status: "failed", failureType: "T", failureMessage: input, failureText: input });
      expect(performance.now() - started).toBeLessThan(50);
    }
  });
});

describe("failureSignature", () => {
  it("is null for passed and skipped cases, whatever they carry", () => {
    expect(failureSignature({ status: "passed" })).toBeNull();
    expect(failureSignature({ ...junit4Assertion(42), status: "passed" })).toBeNull();
    expect(failureSignature({ status: "skipped", failureMessage: "requires STRIPE_API_KEY" })).toBeNull();
  });

  it("gives every failed or errored case a signature, with no message and no text too", () => {
    const bare = failureSignature({ status: "failed" })!;
    expect(bare.signature).toMatch(/^[0-9a-f]{16}$/);
    expect(bare.message).toBe("");
    expect(failureSignature({ status: "errored", failureType: null, failureMessage: "  ", failureText: null })!.signature).toBe(
      bare.signature,
    );
    const typed = failureSignature({ status: "errored", failureType: "java.lang.OutOfMemoryError" })!;
    expect(typed.signature).toMatch(/^[0-9a-f]{16}$/);
    expect(typed.signature).not.toBe(bare.signature);
  });

  it("pins the signature of one fixed input", () => {
    // Changing a normalization or frame rule changes every stored signature it touches: when this
    // literal has to change, stored signatures need recomputing (or the version in the hash input a
    // bump), and the change a note in docs/failure-groups.md.
    expect(failureSignature(junit4Assertion(42))).toEqual({ signature: "d4006bbd1a9ee7c6", message: "expected:<<n>> but was:<<n>>" });
    // What was hashed, spelled out: version, type, normalized message, frames (JUnit and JDK frames skipped, directories dropped).
    const hashed = JSON.stringify([
      "failure-signature/1",
      "java.lang.AssertionError",
      "expected:<<n>> but was:<<n>>",
      ["at com.acme.cart.CartTest.totalsItems(CartTest.java:<n>)"],
    ]);
    expect(createHash("sha256").update(hashed).digest("hex").slice(0, 16)).toBe("d4006bbd1a9ee7c6");
  });

  it("exposes the normalized message's first line, cut to 500 characters", () => {
    expect(failureSignature(psqlConstraint("550e8400-e29b-41d4-a716-446655440000", "2024-03-12 10:15:32.123456+00"))!.message).toBe(
      'ERROR: new row for relation "events" violates check constraint "events_occurred_at_check"',
    );
    const long = failureSignature({ status: "failed", failureMessage: `${"x".repeat(600)}\nsecond line` })!;
    expect(long.message).toBe("x".repeat(500));
    // The cut never splits a surrogate pair (here the 500th code unit starts an emoji).
    const emoji = failureSignature({ status: "failed", failureMessage: `x${"😀".repeat(300)}` })!;
    expect(emoji.message).toBe(`x${"😀".repeat(249)}`);
    expect(emoji.message.isWellFormed()).toBe(true);
  });

  it("leaves out a last line cut by the 4,096-character cap: where the cap falls moves with the masked values before it", () => {
    const capped = (duration: string): FailureSignatureInput => {
      const rows = Array.from({ length: 200 }, (_, i) => `  <li class="row">item ${i}</li>`).join("\n");
      const text = `TestingLibraryElementError: list still loading after ${duration}\n<ul>\n${rows}`.slice(0, 4096);
      return { status: "failed", failureMessage: text, failureText: text };
    };
    const [fast, slow] = [capped("5ms"), capped("12345ms")];
    expect(normalizeFailureText(fast.failureText!).split("\n").at(-1)).not.toBe(normalizeFailureText(slow.failureText!).split("\n").at(-1));
    expectSameCause(fast, slow);
  });

  describe("Java (Surefire, Gradle)", () => {
    it("AssertionError: an edit that moves the assertion, or a JUnit upgrade that moves its frames, keeps the signature", () => {
      const moved = junit4Assertion(45);
      moved.failureText = moved
        .failureText!.replace("Assert.java:89", "Assert.java:87")
        .replace("FrameworkMethod.java:59", "FrameworkMethod.java:61");
      expectSameCause(junit4Assertion(42), moved);
    });

    it("AssertionError: another failing test method is another cause", () => {
      expectDifferentCause(junit4Assertion(42), junit4Assertion(42, 3, 4, "appliesDiscount"));
    });

    it("AssertionError: numbers in expected-vs-actual are masked, so other values at the same frame share a group (the documented trade-off)", () => {
      expectSameCause(junit4Assertion(42, 3, 4), junit4Assertion(42, 5, 6));
    });

    it("NullPointerException without a message: grouped by where it was thrown", () => {
      const cacheFrames =
        "\tat com.acme.cart.PriceCache.lookup(PriceCache.java:57)\n\tat com.acme.cart.Cart.total(Cart.java:31)\n\tat com.acme.cart.CartTest.totalsCachedPrices(CartTest.java:88)\n";
      const result = failureSignature(npe(cacheFrames))!;
      // No message of its own: the group shows the exception's type.
      expect(result.message).toBe("java.lang.NullPointerException");
      expectSameCause(npe(cacheFrames), npe(cacheFrames.replace(":57)", ":59)").replace(":88)", ":90)")));
      expectDifferentCause(
        npe(cacheFrames),
        npe(
          "\tat com.acme.cart.Inventory.reserve(Inventory.java:57)\n\tat com.acme.cart.Cart.total(Cart.java:31)\n\tat com.acme.cart.CartTest.totalsCachedPrices(CartTest.java:88)\n",
        ),
      );
    });

    it("PSQLException: row values (UUIDs, timestamps) are masked; another constraint is another cause", () => {
      const first = psqlConstraint("550e8400-e29b-41d4-a716-446655440000", "2024-03-12 10:15:32.123456+00");
      expectSameCause(first, psqlConstraint("9b2f7c1e-0d4a-4f6b-8e3c-2a1d5b7c9e0f", "2024-03-13 08:01:02.5+00"));
      expectDifferentCause(
        first,
        psqlConstraint("550e8400-e29b-41d4-a716-446655440000", "2024-03-12 10:15:32.123456+00", "events_kind_check"),
      );
    });

    it("PSQLException: host, port and log timestamps are masked", () => {
      const first = psqlRefused("localhost:5432", "2024-03-12 10:15:32,123");
      expect(failureSignature(first)!.message).toBe(
        "Connection to localhost:<n> refused. Check that the hostname and port are correct and that the postmaster is accepting TCP/IP connections.",
      );
      expectSameCause(first, psqlRefused("localhost:55432", "2024-03-14 22:01:09,870"));
      expectDifferentCause(first, psqlRefused("db.internal:5432", "2024-03-12 10:15:32,123"));
    });

    it("JUnit 5 `expected: <true> but was: <false>`: the words are kept", () => {
      const result = failureSignature(junit5Boolean("maven", true))!;
      expect(result.message).toBe("expected: <true> but was: <false>");
      expectDifferentCause(junit5Boolean("maven", true), junit5Boolean("maven", false));
    });

    it("JUnit 5: Gradle (type in the message, `app//` frames) and Surefire report the same failure alike", () => {
      expectSameCause(junit5Boolean("maven", true), junit5Boolean("gradle", true, 53));
      expect(failureSignature(junit5Boolean("gradle", true))!.message).toBe("expected: <true> but was: <false>");
    });

    it("the exception type counts: same message and frames, another type, another cause", () => {
      expectDifferentCause(junit5Boolean("maven", true), { ...junit5Boolean("maven", true), failureType: "java.lang.AssertionError" });
    });
  });

  describe("pytest", () => {
    const linux = "/tmp/pytest-of-runner/pytest-12/test_count_lines0";

    it("tmp_path directories (another session, another user, macOS) and a moved line keep the signature", () => {
      expect(failureSignature(pytestTmpPath(linux))!.message).toBe("assert <n> == <n>");
      expectSameCause(pytestTmpPath(linux), pytestTmpPath("/tmp/pytest-of-runner/pytest-13/test_count_lines0"));
      expectSameCause(
        pytestTmpPath(linux),
        pytestTmpPath("/private/var/folders/7x/k2_3n1p9q/T/pytest-of-alice/pytest-3/test_count_lines0", "3", "4", 21),
      );
    });

    it("compared words are kept: another expected value is another cause", () => {
      expectDifferentCause(pytestTmpPath(linux, "'red'", "'blue'"), pytestTmpPath(linux, "'red'", "'green'"));
    });

    it("frames of pytest and of the standard library are skipped in native tracebacks", () => {
      const traceback = (home: string, line: number): FailureSignatureInput => ({
        status: "errored",
        failureMessage: "ValueError: invalid signature header: missing 't=' component",
        failureText: `Traceback (most recent call last):
  File "${home}/lib/python3.12/site-packages/_pytest/python.py", line 194, in pytest_pyfunc_call
    result = testfunction(**testargs)
  File "/home/runner/work/shop/shop/tests/test_payments.py", line 47, in test_webhook_signature
    event = verify_webhook(payload, header=header)
  File "/home/runner/work/shop/shop/shop/payments/webhooks.py", line ${line}, in verify_webhook
    raise ValueError("invalid signature header: missing 't=' component")
ValueError: invalid signature header: missing 't=' component`,
      });
      expectSameCause(traceback("/opt/hostedtoolcache/Python/3.12.3/x64", 22), traceback("/home/ci/.venv", 25));
    });
  });

  describe("jest", () => {
    it("colours, checkout directory and a moved line keep the signature; framework frames are skipped", () => {
      const first = jestToBe("src/foo.test.js", "12:5", "4", "3");
      expect(failureSignature(first)!.message).toBe("Error: expect(received).toBe(expected) // Object.is equality");
      expectSameCause(first, jestToBe("/home/runner/work/app/app/src/foo.test.js", "14:7", "4", "3", true));
    });

    it("another test file, or other expected strings, is another cause", () => {
      expectDifferentCause(jestToBe("src/foo.test.js", "12:5", "4", "3"), jestToBe("src/bar.test.js", "12:5", "4", "3"));
      expectDifferentCause(
        jestToBe("src/foo.test.js", "12:5", '"open"', '"closed"'),
        jestToBe("src/foo.test.js", "12:5", '"open"', '"pending"'),
      );
    });
  });

  describe("Go", () => {
    it("`foo_test.go:42: got 1, want 2`: line, values and duration are masked", () => {
      const first = goFailure("    foo_test.go:42: got 1, want 2\n", "0.00s");
      expect(failureSignature(first)!.message).toBe("Failed");
      expectSameCause(first, goFailure("    foo_test.go:44: got 7, want 8\n", "0.01s"));
    });

    it("another check's words, or another test file, is another cause", () => {
      const first = goFailure("    foo_test.go:42: got 1, want 2\n", "0.00s");
      expectDifferentCause(
        first,
        goFailure("    foo_test.go:42: unexpected error: open config.yaml: no such file or directory\n", "0.00s"),
      );
      expectDifferentCause(first, goFailure("    bar_test.go:42: got 1, want 2\n", "0.00s"));
    });

    it("a parent test's bare `--- FAIL` output is told apart by its first lines (no frame to go by)", () => {
      expectSameCause(goFailure("", "0.01s", "TestCartTotal"), goFailure("", "1.20s", "TestCartTotal"));
      expectDifferentCause(goFailure("", "0.01s", "TestCartTotal"), goFailure("", "0.01s", "TestCheckout"));
    });

    it("panics: goroutine numbers and addresses are masked, testing and runtime frames skipped", () => {
      expectSameCause(goPanic(7, "0xc000018150", 31), goPanic(19, "0xc0000a6820", 33));
    });
  });

  describe(".NET", () => {
    it("CRLF, Windows checkout paths and a moved line keep the signature", () => {
      const first = dotnetEqual("/home/runner/work/acme/acme/tests/", 27);
      expect(failureSignature(first)!.message).toBe("Assert.Equal() Failure: Values differ");
      expectSameCause(first, dotnetEqual("D:\\a\\acme\\acme\\tests\\", 29, "\r\n"));
    });

    it("NullReferenceException (NUnit's `Type : message`) is another cause", () => {
      expect(failureSignature({ ...dotnetNullReference, failureType: "System.NullReferenceException" })!.message).toBe(
        "Object reference not set to an instance of an object.",
      );
      expectDifferentCause(dotnetEqual("/home/runner/work/acme/acme/tests/", 27), dotnetNullReference);
    });
  });
});
