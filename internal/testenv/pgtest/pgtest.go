// Package pgtest runs a real PostgreSQL server for tests, on 127.0.0.1, from
// the server binaries the machine has installed (Debian's postgresql
// package: make test-tools installs it).
//
// A test package starts one shared server from TestMain with Main, then
// gives each test a database of its own with Database. When PGTEST_DSN is
// set, tests use that server instead and nothing is started.
//
// A test that needs a server of its own calls Start.
package pgtest

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// Runner runs tests: a *testing.M, or another helper's Main wrapped around
// one, so that one TestMain can start several servers.
type Runner interface{ Run() int }

// RunFunc adapts a function to Runner.
type RunFunc func() int

// Run implements Runner.
func (f RunFunc) Run() int { return f() }

// EnvDSN names the variable that points tests at an existing server: a
// postgres:// URL of a role that may create databases. Database creates and
// drops its databases there.
const EnvDSN = "PGTEST_DSN"

var (
	mu    sync.Mutex
	admin *url.URL // the server's maintenance database, for CREATE and DROP DATABASE
)

// Main is TestMain for packages that need PostgreSQL: it starts a server
// (unless PGTEST_DSN is set), runs the tests and stops the server. If the
// server cannot start, every test fails: Main prints why and what to do,
// and exits non-zero.
//
//	func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }
func Main(m Runner) int {
	return runMain(m, os.Stderr)
}

func runMain(m Runner, stderr io.Writer) int {
	if dsn := os.Getenv(EnvDSN); dsn != "" {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		u, err := existing(ctx, dsn)
		cancel()
		if err != nil {
			fmt.Fprintf(stderr, "FAIL: pgtest: %s: %v\n", EnvDSN, err)
			return 1
		}
		setAdmin(u)
		return m.Run()
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	started := time.Now()
	s, err := Start(ctx)
	cancel()
	if err != nil {
		fmt.Fprintf(stderr, "FAIL: pgtest: cannot start PostgreSQL: %v\n", err)
		return 1
	}
	fmt.Fprintf(stderr, "PostgreSQL %s ready on %s in %s (pgtest)\n", s.Version, s.Addr, time.Since(started).Round(time.Millisecond))
	u, err := url.Parse(s.DSN("postgres"))
	if err != nil { // never: DSN builds a valid URL
		fmt.Fprintf(stderr, "FAIL: pgtest: %v\n", err)
		return 1
	}
	setAdmin(u)
	code := m.Run()
	if err := s.Close(); err != nil {
		fmt.Fprintf(stderr, "pgtest: stop PostgreSQL: %v\n", err)
		if code == 0 {
			code = 1
		}
	}
	return code
}

// existing checks that dsn is a postgres:// URL of a server that answers
// and is new enough.
func existing(ctx context.Context, dsn string) (*url.URL, error) {
	u, err := url.Parse(dsn)
	if err != nil || (u.Scheme != "postgres" && u.Scheme != "postgresql") || u.Host == "" {
		return nil, errors.New("want a URL such as postgres://user:password@host:5432/postgres?sslmode=disable")
	}
	_, num, err := serverVersion(ctx, dsn)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", u.Redacted(), err)
	}
	if num < minVersion {
		return nil, fmt.Errorf("%s: server version %d is too old: pgtest needs 13 or newer", u.Redacted(), num)
	}
	return u, nil
}

func setAdmin(u *url.URL) {
	mu.Lock()
	defer mu.Unlock()
	admin = u
}

func adminURL(t testing.TB) url.URL {
	t.Helper()
	mu.Lock()
	defer mu.Unlock()
	if admin == nil {
		t.Fatal("pgtest: no server; call pgtest.Main from TestMain")
	}
	return *admin
}

// Database creates an empty database for the test and returns its URL
// (postgres://postgres@127.0.0.1:port/name?sslmode=disable for the server
// Main started). When the test ends the database is dropped, with any
// connections the test left open.
func Database(t testing.TB) string {
	t.Helper()
	srv := adminURL(t)
	name := databaseName(t.Name())
	ident := pgx.Identifier{name}.Sanitize()
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	if err := execAdmin(ctx, srv.String(), "CREATE DATABASE "+ident); err != nil {
		t.Fatalf("pgtest: create database %s: %v", name, err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if err := execAdmin(ctx, srv.String(), "DROP DATABASE IF EXISTS "+ident+" WITH (FORCE)"); err != nil {
			t.Errorf("pgtest: drop database %s: %v", name, err)
		}
	})
	db := srv
	db.Path, db.RawPath = "/"+name, ""
	return db.String()
}

// databaseName returns a database name unique to this test run and test:
// "t_", the test's name in lower case with anything but letters and digits
// turned to '_' and cut to 40 bytes, '_' and 8 random hex digits. It stays
// under PostgreSQL's limit of 63 bytes and needs no quoting in a URL.
func databaseName(test string) string {
	var b [4]byte
	rand.Read(b[:]) // never fails since Go 1.24
	name := strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z' || r >= '0' && r <= '9':
			return r
		case r >= 'A' && r <= 'Z':
			return r - 'A' + 'a'
		default:
			return '_'
		}
	}, test)
	if len(name) > 40 {
		name = name[:40]
	}
	return fmt.Sprintf("t_%s_%x", name, b)
}

// execAdmin runs one statement on the server's maintenance database.
func execAdmin(ctx context.Context, dsn, sql string) error {
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		return err
	}
	_, err = conn.Exec(ctx, sql)
	if cerr := conn.Close(ctx); err == nil {
		err = cerr
	}
	return err
}
