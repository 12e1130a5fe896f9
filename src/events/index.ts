export * from "./catalog";
export { createEventSink, snapshotStream } from "./sink";
export { startEvents, type RunningEvents } from "./service";
