'use strict';
// Results: the addon's arrays (the shapes of src/js_values.hpp) made into
// objects (entries come as objects already). Identities (id, version, epoch,
// seq) and counters stay bigint; counts and durations become numbers
// (milliseconds); absolute times become Dates (null where the core says
// "none" with 0). Each has toJSON, so that JSON.stringify works on it:
// bigints as decimal strings, Dates as ISO strings, Buffers as Node writes
// them.
const { decodeValue, KIND_BYTES } = require('./values');
const { date, optDate } = require('./args');
const { jsonable } = require('./entry');

const num = (b) => Number(b);
// BITT_MSG_*: where a queue message is (null: not a queue message).
const STATES = [null, 'pending', 'delayed', 'leased', 'dead', 'done'];

/* The addon's entry (lib/entry.js), its value decoded and its expiry made
 * a Date (null: none) in place. */
function entry(e) {
  if (e === null) return null;
  if (e.kind !== KIND_BYTES) e.value = decodeValue(e.value, e.kind);
  e.expiresAt = e.expiresAt === 0 ? null : date(e.expiresAt);
  return e;
}

class Message {
  constructor(t) {
    this.id = t[0];
    this.topic = t[1];
    this.payload = t[2];
    this.kind = t[3];
    this.token = t[4];
    this.attempts = t[5];
    this.maxAttempts = t[6];
    this.lastError = t[7];
    this.createdAt = date(t[8]);
    this.dueAt = optDate(t[9]);
    this.failedAt = optDate(t[10]);
    this.parkReason = t[11];
    this.state = STATES[t[12]] ?? null;
    this.priority = t[13];
    // A done message (queue_done_retention): when it was acked, and the
    // result it was acked with (a Buffer; null: none) and that one's kind.
    this.doneAt = optDate(t[14]);
    this.result = t[15];
    this.resultKind = t[16] < 0 ? null : t[16];
  }

  /* The payload decoded by its kind (VALUES.md). */
  get value() {
    return decodeValue(this.payload, this.kind);
  }

  /* The result decoded by its kind as the payload is (undefined: none). */
  get resultValue() {
    return this.result === null ? undefined : decodeValue(this.result, this.resultKind);
  }

  toJSON() {
    return { id: String(this.id), topic: this.topic, value: jsonable(this.value), kind: this.kind, token: this.token,
      attempts: this.attempts, maxAttempts: this.maxAttempts, lastError: this.lastError, createdAt: this.createdAt,
      dueAt: this.dueAt, failedAt: this.failedAt, parkReason: this.parkReason, state: this.state,
      priority: this.priority, doneAt: this.doneAt,
      result: this.result === null ? null : jsonable(this.resultValue), resultKind: this.resultKind };
  }
}

class Schedule {
  constructor(t) {
    this.key = t[0];
    this.interval = num(t[1]);
    this.payload = t[2];
    this.kind = t[3];
    this.nextRunAt = date(t[4]);
    this.occurrence = optDate(t[5]);
    this.cron = t[6]; // null: an interval schedule (interval 0 otherwise)
    this.topic = t[7]; // null: none
    this.messageId = t[8]; // a claim on a topic: the occurrence's message (else 0n)
  }

  get value() {
    return decodeValue(this.payload, this.kind);
  }

  toJSON() {
    return { key: this.key, interval: this.interval, value: jsonable(this.value), kind: this.kind,
      nextRunAt: this.nextRunAt, occurrence: this.occurrence, cron: this.cron, topic: this.topic,
      messageId: String(this.messageId) };
  }
}

class Lease {
  constructor(name, owner, epoch, expiresAt) {
    this.name = name;
    this.owner = owner;
    this.epoch = epoch;
    this.expiresAt = date(expiresAt);
  }

  toJSON() {
    return { name: this.name, owner: this.owner, epoch: String(this.epoch), expiresAt: this.expiresAt };
  }
}

const messages = (list) => list.map((t) => new Message(t));
const message = (t) => (t === null ? null : new Message(t));
const schedule = (t) => (t === null ? null : new Schedule(t));

module.exports = { entry, Message, Schedule, Lease, messages, message, schedule, num };
