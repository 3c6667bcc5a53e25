import type { Hono } from "hono";
import { ApiError } from "../lib/errors";

/**
 * Hono answers an unregistered method with 404; the contract wants 405 with `Allow`. After all
 * routes are registered, every known path gets a catch-all that reports the methods it has.
 */
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- works on any app's route table.
export function addMethodNotAllowed(app: Hono<any, any, any>): void {
  const methodsByPath = new Map<string, Set<string>>();
  for (const route of app.routes) {
    if (route.method === "ALL") continue;
    const methods = methodsByPath.get(route.path) ?? new Set<string>();
    methods.add(route.method);
    if (route.method === "GET") methods.add("HEAD");
    methodsByPath.set(route.path, methods);
  }
  for (const [path, methods] of methodsByPath) {
    const allow = [...methods].join(", ");
    app.all(path, () => {
      throw new ApiError("method_not_allowed", `This path supports ${allow} only.`, { headers: { Allow: allow } });
    });
  }
}
