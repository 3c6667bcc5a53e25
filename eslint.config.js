/**
 * `npm run lint` (first half; dependency-cruiser checks the layers and import cycles after it):
 * ESLint's and typescript-eslint's recommended rules, plus the two restrictions that keep the
 * layers as the README's Layout describes them: Hono only in the routes, the middleware, the app
 * and the runtime entries; `process.env` only in the entries.
 */
import js from "@eslint/js";
import tseslint from "typescript-eslint";

const ENTRIES_AND_HTTP = [
  "src/app.ts",
  "src/routes/**",
  "src/mcp/route.ts",
  "src/middleware/**",
  "src/web/**",
  "src/node/**",
  "src/worker/**",
];

export default tseslint.config(
  {
    ignores: [
      "node_modules/**",
      "dist/**",
      ".wrangler/**",
      ".data/**",
      "packages/uploader/bin/**",
      "packages/client/dist/**",
      "packages/client/src/schema.ts",
      "drizzle/**",
      "test/fixtures/**",
      "public/assets/vendor/**",
    ],
  },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    rules: {
      // `_`-prefixed names are deliberately unused (destructuring that drops a field, callbacks' positions).
      "@typescript-eslint/no-unused-vars": ["error", { argsIgnorePattern: "^_", varsIgnorePattern: "^_", caughtErrors: "none" }],
      // Control characters in patterns are how the validators refuse them.
      "no-control-regex": "off",
    },
  },
  {
    files: ["src/**/*.ts", "src/**/*.tsx"],
    ignores: ENTRIES_AND_HTTP,
    rules: {
      "no-restricted-imports": [
        "error",
        {
          patterns: [
            {
              group: ["hono", "hono/*", "@hono/node-server"],
              message:
                "Hono belongs to the routes, the middleware, the app and the runtime entries; services and the layers below take plain inputs.",
            },
            {
              group: ["@hono/zod-openapi"],
              allowImportNames: ["z"],
              message: "Below the routes only the Zod instance (z) of @hono/zod-openapi may be used, to describe schemas.",
            },
          ],
        },
      ],
    },
  },
  {
    files: ["src/**/*.ts", "src/**/*.tsx"],
    ignores: ["src/node/**", "src/cli/main.ts"],
    rules: {
      "no-restricted-properties": [
        "error",
        { object: "process", property: "env", message: "Only the runtime entries read the environment; pass configuration in." },
      ],
    },
  },
  {
    // A function that grows past 100 lines is split into pieces with names that say what they do
    // (JSX pages too: their sections are components). Not for generated code, whose generator
    // decides its shape (npm run build:cli writes the uploader's package module).
    files: ["src/**/*.ts", "src/**/*.tsx"],
    ignores: ["src/**/*.generated.ts"],
    rules: {
      "max-lines-per-function": ["error", { max: 100, skipBlankLines: true, skipComments: true }],
    },
  },
  {
    // Scripts the pages load, run by the browser.
    files: ["public/**/*.js"],
    languageOptions: { sourceType: "script", globals: { window: "readonly", document: "readonly" } },
  },
  {
    files: ["**/*.cjs"],
    languageOptions: { sourceType: "commonjs", globals: { module: "writable", require: "readonly" } },
  },
  {
    files: ["test/**/*.ts", "bench/**/*.ts", "scripts/**/*.ts"],
    rules: {
      // Tests read JSON bodies whose shape each assertion checks.
      "@typescript-eslint/no-explicit-any": "off",
    },
  },
);
