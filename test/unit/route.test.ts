import { allowedMethods, route } from "../../src/api/route";

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
