import { useTestServer } from "../helpers/server";

const fx = useTestServer();
const { api } = fx;

describe("errors are always {errors: [...]} with the right status", () => {
  it("401 without a key, with a malformed header and with an unknown key", async () => {
    for (const headers of [{} as Record<string, string>, { authorization: "Basic abc" }, { authorization: "Bearer" }, { authorization: "Bearer not-a-key" }]) {
      const res = await fetch(`${fx.t.apiUrl}/stream`, { headers });
      expect(res.status).toBe(401);
      const body = (await res.json()) as { errors: string[] };
      expect(body.errors).toHaveLength(1);
      expect(typeof body.errors[0]).toBe("string");
    }
    // The scheme is case-insensitive, as HTTP says.
    const ok = await fetch(`${fx.t.apiUrl}/stream`, { headers: { authorization: `bearer ${fx.t.key}` } });
    expect(ok.status).toBe(200);
  });

  it("400 for malformed JSON", async () => {
    for (const text of ['{"name":', "{name: 'x'}", "nul"]) {
      const res = await api("POST", "/stream", text);
      expect(res.status).toBe(400);
      expect(res.body.errors[0]).toMatch(/^malformed JSON body/);
    }
  });

  it("413 for a body over 1 MiB", async () => {
    const res = await api("POST", "/stream", { name: "x".repeat(1024 * 1024 + 10) });
    expect(res.status).toBe(413);
    expect(res.body.errors[0]).toMatch(/larger than the limit of 1048576 bytes/);
  });

  it("415 for a body that is not JSON", async () => {
    const res = await api("POST", "/stream", "name=x", { "content-type": "application/x-www-form-urlencoded" });
    expect(res.status).toBe(415);
    expect(res.body.errors[0]).toMatch(/content-type must be application\/json/);
  });

  it("422 for an empty body where one is required", async () => {
    const res = await fetch(`${fx.t.apiUrl}/stream`, { method: "POST", headers: { authorization: `Bearer ${fx.t.key}` } });
    expect(res.status).toBe(422);
    expect(((await res.json()) as { errors: string[] }).errors).toEqual(["name: is required"]);
  });

  it("404 for unknown routes, in and out of the API", async () => {
    for (const path of ["/api/nope", "/api/stream/a/b/c", "/nope", "/play"]) {
      const res = await fetch(`http://127.0.0.1:${fx.t.server.port}${path}`, { headers: { authorization: `Bearer ${fx.t.key}` } });
      expect(res.status).toBe(404);
      expect(((await res.json()) as { errors: string[] }).errors[0]).toMatch(/not found|no such endpoint/);
    }
  });

  it("405 with Allow for a wrong method on a known path", async () => {
    const cases: [string, string, string][] = [
      ["PUT", "/stream", "POST, GET"],
      ["POST", "/stream/abc", "GET, PATCH, DELETE"],
      ["GET", "/stream/abc/record", "PATCH"],
      ["PATCH", "/webhook/abc", "GET, PUT, DELETE"],
      ["DELETE", "/session", "GET"],
    ];
    for (const [method, path, allow] of cases) {
      const res = await api(method, path);
      expect(res.status).toBe(405);
      expect(res.headers.get("allow")).toBe(allow);
      expect(res.body.errors[0]).toContain(`method ${method} is not allowed`);
    }
  });

  it("never answers 500 to odd input", async () => {
    const odd = [
      ["POST", "/stream", { name: "\u0000\u{1F600}'; DROP TABLE streams; --", profiles: [] }],
      ["POST", "/stream", { name: { nested: { deeper: [1, 2, 3] } } }],
      ["GET", "/stream/%2e%2e%2f%2e%2e%2fetc%2fpasswd", undefined],
      ["GET", `/stream?filters=${encodeURIComponent(JSON.stringify([{ id: "name", value: "%' OR 1=1 --" }]))}`, undefined],
      ["GET", "/stream?limit=1e3&limit=5", undefined],
      ["GET", "/stream?cursor[a]=1", undefined],
      ["POST", "/multistream/target", { url: "rtmp://" + "a".repeat(3000) }],
      ["POST", "/webhook", { url: "http://h/x", events: [null] }],
      ["PATCH", "/stream/x", JSON.stringify("just a string")],
    ] as const;
    for (const [method, path, body] of odd) {
      const res = await api(method, path, body);
      expect(res.status).toBeGreaterThanOrEqual(200);
      expect(res.status).toBeLessThan(500);
      if (res.status >= 400) expect(Array.isArray(res.body.errors)).toBe(true);
    }
    const streams = await api("GET", "/stream");
    expect(streams.status).toBe(200);
  });
});

describe("OpenAPI", () => {
  it("serves an OpenAPI 3.1 document covering every endpoint, generated from the schemas", async () => {
    const res = await fetch(`${fx.t.apiUrl}/openapi.json`);
    expect(res.status).toBe(200);
    const doc = (await res.json()) as any;
    expect(doc.openapi).toBe("3.1.0");
    const ops = Object.entries(doc.paths as Record<string, Record<string, unknown>>).flatMap(([p, m]) => Object.keys(m).map((k) => `${k.toUpperCase()} ${p}`));
    expect(ops.sort()).toEqual(
      [
        "POST /stream", "GET /stream", "GET /stream/{id}", "PATCH /stream/{id}", "PATCH /stream/{id}/record", "DELETE /stream/{id}", "DELETE /stream/{id}/terminate",
        "POST /stream/{id}/create-multistream-target", "DELETE /stream/{id}/multistream/{targetId}", "POST /stream/{id}/start-pull",
        "GET /session", "GET /session/{id}", "GET /stream/{parentId}/sessions",
        "POST /multistream/target", "GET /multistream/target", "GET /multistream/target/{id}", "PATCH /multistream/target/{id}", "DELETE /multistream/target/{id}",
        "POST /webhook", "GET /webhook", "GET /webhook/{id}", "PUT /webhook/{id}", "DELETE /webhook/{id}",
        "GET /webhook/{id}/log", "GET /webhook/{id}/log/{logId}", "POST /webhook/{id}/log/{logId}/resend",
        "GET /playback/{id}",
        "POST /access-control/signing-key", "GET /access-control/signing-key", "GET /access-control/signing-key/{id}", "PATCH /access-control/signing-key/{id}", "DELETE /access-control/signing-key/{id}",
        "GET /data/views/now",
        "POST /clip", "GET /asset", "GET /asset/{id}", "DELETE /asset/{id}", "GET /stream/{id}/clips", "GET /session/{id}/clips",
      ].sort(),
    );
    expect(doc.paths["/stream"].post.requestBody.content["application/json"].schema).toEqual({ $ref: "#/components/schemas/NewStreamPayload" });
    expect(doc.components.schemas.NewStreamPayload.required).toEqual(["name"]);
    expect(doc.components.schemas.Profile.properties.bitrate).toMatchObject({ type: "integer", exclusiveMinimum: 0 });
    expect(doc.paths["/stream"].get.parameters.map((p: { name: string }) => p.name)).toEqual(["limit", "cursor", "streamsonly", "filters"]);
    expect(doc.paths["/playback/{id}"].get.security).toEqual([]);
  });

  it("serves a readable reference page", async () => {
    const res = await fetch(`${fx.t.apiUrl}/docs`);
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toMatch(/text\/html/);
    const html = await res.text();
    expect(html).toContain("/api/stream/{id}/record");
    expect(html).toContain("NewStreamPayload");
  });
});

describe("requests the HTTP parser refuses", () => {
  const other = useTestServer();

  it("a URL over 16 KiB gets 431 with the error body", async () => {
    const res = await fetch(`${other.t.apiUrl}/stream?filters=${"x".repeat(20_000)}`, { headers: { authorization: `Bearer ${other.t.key}` } });
    expect(res.status).toBe(431);
    expect(((await res.json()) as { errors: string[] }).errors[0]).toMatch(/too large/);
  });
});
