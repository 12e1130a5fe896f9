export { hlsRouter } from "./hls";
export { recordingsRouter } from "./recordings";
export { assetsRouter } from "./assets";
export { dashboardRouter } from "./dashboard";
export { playerRouter } from "./player";
export { operatorGate } from "./operator";
export { closeGracefully, createPublicServer, type PublicServer, type TlsFiles } from "./publicServer";
export { whipRouter, type WhipRoutesDeps } from "./whip";
export { broadcastRouter, renderBroadcast } from "./broadcast";
