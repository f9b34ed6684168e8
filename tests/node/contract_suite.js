'use strict';
// Every case of tests/contract/*.json on every backend, through Node: the
// synchronous API on memory and SQLite, the Promise API on every backend
// (PostgreSQL and Redis need BITT_TEST_POSTGRES_URL / BITT_TEST_REDIS_URL;
// BITT_TEST_BACKENDS=memory,sqlite,... narrows the list). The test files
// test_contract_*.js pick the backends.
const { test } = require('node:test');
const fs = require('fs');
const os = require('os');
const path = require('path');
const crypto = require('crypto');
const { loadCases, runCase } = require('./contract');


function wanted(b) {
  const lst = (process.env.BITT_TEST_BACKENDS || '').split(',').filter(Boolean);
  if (!lst.length) return true;
  return lst.includes(b) || lst.includes(b.split('-')[0]);
}

const CASES = loadCases();
const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'bitt-node-contract-'));
const runId = crypto.randomBytes(4).toString('hex');

function caseUrl(backend, mode, stem, idx) {
  if (backend === 'memory') return ['memory:', false];
  if (backend === 'sqlite-memory') return ['sqlite::memory:', false];
  // a lock is waited for however slow the machine (no case is about the wait)
  if (backend === 'sqlite-file') return [`sqlite:${tmp}/${mode}_${stem}_${idx}.db?busy_timeout=600000`, true];
  const env = backend === 'postgres' ? 'BITT_TEST_POSTGRES_URL' : 'BITT_TEST_REDIS_URL';
  const base = process.env[env];
  if (!base) throw new Error(`${env} is not set (exclude ${backend} with BITT_TEST_BACKENDS)`);
  const opt = backend === 'postgres' ? 'schema' : 'prefix';
  return [`${base}${base.includes('?') ? '&' : '?'}${opt}=node_${runId}_${mode}_${stem}_${idx}`, true];
}

/* Registers every case for each [backend, mode] of runs (one test file per
 * group, so that node --test runs the groups side by side). */
function register(runs) {
  for (const [backend, mode] of runs) {
    if (!wanted(backend)) continue;
    CASES.forEach(([stem, c], idx) => {
      test(`${stem}/${c.name} [${backend}, ${mode}]`, async () => {
        const [url, fileBacked] = caseUrl(backend, mode, stem, idx);
        await runCase(url, fileBacked, c, mode);
      });
    });
  }
  test.after(() => fs.rmSync(tmp, { recursive: true, force: true }));
}

module.exports = { register };
