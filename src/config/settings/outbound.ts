import { allowHostEntry } from "../../outbound";
import { area, flag, list } from "../declare";

// The outbound policy (src/outbound): private, loopback and other non-public destinations of
// webhooks and multistream targets are refused unless one of these allows them.
export const outbound = area("outbound", {
  ALLOW_PRIVATE_DESTINATIONS: flag({
    default: false,
    doc: "`true`: webhooks and multistream targets may reach private, loopback, link-local and other non-public addresses.",
  }).at("outbound.allowPrivate"),
  DESTINATION_ALLOW_HOSTS: list({
    what: "host names or IP addresses separated by commas (exact hosts: no ranges, ports or URLs)",
    allowed: "host names and IP addresses, comma-separated",
    entry: allowHostEntry,
    doc: "Host names and IP addresses that webhooks and multistream targets may reach even though they are not public, e.g. `127.0.0.1,receiver.lan` (exact match, case-insensitive; an IP also allows names that resolve to it; no ranges).",
  }).at("outbound.allowHosts"),
});
