/** "zod/v4/core" for the Worker's bundle: ../../core-without-locales.ts. */
export * from "../../core-without-locales";
