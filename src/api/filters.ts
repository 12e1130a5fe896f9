import type { StreamFilters } from "../db";
import { unprocessable } from "./errors";

const BOOLEAN_FILTERS = ["isActive", "record", "suspended"] as const;
const FILTER_IDS = [...BOOLEAN_FILTERS, "name", "parentId"];

function asBoolean(id: string, value: unknown): boolean {
  if (value === true || value === "true" || value === 1 || value === "1") return true;
  if (value === false || value === "false" || value === 0 || value === "0") return false;
  throw unprocessable(`filters: ${id} takes a boolean value, got ${JSON.stringify(value)}`);
}

/**
 * Parses `GET /stream`'s `filters`: a JSON array of `{id, value}` (docs/api.md#spec-41-streams). Express has
 * already URL-decoded the query string.
 */
export function parseStreamFilters(raw: string | undefined): StreamFilters {
  if (raw === undefined || raw === "") return {};
  let list: unknown;
  try {
    list = JSON.parse(raw);
  } catch {
    throw unprocessable("filters: must be a URL-encoded JSON array of {id, value} objects");
  }
  if (!Array.isArray(list)) throw unprocessable("filters: must be a JSON array of {id, value} objects");
  const filters: StreamFilters = {};
  for (const item of list) {
    if (typeof item !== "object" || item === null || typeof (item as { id?: unknown }).id !== "string") {
      throw unprocessable("filters: each filter must be an object with a string id and a value");
    }
    const { id, value } = item as { id: string; value: unknown };
    if ((BOOLEAN_FILTERS as readonly string[]).includes(id)) {
      filters[id as (typeof BOOLEAN_FILTERS)[number]] = asBoolean(id, value);
    } else if (id === "name" || id === "parentId") {
      if (typeof value !== "string") throw unprocessable(`filters: ${id} takes a string value`);
      filters[id] = value;
    } else {
      throw unprocessable(`filters: unknown filter id "${id.slice(0, 50)}"; known ids: ${FILTER_IDS.join(", ")}`);
    }
  }
  return filters;
}
