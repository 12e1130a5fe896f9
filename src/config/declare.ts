import path from "node:path";
import { z } from "zod";

// The settings engine: each setting is declared once (src/config/settings/<area>.ts) with its
// kind, default, bounds, doc line and the place its value takes in Config; the zod schema over
// the environment, the parsed Config, its TypeScript type and docs/settings.md all come from
// those declarations.

/** The areas the settings reference groups settings by, in its order. */
export const AREAS = {
  http: "HTTP and the operator's listener",
  ingest: "Ingest: RTMP, WebRTC (WHIP), SRT",
  media: "Media: ffmpeg and live HLS",
  playback: "Playback, viewers and clips",
  storage: "Storage and recordings",
  database: "Database",
  queue: "Queue",
  cluster: "Cluster",
  webhooks: "Webhooks",
  outbound: "Outbound destinations",
  limits: "Limits",
} as const;
export type Area = keyof typeof AREAS;

/** One setting: read from the environment variable named by its key in its area's declarations. */
export interface Declaration<V = unknown, C = V, P extends string = string> {
  /** The environment variable (set by `area()` from the key). */
  env: string;
  area: Area;
  /** One line for the settings reference. */
  doc: string;
  /** The default as the reference shows it. */
  default: string;
  /** The values accepted, as the reference shows them. */
  allowed: string;
  /** The environment text (undefined: unset) to the value; issues name the variable. */
  schema(env: string): z.ZodType<V, string | undefined>;
  /** Where the value lands in Config ("webhooks.timeoutMs"); undefined: only the derivations read it. */
  to: P | undefined;
  /** From the parsed value to what Config holds (seconds to ms, 0 to undefined, …). */
  map: (value: V) => C;
  /** Gives the setting its place in Config, through `map` when the value is converted on the way. */
  at<const Q extends string>(place: Q): Declaration<V, V, Q>;
  at<const Q extends string, D>(place: Q, map: (value: V) => D): Declaration<V, D, Q>;
}

interface KindOptions {
  doc: string;
  /** Overrides the default the reference shows (a derived default: "PORT+10"). */
  shown?: string;
}

/** A value a setting refuses: the message names the variable and, mostly, quotes the value. */
export class Problem {
  constructor(readonly message: string) {}
}

/**
 * A kind of setting from its parse of the environment text: a Problem refuses it. Unset (and by
 * default empty) gives `fallback()` (a fresh value each time) without a parse.
 */
export function kind<V>(
  options: KindOptions & { default: string; allowed: string },
  fallback: () => V,
  parse: (text: string, env: string) => V | Problem,
  unset: (text: string | undefined) => text is undefined | "" = (text): text is undefined | "" => text === undefined || text === "",
): Declaration<V, V, never> {
  return declaration<V, V, never>({
    env: "",
    area: "http",
    doc: options.doc,
    default: options.shown ?? options.default,
    allowed: options.allowed,
    to: undefined,
    map: (v) => v,
    schema: (env) =>
      z
        .string()
        .optional()
        .transform((text, ctx): V => {
          if (unset(text)) return fallback();
          const value = parse(text, env);
          if (!(value instanceof Problem)) return value;
          ctx.addIssue({ code: "custom", message: value.message });
          return z.NEVER;
        }),
  });
}

function declaration<V, C, P extends string>(d: Omit<Declaration<V, C, P>, "at">): Declaration<V, C, P> {
  return {
    ...d,
    at<const Q extends string, D>(place: Q, map?: (value: V) => D): Declaration<V, D, Q> {
      return declaration<V, D, Q>({ ...d, to: place, map: map ?? ((v: V) => v as unknown as D) });
    },
  };
}

const code = (v: unknown) => "`" + String(v) + "`";

// --- Kinds ---------------------------------------------------------------------------------

/** An integer within bounds; `unit` is said in the problem ("(seconds)") and the reference. */
export function integer(o: KindOptions & { default: number; min: number; max: number; unit?: string }) {
  const unit = o.unit ? ` (${o.unit})` : "";
  return kind({ ...o, default: code(o.default), allowed: `${o.min}-${o.max}${unit}` }, () => o.default, (text, env) => {
    const n = Number(text);
    return Number.isInteger(n) && n >= o.min && n <= o.max ? n : new Problem(`${env} must be an integer from ${o.min} to ${o.max}${unit}, got "${text}"`);
  });
}

/** A TCP port, 0-65535 (0: a free one). */
export function port(o: KindOptions & { default: number }) {
  return kind({ ...o, default: code(o.default), allowed: "0-65535" }, () => o.default, (text, env) => {
    const n = Number(text);
    return Number.isInteger(n) && n >= 0 && n <= 65535 ? n : new Problem(`${env} must be a port number (0-65535), got "${text}"`);
  });
}

const TRUE = ["1", "true", "yes", "on"];
const FALSE = ["0", "false", "no", "off"];

/** true or false, also 1/0, yes/no, on/off, in any case. */
export function flag(o: KindOptions & { default: boolean }) {
  return kind({ ...o, default: code(o.default), allowed: "`true`, `false` (`1`/`0`, `yes`/`no`, `on`/`off`)" }, () => o.default, (text, env) => {
    if (TRUE.includes(text.toLowerCase())) return true;
    if (FALSE.includes(text.toLowerCase())) return false;
    return new Problem(`${env} must be true or false (1 or 0), got "${text}"`);
  });
}

/** One of a list of words. */
export function oneOf<const W extends string>(o: KindOptions & { values: readonly W[]; default: W }) {
  return kind({ ...o, default: code(o.default), allowed: o.values.map(code).join(", ") }, () => o.default, (text, env) =>
    (o.values as readonly string[]).includes(text) ? (text as W) : new Problem(`${env} must be one of ${o.values.join(", ")}, got "${text}"`),
  );
}

/** Free text; unset or empty: `default`, else undefined (`keepEmpty`: only unset is). */
export function text(o: KindOptions & { default: string; allowed?: string }): Declaration<string, string, never>;
export function text(o: KindOptions & { default?: undefined; allowed?: string; keepEmpty?: boolean }): Declaration<string | undefined, string | undefined, never>;
export function text(o: KindOptions & { default?: string; allowed?: string; keepEmpty?: boolean }): Declaration<any, any, never> {
  const unset = o.keepEmpty ? (t: string | undefined): t is undefined => t === undefined : undefined;
  return kind({ ...o, default: o.default === undefined ? "unset" : code(o.default), allowed: o.allowed ?? "any text" }, () => o.default, (t) => t, unset);
}

/** Text matching a pattern; `what` completes "must be …" in the problem (`quoteValue: false`: without the value, a secret). */
export function matching(o: KindOptions & { pattern: RegExp; what: string; default: string; quoteValue?: boolean }): Declaration<string, string, never>;
export function matching(o: KindOptions & { pattern: RegExp; what: string; default?: undefined; quoteValue?: boolean }): Declaration<string | undefined, string | undefined, never>;
export function matching(o: KindOptions & { pattern: RegExp; what: string; default?: string; quoteValue?: boolean }): Declaration<any, any, never> {
  return kind({ ...o, default: o.default === undefined ? "unset" : code(o.default), allowed: o.what }, () => o.default, (t, env) =>
    o.pattern.test(t) ? t : new Problem(o.quoteValue === false ? `${env} must be ${o.what}` : `${env} must be ${o.what}, got "${t}"`),
  );
}

/** A URL with one of `protocols` ("https:"), without its trailing slashes; unset: undefined. */
export function url(o: KindOptions & { protocols: string[] }) {
  const schemes = o.protocols.map((p) => p + "//");
  return kind<string | undefined>({ ...o, default: "unset", allowed: schemes.map((s) => `\`${s}…\``).join(", ") }, () => undefined, (t, env) => {
    let parsed: URL;
    try {
      parsed = new URL(t);
    } catch {
      return new Problem(`${env} must be a URL, got "${t}"`);
    }
    if (!o.protocols.includes(parsed.protocol)) return new Problem(`${env} must use ${schemes.join(" or ")}, got "${t}"`);
    return t.replace(/\/+$/, "");
  });
}

/** A directory, made absolute against the working directory. */
export function directory(o: KindOptions & { default: string }) {
  return kind({ ...o, default: code(o.default), allowed: "a path" }, () => path.resolve(o.default), (t) => path.resolve(t));
}

/** A UDP port range "first-last" (or one port) within 1024-65535; unset or blank: undefined. */
export function portRange(o: KindOptions) {
  return kind<{ first: number; last: number } | undefined>(
    { ...o, default: "unset", allowed: "`first-last` within 1024-65535" },
    () => undefined,
    (t, env) => {
      const m = /^\s*(\d{1,5})\s*(?:-\s*(\d{1,5})\s*)?$/.exec(t);
      const first = m ? Number(m[1]) : NaN;
      const last = m ? Number(m[2] ?? m[1]) : NaN;
      return first >= 1024 && last <= 65535 && first <= last ? { first, last } : new Problem(`${env} must be a port range "first-last" within 1024-65535, got "${t}"`);
    },
    (t): t is undefined | "" => t === undefined || t.trim() === "",
  );
}

/**
 * A comma-separated list: each entry trimmed, empty ones dropped, every bad one named in one
 * problem ("`env` must list `what`, got "a", "b""); `entry` gives an entry's value or undefined.
 */
export function list<E>(o: KindOptions & { what: string; allowed: string; entry: (e: string) => E | undefined }) {
  return kind<E[]>({ ...o, default: "unset", allowed: o.allowed }, () => [], (t, env) => {
    const entries = t.split(",").map((e) => e.trim()).filter((e) => e !== "");
    const values = entries.map((e) => o.entry(e));
    const bad = entries.filter((_, i) => values[i] === undefined);
    return bad.length === 0 ? (values as E[]) : new Problem(`${env} must list ${o.what}, got ${bad.map((b) => `"${b}"`).join(", ")}`);
  });
}

/** A kind of its own: `parse` gives the value or a Problem. */
export function custom<V>(o: KindOptions & { default: string; allowed: string; fallback: () => V; parse: (text: string, env: string) => V | Problem }) {
  return kind<V>(o, o.fallback, o.parse);
}

// --- Areas, declarations and the Config they make ------------------------------------------

/** Declarations of one area, keyed by environment variable. */
export type Declarations = Record<string, Declaration<any, any, any>>;

/** Stamps each of an area's declarations with its variable name and the area. */
export function area<const D extends Declarations>(name: Area, declarations: D): D {
  for (const [env, d] of Object.entries(declarations)) Object.assign(d, { env, area: name });
  return declarations;
}

type UnionToIntersection<U> = (U extends unknown ? (x: U) => void : never) extends (x: infer I) => void ? I : never;
type Nest<P extends string, C> = P extends `${infer H}.${infer R}` ? { [K in H]: Nest<R, C> } : { [K in P]: C };
/** Flattens intersections of nested objects for readable types (leaves arrays, buffers and functions). */
export type Flat<T> = T extends readonly unknown[] | Buffer | ((...args: never[]) => unknown)
  ? T
  : T extends object
    ? { [K in keyof T]: Flat<T[K]> }
    : T;

/** The parsed value of every setting, by environment variable: what the cross-setting rules and derivations read. */
export type Parsed<D extends Declarations> = { [K in keyof D]: z.output<ReturnType<D[K]["schema"]>> };

type PlaceOf<S> = S extends Declaration<any, any, any> ? Exclude<S["to"], undefined> : never;

/** The part of Config the declarations place. */
export type Placed<D extends Declarations> = Flat<
  UnionToIntersection<
    { [K in keyof D]: [PlaceOf<D[K]>] extends [never] ? never : Nest<PlaceOf<D[K]> & string, ReturnType<D[K]["map"]>> }[keyof D]
  >
>;

/**
 * Every area's declarations as one. A variable declared twice or outside `area()`, or a Config
 * place taken twice (or inside another setting's value) is a programming error.
 */
export function combine<const A extends Declarations[]>(...areas: A): UnionToIntersection<A[number]> {
  const all: Declarations = {};
  const places: string[] = [];
  for (const declarations of areas) {
    for (const [env, d] of Object.entries(declarations)) {
      if (env in all) throw new Error(`setting ${env} is declared twice`);
      if (d.env !== env) throw new Error(`setting ${env} is not declared through area()`);
      if (d.to !== undefined) {
        const clash = places.find((p) => p === d.to || p.startsWith(d.to + ".") || d.to!.startsWith(p + "."));
        if (clash !== undefined) throw new Error(clash === d.to ? `Config.${d.to} is the place of two settings` : `Config.${d.to} and Config.${clash} overlap`);
        places.push(d.to);
      }
      all[env] = d;
    }
  }
  return all as UnionToIntersection<A[number]>;
}

/** One zod schema over the environment: a failed parse lists every setting's problem at once. */
export function schemaOf<D extends Declarations>(declarations: D): z.ZodType<Parsed<D>, Record<string, string | undefined>> {
  return z.object(Object.fromEntries(Object.entries(declarations).map(([env, d]) => [env, d.schema(env)]))) as unknown as z.ZodType<
    Parsed<D>,
    Record<string, string | undefined>
  >;
}

/** Reads the environment: the parsed values, or every problem (each naming its variable). */
export function parseSettings<D extends Declarations>(
  declarations: D,
  env: Record<string, string | undefined>,
  schema: z.ZodType<Parsed<D>, Record<string, string | undefined>> = schemaOf(declarations),
): { ok: true; parsed: Parsed<D> } | { ok: false; problems: string[] } {
  const result = schema.safeParse(env);
  return result.success ? { ok: true, parsed: result.data } : { ok: false, problems: result.error.issues.map((i) => i.message) };
}

/** Puts each placed setting's value, through its map, at its place. */
export function place<D extends Declarations>(declarations: D, parsed: Parsed<D>): Placed<D> {
  const out: Record<string, unknown> = {};
  for (const [env, d] of Object.entries(declarations)) {
    if (d.to === undefined) continue;
    const keys = (d.to as string).split(".");
    let at = out;
    for (const key of keys.slice(0, -1)) at = (at[key] ??= {}) as Record<string, unknown>;
    at[keys[keys.length - 1]!] = d.map((parsed as Record<string, unknown>)[env]);
  }
  return out as Placed<D>;
}

/** What the declarations place when nothing is set: their defaults (DEFAULT_LIMITS). */
export function defaultsOf<D extends Declarations>(declarations: D): Placed<D> {
  const result = parseSettings(declarations, {});
  if (!result.ok) throw new Error(`a default is not valid: ${result.problems.join("; ")}`);
  return place(declarations, result.parsed);
}
