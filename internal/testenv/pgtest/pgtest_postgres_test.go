//go:build integration

package pgtest_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/argosyproj/argosy/internal/testenv/pgtest"
)

const childEnv = "PGTEST_CHILD"

func TestMain(m *testing.M) {
	if os.Getenv(childEnv) != "" {
		err := child()
		fmt.Fprintln(os.Stderr, "child:", err)
		os.Exit(1)
	}
	os.Exit(pgtest.Main(m))
}

// child is the test binary run as a helper process: it starts a server of
// its own, prints the postmaster's pid and the server's directory, and waits
// to be killed.
func child() error {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	s, err := pgtest.Start(ctx)
	if err != nil {
		return err
	}
	fmt.Printf("pid %d dir %s\n", s.Pid(), s.Dir)
	select {} // until killed
}

func connect(t *testing.T, dsn string) *pgx.Conn {
	t.Helper()
	conn, err := pgx.Connect(t.Context(), dsn)
	if err != nil {
		t.Fatalf("connect %s: %v", dsn, err)
	}
	t.Cleanup(func() {
		if err := conn.Close(context.Background()); err != nil {
			t.Errorf("close: %v", err)
		}
	})
	return conn
}

// TestServer checks what a test sees of the server: PostgreSQL 13 or
// newer, UTF8, on 127.0.0.1 with no password.
func TestServer(t *testing.T) {
	dsn := pgtest.Database(t)
	if !strings.HasPrefix(dsn, "postgres://") || !strings.HasSuffix(dsn, "?sslmode=disable") {
		t.Errorf("Database = %q, want postgres://...?sslmode=disable", dsn)
	}
	conn := connect(t, dsn)
	var num int
	var encoding, db string
	err := conn.QueryRow(t.Context(), `SELECT current_setting('server_version_num')::int,
		pg_encoding_to_char(encoding), datname FROM pg_database WHERE datname = current_database()`).Scan(&num, &encoding, &db)
	if err != nil {
		t.Fatal(err)
	}
	if num < 130000 || encoding != "UTF8" || !strings.HasPrefix(db, "t_testserver_") {
		t.Errorf("server %d, encoding %s, database %s; want 13 or newer, UTF8, t_testserver_*", num, encoding, db)
	}
}

// TestDatabasesAreIsolated gives two tests their own databases and checks
// that a table made in one is not in the other, and that each database is
// gone when its test ends, even though the test left a connection open.
func TestDatabasesAreIsolated(t *testing.T) {
	var dsns [2]string
	var leftOpen [2]*pgx.Conn
	for i := range dsns {
		t.Run(fmt.Sprint(i), func(t *testing.T) {
			dsns[i] = pgtest.Database(t)
			conn, err := pgx.Connect(t.Context(), dsns[i])
			if err != nil {
				t.Fatal(err)
			}
			leftOpen[i] = conn // not closed here: dropping the database must force it off
			for _, step := range []struct {
				sql  string
				want int
			}{
				{"SELECT count(*) FROM pg_tables WHERE tablename = 'only_here'", 0},
				{"CREATE TABLE only_here (n int)", -1},
				{"INSERT INTO only_here VALUES (1)", -1},
				{"SELECT count(*) FROM only_here", 1},
			} {
				if step.want < 0 {
					if _, err := conn.Exec(t.Context(), step.sql); err != nil {
						t.Fatalf("%s: %v", step.sql, err)
					}
					continue
				}
				var n int
				if err := conn.QueryRow(t.Context(), step.sql).Scan(&n); err != nil {
					t.Fatalf("%s: %v", step.sql, err)
				}
				if n != step.want {
					t.Fatalf("database %d: %s = %d, want %d", i, step.sql, n, step.want)
				}
			}
		})
	}
	if dsns[0] == dsns[1] {
		t.Fatalf("both tests got %s", dsns[0])
	}
	for i, conn := range leftOpen {
		if conn == nil {
			continue
		}
		if err := conn.Ping(t.Context()); err == nil {
			t.Errorf("a connection to dropped database %d still answers", i)
		}
		if err := conn.Close(t.Context()); err != nil {
			t.Logf("close the connection to dropped database %d: %v", i, err)
		}
	}
	for _, dsn := range dsns {
		conn, err := pgx.Connect(t.Context(), dsn)
		var pgErr *pgconn.PgError
		if !errors.As(err, &pgErr) || pgErr.Code != "3D000" { // invalid_catalog_name
			t.Errorf("connect to %s after its test: %v, want database does not exist", dsn, err)
		}
		if err == nil {
			if err := conn.Close(t.Context()); err != nil {
				t.Error(err)
			}
		}
	}
}

// TestServerDiesWithTheTest kills a test binary that started a server and
// checks that neither the postmaster nor its children outlive it.
func TestServerDiesWithTheTest(t *testing.T) {
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), childEnv+"=1")
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		t.Fatalf("helper printed no pid: %v", err)
	}
	var pid int
	var dir string
	if _, err := fmt.Sscanf(line, "pid %d dir %s", &pid, &dir); err != nil {
		t.Fatalf("helper printed %q: %v", line, err)
	}
	// A killed binary cleans nothing up; the test removes what it left.
	t.Cleanup(func() {
		if strings.HasPrefix(filepath.Base(dir), "argosy-pg-") {
			if err := os.RemoveAll(dir); err != nil {
				t.Errorf("remove the helper's server directory: %v", err)
			}
		}
	})
	procs := append([]int{pid}, children(pid)...)
	if len(procs) < 2 {
		t.Fatalf("postmaster (pid %d) has no child processes", pid)
	}
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Wait(); err == nil {
		t.Fatal("helper exited cleanly after SIGKILL")
	}
	deadline := time.Now().Add(30 * time.Second)
	for _, p := range procs {
		for alive(p) {
			if time.Now().After(deadline) {
				if err := syscall.Kill(p, syscall.SIGKILL); err != nil {
					t.Logf("kill leftover postgres process: %v", err)
				}
				t.Fatalf("postgres process %d (of %v) outlived the killed test binary", p, procs)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
}

// children returns the pids of the live processes whose parent is pid.
// PostgreSQL's children each start a session of their own, so they are not
// in the postmaster's process group.
func children(pid int) []int {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	var out []int
	for _, e := range entries {
		p, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if ppid, ok := stat(p); ok && ppid == pid && alive(p) {
			out = append(out, p)
		}
	}
	return out
}

// stat returns the parent pid of a process from /proc/pid/stat.
func stat(pid int) (ppid int, ok bool) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, false
	}
	// "pid (comm) S ppid ...": the command name may hold spaces.
	_, rest, ok := strings.Cut(string(b), ") ")
	f := strings.Fields(rest)
	if !ok || len(f) < 2 {
		return 0, false
	}
	ppid, err = strconv.Atoi(f[1])
	return ppid, err == nil
}

// alive reports whether pid is a live process: it exists and is not a
// zombie waiting to be reaped.
func alive(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	_, rest, ok := strings.Cut(string(b), ") ")
	return ok && !strings.HasPrefix(rest, "Z")
}
