/** `POST /sign-out`: ends the session on the server (better-auth deletes its row), clears the cookie, opens `/sign-in`. */
import type { Hono } from "hono";
import { AuthRefused, signOut } from "../auth/people";
import type { WebConfig, WebEnv, WebPaths } from "./env";
import { peopleDeps, withCookies } from "./session";

export function registerSignOut(web: Hono<WebEnv>, config: WebConfig, paths: WebPaths): void {
  web.post("/sign-out", async (c) => {
    if (!c.req.header("cookie")) return c.redirect(paths.to("/sign-in"), 303);
    try {
      const { cookies } = await signOut(peopleDeps(c, config), c.req.raw.headers);
      return withCookies(c.redirect(paths.to("/sign-in"), 303), cookies);
    } catch (error) {
      // No session to end (expired, ended elsewhere): the person is signed out all the same.
      if (error instanceof AuthRefused && error.status !== 403) return c.redirect(paths.to("/sign-in"), 303);
      throw error;
    }
  });
}
