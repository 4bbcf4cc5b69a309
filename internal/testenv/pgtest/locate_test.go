package pgtest

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// fakeBin makes dir/name for each name, executable or not.
func fakeBin(t *testing.T, dir string, mode os.FileMode, names ...string) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, n := range names {
		if err := os.WriteFile(filepath.Join(dir, n), []byte("#!/bin/sh\n"), mode); err != nil {
			t.Fatal(err)
		}
	}
}

func TestLocate(t *testing.T) {
	tests := []struct {
		name     string
		setup    func(t *testing.T, root, override string)
		override bool
		relative bool   // pass override relative to the working directory
		want     string // the directory found, relative to root or override
		wantErr  []string
	}{
		{
			name:    "nothing installed",
			setup:   func(*testing.T, string, string) {},
			wantErr: []string{"not installed", "make test-tools", "apt-get install postgresql", EnvBin},
		},
		{
			name: "newest complete major first",
			setup: func(t *testing.T, root, _ string) {
				fakeBin(t, filepath.Join(root, "9.6", "bin"), 0o755, "initdb", "postgres")
				fakeBin(t, filepath.Join(root, "15", "bin"), 0o755, "initdb", "postgres")
				fakeBin(t, filepath.Join(root, "16", "bin"), 0o755, "initdb") // server package half removed
				fakeBin(t, filepath.Join(root, "17", "bin"), 0o644, "initdb", "postgres")
				fakeBin(t, filepath.Join(root, "common", "bin"), 0o755, "initdb", "postgres")
			},
			want: "15/bin",
		},
		{
			name: "10 sorts after 9.6",
			setup: func(t *testing.T, root, _ string) {
				fakeBin(t, filepath.Join(root, "9.6", "bin"), 0o755, "initdb", "postgres")
				fakeBin(t, filepath.Join(root, "10", "bin"), 0o755, "initdb", "postgres")
			},
			want: "10/bin",
		},
		{
			name: "override wins",
			setup: func(t *testing.T, root, override string) {
				fakeBin(t, filepath.Join(root, "15", "bin"), 0o755, "initdb", "postgres")
				fakeBin(t, override, 0o755, "initdb", "postgres")
			},
			override: true,
			want:     ".",
		},
		{
			name: "empty override fails although Debian's are there",
			setup: func(t *testing.T, root, _ string) {
				fakeBin(t, filepath.Join(root, "15", "bin"), 0o755, "initdb", "postgres")
			},
			override: true,
			wantErr:  []string{EnvBin + "=", "no initdb", "make test-tools"},
		},
		{
			name: "relative override made absolute",
			setup: func(t *testing.T, _, override string) {
				fakeBin(t, override, 0o755, "initdb", "postgres")
				t.Chdir(filepath.Dir(override))
			},
			override: true,
			relative: true,
			want:     ".",
		},
		{
			name: "override without postgres",
			setup: func(t *testing.T, _, override string) {
				fakeBin(t, override, 0o755, "initdb")
			},
			override: true,
			wantErr:  []string{"no postgres"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			root, override := filepath.Join(t.TempDir(), "lib"), ""
			if tt.override {
				override = t.TempDir()
			}
			tt.setup(t, root, override)
			arg := override
			if tt.relative {
				arg = filepath.Base(override)
			}
			got, err := locate(arg, root)
			if len(tt.wantErr) > 0 {
				if err == nil {
					t.Fatalf("locate = %+v, want an error", got)
				}
				for _, w := range tt.wantErr {
					if !strings.Contains(err.Error(), w) {
						t.Errorf("error %q does not say %q", err, w)
					}
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			base := root
			if tt.override {
				base = override
			}
			dir := filepath.Join(base, tt.want)
			want := Binaries{Initdb: filepath.Join(dir, "initdb"), Postgres: filepath.Join(dir, "postgres")}
			if got != want {
				t.Errorf("locate = %+v, want %+v", got, want)
			}
		})
	}
}

// TestMainWithoutBinaries checks that a package whose server cannot start
// runs no test and says how to install PostgreSQL.
func TestMainWithoutBinaries(t *testing.T) {
	t.Setenv(EnvBin, t.TempDir())
	t.Setenv(EnvDSN, "")
	var out bytes.Buffer
	code := runMain(RunFunc(func() int {
		t.Error("tests ran without a server")
		return 0
	}), &out)
	if code == 0 {
		t.Error("Main returned 0 without a server")
	}
	for _, w := range []string{"FAIL: pgtest: cannot start PostgreSQL", EnvBin + "=", "no initdb", "make test-tools"} {
		if !strings.Contains(out.String(), w) {
			t.Errorf("Main printed %q, which does not say %q", out.String(), w)
		}
	}
}

// TestMainBadDSN checks that PGTEST_DSN must be a postgres:// URL, and that
// the message does not repeat it (it may hold a password).
func TestMainBadDSN(t *testing.T) {
	t.Setenv(EnvDSN, "host=db password=secret")
	var out bytes.Buffer
	if code := runMain(RunFunc(func() int { t.Error("tests ran"); return 0 }), &out); code == 0 {
		t.Error("Main returned 0 for a bad DSN")
	}
	if !strings.Contains(out.String(), "postgres://") || strings.Contains(out.String(), "secret") {
		t.Errorf("Main printed %q", out.String())
	}
}

func TestDatabaseName(t *testing.T) {
	tests := []struct{ test, prefix string }{
		{"TestX", "t_testx_"},
		{"TestStore/Put é#1", "t_teststore_put___1_"},
		{strings.Repeat("A", 100), "t_" + strings.Repeat("a", 40) + "_"},
	}
	for _, tt := range tests {
		got := databaseName(tt.test)
		if !strings.HasPrefix(got, tt.prefix) || len(got) != len(tt.prefix)+8 {
			t.Errorf("databaseName(%q) = %q, want %q and 8 hex digits", tt.test, got, tt.prefix)
		}
		if len(got) > 63 {
			t.Errorf("databaseName(%q) is %d bytes, over PostgreSQL's 63", tt.test, len(got))
		}
	}
	if a, b := databaseName("TestX"), databaseName("TestX"); a == b {
		t.Errorf("two databases for one test share the name %q", a)
	}
}
