/** The one locale the Worker's zod keeps (./classic-without-locales.ts). */
export { default as en } from "../../../node_modules/zod/v4/locales/en.js";
