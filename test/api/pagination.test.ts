import { useTestServer } from "../helpers/server";

const fx = useTestServer();
const { api } = fx;

const nextUrl = (link: string | null) => (link ? /^<([^>]+)>; rel="next"$/.exec(link)![1]! : undefined);

/** Follows the Link header exactly as given until no next page. */
async function walkByLink(first: string): Promise<{ ids: string[]; pages: number }> {
  const ids: string[] = [];
  let url: string | undefined = first;
  let pages = 0;
  while (url) {
    const res = await api("GET", url);
    expect(res.status).toBe(200);
    ids.push(...(res.body as { id: string }[]).map((x) => x.id));
    pages++;
    url = nextUrl(res.headers.get("link"));
  }
  return { ids, pages };
}

/** Takes the cursor out of the Link header and passes it as the cursor parameter. */
async function walkByCursor(path: string, limit: number): Promise<{ ids: string[]; pages: number }> {
  const ids: string[] = [];
  let cursor: string | null = "";
  let pages = 0;
  while (cursor !== null) {
    const res = await api("GET", `${path}?limit=${limit}${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ""}`);
    ids.push(...(res.body as { id: string }[]).map((x) => x.id));
    pages++;
    const next = nextUrl(res.headers.get("link"));
    cursor = next ? new URL(next).searchParams.get("cursor") : null;
  }
  return { ids, pages };
}

describe.each([
  ["streams", "/stream", () => ({ name: `s${Math.random()}` })],
  ["multistream targets", "/multistream/target", () => ({ url: `rtmp://h${Math.random()}.example.com/app/k` })],
])("pagination of %s", (_name, path, body) => {
  let created: string[];

  beforeAll(async () => {
    created = [];
    for (let i = 0; i < 11; i++) created.unshift((await api("POST", path, body())).body.id);
  });

  it("walks 4 pages by the Link header, newest first, nothing lost or repeated", async () => {
    const { ids, pages } = await walkByLink(`${fx.t.apiUrl}${path}?limit=3${path === "/stream" ? "&streamsonly=1" : ""}`);
    expect(pages).toBe(4);
    expect(ids.slice(0, 11)).toEqual(created);
    expect(new Set(ids).size).toBe(ids.length);
  });

  it("walks the same pages by the cursor parameter", async () => {
    const { ids, pages } = await walkByCursor(path, 4);
    expect(pages).toBe(3);
    expect(ids.slice(0, 11)).toEqual(created);
    expect(new Set(ids).size).toBe(ids.length);
  });

  it("keeps walking correctly while items are added and removed", async () => {
    const first = await api("GET", `${path}?limit=4`);
    const next = nextUrl(first.headers.get("link"))!;
    await api("POST", path, body());
    if (path === "/stream") await api("DELETE", `/stream/${created[5]}`);
    const rest = await walkByLink(next);
    const ids = [...(first.body as { id: string }[]).map((x) => x.id), ...rest.ids];
    const expected = path === "/stream" ? created.filter((_, i) => i !== 5) : created;
    expect(ids).toEqual(expected);
  });

  it("has no Link header on the last page", async () => {
    const res = await api("GET", `${path}?limit=1000`);
    expect(res.headers.get("link")).toBeNull();
  });
});
