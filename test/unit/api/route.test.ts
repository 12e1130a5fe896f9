import { allowedMethods, route, nulAt } from "../../../src/api/route";

const handle = () => ({ status: 204 });
const routes = [
  route({ method: "get", path: "/stream", tag: "t", summary: "s", responses: {}, handle }),
  route({ method: "post", path: "/stream", tag: "t", summary: "s", responses: {}, handle }),
  route({ method: "get", path: "/stream/:id", tag: "t", summary: "s", responses: {}, handle }),
  route({ method: "patch", path: "/stream/:id/record", tag: "t", summary: "s", responses: {}, handle }),
];

describe("allowedMethods", () => {
  it.each([
    ["/stream", ["GET", "POST"]],
    ["/stream/", ["GET", "POST"]],
    ["/stream/abc", ["GET"]],
    ["/stream/abc/record", ["PATCH"]],
    ["/stream/abc/other", []],
    ["/streams", []],
  ])("%s → %j", (path, methods) => {
    expect(allowedMethods(routes, path)).toEqual(methods);
  });
});

describe("nulAt", () => {
  it.each([
    ["plain", { a: "x", b: [1, "y"] }, undefined],
    ["a string", "a\u0000b", "value"],
    ["a nested field", { a: { b: ["ok", "n\u0000"] } }, "a.b.1"],
    ["a key", { a: { "k\u0000": 1 } }, "a"],
    ["nothing but numbers", [1, 2, { c: null }], undefined],
  ])("%s", (_name, value, expected) => {
    expect(nulAt(value)).toBe(expected);
  });

  it("walks a body nested thousands deep without a stack overflow", () => {
    let deep: unknown = "end\u0000";
    for (let i = 0; i < 20_000; i++) deep = [deep];
    expect(nulAt(deep)).toMatch(/^0(\.0)*$/);
  });
});
