/** Where the service writes what it did; one JSON line per entry in production. */
export interface Logger {
  info(message: string, fields?: Record<string, unknown>): void;
  error(message: string, fields?: Record<string, unknown>): void;
}

/** One JSON line per entry; `level` and `message` always win over same-named fields. */
export const consoleLogger: Logger = {
  info: (message, fields) => console.log(JSON.stringify({ ...fields, level: "info", message })),
  error: (message, fields) => console.error(JSON.stringify({ ...fields, level: "error", message })),
};
