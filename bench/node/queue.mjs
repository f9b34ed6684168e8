// bench/node/queue.mjs: the bitt queue on Redis against BullMQ on the same
// server, with 1 and 4 workers.
//
// Both sides run in this one Node process; a "worker" is an async loop (bitt)
// or a BullMQ Worker object (concurrency 1, a no-op processor), each with a
// connection of its own: a bitt worker has its own AsyncStore, a BullMQ Worker
// its own two connections (commands + blocking). The producer has its own
// connection too (a bitt AsyncStore, a BullMQ Queue).
//   enqueue:  bitt queue.enqueue(topic, {i}) vs Queue.add('job', {i},
//             {removeOnComplete, removeOnFail}); both store the payload as
//             JSON. Measured with one call in flight and with `inflight`.
//   process:  the jobs are already queued; the clock runs from starting the
//             workers to the last job done. A bitt worker is the idiomatic
//             `for await` over queue.consume(topic, {prefetch, lease}): a
//             dequeue of up to `prefetch` (BITT_BENCH_PREFETCH, 1 by default:
//             one job leased at a time, as BullMQ) then m.ack() each, not
//             awaited: the acks asked for while one is in flight commit
//             together (ackMany), and the acks of a used-up batch go as the
//             next dequeue is issued; a job is done when its ack committed
//             (ack deletes the message); a BullMQ worker fetches a job, runs
//             the no-op processor and moves it to completed, which deletes it
//             (removeOnComplete) and fetches the next (one round trip a job).
//   enqueue -> done: the workers are running and waiting first; one producer
//             enqueues every job (one in flight); the clock runs from the first
//             enqueue to the last job done.
// The "batch" row is bitt only (consume prefetch BITT_BENCH_BATCH, acks grouped
// as above): BullMQ's open-source Worker has no batch fetch, so its figure there
// is its one-worker figure again.
import { config, inFlight, loadPeer, median, rate, signal, withParam } from './util.mjs';

const LEASE_MS = 60000;

// ---- bitt ---------------------------------------------------------------------

function bittSide(bitt, url, queueWait) {
  let producer;
  return {
    name: 'bitt',
    async start() {
      producer = await bitt.openAsync(url);
    },
    prepare: async () => {},
    enqueue: (topic, i) => producer.queue.enqueue(topic, { i }),
    // Runs `workers` loops, each on a store of its own, until `jobs` are
    // done; resolves to {t0, t1}: just before the first dequeue, the last
    // ack committed. Each loop is the idiomatic consumer: `for await` over
    // queue.consume(topic, {prefetch}) (one dequeue with wait leases up to
    // `prefetch` messages, handed out one by one), then m.ack() without
    // awaiting it: the loop goes on to the next message while the ack
    // commits, and the consumer sends the acks asked for meanwhile in one
    // ackMany (group commit; a job counts as done only once its ack's
    // Promise resolved). The loops still waiting once every job is done end
    // as their stores close (close() waits for the acks in flight).
    async work(topic, jobs, workers, { prefetch = 1, started } = {}) {
      const ws = [];
      for (let w = 0; w < workers; w++) ws.push(await bitt.openAsync(url));
      let done = 0;
      let failed = null;
      const finished = signal();
      const opts = { prefetch, lease: LEASE_MS, wait: queueWait };
      const acked = () => {
        if (++done === jobs) finished.resolve(process.hrtime.bigint());
      };
      const fail = (e) => {
        failed ??= e;
        finished.resolve(process.hrtime.bigint());
      };
      const loop = async (s) => {
        for await (const m of s.queue.consume(topic, opts)) {
          m.ack().then(acked, fail);
          if (done >= jobs || failed) break;
        }
      };
      const t0 = process.hrtime.bigint();
      const loops = ws.map(loop);
      started?.();
      const t1 = await Promise.race([finished.promise, Promise.all(loops).then(() => process.hrtime.bigint())]);
      await Promise.all(ws.map((s) => s.close()));
      await Promise.all(loops);
      if (failed) throw failed;
      if (done !== jobs) throw new Error(`bitt workers did ${done} of ${jobs} jobs`);
      return { t0, t1 };
    },
    // One bitt.Worker (issue 23) with `concurrency` handlers on a store of
    // its own, a no-op handler: jobs/s from its start to the last job acked.
    async workerRun(topic, jobs, concurrency) {
      const store = await bitt.openAsync(url);
      const finished = signal();
      let done = 0;
      const w = new bitt.Worker(store, topic, async () => {}, { concurrency, lease: LEASE_MS, wait: queueWait });
      w.on('completed', () => {
        if (++done === jobs) finished.resolve(process.hrtime.bigint());
      });
      w.on('failed', (_m, e) => finished.reject(e));
      w.on('error', (e) => finished.reject(e));
      const t0 = process.hrtime.bigint();
      const t1 = await finished.promise;
      await w.stop({ timeout: 10_000 });
      await store.close();
      return { t0, t1 };
    },
    async close() {
      await producer?.close();
    },
  };
}

// ---- BullMQ -------------------------------------------------------------------

function redisOptions(url) {
  const u = new URL(url);
  return {
    host: u.hostname,
    port: Number(u.port || 6379),
    db: Number(u.pathname.slice(1) || 0),
    ...(u.password ? { password: decodeURIComponent(u.password) } : {}),
    ...(u.username ? { username: decodeURIComponent(u.username) } : {}),
  };
}

function bullSide(url, prefix) {
  const { Queue, Worker } = loadPeer('bullmq');
  const connection = redisOptions(url);
  const queues = new Map();
  const jobOpts = { removeOnComplete: true, removeOnFail: true };
  // One Queue per topic, made on first use (the map holds it at once, so
  // calls in flight share it).
  const queue = (topic) => {
    if (!queues.has(topic)) queues.set(topic, new Queue(topic, { connection, prefix }));
    return queues.get(topic);
  };
  return {
    name: 'BullMQ',
    async start() {},
    prepare: (topic) => queue(topic).waitUntilReady(),
    enqueue: (topic, i) => queue(topic).add('job', { i }, jobOpts),
    async work(topic, jobs, workers, { started } = {}) {
      const ws = [];
      let done = 0;
      let failed = null;
      const finished = signal();
      const fail = (err) => {
        if (done < jobs && !failed) failed = err;
        finished.resolve(process.hrtime.bigint());
      };
      for (let w = 0; w < workers; w++) {
        const wk = new Worker(topic, async () => {}, { connection, prefix, concurrency: 1, autorun: false });
        wk.on('completed', () => {
          if (++done === jobs) finished.resolve(process.hrtime.bigint());
        });
        wk.on('failed', (_job, err) => fail(err));
        wk.on('error', fail);
        await wk.waitUntilReady();
        ws.push(wk);
      }
      await this.prepare(topic); // the producer's Queue is connected before the clock starts
      const t0 = process.hrtime.bigint();
      const runs = ws.map((wk) => wk.run());
      started?.();
      const t1 = await finished.promise;
      await Promise.all(ws.map((wk) => wk.close()));
      await Promise.all(runs);
      if (failed) throw failed;
      return { t0, t1 };
    },
    // One BullMQ Worker with `concurrency`, the same no-op processor.
    async workerRun(topic, jobs, concurrency) {
      const finished = signal();
      let done = 0;
      const wk = new Worker(topic, async () => {}, { connection, prefix, concurrency, autorun: false });
      wk.on('completed', () => {
        if (++done === jobs) finished.resolve(process.hrtime.bigint());
      });
      wk.on('failed', (_job, err) => finished.reject(err));
      wk.on('error', (err) => finished.reject(err));
      await wk.waitUntilReady();
      await this.prepare(topic);
      const t0 = process.hrtime.bigint();
      const run = wk.run();
      const t1 = await finished.promise;
      await wk.close();
      await run;
      return { t0, t1 };
    },
    async close() {
      for (const q of queues.values()) {
        await q.obliterate({ force: true });
        await q.close();
      }
    },
  };
}

// ---- the measurements ---------------------------------------------------------

const secs = (a, b) => Number(b - a) / 1e9;

async function enqueueAll(side, topic, jobs, width) {
  await side.prepare(topic);
  if (width === 1) {
    return rate(jobs, async () => {
      for (let i = 0; i < jobs; i++) await side.enqueue(topic, i);
    });
  }
  return rate(jobs, () => inFlight(jobs, width, (i) => side.enqueue(topic, i)));
}

async function processRate(side, topic, jobs, workers, opts) {
  const { t0, t1 } = await side.work(topic, jobs, workers, opts);
  return jobs / secs(t0, t1);
}

async function workerRate(side, topic, jobs, concurrency) {
  const { t0, t1 } = await side.workerRun(topic, jobs, concurrency);
  return jobs / secs(t0, t1);
}

// Workers first (waiting), then the producer: jobs/s from first enqueue to last done.
async function endToEnd(side, topic, jobs, workers) {
  let producing;
  const go = signal();
  const work = side.work(topic, jobs, workers, { prefetch: config.prefetch, started: go.resolve });
  await go.promise;
  const t0 = process.hrtime.bigint();
  producing = (async () => {
    for (let i = 0; i < jobs; i++) await side.enqueue(topic, i);
  })();
  const { t1 } = await work;
  await producing;
  return jobs / secs(t0, t1);
}

// The measurements of one round, in order: [name, body(side, topic)]; a
// process step works off the jobs its enqueue step left under the same topic.
function steps() {
  const { jobs, inflight, batch, prefetch } = config;
  return [
    ['enq1', (side, t) => enqueueAll(side, `p1-${t}`, jobs, 1)],
    ['proc1', (side, t) => processRate(side, `p1-${t}`, jobs, 1, { prefetch })],
    ['enqN', (side, t) => enqueueAll(side, `p4-${t}`, jobs, inflight)],
    ['proc4', (side, t) => processRate(side, `p4-${t}`, jobs, 4, { prefetch })],
    ['e2e1', (side, t) => endToEnd(side, `e1-${t}`, jobs, 1)],
    ['e2e4', (side, t) => endToEnd(side, `e4-${t}`, jobs, 4)],
    ['-', (side, t) => side.name === 'bitt' && enqueueAll(side, `pb-${t}`, jobs, inflight)],
    ['procB', (side, t) => side.name === 'bitt' && processRate(side, `pb-${t}`, jobs, 1, { prefetch: batch })],
    ['-', (side, t) => enqueueAll(side, `w4-${t}`, jobs, inflight)],
    ['wrk4', (side, t) => workerRate(side, `w4-${t}`, jobs, 4)],
  ];
}

export async function benchQueue(bitt, tag, { queueWait }) {
  const { rounds, redisUrl, inflight, batch, prefetch } = config;
  const sides = [bullSide(redisUrl, `${tag}:bull`)];
  if (bitt) sides.unshift(bittSide(bitt, withParam(redisUrl, 'prefix', `${tag}:bq`), queueWait));
  const got = new Map(sides.map((s) => [s, {}]));
  try {
    for (const s of sides) await s.start();
    // Each step runs on one side then the other (first one, then the other
    // first, round by round), so that drift hits both alike.
    for (let r = 0; r < rounds; r++) {
      const order = r % 2 ? [...sides].reverse() : sides;
      for (const [name, body] of steps()) {
        for (const s of order) {
          const v = await body(s, r);
          if (typeof v === 'number' && name !== '-') (got.get(s)[name] ??= []).push(v);
        }
      }
    }
  } finally {
    for (const s of sides) await s.close();
  }
  const pick = (name, k) => {
    const s = sides.find((x) => x.name === name);
    return s ? median(got.get(s)[k] ?? []) : null;
  };
  const row = (op, k, kb = k) => ({ op, bitt: pick('bitt', kb), peerName: 'BullMQ', peer: pick('BullMQ', k) });
  const pf = prefetch > 1 ? `, bitt prefetch ${prefetch}` : '';
  return [
    row('queue enqueue, sequential', 'enq1'),
    row(`queue enqueue, ${inflight} in flight`, 'enqN'),
    row(`queue process, 1 worker${pf}`, 'proc1'),
    row(`queue process, 4 workers${pf}`, 'proc4'),
    row(`queue enqueue->done, 1 worker${pf}`, 'e2e1'),
    row(`queue enqueue->done, 4 workers${pf}`, 'e2e4'),
    row(`queue process, 1 worker, bitt prefetch ${batch}`, 'proc1', 'procB'),
    row('queue process, one Worker of concurrency 4 (bitt.Worker, BullMQ Worker)', 'wrk4'),
    { op: 'queue process, bitt.Worker of concurrency 4 / bitt 4 plain loops', bitt: pick('bitt', 'wrk4'), peerName: 'bitt loops', peer: pick('bitt', 'proc4') },
  ];
}
