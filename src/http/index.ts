export { hlsRouter } from "./hls";
export { recordingsRouter } from "./recordings";
