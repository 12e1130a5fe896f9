export { hlsRouter } from "./hls";
