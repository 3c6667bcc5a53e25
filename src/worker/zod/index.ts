/** "zod" for the Worker's bundle: zod's index (zod/index.js) over ./classic-without-locales.ts. */
import * as z from "./classic-without-locales";
export * from "./classic-without-locales";
export { z, z as default };
