package replay

import (
	"encoding/base64"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/spf13/cobra"

	"github.com/argosyproj/argosy/cmd/argosy/internal/cmdtest"
	"github.com/argosyproj/argosy/cmd/internal/cmdkit"
	"github.com/argosyproj/argosy/projector"
	"github.com/argosyproj/argosy/projector/sqlstore"
)

func newRebuild(io cmdkit.IOStreams) *cobra.Command { return NewCmdRebuild(io, nil) }

// TestRebuildFlags: the starting point is parsed; bad arguments are usage
// errors that name the flag, before anything is opened.
func TestRebuildFlags(t *testing.T) {
	base := []string{"--kafka-brokers", "127.0.0.1:9092", "--hub-key", "hub.pub", "--store", "sqlite://new.db"}
	got, err := cmdtest.Parse(t, NewCmdRebuild, append(base, "--from-time", "2026-01-02T03:04:05Z",
		"--from-offsets", "argosy.status/3=1200, argosy.config/0=0"))
	if err != nil {
		t.Fatal(err)
	}
	want := map[projector.Partition]int64{{Topic: "argosy.status", Partition: 3}: 1200, {Topic: "argosy.config", Partition: 0}: 0}
	if !got.From.Time.Equal(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)) || len(got.From.Offsets) != 2 ||
		got.From.Offsets[projector.Partition{Topic: "argosy.status", Partition: 3}] != want[projector.Partition{Topic: "argosy.status", Partition: 3}] {
		t.Errorf("parsed %+v", got.From)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--kafka-brokers", "127.0.0.1:9092", "--hub-key", "hub.pub"}, "--store is required"},
		{[]string{"--kafka-brokers", "127.0.0.1:9092", "--store", "sqlite://x.db"}, "--hub-key is required"},
		{append(base[:4:4], "--store", "mysql://x"), "want sqlite://PATH or postgres://"},
		{append(base, "--from-time", "2999-01-01T00:00:00Z"), "in the future"},
		{append(base, "--from-time", "yesterday"), "--from-time"},
		{append(base, "--from-start", "--from-time", "2026-01-02T03:04:05Z"), "--from-start takes neither"},
		{append(base, "--from-offsets", "argosy.status=3"), "want TOPIC/PARTITION=OFFSET"},
		{append(base, "--from-offsets", "argosy.status/-1=3"), "want TOPIC/PARTITION=OFFSET"},
		{append(base, "--max-records", "0"), "--max-records"},
		{append(base, "-o", "xml"), "unknown output format"},
	} {
		_, err := cmdtest.Parse(t, NewCmdRebuild, tc.args)
		var fe *cmdkit.FlagError
		if !errors.As(err, &fe) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: %v, want a usage error with %q", tc.args, err, tc.want)
		}
	}
}

// TestRebuildIntoAnUnopenableStore fails with the store's error before it
// reaches Kafka, which is not there.
func TestRebuildIntoAnUnopenableStore(t *testing.T) {
	dir := t.TempDir()
	hub := filepath.Join(dir, "hub.pub")
	if err := os.WriteFile(hub, []byte(base64.StdEncoding.EncodeToString(make([]byte, 32))), 0o600); err != nil {
		t.Fatal(err)
	}
	_, _, err := cmdtest.Run(t, newRebuild, "rebuild", "--kafka-brokers", "127.0.0.1:1", "--hub-key", hub,
		"--store", "sqlite://"+filepath.Join(dir, "no", "such", "dir", "v.db"), "-q")
	if err == nil || !strings.HasPrefix(err.Error(), "store:") {
		t.Fatalf("a rebuild into a store in a missing directory: %v, want the store's error", err)
	}
}

// views opens a new SQLite store holding b, and returns its DSN.
func views(t *testing.T, b *projector.Batch) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "views.db")
	s, err := sqlstore.OpenSQLite(t.Context(), path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := s.Commit(t.Context(), b); err != nil {
		t.Fatal(err)
	}
	return "sqlite://" + path
}

func batch(seq int64) *projector.Batch {
	return &projector.Batch{
		Offsets: map[projector.Partition]int64{{Topic: "argosy.status", Partition: 0}: 10},
		Beats:   []projector.ClusterBeat{{Cluster: "c1", Seq: seq, At: time.Unix(1_700_000_000, 0), AgentVersion: "v1", Mode: "managed"}},
	}
}

func newDiff(io cmdkit.IOStreams) *cobra.Command { return NewCmdDiff(io, nil) }

// TestDiff: matching stores exit 0 with the tables compared; differing
// ones print the difference and exit 1 (ErrStoresDiffer); an unreadable
// store is an error that names it, and is not created.
func TestDiff(t *testing.T) {
	a, b, c := views(t, batch(1)), views(t, batch(1)), views(t, batch(2))
	out, _, err := cmdtest.Run(t, newDiff, "diff", a, b)
	if err != nil || !strings.Contains(out, "beats") || !strings.Contains(out, "DIFFERING") {
		t.Errorf("diff of matching stores: %v\n%s", err, out)
	}
	out, _, err = cmdtest.Run(t, newDiff, "diff", a, c)
	if !errors.Is(err, ErrStoresDiffer) || !strings.Contains(out, "beats (c1): seq\n  A: 1\n  B: 2") {
		t.Errorf("diff of differing stores: %v\n%s", err, out)
	}
	out, _, err = cmdtest.Run(t, newDiff, "diff", a, c, "-o", "json")
	if !errors.Is(err, ErrStoresDiffer) || !strings.Contains(out, `"match": false`) || !strings.Contains(out, `"column": "seq"`) {
		t.Errorf("diff -o json of differing stores: %v\n%s", err, out)
	}
	missing := filepath.Join(t.TempDir(), "missing.db")
	_, _, err = cmdtest.Run(t, newDiff, "diff", a, "sqlite://"+missing)
	if err == nil || !strings.Contains(err.Error(), "STORE_B") {
		t.Errorf("diff with a missing store: %v, want an error naming STORE_B", err)
	}
	if _, statErr := os.Stat(missing); !errors.Is(statErr, os.ErrNotExist) {
		t.Errorf("diff created %s: %v", missing, statErr)
	}
	if _, _, err := cmdtest.Run(t, newDiff, "diff", a); err == nil {
		t.Error("diff of one store succeeded")
	}
}
