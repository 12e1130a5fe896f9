import { useTestServer } from "../helpers/server";

// Profile names name renditions in the master playlist: a closed alphabet, so no user text can
// break a line or a quoted attribute there (issue 14; finalize: test/recordings/finalizeFiles).
const { api } = useTestServer();

describe("profile names", () => {
  const P = { bitrate: 800_000, fps: 30, width: 640, height: 360 };

  it.each([
    ["a newline", "360p\n#EXT-X-STREAM-INF:BANDWIDTH=1\n/etc/hosts"],
    ["a quote", '360p",FOO="x'],
    ["a slash", "../360p"],
    ["a tab", "360\tp"],
    ["65 characters", "x".repeat(65)],
  ])("with %s are refused (422)", async (_case, name) => {
    const res = await api("POST", "/stream", { name: "s", profiles: [{ name, ...P }] });
    expect(res.status).toBe(422);
    expect(res.body.errors.join("\n")).toMatch(/profiles\[0\]\.name: must be (letters, digits, spaces, _ \. or - only|at most 64 characters)/);
    const s = (await api("POST", "/stream", { name: "s" })).body;
    expect((await api("PATCH", `/stream/${s.id}`, { profiles: [{ name, ...P }] })).status).toBe(422);
  });

  it("letters, digits, spaces, _ . and - are fine", async () => {
    expect((await api("POST", "/stream", { name: "s", profiles: [{ name: "720p 30fps_v1.2-hi", ...P }] })).status).toBe(201);
  });
});
