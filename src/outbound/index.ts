export { addressKey, classifyAddress, type AddressKind } from "./addresses";
export {
  allowHostEntry,
  DEFAULT_OUTBOUND,
  HOW_TO_ALLOW,
  normalizeHost,
  OutboundPolicy,
  pinnedLookup,
  type DestinationCheck,
  type Lookup,
  type OutboundSettings,
  type ResolvedAddress,
} from "./policy";
