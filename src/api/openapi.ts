import { z } from "zod";
import type { Route } from "./route";

// The OpenAPI 3.1 document is built from the route table and its zod schemas: one source
// for validation, responses and documentation.

type JsonSchema = Record<string, unknown>;

const REF_BASE = "#/components/schemas/";
/** An inline schema; schemas it nests that have ids point into components, as the rest do. */
const toJson = (schema: z.ZodType): JsonSchema => {
  const json = JSON.stringify(z.toJSONSchema(schema, { io: "input", unrepresentable: "any" })).replaceAll('"#/$defs/', `"${REF_BASE}`);
  const { $schema: _s, $defs: _d, ...rest } = JSON.parse(json) as JsonSchema;
  return rest;
};

/** A `$ref` for a schema registered with an id, the inline schema otherwise. */
function schemaOrRef(schema: z.ZodType): JsonSchema {
  const id = z.globalRegistry.get(schema)?.id;
  return id ? { $ref: REF_BASE + id } : toJson(schema);
}

/**
 * The order of the document's components. The registry lists schemas in the order modules
 * happen to load them: src/shapes loads before the API's own schemas, and in some processes
 * before the API at all. So the order is fixed here, and the document stays the same byte for
 * byte in every process. Ids not listed follow, in the registry's order.
 */
const COMPONENT_ORDER = [
  "Error",
  "Profile",
  "PlaybackInfo",
  "Session",
  "PlaybackPolicy",
  "MultistreamInput",
  "NewStreamPayload",
  "StreamPatchPayload",
  "RecordPatchPayload",
  "Stream",
  "MultistreamTargetInput",
  "MultistreamTargetPatchPayload",
  "MultistreamTarget",
  "MultistreamTargetCreated",
  "WebhookLog",
  "QueuedResend",
  "WebhookInput",
  "Webhook",
];

const componentRank = (id: string) => {
  const i = COMPONENT_ORDER.indexOf(id);
  return i < 0 ? COMPONENT_ORDER.length : i;
};

function componentSchemas(): Record<string, JsonSchema> {
  const all = z.toJSONSchema(z.globalRegistry, { io: "input", unrepresentable: "any", uri: (id) => REF_BASE + id });
  const out: Record<string, JsonSchema> = {};
  // A stable sort: ids not listed keep the registry's order among themselves.
  const ordered = Object.entries(all.schemas).sort(([a], [b]) => componentRank(a) - componentRank(b));
  for (const [id, schema] of ordered) {
    const { $schema: _s, $id: _i, ...rest } = schema as JsonSchema;
    out[id] = rest;
  }
  return out;
}

const openApiPath = (path: string) => path.replace(/:(\w+)/g, "{$1}");

export function buildOpenApi(routes: Route[], info: { version: string; serverUrl: string }) {
  const paths: Record<string, Record<string, unknown>> = {};
  for (const r of routes) {
    const parameters: unknown[] = [...r.path.matchAll(/:(\w+)/g)].map((m) => ({
      name: m[1],
      in: "path",
      required: true,
      schema: { type: "string" },
    }));
    if (r.query) {
      const q = toJson(r.query) as { properties?: Record<string, JsonSchema>; required?: string[] };
      for (const [name, schema] of Object.entries(q.properties ?? {})) {
        const { description, ...rest } = schema;
        parameters.push({ name, in: "query", required: q.required?.includes(name) ?? false, description, schema: rest });
      }
    }
    const responses: Record<string, unknown> = {};
    for (const [status, spec] of Object.entries(r.responses)) {
      const body = spec.schema && (spec.list ? { type: "array", items: schemaOrRef(spec.schema) } : schemaOrRef(spec.schema));
      responses[status] = {
        description: spec.description,
        ...(spec.list ? { headers: { Link: { description: 'Next page: `<url>; rel="next"`, only when more items exist', schema: { type: "string" } } } } : {}),
        ...(body ? { content: { "application/json": { schema: body } } } : {}),
      };
    }
    if (r.auth !== false) responses["401"] = { description: "Missing or unknown API key", content: { "application/json": { schema: { $ref: REF_BASE + "Error" } } } };
    const path = openApiPath(r.path);
    paths[path] ??= {};
    paths[path]![r.method] = {
      tags: [r.tag],
      summary: r.summary,
      operationId: `${r.method}${r.path.replace(/[/:](\w)/g, (_m, c: string) => c.toUpperCase()).replace(/\W/g, "")}`,
      ...(r.auth === false ? { security: [] } : {}),
      ...(parameters.length ? { parameters } : {}),
      ...(r.body ? { requestBody: { required: true, content: { "application/json": { schema: schemaOrRef(r.body) } } } } : {}),
      responses,
    };
  }
  return {
    openapi: "3.1.0",
    info: {
      title: "onair API",
      version: info.version,
      description: "Live streams, sessions, multistream targets, webhooks and playback. Compatible with the Livepeer Studio API.",
    },
    servers: [{ url: info.serverUrl }],
    security: [{ bearer: [] }],
    paths,
    components: {
      securitySchemes: { bearer: { type: "http", scheme: "bearer", description: "`authorization: Bearer <API key>`" } },
      schemas: componentSchemas(),
    },
  };
}

export type OpenApiDoc = ReturnType<typeof buildOpenApi>;

const escapeHtml = (s: string) =>
  s.replace(/[&<>"']/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" })[c]!);

/** A readable, dependency-free reference page for the document. */
export function renderDocsPage(doc: OpenApiDoc): string {
  const sections: string[] = [];
  for (const [path, ops] of Object.entries(doc.paths)) {
    for (const [method, op] of Object.entries(ops as Record<string, Record<string, unknown>>)) {
      const params = ((op.parameters as { name: string; in: string; required: boolean; description?: string }[]) ?? [])
        .map((p) => `<li><code>${escapeHtml(p.name)}</code> (${p.in}${p.required ? ", required" : ""})${p.description ? " — " + escapeHtml(p.description) : ""}</li>`)
        .join("");
      const body = op.requestBody ? `<p>Body: <code>${escapeHtml(JSON.stringify((op.requestBody as { content: Record<string, { schema: unknown }> }).content["application/json"]!.schema))}</code></p>` : "";
      const responses = Object.entries(op.responses as Record<string, { description: string }>)
        .map(([status, r]) => `<li><b>${status}</b> ${escapeHtml(r.description)}</li>`)
        .join("");
      sections.push(
        `<section><h3><span class="m ${method}">${method.toUpperCase()}</span> <code>/api${escapeHtml(path)}</code></h3>` +
          `<p>${escapeHtml(String(op.summary))}</p>${params ? `<ul>${params}</ul>` : ""}${body}<ul>${responses}</ul></section>`,
      );
    }
  }
  const schemas = Object.entries(doc.components.schemas)
    .map(([id, s]) => `<section id="${escapeHtml(id)}"><h3>${escapeHtml(id)}</h3><pre>${escapeHtml(JSON.stringify(s, null, 2))}</pre></section>`)
    .join("");
  return `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>onair API reference</title>
<style>body{font:15px/1.5 system-ui,sans-serif;max-width:60rem;margin:2rem auto;padding:0 1rem;color:#222}
code,pre{font-family:ui-monospace,monospace}pre{background:#f5f5f5;padding:.75rem;overflow:auto}
section{border-top:1px solid #ddd;padding:.5rem 0}.m{display:inline-block;min-width:4.5rem;font-size:.8em;padding:.1em .4em;border-radius:3px;color:#fff;background:#555}
.get{background:#2a7}.post{background:#27c}.patch{background:#c80}.put{background:#a5c}.delete{background:#c33}</style></head><body>
<h1>onair API reference</h1><p>${escapeHtml(doc.info.description)} Base URL: <code>${escapeHtml(doc.servers[0]!.url)}</code>.
Every request except playback carries <code>authorization: Bearer &lt;API key&gt;</code>. Errors are <code>{"errors": ["…"]}</code>.
Machine-readable: <a href="/api/openapi.json">/api/openapi.json</a>.</p>
<h2>Endpoints</h2>${sections.join("")}<h2>Schemas</h2>${schemas}</body></html>`;
}
