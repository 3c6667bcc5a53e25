/**
 * The environment of `wrangler dev` running both Workers (the edge Worker of wrangler.edge.toml in
 * front of the placed Worker of wrangler.toml; docs/edge-path.md). Its multi-worker mode passes
 * `--var` to the first (primary) Worker only, so the placed Worker's bindings travel in the
 * environment instead: with CLOUDFLARE_INCLUDE_PROCESS_ENV, wrangler makes each variable of its
 * environment a binding of every Worker when no .dev.vars file exists. So the environment holds
 * the bindings and only what wrangler, Node and workerd themselves read besides them.
 */
const WRANGLER_OWN =
  /^(PATH|HOME|TMPDIR|LANG|LC_[A-Z]+|TERM|NODE_OPTIONS|XDG_[A-Z_]+|FORCE_COLOR|NO_COLOR|WRANGLER_[A-Z_]+|CLOUDFLARE_[A-Z_]+|MINIFLARE_[A-Z_]+|X_LOCAL_[A-Z_]+|HTTPS?_PROXY|NO_PROXY)$/i;

export function workerVarsEnvironment(vars: Record<string, string>, base: NodeJS.ProcessEnv = process.env): Record<string, string> {
  const kept: Record<string, string> = {};
  for (const [name, value] of Object.entries(base)) if (value !== undefined && WRANGLER_OWN.test(name)) kept[name] = value;
  return { ...kept, ...vars, CLOUDFLARE_INCLUDE_PROCESS_ENV: "true" };
}
