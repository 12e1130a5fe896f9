export { MultistreamManager, type MultistreamDeps } from "./manager";
