/** Reads the process environment once, for the Node entry; the app itself never sees process.env. */
export type NodeConfig = {
  port: number;
  host?: string;
  databaseUrl?: string;
  adminToken?: string;
  cursorSecret?: string;
  webAppUrl: string;
  seedDemo: boolean;
};

export function readNodeConfig(env: NodeJS.ProcessEnv = process.env): NodeConfig {
  const port = Number(env.PORT ?? 8787);
  if (!Number.isInteger(port) || port < 0 || port > 65535) throw new Error(`PORT must be a port number, got ${env.PORT}.`);
  if (env.CURSOR_SECRET !== undefined && env.CURSOR_SECRET.length < 16) throw new Error("CURSOR_SECRET must be at least 16 characters long.");
  return {
    port,
    host: env.HOST || undefined,
    databaseUrl: env.DATABASE_URL || undefined,
    adminToken: env.ADMIN_TOKEN || undefined,
    cursorSecret: env.CURSOR_SECRET || undefined,
    webAppUrl: env.WEB_APP_URL || "http://localhost:3000",
    seedDemo: env.SEED_DEMO !== "false",
  };
}
