'use strict';
// Results: the addon's arrays (the shapes of src/js_values.hpp) made into
// objects. Identities (id, version, epoch, seq) and counters stay bigint;
// times, durations and counts become numbers (milliseconds fit exactly).
const { decodeValue } = require('./values');

const num = (b) => Number(b);

function entry(t) {
  if (t === null) return null;
  return { key: t[0], value: decodeValue(t[1], t[2]), kind: t[2], version: t[3], expiresAt: num(t[4]) };
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
