/**
 * The priority task queue core: plain values in, plain rows out; knows nothing of n8n. One file per
 * operation (enqueue.ts, dequeue.ts, complete.ts, ...), each calling its SQL function in
 * schema/functions/queue/. Contract and state machine: docs/queue.md ("Task life"). Inputs are
 * checked once, by each operation's prepare function (prepared.ts marks a prepared input).
 */
export * from './states';
export * from './types';
export { queueChannel } from './channel';
export { enqueue, prepareEnqueueInput, checkDedupeKey, checkSerialKey, NOTIFY_MODES, type EnqueueInput, type EnqueuedTask, type EnqueueOptions, type NotifyMode } from './enqueue';
export { dequeue, checkGroups, prepareDequeueOptions, type DequeueOptions, type ClaimedTask } from './dequeue';
export type { SettleTarget, SettleResult } from './settle';
export { complete, prepareCompleteInput, type CompleteInput, type CompleteResult } from './complete';
export { completeAndDequeue, type CompleteAndDequeueResult } from './completeAndDequeue';
export { fail, backoffSeconds, RETRY_DELAYS, type RetryDelay, prepareBackoff, prepareFailInput, type FailInput, type FailResult, type BackoffOptions } from './fail';
export { extendLease, prepareExtendLeaseInput, type ExtendLeaseInput, type ExtendLeaseResult } from './extendLease';
export { release, prepareReleaseInput, type ReleaseInput, type ReleaseResult } from './release';
export { cancel, prepareCancelInput, type CancelInput, type CancelResult } from './cancel';
export { pause, preparePauseInput, type PauseInput, type PauseResult } from './pause';
export { resume, type ResumeResult } from './resume';
export { settleById, prepareSettleByIdInput, type SettleByIdInput, type SettleByIdResult } from './settleById';
export { requeueDead, requeueDeadByIds, prepareRequeueDeadOptions, prepareRequeueByIdInput, type RequeueByIdInput, type RequeueDeadOptions, type RequeueResult } from './requeueDead';
export { stats, listDead, statsReport, prepareStatsRequest, type StatsRequest, type QueueStats, type GroupStats, type DeadTask, type QueueTableHealth } from './stats';
export { purge, preparePurgeOptions, type PurgeOptions, type PurgeResult } from './purge';
export { groupsFromRows } from './groups';
export { QueueWatcher, type WatcherDeps, type WakeReason, type ListenConnection } from './watcher';
export { connectListener } from './listen';
export { nextDue, type NextDue } from './nextDue';
export { nextDueFor } from './wakeState';
