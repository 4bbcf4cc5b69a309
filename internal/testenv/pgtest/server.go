package pgtest

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/argosyproj/argosy/internal/testenv/testproc"
	"github.com/argosyproj/argosy/internal/testenv/toolcache"
)

// Superuser is the name of the test server's superuser. It needs no
// password: the server trusts every connection from 127.0.0.1.
const Superuser = "postgres"

// minVersion is the oldest server Database works with: DROP DATABASE ...
// WITH (FORCE) came in PostgreSQL 13.
const minVersion = 130000

// stopGrace is how long each step of the shutdown (smart, fast, immediate)
// may take before the next.
const stopGrace = 5 * time.Second

// hbaConf lets 127.0.0.1 in without a password, and nothing else in: the
// server has no Unix socket and listens on 127.0.0.1 only.
const hbaConf = "# pgtest: trust TCP connections from 127.0.0.1, and only those.\n" +
	"host all all 127.0.0.1/32 trust\n"

// serverArgs are the settings that make a throwaway server fast: nothing is
// flushed to disk, and the WAL carries no more than crash recovery needs.
var serverArgs = []string{
	"-k", "", // no Unix socket
	"-c", "fsync=off",
	"-c", "synchronous_commit=off",
	"-c", "full_page_writes=off",
	"-c", "wal_level=minimal",
	"-c", "max_wal_senders=0",
	"-c", "logging_collector=off",
}

// Server is a PostgreSQL server in a directory of its own, listening on
// 127.0.0.1.
type Server struct {
	// Addr is the server's address, 127.0.0.1:port.
	Addr string
	// Dir holds the data directory and the server's logs.
	Dir string
	// Version is the server's version, as SHOW server_version prints it.
	Version string

	versionNum int // as server_version_num
	proc       *testproc.Proc
}

// Start initialises a database cluster in a new temporary directory, starts
// a server on it and waits until the server accepts connections. When the
// caller is root, which PostgreSQL refuses to run as, the server runs as the
// postgres user. The caller must Close it.
func Start(ctx context.Context) (*Server, error) {
	bin, err := Locate()
	if err != nil {
		return nil, err
	}
	uid, gid, err := account()
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "argosy-pg-*")
	if err != nil {
		return nil, fmt.Errorf("postgres dir: %w", err)
	}
	s, err := start(ctx, bin, dir, uid, gid)
	if err != nil {
		return nil, errors.Join(err, os.RemoveAll(dir))
	}
	if s.versionNum < minVersion {
		return nil, errors.Join(fmt.Errorf("PostgreSQL %s in %s is too old: pgtest needs 13 or newer; %s",
			s.Version, filepath.Dir(bin.Postgres), installHint), s.Close())
	}
	return s, nil
}

func start(ctx context.Context, bin Binaries, dir string, uid, gid int) (*Server, error) {
	var as []testproc.Option
	if uid != os.Getuid() {
		if err := os.Chown(dir, uid, gid); err != nil {
			return nil, fmt.Errorf("give %s to the postgres user: %w", dir, err)
		}
		as = append(as, testproc.AsUser(uint32(uid), uint32(gid)))
	}
	data := filepath.Join(dir, "data")
	if err := initdb(ctx, bin, data, as); err != nil {
		return nil, err
	}
	// Free ports can be taken between probing and binding; try again then.
	var lastErr error
	for attempt := 1; attempt <= 3; attempt++ {
		s, err := run(ctx, bin, dir, data, attempt, as)
		if err == nil {
			return s, nil
		}
		lastErr = err
		if ctx.Err() != nil {
			break
		}
	}
	return nil, lastErr
}

// account returns the user and group to run PostgreSQL as: the caller's
// own, or the postgres user's when the caller is root.
func account() (uid, gid int, err error) {
	if os.Geteuid() != 0 {
		return os.Getuid(), os.Getgid(), nil
	}
	u, err := user.Lookup("postgres")
	if err != nil {
		return 0, 0, fmt.Errorf("PostgreSQL refuses to run as root, and there is no postgres user to run it as (%w): "+
			"install Debian's postgresql package, which creates it, or run the tests as another user", err)
	}
	if uid, err = strconv.Atoi(u.Uid); err != nil {
		return 0, 0, fmt.Errorf("postgres user id %q: %w", u.Uid, err)
	}
	if gid, err = strconv.Atoi(u.Gid); err != nil {
		return 0, 0, fmt.Errorf("postgres group id %q: %w", u.Gid, err)
	}
	return uid, gid, nil
}

// initdb creates a UTF8 cluster in data whose superuser is Superuser, and
// replaces its pg_hba.conf with hbaConf.
func initdb(ctx context.Context, bin Binaries, data string, as []testproc.Option) error {
	cmd := exec.CommandContext(ctx, bin.Initdb, "-D", data, "-U", Superuser, "-A", "trust",
		"-E", "UTF8", "--locale=C", "--no-sync")
	cmd.Dir = filepath.Dir(data)
	// TZ spares initdb its search of the time zone database.
	cmd.Env = append(os.Environ(), "TZ=UTC")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	for _, o := range as {
		o(cmd.SysProcAttr)
	}
	if _, err := toolcache.Run(cmd); err != nil {
		return fmt.Errorf("initdb: %w", err)
	}
	// initdb made the file, owned by the server's user; writing it keeps
	// the owner.
	if err := os.WriteFile(filepath.Join(data, "pg_hba.conf"), []byte(hbaConf), 0o600); err != nil {
		return fmt.Errorf("write pg_hba.conf: %w", err)
	}
	return nil
}

// run starts postgres on data on a free port and waits until it accepts
// connections.
func run(ctx context.Context, bin Binaries, dir, data string, attempt int, as []testproc.Option) (*Server, error) {
	ports, err := testproc.FreePorts(1)
	if err != nil {
		return nil, err
	}
	name := "postgres"
	if attempt > 1 {
		name = fmt.Sprintf("postgres.%d", attempt)
	}
	args := append([]string{"-D", data, "-h", "127.0.0.1", "-p", strconv.Itoa(ports[0])}, serverArgs...)
	p, err := testproc.Start(dir, name, bin.Postgres, args, []string{"TZ=UTC"}, as...)
	if err != nil {
		return nil, err
	}
	s := &Server{Addr: fmt.Sprintf("127.0.0.1:%d", ports[0]), Dir: dir, proc: p}
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	if err := p.WaitFor(ctx, s.ready); err != nil {
		return nil, errors.Join(fmt.Errorf("postgres did not become ready: %w", err), p.Stop(0))
	}
	return s, nil
}

// ready connects to the server and records its version.
func (s *Server) ready(ctx context.Context) error {
	v, num, err := serverVersion(ctx, s.DSN("postgres"))
	if err != nil {
		return err
	}
	s.Version, s.versionNum = v, num
	return nil
}

// DSN returns the URL of database db on the server, as Superuser.
func (s *Server) DSN(db string) string {
	u := url.URL{Scheme: "postgres", User: url.User(Superuser), Host: s.Addr, Path: "/" + db, RawQuery: "sslmode=disable"}
	return u.String()
}

// Pid returns the process id of the server's postmaster.
func (s *Server) Pid() int { return s.proc.Pid() }

// Close stops the server (a smart shutdown, then a fast one, then an
// immediate one, then SIGKILL, each after 5 s) and removes its directory.
func (s *Server) Close() error {
	err := s.proc.StopWith(stopGrace, syscall.SIGTERM, syscall.SIGINT, syscall.SIGQUIT)
	return errors.Join(err, os.RemoveAll(s.Dir))
}

// LogTail returns the end of the server's log, for error messages.
func (s *Server) LogTail() string { return s.proc.LogTail() }

// serverVersion connects to dsn and returns the server's version, as text
// and as a number (130004 for 13.4).
func serverVersion(ctx context.Context, dsn string) (version string, num int, err error) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		return "", 0, err
	}
	defer conn.Close(ctx)
	err = conn.QueryRow(ctx, "SELECT current_setting('server_version'), current_setting('server_version_num')::int").
		Scan(&version, &num)
	if err != nil {
		return "", 0, fmt.Errorf("server version: %w", err)
	}
	return version, num, nil
}
