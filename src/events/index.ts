export { createEventSink, snapshotStream, type EventSink } from "./sink";
export { startEvents, type RunningEvents } from "./service";
