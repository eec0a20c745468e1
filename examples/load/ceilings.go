package main

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	_ "github.com/mattn/go-sqlite3"
)

// execCommand is exec.CommandContext, named so that the server's start
// reads as what it is.
var execCommand = exec.CommandContext

// sqliteLoop measures the engine's own ceiling for a charge: a bare debit
// transaction (BEGIN IMMEDIATE; a conditional UPDATE of one wallet; an
// INSERT into a ledger; COMMIT) in a loop for d, on one connection, in WAL
// mode with synchronous=FULL as the store runs (D31). It returns commits
// per second.
func sqliteLoop(ctx context.Context, d time.Duration) (float64, error) {
	dir, err := os.MkdirTemp("", "consentload-ceiling")
	if err != nil {
		return 0, err
	}
	defer func() { _ = os.RemoveAll(dir) }() // a scratch database: best effort
	db, err := sql.Open("sqlite3", "file:"+filepath.Join(dir, "loop.db")+
		"?_txlock=immediate&_journal_mode=WAL&_synchronous=FULL&_busy_timeout=10000")
	if err != nil {
		return 0, err
	}
	defer func() { _ = db.Close() }() // its commits are counted; it is removed next
	db.SetMaxOpenConns(1)
	for _, q := range []string{
		`CREATE TABLE wallets (company_id TEXT PRIMARY KEY, balance INTEGER NOT NULL)`,
		`CREATE TABLE ledger (id INTEGER PRIMARY KEY, company_id TEXT NOT NULL, amount INTEGER NOT NULL,
			kind TEXT NOT NULL, reference TEXT NOT NULL, created_at TEXT NOT NULL)`,
		`INSERT INTO wallets VALUES ('acme', 1000000000000000)`,
	} {
		if _, err := db.ExecContext(ctx, q); err != nil {
			return 0, err
		}
	}
	n := 0
	start := time.Now()
	for time.Since(start) < d {
		tx, err := db.BeginTx(ctx, nil)
		if err != nil {
			return 0, err
		}
		res, err := tx.ExecContext(ctx, `UPDATE wallets SET balance = balance - 15000 WHERE company_id = 'acme' AND balance >= 15000`)
		if err == nil {
			if k, _ := res.RowsAffected(); k != 1 {
				err = errors.New("the wallet ran dry")
			}
		}
		if err == nil {
			_, err = tx.ExecContext(ctx, `INSERT INTO ledger (company_id, amount, kind, reference, created_at) VALUES ('acme', -15000, 'verify_match', ?, ?)`,
				"cert-"+strconv.Itoa(n), time.Now().UTC().Format(time.RFC3339Nano))
		}
		if err == nil {
			err = tx.Commit()
		} else {
			tx.Rollback()
		}
		if err != nil {
			return 0, err
		}
		n++
	}
	return float64(n) / time.Since(start).Seconds(), nil
}

// pgbenchDB is the database pgbench works in, made and dropped by the load.
const pgbenchDB = "consentload_pgbench"

// pgbench measures PostgreSQL's ceiling with its own benchmark, TPC-B with
// clients connections for d at scale 1 (one branch row that every
// transaction updates, as every charge of one company updates its
// wallet). It returns transactions per second, or 0 and no error when
// pgbench is not installed.
func pgbench(ctx context.Context, dsn string, clients int, d time.Duration) (perSecond float64, err error) {
	bin, err := exec.LookPath("pgbench")
	if err != nil {
		return 0, nil
	}
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		return 0, err
	}
	defer func() { _ = conn.Close(ctx) }() // used for DDL only, each checked
	if _, err := conn.Exec(ctx, "DROP DATABASE IF EXISTS "+pgbenchDB); err != nil {
		return 0, err
	}
	if _, err := conn.Exec(ctx, "CREATE DATABASE "+pgbenchDB); err != nil {
		return 0, err
	}
	defer func() {
		if _, derr := conn.Exec(context.WithoutCancel(ctx), "DROP DATABASE IF EXISTS "+pgbenchDB); err == nil && derr != nil {
			err = fmt.Errorf("drop the pgbench database: %w", derr)
		}
	}()
	cfg, err := pgconn.ParseConfig(dsn)
	if err != nil {
		return 0, err
	}
	conninfo := []string{"-h", cfg.Host, "-p", strconv.Itoa(int(cfg.Port)), "-U", cfg.User, pgbenchDB}
	run := func(args ...string) ([]byte, error) {
		cmd := exec.CommandContext(ctx, bin, append(args, conninfo...)...)
		cmd.Env = append(os.Environ(), "PGPASSWORD="+cfg.Password)
		return cmd.CombinedOutput()
	}
	if out, err := run("-i", "-q", "-s", "1"); err != nil {
		return 0, fmt.Errorf("pgbench -i: %w: %s", err, out)
	}
	out, err := run("-n", "-c", strconv.Itoa(clients), "-j", "2", "-T", strconv.Itoa(max(1, int(d.Seconds()))))
	if err != nil {
		return 0, fmt.Errorf("pgbench: %w: %s", err, out)
	}
	m := regexp.MustCompile(`tps = ([0-9.]+)`).FindSubmatch(out)
	if m == nil {
		return 0, fmt.Errorf("pgbench printed no tps: %s", out)
	}
	return strconv.ParseFloat(string(m[1]), 64)
}
