/** The top of each OpenAPI document the service serves (/api/v1, /uploads/v1). */
export type DocumentTag = { name: string; description: string };

export function documentConfig(options: { title: string; description: string; serverUrl: string; tags: DocumentTag[] }) {
  return {
    openapi: "3.1.0",
    info: {
      title: options.title,
      version: "1.0.0",
      license: { name: "Proprietary", identifier: "LicenseRef-Proprietary" },
      description: options.description,
    },
    servers: [{ url: options.serverUrl, description: "This server" }],
    tags: options.tags,
  };
}
