// Type declarations of the bitt package (lib/index.js).
// Values follow bindings/VALUES.md: Buffer/Uint8Array as bytes, bigint as a
// counter, anything else JSON can hold as JSON. Identities (ids, versions,
// epochs, sequence numbers) and counters are bigint; times, durations and
// counts are numbers of milliseconds.

/// <reference types="node" />

export type Key = Buffer | Uint8Array | string | TuplePart[];
export type TuplePart = Buffer | Uint8Array | string | bigint | number | boolean;
export type JsonValue = null | boolean | number | string | JsonValue[] | { [k: string]: JsonValue };
export type Value = Buffer | Uint8Array | bigint | JsonValue;
export type Name = string | Buffer;
export type Int = number | bigint;

export const KIND_BYTES: 0;
export const KIND_JSON: 1;
export const KIND_COUNTER: 2;
export const version: string;

export interface Entry {
  key: Buffer;
  value: Value;
  kind: number;
  version: bigint;
  expiresAt: number;
}

export class Message {
  readonly id: bigint;
  readonly topic: string;
  readonly payload: Buffer;
  readonly kind: number;
  readonly token: string | null;
  readonly attempts: number;
  readonly maxAttempts: number;
  readonly lastError: string | null;
  readonly createdAt: number;
  readonly dueAt: number;
  readonly failedAt: number;
  readonly parkReason: number;
  /** The payload decoded by its kind. */
  readonly value: Value;
}

/** A message handed out by queue.consume(). */
export interface ConsumedMessage extends Message {
  /** Resolves once the ack is committed; acks asked for while another of the
   * same consumer is in flight (or in the same event-loop turn) commit
   * together in one ackMany. Rejects with StaleToken for this message alone. */
  ack(): Promise<void>;
  nack(error?: string | null, options?: { delay?: Int }): Promise<void>;
  extend(lease: Int): Promise<void>;
}

export class Schedule {
  readonly key: string;
  readonly interval: number;
  readonly payload: Buffer;
  readonly kind: number;
  readonly nextRunAt: number;
  readonly occurrence: number;
  readonly value: Value;
}

export interface Lease {
  name: string;
  owner: string;
  epoch: bigint;
  expiresAt: number;
}

export interface QueueStats {
  pending: number;
  delayed: number;
  processing: number;
  dead: number;
  oldestPendingAt: number;
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
export interface TtlOptions { ttl?: Int }
export interface EnqueueOptions { delay?: Int; maxAttempts?: number; dedupKey?: Key | null }
export interface DequeueOptions { limit?: number; lease?: Int; wait?: Int }
export interface ConsumeOptions extends DequeueOptions { prefetch?: number }
export interface BudgetOptions { capacity: Int; refill: Int; period: Int; n?: Int }
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
  dequeue(topic: Name, options?: DequeueOptions): R<Sync, Message[]>;
  ack(msg: Message): R<Sync, void>;
  /** Acks many deliveries of topic in one transaction: true per acked one,
   * false where the token was stale (at most 1000 at once). */
  ackMany(topic: Name, deliveries: Array<Message | [Int, string]>): R<Sync, boolean[]>;
  nack(msg: Message, error?: string | null, options?: { delay?: Int }): R<Sync, void>;
  extend(msg: Message, lease: Int): R<Sync, void>;
  deadList(topic: Name, options?: { after?: Int; limit?: number }): R<Sync, Message[]>;
  deadRetry(topic: Name, id?: Int): R<Sync, number>;
  deadDelete(topic: Name, id?: Int): R<Sync, number>;
  stats(topic: Name): R<Sync, QueueStats>;
}
interface LeasesOf<Sync extends boolean> {
  acquire(name: Name, owner: Name, ttl: Int): R<Sync, Lease | null>;
  renew(name: Name, owner: Name, epoch: Int, ttl: Int): R<Sync, number>;
  release(name: Name, owner: Name, epoch: Int): R<Sync, void>;
  get(name: Name): R<Sync, Lease | null>;
}
interface OutboxOf<Sync extends boolean> {
  append(stream: Name, event: Value): R<Sync, bigint>;
  pending(stream: Name, limit?: number): R<Sync, Message[]>;
  ack(stream: Name, seqs: Int[]): R<Sync, number>;
  fail(stream: Name, seq: Int, error?: string | null, nextAttemptAt?: Int): R<Sync, boolean>;
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
  upsert(key: Name, interval: Int, payload?: Value, options?: { firstRunAt?: Int }): R<Sync, void>;
  claim(prefix?: Name | null): R<Sync, Schedule | null>;
  get(key: Name): R<Sync, Schedule | null>;
  list(): R<Sync, Schedule[]>;
  delete(key: Name): R<Sync, boolean>;
}
interface ClockOf<Sync extends boolean> {
  setManual(nowMs: Int): R<Sync, void>;
  advance(ms: Int): R<Sync, void>;
  useSystem(): R<Sync, void>;
  now(): R<Sync, number>;
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
  close(): void;
}
export class Atomic extends AtomicBase<Atomic> {
  commit(): bigint;
}
export class AsyncAtomic extends AtomicBase<AsyncAtomic> {
  commit(): Promise<bigint>;
}

export class Subscription {
  next(timeout?: number): Message | null;
  close(): void;
}
export class AsyncSubscription implements AsyncIterable<Message> {
  /** Settles once the subscription is in place. */
  readonly ready: Promise<void>;
  next(timeout?: number): Promise<Message | null>;
  close(): Promise<void>;
  [Symbol.asyncIterator](): AsyncGenerator<Message, void>;
}

export class Store {
  readonly kv: KVOf<true>;
  readonly queue: QueueOf<true>;
  readonly lease: LeasesOf<true>;
  readonly outbox: OutboxOf<true>;
  readonly budget: BudgetsOf<true>;
  readonly schedule: SchedulesOf<true>;
  readonly clock: ClockOf<true>;
  readonly pubsub: {
    publish(channel: Name, data: Buffer | Uint8Array | string): void;
    subscribe(channel: Name): Subscription;
  };
  readonly backend: string;
  migrate(): void;
  atomic(): Atomic;
  /** A token for attach()/attachAsync() in a worker thread (attach it once). */
  share(): bigint;
  close(): void;
}

export class AsyncStore {
  readonly kv: KVOf<false>;
  readonly queue: QueueOf<false> & {
    /** prefetch: messages leased per dequeue, handed out one by one (their leases run meanwhile). */
    consume(topic: Name, options?: ConsumeOptions): AsyncGenerator<ConsumedMessage, void>;
  };
  readonly lease: LeasesOf<false>;
  readonly outbox: OutboxOf<false>;
  readonly budget: BudgetsOf<false>;
  readonly schedule: SchedulesOf<false>;
  readonly clock: ClockOf<false>;
  readonly pubsub: {
    publish(channel: Name, data: Buffer | Uint8Array | string): Promise<void>;
    subscribe(channel: Name): AsyncSubscription;
  };
  readonly backend: string;
  migrate(): Promise<void>;
  atomic(): Promise<AsyncAtomic>;
  share(): bigint;
  close(): Promise<void>;
}

export function open(url: string): Store;
export function openAsync(url: string): Promise<AsyncStore>;
/** A handle on a store another thread shared with store.share(). */
export function attach(token: bigint): Store;
export function attachAsync(token: bigint): Promise<AsyncStore>;

export class BittError extends Error {
  /** The negative bitt status (bitt.h). */
  readonly code: number;
  /** Its stable name, e.g. 'ERR_BITT_CONFLICT'. */
  readonly codeName: string;
}
export class InvalidArgument extends BittError {}
export class OutOfMemory extends BittError {}
export class TooLarge extends BittError {}
export class NotACounter extends BittError {}
export class Overflow extends BittError {}
export class ConflictError extends BittError {}
export class BackendError extends BittError {}
export class BusyError extends BittError {}
export class SchemaError extends BittError {}
export class URLError extends BittError {}
export class CursorError extends BittError {}
export class UsageError extends BittError {}
export class Unsupported extends BittError {}
export class StaleToken extends BittError {}
export class LeaseLostError extends BittError {}

export function encodeKey(key: Key): Buffer;
export function decodeTuple(key: Buffer | Uint8Array): TuplePart[];
export function encodeValue(value: Value): [Buffer, number];
export function decodeValue(data: Buffer, kind: number): Value;
/** The SWIG addon itself (raw C calls); not a stable API. */
export const raw: any;
