// Type declarations of the bitt package (lib/index.js).
// Values follow bindings/VALUES.md: Buffer/Uint8Array as bytes, bigint as a
// counter, anything else JSON can hold as JSON. Identities (ids, versions,
// epochs, sequence numbers) and counters are bigint. Units: every duration
// is a number of milliseconds, every absolute time a Date (in and out).
// Errors follow bindings/ERRORS.md. `using` / `await using` need TypeScript
// 5.2 or later with the lib "esnext.disposable" (or @types/node's).

/// <reference types="node" />

import { EventEmitter } from 'events';

export type Key = Buffer | Uint8Array | string | TuplePart[];
export type TuplePart = Buffer | Uint8Array | string | bigint | number | boolean;
export type JsonValue = null | boolean | number | string | JsonValue[] | { [k: string]: JsonValue };
/** A value to write. */
export type Value = Buffer | Uint8Array | bigint | JsonValue;
/** A value read: bytes come back as a Buffer, a counter as a bigint. */
export type StoredValue = Buffer | bigint | JsonValue;
/** What toJSON() makes of a value: a counter as its decimal string (Buffers write themselves). */
export type JsonableValue = Buffer | string | JsonValue;
export type Name = string | Buffer;
export type Int = number | bigint;
/** A duration: a whole number of milliseconds. */
export type Milliseconds = number | bigint;

export const KIND_BYTES: 0;
export const KIND_JSON: 1;
export const KIND_COUNTER: 2;
export const version: string;

/** An entry of kv.get, take, getMany, page, list. */
export class Entry {
  readonly key: Buffer;
  readonly value: StoredValue;
  readonly kind: number;
  readonly version: bigint;
  /** null: no expiry. */
  readonly expiresAt: Date | null;
  /** JSON.stringify(entry): the version as a decimal string. */
  toJSON(): { key: Buffer; value: JsonableValue; kind: number; version: string; expiresAt: Date | null };
}

/** Where a queue message is: claimable now (also a lease that ran out),
 * claimable from dueAt, under a live lease until dueAt, a dead letter, or
 * acked at doneAt and kept by the store's queue_done_retention. */
export type MessageState = 'pending' | 'delayed' | 'leased' | 'dead' | 'done';

export class Message {
  readonly id: bigint;
  readonly topic: string;
  readonly payload: Buffer;
  readonly kind: number;
  readonly token: string | null;
  readonly attempts: number;
  readonly maxAttempts: number;
  readonly lastError: string | null;
  readonly createdAt: Date;
  /** Queue: when this delivery's lease ends. Outbox: the next attempt time (null: none). */
  readonly dueAt: Date | null;
  /** Dead letters: when it died; parked events: when parked; else null. */
  readonly failedAt: Date | null;
  readonly parkReason: number;
  /** Queue: 'leased' for a delivery, 'dead' for a dead letter, as it is for
   * queue.get (where dueAt is when a pending or delayed message is claimable,
   * or a leased one's lease ends); null outside the queue. */
  readonly state: MessageState | null;
  /** Queue: its priority (higher is claimed first); 0 elsewhere. */
  readonly priority: number;
  /** A done message: when it was acked; else null. */
  readonly doneAt: Date | null;
  /** A done message: the result it was acked with (null: none), and its kind (null: none). */
  readonly result: Buffer | null;
  readonly resultKind: number | null;
  /** The payload decoded by its kind. */
  readonly value: StoredValue;
  /** The result decoded by its kind, as value is (undefined: none). */
  readonly resultValue: StoredValue | undefined;
  toJSON(): {
    id: string; topic: string; value: JsonableValue; kind: number; token: string | null; attempts: number;
    maxAttempts: number; lastError: string | null; createdAt: Date; dueAt: Date | null; failedAt: Date | null;
    parkReason: number; state: MessageState | null; priority: number; doneAt: Date | null;
    result: JsonableValue | null; resultKind: number | null;
  };
}

/** An ack's result: any value a payload can be (undefined: none); kept with
 * the message, done, under queue_done_retention. */
export interface AckOptions { result?: Value }

/** A message handed out by queue.consume(). */
export interface ConsumedMessage extends Message {
  /** Resolves once the ack is committed; acks asked for while another of the
   * same consumer is in flight (or in the same event-loop turn) commit
   * together in one ackMany. Rejects with StaleToken for this message alone. */
  ack(options?: AckOptions): Promise<void>;
  nack(error?: string | null, options?: NackOptions): Promise<void>;
  extend(lease: Milliseconds): Promise<void>;
}

export class Schedule {
  readonly key: string;
  /** ms */
  readonly interval: number;
  readonly payload: Buffer;
  readonly kind: number;
  readonly nextRunAt: Date;
  /** After claim(): the occurrence claimed; else null. */
  readonly occurrence: Date | null;
  /** The cron expression; null for an interval schedule (whose interval is then not 0). */
  readonly cron: string | null;
  /** The topic each occurrence is enqueued on; null: none. */
  readonly topic: string | null;
  /** After claim() of a schedule with a topic: the occurrence's message id; else 0n. */
  readonly messageId: bigint;
  readonly value: StoredValue;
  toJSON(): {
    key: string; interval: number; value: JsonableValue; kind: number; nextRunAt: Date; occurrence: Date | null;
    cron: string | null; topic: string | null; messageId: string;
  };
}

export class Lease {
  readonly name: string;
  readonly owner: string;
  readonly epoch: bigint;
  readonly expiresAt: Date;
  toJSON(): { name: string; owner: string; epoch: string; expiresAt: Date };
}

export interface QueueStats {
  pending: number;
  delayed: number;
  processing: number;
  dead: number;
  /** Since when the oldest claimable message waits; null: none. */
  oldestPendingAt: Date | null;
  /** Acked and kept by the store's queue_done_retention. */
  done: number;
}

export interface ListOptions {
  prefix?: Key | null;
  start?: Key | null;
  end?: Key | null;
  limit?: number;
  reverse?: boolean;
  cursor?: string | null;
}
export interface Page {
  entries: Entry[];
  cursor: string | null;
}
/** An AbortSignal ends the call's wait: it rejects with AbortError, having leased nothing. */
export interface SignalOptions { signal?: AbortSignal | null }
export interface TtlOptions { ttl?: Milliseconds }
/** priority: an int32 (default 0); a higher one is claimed first. */
export interface EnqueueOptions { delay?: Milliseconds; maxAttempts?: number; dedupKey?: Key | null; priority?: number }
export interface DequeueOptions extends SignalOptions { limit?: number; lease?: Milliseconds; wait?: Milliseconds }
export interface ConsumeOptions extends DequeueOptions { prefetch?: number }
/** delay: ms before the retry; not given: the store's backoff. */
export interface NackOptions { delay?: Milliseconds }
export interface DeadListOptions { after?: Int; limit?: number }
export interface BudgetOptions { capacity: Int; refill: Int; period: Milliseconds; n?: Int }
/** cron: a 5-field UTC expression instead of an interval (which is then
 * null or 0); topic: each occurrence's claim enqueues the payload there, with
 * maxAttempts (0: 3) and priority (an int32). */
export interface UpsertOptions {
  firstRunAt?: Date | null; cron?: string | null; topic?: Name | null; maxAttempts?: number; priority?: number;
}
export type ParkReason = 'any' | 'poison' | 'invalid' | number;

/** The namespaces, for a result type R<T>: T (Store) or Promise<T> (AsyncStore). */
interface KVOf<Sync extends boolean> {
  get(key: Key): R<Sync, Entry | null>;
  set(key: Key, value: Value, options?: TtlOptions): R<Sync, bigint>;
  add(key: Key, value: Value, options?: TtlOptions): R<Sync, bigint | null>;
  delete(key: Key): R<Sync, boolean>;
  take(key: Key): R<Sync, Entry | null>;
  increment(key: Key, delta?: Int, options?: TtlOptions): R<Sync, bigint>;
  getMany(keys: Key[]): R<Sync, (Entry | null)[]>;
  page(options?: ListOptions): R<Sync, Page>;
  list(options?: ListOptions): Sync extends true ? Generator<Entry, void> : AsyncGenerator<Entry, void>;
  purgeExpired(): R<Sync, number>;
}
type R<Sync extends boolean, T> = Sync extends true ? T : Promise<T>;

interface QueueOf<Sync extends boolean> {
  enqueue(topic: Name, payload: Value, options?: EnqueueOptions): R<Sync, bigint>;
  /** Up to `limit` messages of a topic, or of any of an array of 1 to 64
   * distinct topics (each message names its own), waiting up to `wait` ms
   * for a first one. */
  dequeue(topic: Name | Name[], options?: DequeueOptions): R<Sync, Message[]>;
  /** The message as it is now (never a token), or null when topic holds no such id. */
  get(topic: Name, id: Int): R<Sync, Message | null>;
  /** Deletes a pending, delayed or leased message: whether it was there. */
  cancel(topic: Name, id: Int): R<Sync, boolean>;
  /** A pending or delayed message is claimable delayMs from now (default 0): whether it applied. */
  reschedule(topic: Name, id: Int, delayMs?: Milliseconds): R<Sync, boolean>;
  ack(msg: Message, options?: AckOptions): R<Sync, void>;
  /** Acks many deliveries of topic in one transaction: true per acked one,
   * false where the token was stale (at most 1000 at once). */
  ackMany(topic: Name, deliveries: Array<Message | [Int, string]>): R<Sync, boolean[]>;
  nack(msg: Message, error?: string | null, options?: NackOptions): R<Sync, void>;
  extend(msg: Message, lease: Milliseconds): R<Sync, void>;
  /** Gives a delivery back unseen, claimable again delayMs from now: no attempt used. */
  snooze(topic: Name, id: Int, token: string, delayMs?: Milliseconds): R<Sync, void>;
  deadList(topic: Name, options?: DeadListOptions): R<Sync, Message[]>;
  deadRetry(topic: Name, id?: Int): R<Sync, number>;
  deadDelete(topic: Name, id?: Int): R<Sync, number>;
  stats(topic: Name): R<Sync, QueueStats>;
  /** Drops what outlived its retention on topic (null: every topic): how many. */
  purge(topic?: Name | null): R<Sync, number>;
}
interface LeasesOf<Sync extends boolean> {
  acquire(name: Name, owner: Name, ttl: Milliseconds): R<Sync, Lease | null>;
  /** The new expiry. */
  renew(name: Name, owner: Name, epoch: Int, ttl: Milliseconds): R<Sync, Date>;
  release(name: Name, owner: Name, epoch: Int): R<Sync, void>;
  get(name: Name): R<Sync, Lease | null>;
}
interface OutboxOf<Sync extends boolean> {
  append(stream: Name, event: Value): R<Sync, bigint>;
  pending(stream: Name, limit?: number): R<Sync, Message[]>;
  ack(stream: Name, seqs: Int[]): R<Sync, number>;
  fail(stream: Name, seq: Int, error?: string | null, nextAttemptAt?: Date | null): R<Sync, boolean>;
  park(stream: Name, seq: Int, reason: ParkReason, error?: string | null): R<Sync, boolean>;
  parked(stream: Name, reason?: ParkReason, limit?: number): R<Sync, Message[]>;
  retry(stream: Name, seqs?: Int[] | null): R<Sync, number>;
  discard(stream: Name, seqs?: Int[] | null): R<Sync, number>;
  counts(stream: Name): R<Sync, { pending: number; parked: number }>;
}
interface BudgetsOf<Sync extends boolean> {
  /** 0 when taken, else the ms to wait. */
  take(name: Name, options: BudgetOptions): R<Sync, number>;
}
interface SchedulesOf<Sync extends boolean> {
  upsert(key: Name, interval: Milliseconds | null, payload?: Value, options?: UpsertOptions): R<Sync, void>;
  claim(prefix?: Name | null): R<Sync, Schedule | null>;
  get(key: Name): R<Sync, Schedule | null>;
  list(): R<Sync, Schedule[]>;
  delete(key: Name): R<Sync, boolean>;
}
interface ClockOf<Sync extends boolean> {
  setManual(now: Date): R<Sync, void>;
  advance(ms: Milliseconds): R<Sync, void>;
  useSystem(): R<Sync, void>;
  now(): R<Sync, Date>;
}

declare class AtomicBase<Self> {
  version: bigint | null;
  check(key: Key, version: bigint | null): Self;
  set(key: Key, value: Value, options?: TtlOptions): Self;
  delete(key: Key): Self;
  sum(key: Key, delta: Int): Self;
  enqueue(topic: Name, payload: Value, options?: EnqueueOptions): Self;
  fence(name: Name, owner: Name, epoch: Int): Self;
  outboxAppend(stream: Name, event: Value): Self;
  /** The queue ops, applied with the commit: a delivery op whose lease is
   * not live with that token at commit fails the commit (StaleToken); at
   * most one queue op per message id. */
  queueAck(msg: Message, options?: AckOptions): Self;
  queueNack(msg: Message, error?: string | null, options?: NackOptions): Self;
  queueSnooze(topic: Name, id: Int, token: string, delayMs?: Milliseconds): Self;
  queueExtend(msg: Message, lease: Milliseconds): Self;
  queueCancel(topic: Name, id: Int): Self;
  queueReschedule(topic: Name, id: Int, delayMs?: Milliseconds): Self;
  close(): void;
  /** Drops the transaction unless committed. */
  [Symbol.dispose](): void;
}
export class Atomic extends AtomicBase<Atomic> {
  commit(): bigint;
}
export class AsyncAtomic extends AtomicBase<AsyncAtomic> {
  commit(): Promise<bigint>;
}

export class Subscription {
  /** The next message, or null when none came within `timeout` ms (this blocks the thread). */
  next(timeout?: Milliseconds, options?: SignalOptions): Message | null;
  close(): void;
  [Symbol.dispose](): void;
}
export class AsyncSubscription implements AsyncIterable<Message> {
  /** Settles once the subscription is in place. */
  readonly ready: Promise<void>;
  next(timeout?: Milliseconds, options?: SignalOptions): Promise<Message | null>;
  /** Ends a wait in flight at once. */
  close(): Promise<void>;
  /** `for await`: break closes the subscription. */
  [Symbol.asyncIterator](): AsyncIterableIterator<Message>;
  [Symbol.asyncDispose](): Promise<void>;
}

/** queue.consume(): `for await`; break, return(), `await using`, the signal
 * or store.close() end it at once, giving back what it prefetched. */
export class Consumer implements AsyncIterableIterator<ConsumedMessage> {
  next(): Promise<IteratorResult<ConsumedMessage, undefined>>;
  return(value?: unknown): Promise<IteratorResult<ConsumedMessage, undefined>>;
  throw(err?: unknown): Promise<IteratorResult<ConsumedMessage, undefined>>;
  [Symbol.asyncIterator](): Consumer;
  [Symbol.asyncDispose](): Promise<void>;
}

/** Thrown or returned by a Worker's handler: the message goes back unseen,
 * claimable again delayMs from now (queue.snooze: no attempt used). */
export class Snooze extends Error {
  constructor(delayMs?: Milliseconds);
  readonly delayMs: Milliseconds;
}

export interface WorkerOptions {
  /** Handlers running at once (>= 1; default 1). */
  concurrency?: number;
  /** Messages claimed ahead of the handlers and held (>= 0; default 0). */
  prefetch?: number;
  /** The lease of each delivery, and what each renewal extends it by (ms; default the store's). */
  lease?: Milliseconds;
  /** How often a running handler's lease is renewed (ms; default lease / 3). */
  heartbeat?: Milliseconds;
  /** How long one dequeue waits for a message (ms, > 0; default 1000; stop() ends it at once). */
  wait?: Milliseconds;
}
export interface WorkerStopOptions {
  /** ms; then the handlers still running are given back (snooze 0) and their results ignored. */
  timeout?: Milliseconds;
}
/** The second argument of a Worker's handler. */
export interface HandlerContext {
  /** Aborts when the delivery is no longer the worker's: stalled, or given back at stop's deadline. */
  signal: AbortSignal;
}
/** Returns (or resolves): acked; a value (VALUES.md; not undefined) is the ack's result (kept under
 * queue_done_retention), one the store refuses fails the job. Throws (or rejects): nacked with the error's
 * text and the store's backoff. A Snooze thrown or returned: snoozed. */
export type WorkerHandler = (message: Message, context: HandlerContext) => unknown;
export interface WorkerCounters {
  readonly claimed: number;
  readonly completed: number;
  readonly failed: number;
  readonly snoozed: number;
  readonly stalled: number;
  /** Given back unseen at stop: prefetched, or still running at its deadline. */
  readonly released: number;
  /** Handlers running now. */
  readonly running: number;
}
export interface WorkerEvents {
  /** Acked; result: what the handler returned. */
  completed: [message: Message, result: unknown];
  /** Nacked; error: what the handler threw. */
  failed: [message: Message, error: unknown];
  /** The lease ended or moved on (StaleToken): neither acked nor nacked. */
  stalled: [message: Message];
  /** The worker's own store errors and its hooks' exceptions (message: the delivery concerned). */
  error: [error: unknown, message?: Message];
}

/** Runs handler on the messages of topic, `concurrency` at a time; starts at once. */
export class Worker extends EventEmitter {
  constructor(store: AsyncStore, topic: Name, handler: WorkerHandler, options?: WorkerOptions);
  readonly topic: Name;
  /** A snapshot. */
  readonly counters: WorkerCounters;
  /** Stops claiming, gives back the prefetched, waits for the running (up to timeout); the counters. */
  stop(options?: WorkerStopOptions): Promise<WorkerCounters>;
  on<K extends keyof WorkerEvents>(event: K, listener: (...args: WorkerEvents[K]) => void): this;
  once<K extends keyof WorkerEvents>(event: K, listener: (...args: WorkerEvents[K]) => void): this;
  off<K extends keyof WorkerEvents>(event: K, listener: (...args: WorkerEvents[K]) => void): this;
  [Symbol.asyncDispose](): Promise<void>;
}

interface PubSubOf<Sync extends boolean> {
  publish(channel: Name, data: Buffer | Uint8Array | string): R<Sync, void>;
  /** A signal closes the subscription when it aborts. */
  subscribe(channel: Name, options?: SignalOptions): Sync extends true ? Subscription : AsyncSubscription;
}

export class Store {
  readonly kv: KVOf<true>;
  readonly queue: QueueOf<true>;
  readonly lease: LeasesOf<true>;
  readonly outbox: OutboxOf<true>;
  readonly budget: BudgetsOf<true>;
  readonly schedule: SchedulesOf<true>;
  readonly clock: ClockOf<true>;
  readonly pubsub: PubSubOf<true>;
  readonly backend: string;
  migrate(): void;
  atomic(): Atomic;
  /** A token for attach()/attachAsync() in a worker thread (attach it once). */
  share(): bigint;
  close(): void;
  [Symbol.dispose](): void;
}

export class AsyncStore {
  readonly kv: KVOf<false>;
  readonly queue: QueueOf<false> & {
    /** prefetch: messages leased per dequeue, handed out one by one (their leases run meanwhile). */
    consume(topic: Name, options?: ConsumeOptions): Consumer;
  };
  readonly lease: LeasesOf<false>;
  readonly outbox: OutboxOf<false>;
  readonly budget: BudgetsOf<false>;
  readonly schedule: SchedulesOf<false>;
  readonly clock: ClockOf<false>;
  readonly pubsub: PubSubOf<false>;
  readonly backend: string;
  migrate(): Promise<void>;
  atomic(): Promise<AsyncAtomic>;
  share(): bigint;
  close(): Promise<void>;
  [Symbol.asyncDispose](): Promise<void>;
}

export function open(url: string): Store;
export function openAsync(url: string): Promise<AsyncStore>;
/** A handle on a store another thread shared with store.share(). */
export function attach(token: bigint): Store;
export function attachAsync(token: bigint): Promise<AsyncStore>;

/** `err.code` of bindings/ERRORS.md, one per status. */
export type ErrorCode =
  | 'ERR_BITT_INVALID' | 'ERR_BITT_NOMEM' | 'ERR_BITT_TOO_LARGE' | 'ERR_BITT_NOT_COUNTER' | 'ERR_BITT_OVERFLOW'
  | 'ERR_BITT_CONFLICT' | 'ERR_BITT_BACKEND' | 'ERR_BITT_BUSY' | 'ERR_BITT_SCHEMA' | 'ERR_BITT_URL'
  | 'ERR_BITT_CURSOR' | 'ERR_BITT_USAGE' | 'ERR_BITT_UNSUPPORTED' | 'ERR_BITT_TOKEN' | 'ERR_BITT_LEASE_LOST'
  | 'ABORT_ERR';

export class BittError extends Error {
  constructor(status: number, message: string, options?: { cause?: unknown });
  /** The string code, e.g. 'ERR_BITT_CONFLICT'. */
  readonly code: ErrorCode;
  /** The negative bitt status (bitt.h), e.g. -6. */
  readonly status: number;
}
export class InvalidArgument extends BittError { readonly code: 'ERR_BITT_INVALID'; }
export class OutOfMemory extends BittError { readonly code: 'ERR_BITT_NOMEM'; }
export class TooLarge extends BittError { readonly code: 'ERR_BITT_TOO_LARGE'; }
export class NotACounter extends BittError { readonly code: 'ERR_BITT_NOT_COUNTER'; }
export class Overflow extends BittError { readonly code: 'ERR_BITT_OVERFLOW'; }
export class ConflictError extends BittError { readonly code: 'ERR_BITT_CONFLICT'; }
export class BackendError extends BittError { readonly code: 'ERR_BITT_BACKEND'; }
export class BusyError extends BittError { readonly code: 'ERR_BITT_BUSY'; }
export class SchemaError extends BittError { readonly code: 'ERR_BITT_SCHEMA'; }
export class URLError extends BittError { readonly code: 'ERR_BITT_URL'; }
export class CursorError extends BittError { readonly code: 'ERR_BITT_CURSOR'; }
export class UsageError extends BittError { readonly code: 'ERR_BITT_USAGE'; }
export class Unsupported extends BittError { readonly code: 'ERR_BITT_UNSUPPORTED'; }
export class StaleToken extends BittError { readonly code: 'ERR_BITT_TOKEN'; }
export class LeaseLostError extends BittError { readonly code: 'ERR_BITT_LEASE_LOST'; }
/** A wait ended by its AbortSignal (status -16): `cause` is the signal's reason. */
export class AbortError extends BittError { readonly code: 'ABORT_ERR'; readonly name: 'AbortError'; }

export function encodeKey(key: Key): Buffer;
export function decodeTuple(key: Buffer | Uint8Array): TuplePart[];
export function encodeValue(value: Value): [Buffer, number];
export function decodeValue(data: Buffer, kind: number): StoredValue;
/** The SWIG addon itself (raw C calls); not a stable API. */
export const raw: any;
