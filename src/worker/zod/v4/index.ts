/** "zod/v4" for the Worker's bundle: zod's v4 entry (zod/v4/index.js) over ../classic-without-locales.ts. */
import * as z4 from "../classic-without-locales";
export * from "../index";
export { z4 as default };
