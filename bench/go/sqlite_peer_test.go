package bench

// The SQLite peer: database/sql with mattn/go-sqlite3 doing what bitt's SQLite
// backend does (core/sqlite/conn.c, schema.c, commit.c, kv.c), one connection:
//
//   - the same tables (meta, kv WITHOUT ROWID, the partial expiry index) and
//     pragmas (WAL, synchronous=NORMAL, cache_size=-65536, busy_timeout 5000);
//   - set: BEGIN IMMEDIATE; UPDATE meta SET value = value + 1 WHERE name =
//     'versionstamp'; SELECT value FROM meta WHERE name = 'versionstamp';
//     INSERT ... ON CONFLICT (key) DO UPDATE (the versionstamp as the row's
//     version, expires_at NULL); COMMIT;
//   - get: SELECT value, kind, version, expires_at WHERE key = ?1 AND
//     (expires_at IS NULL OR expires_at > ?2), now bound as ms.
//
// Every statement is prepared once. bareUpsert is less than bitt does (one
// autocommit upsert, no versionstamp), shown for reference only.

import (
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	_ "github.com/mattn/go-sqlite3"
)

const sqliteDDL = `
CREATE TABLE IF NOT EXISTS meta (name TEXT PRIMARY KEY, value INTEGER NOT NULL) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS kv (key BLOB PRIMARY KEY, value BLOB NOT NULL, kind INTEGER NOT NULL,
  version INTEGER NOT NULL, expires_at INTEGER) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS kv_expires ON kv (expires_at) WHERE expires_at IS NOT NULL;
INSERT OR IGNORE INTO meta (name, value) VALUES ('versionstamp', 0);`

const (
	sqliteStampSQL     = `UPDATE meta SET value = value + 1 WHERE name = 'versionstamp'`
	sqliteStampReadSQL = `SELECT value FROM meta WHERE name = 'versionstamp'`
	sqliteUpsertSQL    = `INSERT INTO kv (key, value, kind, version, expires_at) VALUES (?1, ?2, ?3, ?4, ?5)
ON CONFLICT (key) DO UPDATE SET value = excluded.value, kind = excluded.kind,
version = excluded.version, expires_at = excluded.expires_at`
	sqliteGetSQL = `SELECT value, kind, version, expires_at FROM kv WHERE key = ?1
AND (expires_at IS NULL OR expires_at > ?2)`
)

type sqliteRef struct {
	db                              *sql.DB
	stamp, stampRead, upsert, query *sql.Stmt
	bareVersion                     int64
}

var sqliteDir string

// benchDir is a temporary directory for this process's SQLite files.
func benchDir(b *testing.B) string {
	if sqliteDir == "" {
		d, err := os.MkdirTemp("", "bitt-gobench-")
		must(b, err, "temp dir")
		sqliteDir = d
		atExit(func() { os.RemoveAll(d) })
	}
	return sqliteDir
}

var theSQLitePeer *sqliteRef

func sqlitePeer(b *testing.B) *sqliteRef {
	if theSQLitePeer == nil {
		p, err := openSQLitePeer(filepath.Join(benchDir(b), "peer.db"))
		must(b, err, "go-sqlite3")
		theSQLitePeer = p
		atExit(func() { p.db.Close() })
	}
	return theSQLitePeer
}

func openSQLitePeer(path string) (*sqliteRef, error) {
	// _txlock=immediate: database/sql's Begin sends BEGIN IMMEDIATE, as bitt does.
	dsn := "file:" + path + "?_journal_mode=WAL&_synchronous=NORMAL&_cache_size=-65536" +
		"&_busy_timeout=5000&_txlock=immediate"
	db, err := sql.Open("sqlite3", dsn)
	if err != nil {
		return nil, err
	}
	db.SetMaxOpenConns(1) // one connection, like a bitt store
	db.SetMaxIdleConns(1)
	p := &sqliteRef{db: db}
	if _, err = db.Exec(sqliteDDL); err != nil {
		return nil, fmt.Errorf("schema: %w", err)
	}
	for _, s := range []struct {
		to  **sql.Stmt
		sql string
	}{{&p.stamp, sqliteStampSQL}, {&p.stampRead, sqliteStampReadSQL}, {&p.upsert, sqliteUpsertSQL}, {&p.query, sqliteGetSQL}} {
		if *s.to, err = db.Prepare(s.sql); err != nil {
			return nil, fmt.Errorf("prepare: %w", err)
		}
	}
	return p, p.preload()
}

// preload writes every key once, in one transaction, so gets always hit.
func (p *sqliteRef) preload() error {
	tx, err := p.db.Begin()
	if err != nil {
		return err
	}
	defer tx.Rollback()
	up := tx.Stmt(p.upsert)
	for i, k := range benchKeys {
		if _, err = up.Exec(k, benchValue, 0, int64(i+1), nil); err != nil {
			return err
		}
	}
	return tx.Commit()
}

func (p *sqliteRef) set(key []byte) error {
	tx, err := p.db.BeginTx(bg, nil)
	if err != nil {
		return err
	}
	var version int64
	if _, err = tx.StmtContext(bg, p.stamp).ExecContext(bg); err == nil {
		err = tx.StmtContext(bg, p.stampRead).QueryRowContext(bg).Scan(&version)
	}
	if err == nil {
		_, err = tx.StmtContext(bg, p.upsert).ExecContext(bg, key, benchValue, 0, version, nil)
	}
	if err != nil {
		tx.Rollback()
		return err
	}
	return tx.Commit()
}

func (p *sqliteRef) bareUpsert(key []byte) error {
	p.bareVersion++
	_, err := p.upsert.ExecContext(bg, key, benchValue, 0, p.bareVersion, nil)
	return err
}

func (p *sqliteRef) get(key []byte) error {
	var (
		value   []byte
		kind    int
		version int64
		expires sql.NullInt64
	)
	return p.query.QueryRowContext(bg, key, nowMillis()).Scan(&value, &kind, &version, &expires)
}
