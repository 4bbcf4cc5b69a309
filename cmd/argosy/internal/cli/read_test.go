package cli

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/argosyproj/argosy/cmd/internal/cmdkit"
	"github.com/argosyproj/argosy/projector/read"
	"github.com/argosyproj/argosy/projector/read/readtest"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

// readServer serves q through the read API on 127.0.0.1, seen at
// readtest.Now, and returns its URL.
func readServer(t *testing.T, q *readtest.Query) string {
	t.Helper()
	srv := httptest.NewServer(read.New(q, read.WithClock(readtest.Now)))
	t.Cleanup(srv.Close)
	return srv.URL
}

// golden compares got with testdata/name, or rewrites it with -update.
func golden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test ./cmd/argosy/internal/cli -run %s -update to write it)", err, t.Name())
	}
	if got != string(want) {
		t.Errorf("output differs from %s (-update rewrites it)\n--- got:\n%s\n--- want:\n%s", path, got, want)
	}
}

// TestReadCommands runs each read command against the read API serving
// readtest.Fleet and compares its output with a golden file.
func TestReadCommands(t *testing.T) {
	server := readServer(t, readtest.Fleet())
	tests := []struct {
		golden string
		args   []string
	}{
		{"fleet.txt", []string{"fleet"}},
		{"fleet.json", []string{"fleet", "-o", "json"}},
		{"cluster-get.txt", []string{"cluster", "get", "prod-eu"}},
		{"cluster-get-staging.txt", []string{"cluster", "get", "staging"}},
		{"cluster-get.yaml", []string{"cluster", "get", "prod-us", "-o", "yaml"}},
		{"app-status.txt", []string{"app", "status"}},
		{"app-status-cluster.txt", []string{"app", "status", "--cluster", "prod-eu"}},
		{"app-status-name.json", []string{"app", "status", "billing", "-n", "argocd", "-o", "json"}},
		{"audit.txt", []string{"audit"}},
		{"audit-filtered.json", []string{"audit", "--cluster", "prod-eu", "--actor", "bob", "--from", "2026-03-02T10:00:00Z",
			"--to", "2026-03-02T12:00:00Z", "--limit", "1", "-o", "json"}},
		{"audit-verify.txt", []string{"audit", "verify"}},
		{"report-app.txt", []string{"report", "deployments", "--by", "app", "--to", "2026-03-02T12:00:00Z"}},
		{"report-cluster-week.csv", []string{"report", "deployments", "--by", "cluster", "--bucket", "week",
			"--from", "2026-02-01T00:00:00Z", "--to", "2026-03-03T00:00:00Z", "-o", "csv"}},
		{"report-label.json", []string{"report", "deployments", "--by", "label", "--label", "team",
			"--from", "2026-03-01T00:00:00Z", "--to", "2026-03-03T00:00:00Z", "-o", "json"}},
		{"report-label.txt", []string{"report", "deployments", "--by", "label", "--label", "team",
			"--from", "2026-03-01T00:00:00Z", "--to", "2026-03-03T00:00:00Z"}},
	}
	for _, tc := range tests {
		t.Run(tc.golden, func(t *testing.T) {
			out, err := run(t, append(tc.args, "--server", server)...)
			if err != nil {
				t.Fatalf("%v\n%s", err, out)
			}
			golden(t, tc.golden, out)
		})
	}
}

func TestAuditVerifyBroken(t *testing.T) {
	q := readtest.Fleet()
	q.Entries[2].Name = "payroll" // argosy.config/0 at offset 12
	out, err := run(t, "audit", "verify", "--server", readServer(t, q))
	if !errors.Is(err, ErrChainBroken) || errors.As(err, new(*cmdkit.FlagError)) {
		t.Fatalf("error %v, want ErrChainBroken", err)
	}
	if want := "audit chain broken: argosy.config partition 0 at offset 12: hash does not match the entry's content (the entry was changed)"; err.Error() != want {
		t.Errorf("error %q, want %q", err, want)
	}
	golden(t, "audit-verify-broken.txt", out)
}

// TestReadCommandErrors checks what each command says when the server
// refuses, is not there, or is given badly.
func TestReadCommandErrors(t *testing.T) {
	server := readServer(t, readtest.Fleet())
	down := httptest.NewServer(nil)
	down.Close()
	tests := []struct {
		args      []string
		flagError bool
		errText   string
	}{
		{[]string{"cluster", "get", "nope", "--server", server}, false, `server answered 404 Not Found: cluster "nope" not found`},
		{[]string{"app", "status", "--cluster", "nope", "--server", server}, false, `cluster "nope" not found`},
		{[]string{"app", "status", "ghost", "--cluster", "prod-eu", "--server", server}, false, `no Application "ghost" on cluster "prod-eu"`},
		{[]string{"fleet", "--server", down.URL}, false, "read API: "},
		{[]string{"fleet", "--server", "localhost:8080"}, true, "--server: "},
		{[]string{"cluster", "get"}, true, "accepts 1 arg(s), received 0"},
		{[]string{"cluster", "get", "a", "b"}, true, "accepts 1 arg(s), received 2"},
		{[]string{"fleet", "extra"}, true, `unknown command "extra"`},
		{[]string{"audit", "nope"}, true, `unknown command "nope"`},
		{[]string{"app", "status", "a", "b"}, true, "accepts at most 1 arg(s)"},
		{[]string{"audit", "--since", "1h", "--from", "2026-03-01T00:00:00Z"}, true, "give --since or --from, not both"},
		{[]string{"audit", "--from", "yesterday"}, true, `--from "yesterday": want an RFC 3339 time`},
		{[]string{"audit", "--limit", "5000"}, true, "--limit 5000: want 1 to 1000"},
		{[]string{"audit", "--since", "-1h"}, true, "want a positive duration"},
		{[]string{"audit", "--from", "2026-03-02T00:00:00Z", "--to", "2026-03-01T00:00:00Z"}, true, "--from must be before --to"},
		{[]string{"report", "deployments"}, true, "--by is required"},
		{[]string{"report", "deployments", "--by", "team"}, true, `--by "team": want one of app, project, cluster, label`},
		{[]string{"report", "deployments", "--by", "label"}, true, "--by label needs --label KEY"},
		{[]string{"report", "deployments", "--by", "app", "--label", "team"}, true, "--label goes with --by label only"},
		{[]string{"report", "deployments", "--by", "app", "--bucket", "month"}, true, `--bucket "month"`},
		{[]string{"report", "deployments", "--by", "app", "-o", "xml"}, true, `unknown output format "xml": want one of table, json, yaml, csv`},
		{[]string{"fleet", "-o", "csv"}, true, `unknown output format "csv": want one of table, json, yaml`},
	}
	for _, tc := range tests {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			_, err := run(t, tc.args...)
			if err == nil || !strings.Contains(err.Error(), tc.errText) {
				t.Fatalf("error %v, want %q", err, tc.errText)
			}
			if got := errors.As(err, new(*cmdkit.FlagError)); got != tc.flagError {
				t.Errorf("cmdkit.FlagError %v, want %v (%v)", got, tc.flagError, err)
			}
		})
	}
}

func TestReadCommandsHelp(t *testing.T) {
	for _, args := range [][]string{{"fleet"}, {"cluster", "get"}, {"app", "status"}, {"audit"}, {"audit", "verify"},
		{"report", "deployments"}} {
		t.Run(strings.Join(args, " "), func(t *testing.T) {
			out, err := run(t, append(args, "--help")...)
			if err != nil {
				t.Fatal(err)
			}
			for _, want := range []string{"Examples:", "argosy " + strings.Join(args, " "), "--server", "-o, --output"} {
				if !strings.Contains(out, want) {
					t.Errorf("help lacks %q:\n%s", want, out)
				}
			}
		})
	}
}

// TestServerFlag checks --server's default, ARGOSY_SERVER and the flag.
func TestServerFlag(t *testing.T) {
	tests := []struct {
		env  string
		args []string
		want string
	}{
		{"", nil, DefaultServer},
		{"http://projector:8080", nil, "http://projector:8080"},
		{"http://projector:8080", []string{"--server", "http://other:1"}, "http://other:1"},
	}
	for _, tc := range tests {
		t.Run(tc.env+strings.Join(tc.args, " "), func(t *testing.T) {
			t.Setenv(EnvServer, tc.env)
			var got string
			cmd := NewCmdFleet(cmdkit.IOStreams{Out: &bytes.Buffer{}, Err: &bytes.Buffer{}}, func(_ context.Context, o *FleetOptions) error {
				got = o.API.Server
				return nil
			})
			cmd.SetArgs(append([]string{}, tc.args...)) // nil would be os.Args
			if err := cmd.Execute(); err != nil {
				t.Fatal(err)
			}
			if got != tc.want {
				t.Errorf("server %q, want %q", got, tc.want)
			}
		})
	}
}

func TestAuditSince(t *testing.T) {
	var out bytes.Buffer
	opts := &AuditOptions{IO: cmdkit.IOStreams{Out: &out}, API: APIOptions{Server: readServer(t, readtest.Fleet())}, Output: "table",
		Since: 61 * time.Minute, Now: readtest.Now}
	if err := auditRun(t.Context(), opts); err != nil {
		t.Fatal(err)
	}
	if lines := strings.Count(out.String(), "\n"); lines != 4 || !strings.Contains(out.String(), "api/applications.upsert") {
		t.Errorf("--since 61m listed %d lines, want a header and 3 entries:\n%s", lines, out.String())
	}
}

// TestReportGapNote checks that the groups with deployment gaps are named
// on stderr, away from the table or CSV on stdout.
func TestReportGapNote(t *testing.T) {
	var out, errOut bytes.Buffer
	cmd := NewRoot(cmdkit.IOStreams{In: strings.NewReader(""), Out: &out, Err: &errOut})
	cmd.SetArgs([]string{"report", "deployments", "--by", "cluster", "-o", "csv", "--server", readServer(t, readtest.Fleet())})
	if err := cmd.ExecuteContext(t.Context()); err != nil {
		t.Fatal(err)
	}
	if want := "Deployment gaps may hide deployments of: prod-us (1); their numbers may be too low.\n"; errOut.String() != want {
		t.Errorf("stderr %q, want %q", errOut.String(), want)
	}
	if !strings.HasPrefix(out.String(), "group,start,end,") {
		t.Errorf("stdout:\n%s", out.String())
	}
}
