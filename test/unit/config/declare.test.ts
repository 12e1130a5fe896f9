import path from "node:path";
import {
  area,
  combine,
  custom,
  defaultsOf,
  directory,
  flag,
  integer,
  list,
  matching,
  oneOf,
  parseSettings,
  place,
  port,
  portRange,
  Problem,
  text,
  url,
} from "../../../src/config/declare";

// The settings engine on a small set of declarations of its own: each kind's default, bounds and
// problem, the Config it places, and every problem of a bad environment reported at once.

const sample = combine(
  area("http", {
    PORT: port({ default: 8080, doc: "d" }).at("port"),
    LEVEL: oneOf({ values: ["low", "high"], default: "low", doc: "d" }).at("level"),
    NAME: matching({ pattern: /^[a-z]{1,8}$/, what: "1-8 lower-case letters", default: "onair", doc: "d" }).at("name"),
    TOKEN: matching({ pattern: /^\S{16,}$/, what: "at least 16 characters", quoteValue: false, doc: "d" }).at("token"),
  }),
  area("webhooks", {
    TIMEOUT_SECONDS: integer({ default: 10, min: 1, max: 30, unit: "seconds", doc: "d" }).at("hooks.timeoutMs", (s) => s * 1000),
    ON: flag({ default: true, doc: "d" }).at("hooks.on"),
    BUDGET: integer({ default: 0, min: 0, max: 100, doc: "d" }).at("budget", (n) => (n === 0 ? undefined : n)),
    HOSTS: list({ what: "lower-case words", allowed: "words", entry: (e) => (/^[a-z]+$/.test(e) ? e : undefined), doc: "d" }).at("hooks.hosts"),
    RANGE: portRange({ doc: "d" }).at("range"),
    URL: url({ protocols: ["http:", "https:"], doc: "d" }).at("url"),
    NOTE: text({ doc: "d" }).at("note"),
    KEY: text({ keepEmpty: true, doc: "d" }).at("key"),
    DIR: directory({ default: "./data", doc: "d" }).at("dir"),
    EVEN: custom<number>({
      default: "`2`",
      allowed: "even numbers",
      fallback: () => 2,
      doc: "d",
      parse: (t, env) => (Number(t) % 2 === 0 ? Number(t) : new Problem(`${env} must be even, got "${t}"`)),
    }).at("even"),
    UNPLACED: integer({ default: 1, min: 0, max: 9, doc: "d" }),
  }),
);

function load(env: Record<string, string>) {
  const r = parseSettings(sample, env);
  if (!r.ok) throw new Error(r.problems.join("\n"));
  return { parsed: r.parsed, config: place(sample, r.parsed) };
}

function problems(env: Record<string, string>): string[] {
  const r = parseSettings(sample, env);
  return r.ok ? [] : r.problems;
}

describe("the settings engine", () => {
  it("places every default, converted on the way where the declaration says so", () => {
    expect(load({}).config).toEqual({
      port: 8080,
      level: "low",
      name: "onair",
      token: undefined,
      hooks: { timeoutMs: 10_000, on: true, hosts: [] },
      budget: undefined,
      range: undefined,
      url: undefined,
      note: undefined,
      key: undefined,
      dir: path.resolve("./data"),
      even: 2,
    });
  });

  it("keeps a setting without a place out of Config, but parsed for the rules", () => {
    const { parsed, config } = load({ UNPLACED: "7" });
    expect(parsed.UNPLACED).toBe(7);
    expect(config).not.toHaveProperty("UNPLACED");
  });

  it("takes empty as unset, except where a declaration keeps it", () => {
    expect(load({ PORT: "", NOTE: "", KEY: "" }).config).toMatchObject({ port: 8080, note: undefined, key: "" });
  });

  it("gives each load fresh default lists", () => {
    const a = load({}).config.hooks.hosts;
    a.push("x");
    expect(load({}).config.hooks.hosts).toEqual([]);
  });

  it.each([
    ["TIMEOUT_SECONDS", "1", { hooks: expect.objectContaining({ timeoutMs: 1000 }) }],
    ["TIMEOUT_SECONDS", "30", { hooks: expect.objectContaining({ timeoutMs: 30_000 }) }],
    ["PORT", "0", { port: 0 }],
    ["PORT", "65535", { port: 65535 }],
    ["ON", "0", { hooks: expect.objectContaining({ on: false }) }],
    ["ON", "No", { hooks: expect.objectContaining({ on: false }) }],
    ["ON", "off", { hooks: expect.objectContaining({ on: false }) }],
    ["ON", "YES", { hooks: expect.objectContaining({ on: true }) }],
    ["ON", "1", { hooks: expect.objectContaining({ on: true }) }],
    ["LEVEL", "high", { level: "high" }],
    ["BUDGET", "40", { budget: 40 }],
    ["HOSTS", " a, b,,c ", { hooks: expect.objectContaining({ hosts: ["a", "b", "c"] }) }],
    ["RANGE", "2000", { range: { first: 2000, last: 2000 } }],
    ["RANGE", " 2000 - 2010 ", { range: { first: 2000, last: 2010 } }],
    ["RANGE", "  ", { range: undefined }],
    ["URL", "https://x.example//", { url: "https://x.example" }],
    ["DIR", "/srv/onair", { dir: "/srv/onair" }],
    ["EVEN", "8", { even: 8 }],
  ])("reads %s=%j", (name, value, expected) => {
    expect(load({ [name]: value }).config).toMatchObject(expected);
  });

  it.each([
    ["PORT", "x", 'PORT must be a port number (0-65535), got "x"'],
    ["PORT", "65536", 'PORT must be a port number (0-65535), got "65536"'],
    ["PORT", "80.5", 'PORT must be a port number (0-65535), got "80.5"'],
    ["TIMEOUT_SECONDS", "0", 'TIMEOUT_SECONDS must be an integer from 1 to 30 (seconds), got "0"'],
    ["TIMEOUT_SECONDS", "31", 'TIMEOUT_SECONDS must be an integer from 1 to 30 (seconds), got "31"'],
    ["TIMEOUT_SECONDS", "10s", 'TIMEOUT_SECONDS must be an integer from 1 to 30 (seconds), got "10s"'],
    ["BUDGET", "-1", 'BUDGET must be an integer from 0 to 100, got "-1"'],
    ["ON", "maybe", 'ON must be true or false (1 or 0), got "maybe"'],
    ["LEVEL", "HIGH", 'LEVEL must be one of low, high, got "HIGH"'],
    ["NAME", "Has Space", 'NAME must be 1-8 lower-case letters, got "Has Space"'],
    ["TOKEN", "secret", "TOKEN must be at least 16 characters"],
    ["HOSTS", "ok,Bad,1", 'HOSTS must list lower-case words, got "Bad", "1"'],
    ["RANGE", "80-90", 'RANGE must be a port range "first-last" within 1024-65535, got "80-90"'],
    ["RANGE", "3000-2000", 'RANGE must be a port range "first-last" within 1024-65535, got "3000-2000"'],
    ["URL", "nope", 'URL must be a URL, got "nope"'],
    ["URL", "ftp://x", 'URL must use http:// or https://, got "ftp://x"'],
    ["EVEN", "3", 'EVEN must be even, got "3"'],
  ])("refuses %s=%j: %s", (name, value, message) => {
    expect(problems({ [name]: value })).toEqual([message]);
  });

  it("reports every problem at once, each naming its variable", () => {
    const found = problems({ PORT: "x", LEVEL: "y", TIMEOUT_SECONDS: "0", ON: "?", HOSTS: "A", EVEN: "1", NOTE: "fine" });
    expect(found).toHaveLength(6);
    for (const name of ["PORT", "LEVEL", "TIMEOUT_SECONDS", "ON", "HOSTS", "EVEN"]) expect(found.some((p) => p.startsWith(`${name} `))).toBe(true);
  });

  it("stamps each declaration with its variable and area, and keeps the reference's default and allowed values", () => {
    expect(sample.PORT).toMatchObject({ env: "PORT", area: "http", default: "`8080`", allowed: "0-65535" });
    expect(sample.TIMEOUT_SECONDS).toMatchObject({ env: "TIMEOUT_SECONDS", area: "webhooks", default: "`10`", allowed: "1-30 (seconds)", to: "hooks.timeoutMs" });
    expect(sample.LEVEL.allowed).toBe("`low`, `high`");
    expect(sample.NOTE.default).toBe("unset");
    expect(integer({ default: 0, min: 0, max: 9, shown: "50 × cores", doc: "d" }).default).toBe("50 × cores");
  });

  it("refuses a variable declared twice or outside an area, and places that clash", () => {
    const a = area("http", { X: port({ default: 1, doc: "d" }).at("x") });
    expect(() => combine(a, area("media", { X: port({ default: 2, doc: "d" }).at("y") }))).toThrow("setting X is declared twice");
    expect(() => combine(a, area("media", { Y: port({ default: 2, doc: "d" }).at("x") }))).toThrow("Config.x is the place of two settings");
    expect(() => combine(a, area("media", { Z: port({ default: 2, doc: "d" }).at("x.y") }))).toThrow("Config.x.y and Config.x overlap");
    expect(() => combine({ W: port({ default: 2, doc: "d" }).at("w") })).toThrow("setting W is not declared through area()");
  });

  it("gives an area's defaults (DEFAULT_LIMITS)", () => {
    expect(defaultsOf(area("limits", { A: integer({ default: 3, min: 0, max: 9, doc: "d" }).at("limits.a") }))).toEqual({ limits: { a: 3 } });
  });
});
