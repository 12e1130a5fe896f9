export { ClusterNode, type ClusterNodeOptions } from "./node";
export { NOTICE_CHANNEL, NoticeListener, parseNotice, sendNotice } from "./notices";
export { PublishRelays, splitAddress, type PublishRelaysOptions } from "./publishRelay";
export { remoteLiveNode } from "./remote";
