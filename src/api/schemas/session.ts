import { listQuery, queryFlag } from "./common";

export const parentSessionsQuery = listQuery.extend({ record: queryFlag });
