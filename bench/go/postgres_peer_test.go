package bench

// The PostgreSQL peer: pgx on one connection (pgx.Conn, no pool) sending the
// statements bitt's PostgreSQL backend sends (core/postgres/kv.c, commit.c,
// params.c), prepared once, on the same tables (kv, sequence versionstamp),
// with the same session settings (statement_timeout, idle-in-transaction
// timeout, READ COMMITTED):
//
//   - set: one pipeline, one implicit transaction (a pgx.Batch: every
//     statement then one Sync): SELECT count(pg_advisory_xact_lock(h)) FROM
//     unnest($1::int8[]) on the key's lock key; SELECT nextval(versionstamp);
//     INSERT ... ON CONFLICT (key) DO UPDATE with currval(versionstamp);
//   - increment: the same pipeline with bitt's sum upsert (RETURNING value);
//   - get: SELECT value, kind, version, expires_at WHERE key = $1 AND the row
//     is live at COALESCE($2, the server's now); $2 NULL as bitt sends it.
//
// pgxPoolPeer is the same on a pgxpool.Pool of bittPgPool connections (each
// prepared and set up as above when it connects), for many goroutines.
//
// For reference, less than bitt does: plainUpsert (one autocommit INSERT ...
// ON CONFLICT DO UPDATE SET value, no lock, no versionstamp) and plainSelect
// (SELECT value WHERE key = $1).

import (
	"context"
	"encoding/binary"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
)

const pgxSchema = "bench_go_pgx"

const (
	pgNow      = `COALESCE($%d::int8, floor(extract(epoch FROM statement_timestamp()) * 1000)::int8)`
	pgLockSQL  = `SELECT count(pg_advisory_xact_lock(h)) FROM unnest($1::int8[]) AS u(h)`
	pgStampSQL = `SELECT nextval('@versionstamp')`
	pgGetSQL   = `SELECT value, kind, version, expires_at FROM @kv WHERE key = $1::bytea
AND (expires_at IS NULL OR expires_at > NOW2)`
	pgSetSQL = `INSERT INTO @kv AS t (key, value, kind, version, expires_at) VALUES ($1::bytea,
$2::bytea, $3::int4, currval('@versionstamp'), CASE WHEN $4::int8 = 0 THEN NULL ELSE
(CASE WHEN ($4::int8) > 9223372036854775807 - (NOW5) THEN 9223372036854775807 ELSE (NOW5) + ($4::int8) END)
END) ON CONFLICT (key) DO UPDATE SET value = excluded.value, kind = excluded.kind,
version = excluded.version, expires_at = excluded.expires_at`
	pgSumExpired = `(t.expires_at IS NOT NULL AND t.expires_at <= NOW4)`
	pgSumSQL     = `INSERT INTO @kv AS t (key, value, kind, version, expires_at) VALUES ($1::bytea,
convert_to($2::int8::text, 'UTF8'), 2, currval('@versionstamp'), CASE WHEN $3::int8 = 0 THEN NULL ELSE
(CASE WHEN ($3::int8) > 9223372036854775807 - (NOW4) THEN 9223372036854775807 ELSE (NOW4) + ($3::int8) END)
END) ON CONFLICT (key) DO UPDATE SET
value = CASE WHEN EXPIRED THEN excluded.value
ELSE convert_to(((CASE WHEN t.kind = 2 THEN convert_from(t.value, 'UTF8')
ELSE 'bitt: not a counter: ' || t.kind END)::int8 + $2::int8)::text, 'UTF8') END,
kind = 2, version = excluded.version,
expires_at = CASE WHEN EXPIRED THEN excluded.expires_at ELSE t.expires_at END RETURNING value`
	pgPlainUpsertSQL = `INSERT INTO @kv (key, value, kind, version, expires_at) VALUES ($1::bytea,
$2::bytea, 0, 1, NULL) ON CONFLICT (key) DO UPDATE SET value = excluded.value`
	pgPlainSelectSQL = `SELECT value FROM @kv WHERE key = $1::bytea`
)

// pgSQL expands a statement: @name is the schema's table, NOWn the time
// expression over $n.
func pgSQL(s string) string {
	s = strings.ReplaceAll(s, "EXPIRED", pgSumExpired)
	for _, n := range []string{"2", "4", "5"} {
		s = strings.ReplaceAll(s, "NOW"+n, strings.Replace(pgNow, "%d", n, 1))
	}
	return strings.ReplaceAll(s, "@", `"`+pgxSchema+`".`)
}

// pgxDB is a pgx.Conn or a pgxpool.Pool.
type pgxDB interface {
	SendBatch(ctx context.Context, b *pgx.Batch) pgx.BatchResults
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
}

type pgxRef struct {
	c    pgxDB
	seed uint64
}

// bittPgPool is the size of bitt's pool of PostgreSQL connections (URL
// option pool, default 16); the pgx pool gets as many.
const bittPgPool = 16

var thePgxPeer *pgxRef

func pgxPeer(b *testing.B) *pgxRef {
	if thePgxPeer != nil {
		return thePgxPeer
	}
	url := serverURL(b, "BITT_BENCH_POSTGRES_URL")
	c, err := pgx.Connect(bg, url)
	must(b, err, "pgx connect")
	p := &pgxRef{c: c, seed: fnv(0xcbf29ce484222325, []byte(pgxSchema))}
	atExit(func() { c.Close(bg) })
	newSchema(b, c, pgxSchema)
	for _, s := range []string{
		pgSQL(`CREATE TABLE @kv (key bytea PRIMARY KEY, value bytea NOT NULL, kind integer NOT NULL,
		 version bigint NOT NULL, expires_at bigint)`),
		pgSQL(`CREATE INDEX kv_expires ON @kv (expires_at) WHERE expires_at IS NOT NULL`),
		pgSQL(`CREATE SEQUENCE @versionstamp`),
		// The preload: every key, so gets always hit.
		pgSQL(`INSERT INTO @kv SELECT convert_to('key:' || lpad(i::text, 8, '0'), 'UTF8'),
		 convert_to(repeat('v', 64), 'UTF8'), 0, nextval('@versionstamp'), NULL
		 FROM generate_series(0, 9999) AS i`),
	} {
		_, err = c.Exec(bg, s)
		must(b, err, s)
	}
	must(b, pgxSession(bg, c), "pgx session")
	thePgxPeer = p
	return p
}

// pgxSession sets c up as bitt sets up its connections, and prepares the
// statements.
func pgxSession(ctx context.Context, c *pgx.Conn) error {
	_, err := c.Exec(ctx, `SELECT set_config('statement_timeout', '30000', false),
		 set_config('idle_in_transaction_session_timeout', '30000', false),
		 set_config('default_transaction_isolation', 'read committed', false)`)
	for name, s := range map[string]string{
		"lock": pgLockSQL, "stamp": pgSQL(pgStampSQL), "get": pgSQL(pgGetSQL),
		"set": pgSQL(pgSetSQL), "sum": pgSQL(pgSumSQL),
		"plain_upsert": pgSQL(pgPlainUpsertSQL), "plain_select": pgSQL(pgPlainSelectSQL),
	} {
		if err == nil {
			_, err = c.Prepare(ctx, name, s)
		}
	}
	return err
}

var thePgxPoolPeer *pgxRef

// pgxPoolPeer is pgxPeer's tables on a pool of bittPgPool connections.
func pgxPoolPeer(b *testing.B) *pgxRef {
	if thePgxPoolPeer != nil {
		return thePgxPoolPeer
	}
	one := pgxPeer(b) // makes the tables
	cfg, err := pgxpool.ParseConfig(serverURL(b, "BITT_BENCH_POSTGRES_URL"))
	must(b, err, "pgxpool config")
	cfg.MaxConns = bittPgPool
	cfg.AfterConnect = pgxSession
	pool, err := pgxpool.NewWithConfig(bg, cfg)
	must(b, err, "pgxpool")
	atExit(pool.Close) // runs before the tables are dropped
	thePgxPoolPeer = &pgxRef{c: pool, seed: one.seed}
	return thePgxPoolPeer
}

type execer interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
}

// newSchema makes schema anew, empty; it is dropped when the run ends
// (before db closes, when db's close was registered first).
func newSchema(b *testing.B, db execer, schema string) {
	drop := `DROP SCHEMA IF EXISTS ` + schema + ` CASCADE`
	for _, s := range []string{drop, `CREATE SCHEMA ` + schema} {
		_, err := db.Exec(bg, s)
		must(b, err, s)
	}
	atExit(func() { db.Exec(bg, drop) })
}

func fnv(h uint64, data []byte) uint64 {
	for _, c := range data {
		h ^= uint64(c)
		h *= 0x100000001b3
	}
	return h
}

// lockKey is bitt's advisory lock key of a KV key (bitt__pg_lock_key): tag
// and lengths, then the key, hashed and mixed.
func (p *pgxRef) lockKey(key []byte) int64 {
	var head [17]byte
	head[0] = 'k'
	binary.BigEndian.PutUint64(head[1:], uint64(len(key)))
	h := fnv(fnv(p.seed, head[:]), key)
	h ^= h >> 33
	h *= 0xff51afd7ed558ccd
	h ^= h >> 33
	return int64(h)
}

// pipeline sends lock, versionstamp and the write as one batch and reads
// every result, as bitt reads the version back.
func (p *pgxRef) pipeline(key []byte, write string, args ...any) error {
	batch := &pgx.Batch{}
	batch.Queue("lock", []int64{p.lockKey(key)})
	batch.Queue("stamp")
	batch.Queue(write, args...)
	br := p.c.SendBatch(bg, batch)
	var locks, version int64
	err := br.QueryRow().Scan(&locks)
	if err == nil {
		err = br.QueryRow().Scan(&version)
	}
	if err == nil && write == "sum" {
		var value []byte
		err = br.QueryRow().Scan(&value)
	} else if err == nil {
		_, err = br.Exec()
	}
	if cerr := br.Close(); err == nil {
		err = cerr
	}
	return err
}

func (p *pgxRef) set(key []byte) error {
	return p.pipeline(key, "set", key, benchValue, int32(0), int64(0), nil)
}

func (p *pgxRef) increment(key []byte) error {
	return p.pipeline(key, "sum", key, int64(1), int64(0), nil)
}

func (p *pgxRef) get(key []byte) error {
	var (
		value   []byte
		kind    int32
		version int64
		expires *int64
	)
	return p.c.QueryRow(bg, "get", key, nil).Scan(&value, &kind, &version, &expires)
}

func (p *pgxRef) plainUpsert(key []byte) error {
	_, err := p.c.Exec(bg, "plain_upsert", key, benchValue)
	return err
}

func (p *pgxRef) plainSelect(key []byte) error {
	var value []byte
	return p.c.QueryRow(bg, "plain_select", key).Scan(&value)
}
