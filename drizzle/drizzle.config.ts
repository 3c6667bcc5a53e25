import { defineConfig } from "drizzle-kit";

// `generate` needs no database; `migrate` applies drizzle/ to DATABASE_URL (e.g. a Neon database before deploying).
export default defineConfig({
  dialect: "postgresql",
  schema: "./src/db/schema.ts",
  out: "./drizzle",
  strict: true,
  ...(process.env.DATABASE_URL ? { dbCredentials: { url: process.env.DATABASE_URL } } : {}),
});
