import { setReadOnly } from "../helpers/database";
import { useTestServer } from "../helpers/server";

// The operator's routes (/metrics, /readyz) are not for tenants: on a listener of their own
// (loopback by default), or on the public port with METRICS_TOKEN; readiness is reused briefly,
// so polling it cannot multiply its work.

const TOKEN = "a-long-enough-metrics-token";
const fx = useTestServer({ METRICS_TOKEN: TOKEN });
const pub = () => `http://127.0.0.1:${fx.t.server.port}`;

describe("the operator's surface", () => {
  it("the admin listener is on loopback and serves /metrics, /readyz and /healthz", async () => {
    expect(fx.t.server.adminUrl).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    expect(fx.t.server.adminPort).not.toBe(fx.t.server.port);
    for (const p of ["/metrics", "/readyz", "/healthz"]) expect((await fetch(`${fx.t.server.adminUrl}${p}`)).status).toBe(200);
  });

  it("on the public port, only with the token as a bearer", async () => {
    const withToken = await fetch(`${pub()}/metrics`, { headers: { authorization: `Bearer ${TOKEN}` } });
    expect(withToken.status).toBe(200);
    expect(await withToken.text()).toContain("onair_live_sessions");
    expect((await fetch(`${pub()}/readyz`, { headers: { authorization: `Bearer ${TOKEN}` } })).status).toBe(200);
    for (const authorization of [`Bearer ${TOKEN}x`, TOKEN, "Bearer", ""]) {
      expect((await fetch(`${pub()}/metrics`, { headers: { authorization } })).status).toBe(404);
    }
    expect((await fetch(`${pub()}/healthz`)).status).toBe(200);
  });

  it("readiness is reused for a moment, then follows the database", async () => {
    const readyz = async () => (await fetch(`${fx.t.server.adminUrl}/readyz`)).status;
    expect(await readyz()).toBe(200);
    const { store } = fx.t.server;
    await setReadOnly(store, true);
    try {
      // Just answered: the same answer, without taking the write lock again.
      expect(await readyz()).toBe(200);
      const deadline = Date.now() + 5000;
      while ((await readyz()) !== 503) {
        if (Date.now() > deadline) throw new Error("readiness never saw the read-only database");
        await new Promise((r) => setTimeout(r, 100));
      }
    } finally {
      await setReadOnly(store, false);
    }
  });
});
