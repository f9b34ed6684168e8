'use strict';
// Results: the addon's arrays (the shapes of src/js_values.hpp) made into
// objects (entries come as objects already). Identities (id, version, epoch,
// seq) and counters stay bigint; times, durations and counts become numbers
// (milliseconds fit exactly).
const { decodeValue, KIND_BYTES } = require('./values');

const num = (b) => Number(b);

/* The addon's entry object (src/js_values.hpp), its value decoded in place. */
function entry(e) {
  if (e === null) return null;
  if (e.kind !== KIND_BYTES) e.value = decodeValue(e.value, e.kind);
  if (typeof e.expiresAt === 'bigint') e.expiresAt = num(e.expiresAt); // a saturated "never", past 2^53
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
    this.createdAt = num(t[8]);
    this.dueAt = num(t[9]);
    this.failedAt = num(t[10]);
    this.parkReason = t[11];
  }

  /* The payload decoded by its kind (VALUES.md). */
  get value() {
    return decodeValue(this.payload, this.kind);
  }
}

class Schedule {
  constructor(t) {
    this.key = t[0];
    this.interval = num(t[1]);
    this.payload = t[2];
    this.kind = t[3];
    this.nextRunAt = num(t[4]);
    this.occurrence = num(t[5]);
  }

  get value() {
    return decodeValue(this.payload, this.kind);
  }
}

const messages = (list) => list.map((t) => new Message(t));
const message = (t) => (t === null ? null : new Message(t));
const schedule = (t) => (t === null ? null : new Schedule(t));

module.exports = { entry, Message, Schedule, messages, message, schedule, num };
