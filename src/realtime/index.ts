// WebRTC playback (WHEP): each live session's frames as its ffmpeg encodes them (the feed),
// and the viewers they are sent to, a rendition each, chosen from the player's bandwidth.
export { chooseRung, type Rung } from "./abr";
export { LiveFeed, type AudioFrame, type FeedListener, type VideoFrame } from "./feed";
export { RealtimeFeeds } from "./feeds";
export { OPUS_LINGER_MS, type OpusSink, type SourceTap, type StartOpus } from "./sourceFrames";
export { WhepPlayback, WhepRefusal, type WhepPlaybackDeps } from "./playback";
export type { ViewerSettings, ViewerStatus } from "./viewer";
