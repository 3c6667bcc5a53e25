/** "zod/v3" for the Worker's bundle, unchanged: the alias of "zod" (../index.ts) covers its subpaths too. */
export * from "../../../../node_modules/zod/v3/index.js";
export { default } from "../../../../node_modules/zod/v3/index.js";
