export { ClusterNode, type ClusterNodeOptions } from "./node";
export { NOTICE_CHANNEL, NoticeListener, parseNotice, sendNotice } from "./notices";
export { remoteLiveNode } from "./remote";
