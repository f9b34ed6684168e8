'use strict';
// The entry class (kv.get, take, getMany, page, list), made by the addon's
// entry factory (lib/native.js) with the stored bytes and the core's times;
// lib/model.js decodes it in place for the public API. Apart so that the
// addon's loader needs nothing else.

/* A value as JSON can hold it: a counter (bigint) as its decimal string;
 * a Buffer writes itself (Node's {type: 'Buffer', data: [...]}). */
const jsonable = (v) => (typeof v === 'bigint' ? v.toString() : v);

class Entry {
  constructor(key, value, kind, version, expiresAt) {
    this.key = key;
    this.value = value;
    this.kind = kind;
    this.version = version;
    this.expiresAt = expiresAt;
  }

  /* JSON.stringify(entry): the version as a decimal string, a counter as
   * one too, Buffers as Node writes them, expiresAt as an ISO date or null. */
  toJSON() {
    return { key: this.key, value: jsonable(this.value), kind: this.kind, version: String(this.version),
      expiresAt: this.expiresAt };
  }
}

module.exports = { Entry, jsonable };
