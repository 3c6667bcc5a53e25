/** "zod/v4-mini" for the Worker's bundle, unchanged: the alias of "zod" (../index.ts) covers its subpaths too. */
export * from "../../../../node_modules/zod/v4-mini/index.js";
