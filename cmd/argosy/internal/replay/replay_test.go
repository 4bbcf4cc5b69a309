package replay

import (
	"encoding/base64"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/spf13/cobra"

	"github.com/argosyproj/argosy/cmd/argosy/internal/cmdtest"
	"github.com/argosyproj/argosy/cmd/internal/cmdkit"
	"github.com/argosyproj/argosy/hub/api"
	"github.com/argosyproj/argosy/projector"
	"github.com/argosyproj/argosy/projector/sqlstore"
	"github.com/argosyproj/argosy/schemas"
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

// TestAsOfFlags: TIME and --cluster are parsed; a time in the future, a
// malformed one or no cluster are usage errors.
func TestAsOfFlags(t *testing.T) {
	base := []string{"--kafka-brokers", "127.0.0.1:9092", "--hub-key", "hub.pub"}
	got, err := cmdtest.Parse(t, NewCmdAsOf, append(base, "2026-01-02T03:04:05Z", "--cluster", "prod-eu", "--app", "guestbook",
		"--config-partition", "7"))
	if err != nil {
		t.Fatal(err)
	}
	q := got.Query
	if q.Cluster != "prod-eu" || q.App != "guestbook" || !q.At.Equal(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)) ||
		q.ConfigPartition == nil || *q.ConfigPartition != 7 || q.StatusWindow != projector.DefaultStatusWindow {
		t.Errorf("parsed %+v", q)
	}
	if got, err := cmdtest.Parse(t, NewCmdAsOf, append(base, "2026-01-02T03:04:05Z", "--cluster", "c")); err != nil || got.Query.ConfigPartition != nil {
		t.Errorf("no --config-partition: %v, %+v", err, got)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{append(base, "2999-01-01T00:00:00Z", "--cluster", "c"), "in the future"},
		{append(base, "yesterday", "--cluster", "c"), "want an RFC 3339 time"},
		{append(base, "2026-01-02T03:04:05Z"), "--cluster is required"},
		{append(base, "2026-01-02T03:04:05Z", "--cluster", "c", "--status-window", "0s"), "--status-window"},
		{[]string{"--kafka-brokers", "127.0.0.1:9092", "2026-01-02T03:04:05Z", "--cluster", "c"}, "--hub-key is required"},
		{base, "accepts 1 arg"},
	} {
		_, err := cmdtest.Parse(t, NewCmdAsOf, tc.args)
		var fe *cmdkit.FlagError
		if !errors.As(err, &fe) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: %v, want a usage error with %q", tc.args, err, tc.want)
		}
	}
}

// TestAsOfTable: the table names each Application's desired generation
// and status with the events they come from, and the ranges read.
func TestAsOfTable(t *testing.T) {
	at := time.Date(2026, 11, 3, 23, 0, 0, 0, time.UTC)
	res := &projector.AsOfResult{Cluster: "prod-eu", At: at,
		Registration: &projector.ClusterRegistration{Cluster: "prod-eu", Registered: true, Labels: map[string]string{"env": "prod"}, RegisteredAt: at.Add(-48 * time.Hour)},
		Read: []projector.ReadRange{{Topic: "argosy.config", Partition: 17, From: 0, To: 4412, Events: 212},
			{Topic: "argosy.status", Partition: 40, From: 1880211, To: 1911307, Events: 431}},
		Apps: []projector.AsOfApp{{
			AppKey:       projector.AppKey{Cluster: "prod-eu", Namespace: "argocd", Name: "payments"},
			Desired:      &projector.AppDesired{Generation: 14},
			DesiredFrom:  &projector.EventRef{Topic: "argosy.config", Partition: 17, Offset: 4398, LogTime: at.Add(-4*time.Hour - 47*time.Minute - 51*time.Second)},
			Observed:     &projector.AppObserved{AppliedGeneration: 14, Sync: &schemas.SyncStatus{Status: "Synced"}, Health: &schemas.HealthStatus{Status: "Healthy"}},
			ObservedFrom: &projector.EventRef{Topic: "argosy.status", Partition: 40, Offset: 1911201, LogTime: at.Add(-29 * time.Second)},
		}, {
			AppKey:  projector.AppKey{Cluster: "prod-eu", Namespace: "argocd", Name: "old"},
			Desired: &projector.AppDesired{Generation: 3, Deleted: true},
		}},
	}
	var out strings.Builder
	if err := printAsOf(&AsOfOptions{IO: cmdkit.IOStreams{Out: &out}}, res); err != nil {
		t.Fatal(err)
	}
	cmdtest.CompareGolden(t, "asof.txt", out.String())
}

func newExport(io cmdkit.IOStreams) *cobra.Command { return NewCmdExport(io, nil) }

// TestExportFlags: topic roles become names with the prefix, the format
// follows the file's extension, and bad arguments are usage errors that
// name the flag, before anything is opened.
func TestExportFlags(t *testing.T) {
	base := []string{"--kafka-brokers", "127.0.0.1:9092"}
	got, err := cmdtest.Parse(t, NewCmdExport, append(base, "--out", "nov.parquet", "--topic-prefix", "t.",
		"--topics", "audit,status,audit", "--from", "2026-11-01T00:00:00Z", "--to", "2026-11-02T00:00:00Z"))
	if err != nil {
		t.Fatal(err)
	}
	if got.Format != "parquet" || strings.Join(got.Range.Topics, ",") != "t.argosy.audit,t.argosy.status" ||
		!got.Range.From.Equal(time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)) || got.Range.To.Sub(got.Range.From) != 24*time.Hour {
		t.Errorf("parsed %+v", got)
	}
	got, err = cmdtest.Parse(t, NewCmdExport, append(base, "--out", "-"))
	if err != nil {
		t.Fatal(err)
	}
	if got.Format != "jsonl" || len(got.Range.Topics) != 4 || !got.Range.From.IsZero() || !got.Range.To.IsZero() {
		t.Errorf("defaults: %+v, want jsonl, the four event topics, the whole log", got)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{base, "--out is required"},
		{append(base, "--out", "x", "--format", "xml"), "want one of jsonl, csv, parquet"},
		{append(base, "--out", "x", "--topics", "status,secrets"), `unknown topic "secrets"`},
		{append(base, "--out", "x", "--from", "2999-01-01T00:00:00Z"), "in the future"},
		{append(base, "--out", "x", "--from", "2026-11-02T00:00:00Z", "--to", "2026-11-01T00:00:00Z"), "not after --from"},
		{append(base, "--out", "x", "--to", "tomorrow"), "--to"},
		{[]string{"--out", "x"}, "kafka"},
	} {
		_, err := cmdtest.Parse(t, NewCmdExport, tc.args)
		var fe *cmdkit.FlagError
		if !errors.As(err, &fe) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: %v, want a usage error with %q", tc.args, err, tc.want)
		}
	}
}

// TestExportIntoAMissingDirectory fails with the file's error before it
// reaches Kafka, which is not there, and leaves no file behind.
func TestExportIntoAMissingDirectory(t *testing.T) {
	out := filepath.Join(t.TempDir(), "no", "such", "dir", "log.jsonl")
	_, _, err := cmdtest.Run(t, newExport, "export", "--kafka-brokers", "127.0.0.1:1", "--out", out, "-q")
	if err == nil || !strings.HasPrefix(err.Error(), "--out "+out) {
		t.Fatalf("an export into a missing directory: %v, want the file's error", err)
	}
}

// TestExportFileAppearsWhole: the file appears under its name only when
// the export succeeds; a failed one leaves nothing behind.
func TestExportFileAppearsWhole(t *testing.T) {
	dir := t.TempDir()
	o := &ExportOptions{Out: filepath.Join(dir, "log.jsonl")}
	for _, fail := range []error{errors.New("broker gone"), nil} {
		w, finish, err := o.create()
		if err != nil {
			t.Fatal(err)
		}
		if _, err := w.Write([]byte("{}\n")); err != nil {
			t.Fatal(err)
		}
		if _, err := os.Stat(o.Out); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s exists before the export ends: %v", o.Out, err)
		}
		if err := finish(fail); !errors.Is(err, fail) {
			t.Errorf("finish(%v) = %v", fail, err)
		}
		entries, err := os.ReadDir(dir)
		if err != nil {
			t.Fatal(err)
		}
		want := 0
		if fail == nil {
			want = 1
		}
		if len(entries) != want || (want == 1 && entries[0].Name() != "log.jsonl") {
			t.Errorf("after finish(%v) the directory holds %v, want %d file(s) named log.jsonl", fail, entries, want)
		}
	}
}

// TestRedriveFlags: bad arguments are usage errors that name the flag,
// before anything is opened.
func TestRedriveFlags(t *testing.T) {
	base := []string{"--kafka-brokers", "127.0.0.1:9092", "--hub-key", "hub.pub"}
	got, err := cmdtest.Parse(t, NewCmdRedrive, append(base, "--cluster", "prod-eu", "--as-of", "2026-11-03T23:00:00Z", "--dry-run"))
	if err != nil {
		t.Fatal(err)
	}
	if got.Cluster != "prod-eu" || !got.DryRun || !got.Cascade || !got.AsOf.Equal(time.Date(2026, 11, 3, 23, 0, 0, 0, time.UTC)) {
		t.Errorf("parsed %+v", got)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{base, "--cluster is required"},
		{append(base, "--cluster", "x", "--as-of", "2999-01-01T00:00:00Z"), "in the future"},
		{append(base, "--cluster", "x", "--as-of", "last tuesday"), "--as-of"},
		{[]string{"--kafka-brokers", "127.0.0.1:9092", "--cluster", "x"}, "--hub-key is required"},
		{append(base, "--cluster", "x", "--idempotency-key", "a b"), "--idempotency-key"},
	} {
		_, err := cmdtest.Parse(t, NewCmdRedrive, tc.args)
		var fe *cmdkit.FlagError
		if !errors.As(err, &fe) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: %v, want a usage error with %q", tc.args, err, tc.want)
		}
	}
}

// TestPlanRedrive: the current state is applied again at the hub's
// generations, and only when the log has caught up with the hub; a past
// state applies what held then and deletes what came since, in an order
// in which every write finds what it depends on.
func TestPlanRedrive(t *testing.T) {
	ob := func(kind, name string, gen int64, deleted bool) projector.DesiredObject {
		return projector.DesiredObject{Kind: kind, Namespace: "argocd", Name: name, Generation: gen, Deleted: deleted, Data: []byte(`{}`)}
	}
	hub := func(kind, name string, gen int64, deleted bool) api.Object {
		return api.Object{Cluster: "c1", Kind: kind, Namespace: "argocd", Name: name, Generation: gen, Deleted: deleted}
	}
	steps := func(p *RedrivePlan) string {
		var out []string
		for _, s := range p.Steps {
			out = append(out, fmt.Sprintf("%s %s/%s@%d", s.Action, s.Kind, s.Name, s.HubGeneration))
		}
		return strings.Join(out, ", ")
	}
	now := []api.Object{hub("clusters", "c1", 1, false), hub("appprojects", "team", 2, false), hub("applications", "web", 5, false),
		hub("applications", "old", 3, true), hub("repositories", "charts", 1, false), hub("applications", "new", 1, false)}
	current := []projector.DesiredObject{ob("appprojects", "team", 2, false), ob("applications", "web", 5, false),
		ob("applications", "old", 3, true), ob("repositories", "charts", 1, false), ob("applications", "new", 1, false)}
	p, err := planRedrive("c1", time.Now(), current, now, false)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := steps(p), "apply appprojects/team@2, apply repositories/charts@1, apply applications/new@1, apply applications/web@5"; got != want {
		t.Errorf("current: %s\nwant     %s", got, want)
	}
	if _, err := planRedrive("c1", time.Now(), current[:4], now, false); err == nil || !strings.Contains(err.Error(), "applications argocd/new: at the hub (generation 1), not yet in the log") {
		t.Errorf("the log behind the hub: %v", err)
	}
	behind := slices.Clone(current)
	behind[1].Generation = 4
	if _, err := planRedrive("c1", time.Now(), behind, now, false); err == nil || !strings.Contains(err.Error(), "generation 4 in the log, 5 at the hub") {
		t.Errorf("a generation behind the hub: %v", err)
	}
	then := []projector.DesiredObject{ob("appprojects", "team", 1, false), ob("applications", "web", 2, false),
		ob("applications", "old", 1, false), ob("repositories", "charts", 1, true)}
	p, err = planRedrive("c1", time.Now(), then, now, true)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := steps(p), "delete applications/new@1, apply appprojects/team@2, apply applications/old@0, apply applications/web@5, delete repositories/charts@1"; got != want {
		t.Errorf("as of: %s\nwant   %s", got, want)
	}
}

// TestManifestIsWhatTheHubTakes: an Application rebuilt from its upsert
// event reads as the manifest the hub validates.
func TestManifestIsWhatTheHubTakes(t *testing.T) {
	m, err := manifest("Application", "argocd", "web", map[string]string{"team": "a"}, map[string]string{"note": "x"}, []byte(`{"project":"p"}`))
	if err != nil {
		t.Fatal(err)
	}
	want := `{"apiVersion":"argoproj.io/v1alpha1","kind":"Application","metadata":{"name":"web","namespace":"argocd","labels":{"team":"a"},"annotations":{"note":"x"}},"spec":{"project":"p"}}`
	if string(m) != want {
		t.Errorf("manifest\n%s\nwant\n%s", m, want)
	}
}
