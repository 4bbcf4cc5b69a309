//go:build integration

package root

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/argosyproj/argosy/cmd/argosy/internal/cmdtest"
	"github.com/argosyproj/argosy/events"
	"github.com/argosyproj/argosy/hub"
	"github.com/argosyproj/argosy/hub/api"
	"github.com/argosyproj/argosy/hub/hubtest"
	"github.com/argosyproj/argosy/internal/testenv/kafkatest"
	"github.com/argosyproj/argosy/internal/testenv/toolcache"
	"github.com/argosyproj/argosy/projector"
	"github.com/argosyproj/argosy/projector/read"
	"github.com/argosyproj/argosy/projector/sqlstore"
)

// The outside verifier, written from docs/projector.md alone, and what it
// is checked against.
const (
	pyreaderDir     = "../../../../events/internal/pyreader"
	canonicalCases  = "../../../../projector/testdata/canonical.json"
	typeOperation   = events.TypeOperationRequested
	typeAPICall     = events.TypeAuditRecorded
	verifierTimeout = 2 * time.Minute
)

// outsideVerdict is what audit_verify.py prints: GET
// /api/v1/audit/verify's answer, and what it counted.
type outsideVerdict struct {
	read.Verification
	Types           map[string]int `json:"types"`
	NoCluster       int            `json:"noCluster"`
	History         int            `json:"history"`
	JoinedActors    int            `json:"joinedActors"`
	HistoryProblems []string       `json:"historyProblems"`
}

// TestAuditVerifiableFromOutside makes an audit history of every kind on a
// real hub and broker, folded by a real projector into SQLite, and has
// the Python verifier (events/internal/pyreader/audit_verify.py) check it
// over the hub's read API: every chain must hold for it as for argosy
// audit verify, with the same heads, and the history it reads must agree
// with the chains. Then one stored entry is changed, and both must find
// the chain broken at that entry.
func TestAuditVerifiableFromOutside(t *testing.T) {
	cmdtest.Isolate(t)
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Minute)
	defer cancel()
	python := pythonVenv(ctx, t)
	if out, err := runPython(ctx, python, "--cases", canonicalCases); err != nil {
		t.Fatalf("the verifier's canonical form: %v\n%s", err, out)
	}

	db := filepath.Join(t.TempDir(), "views.db")
	store, err := sqlstore.OpenSQLite(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := store.Close(); err != nil {
			t.Error(err)
		}
	})
	// Reads are not audited, so that checking the chains does not lengthen them.
	h := startHub(t, hub.WithReadAPI(read.New(store)), hub.WithAuditReads(false))
	h.fold(t, store)
	h.login(t)
	auditHistory(t, h)
	waitFolded(t, h, store)

	v := h.verifyOutside(ctx, t, python, 0)
	for _, typ := range []string{typeOperation, typeAPICall, events.TypeApplicationUpserted,
		events.TypeApplicationDeleted, events.TypeRepositoryUpserted, events.TypeClusterRegistered} {
		if v.Types[typ] == 0 {
			t.Errorf("the chains hold no %s: %v", typ, v.Types)
		}
	}
	if v.NoCluster == 0 || v.History == 0 || v.JoinedActors == 0 || len(v.HistoryProblems) > 0 {
		t.Errorf("%d entries about no cluster, %d history entries checked, %d actors joined, problems %q: want some, some, some, none",
			v.NoCluster, v.History, v.JoinedActors, v.HistoryProblems)
	}
	h.hashedAsValues(t)
	h.agree(t, v, 0)
	h.rebuildAgrees(t, v)

	at := tamper(ctx, t, db, typeOperation)
	v = h.verifyOutside(ctx, t, python, 1)
	if v.Broken == nil || v.Broken.Topic != at.Topic || v.Broken.Partition != at.Partition.Partition || v.Broken.Offset != at.Offset {
		t.Errorf("the verifier finds %+v broken, want %s", v.Broken, at)
	}
	h.agree(t, v, 1)
}

// hashedAsValues checks that the chains hold what makes a hash of the
// stored bytes differ from one of the value: an API call's record in its
// fields' own order, and an Application spec with floats, characters
// encoding/json escapes and names that sort differently in UTF-16.
func (h *realHub) hashedAsValues(t *testing.T) {
	t.Helper()
	c, err := api.NewClient(h.url, h.tokens["auditor"], nil)
	if err != nil {
		t.Fatal(err)
	}
	entries, err := c.AuditChain(t.Context(), nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string][]string{
		typeAPICall:                    {`{"requestId":`},
		events.TypeApplicationUpserted: {`\u003cb\u003e`, `\u0026`, `"big":1e+21`, `"tiny":1e-7`, `"ratio":0.1`, `"😀":2`},
		typeOperation:                  {`"revision":"v1.2.3"`},
		events.TypeRepositoryUpserted:  {`\u0026b=\u003c2\u003e`},
	}
	for typ, parts := range want {
		found := false
		for _, e := range entries {
			ok := e.Type == typ
			for _, p := range parts {
				ok = ok && strings.Contains(string(e.After), p)
			}
			found = found || ok
		}
		if !found {
			t.Errorf("no %s entry whose after holds %q", typ, parts)
		}
	}
}

// rebuildAgrees folds the config and audit topics again from nothing, as
// a rebuild from the log does, and wants the heads the verifier found.
func (h *realHub) rebuildAgrees(t *testing.T, v outsideVerdict) {
	t.Helper()
	dec, err := events.NewDecoder(events.NewVerifier(events.NewRegistry(events.HubAnchor("hub", h.signer.Public()))),
		events.WithTopics(h.topics))
	if err != nil {
		t.Fatal(err)
	}
	var log []*events.Decoded
	for _, role := range []events.Topic{events.TopicConfig, events.TopicAudit} {
		for _, r := range kafkatest.Committed(t, h.topics[role]) {
			d, err := dec.Decode(t.Context(), r)
			if err != nil {
				t.Fatalf("%s/%d@%d: %v", r.Topic, r.Partition, r.Offset, err)
			}
			log = append(log, d)
		}
	}
	b, err := projector.FoldAll(log)
	if err != nil {
		t.Fatal(err)
	}
	want := map[projector.Partition]string{}
	for _, p := range v.Partitions {
		want[projector.Partition{Topic: p.Topic, Partition: p.Partition}] = p.Head
	}
	if diff := cmp.Diff(want, b.ChainHeads); diff != "" {
		t.Errorf("chain heads (-verified over the API +folded again from the log):\n%s", diff)
	}
}

// fold runs a projector on h's topics into store until the test ends.
func (h *realHub) fold(t *testing.T, store *sqlstore.Store) {
	t.Helper()
	hubtest.Fold(t, []kgo.Opt{kgo.SeedBrokers(kafkatest.Bootstrap(t))}, store,
		[]events.Key{events.HubAnchor("hub", h.signer.Public())},
		projector.WithTopics(h.topics), projector.WithGroup(h.topics[events.TopicConfig]+".projector"))
}

// auditHistory makes, through the CLI as root, changes of every kind the
// chains hold: clusters registered, an Application whose spec holds
// characters and numbers that JSON writers write differently, synced and
// deleted, a repository, a placement (an API call about no one cluster),
// and a call the hub refuses.
func auditHistory(t *testing.T, h *realHub) {
	t.Helper()
	dir, _ := keys(t, "c1")
	web := writeFile(t, "web.yaml", `apiVersion: argoproj.io/v1alpha1
kind: Application
metadata: {name: web, namespace: argocd}
spec:
  project: default
  source:
    repoURL: https://git.example/web.git
    path: web
    targetRevision: main
    helm:
      values: "greeting: <b>héllo & 😀</b>\u2028bye"
      valuesObject: {ratio: 0.1, tiny: 0.0000001, big: 1.0e+21, whole: 2.0, neg: -0.5, "ﬁ": 1, "😀": 2, "é": 3, "e\u0301": 4}
  destination: {server: "https://kubernetes.default.svc", namespace: web}
`)
	site := writeFile(t, "site.yaml", `apiVersion: argoproj.io/v1alpha1
kind: Application
metadata: {name: site, namespace: argocd}
spec:
  project: default
  source: {repoURL: "https://git.example/site.git", path: site}
  destination: {server: "https://kubernetes.default.svc", namespace: site}
`)
	for _, e := range []expect{
		{args: []string{"cluster", "register", "c1", "--labels", "env=prod", "--keys-dir", dir}},
		{args: []string{"app", "apply", "-f", web, "--cluster", "c1"}, stdout: []string{"application.upserted"}},
		{args: []string{"app", "sync", "web", "--cluster", "c1", "--revision", "v1.2.3", "--prune"}, stdout: []string{"operation.requested"}},
		{stdin: "s3cret\n", args: []string{"repo", "add", "charts", "--cluster", "c1", "--url", "https://git.example/charts.git?a=1&b=<2>",
			"--username", "bot", "--password-stdin"}, stdout: []string{"repository.upserted"}},
		{args: []string{"app", "apply", "-f", site, "--selector", "env=prod"}, stdout: []string{"placement.upserted"}},
		{args: []string{"app", "delete", "web", "--cluster", "c1"}, stdout: []string{"application.deleted"}},
		{args: []string{"cluster", "register", "c2", "--server", h.url, "--token", h.tokens["auditor"]}, code: 1,
			stderr: []string{"403 Forbidden"}},
	} {
		e.run(t)
	}
	// The placement reaches c1 in the hub's own time.
	deadline := time.Now().Add(time.Minute)
	for {
		code, stdout, _ := runIn(t, "", "app", "placements", "site")
		for _, line := range strings.Split(stdout, "\n") {
			if f := strings.Fields(line); code == 0 && len(f) == 5 && f[3] == "c1" && f[4] == "placed" {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("app placements:\n%s", stdout)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func writeFile(t *testing.T, name, content string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// waitFolded waits until the store holds an audit entry for every config
// event and every API call in the log.
func waitFolded(t *testing.T, h *realHub, store *sqlstore.Store) {
	t.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	for {
		want := len(h.config(t)) + len(kafkatest.Committed(t, h.topics[events.TopicAudit]))
		entries, err := read.ChainPage(t.Context(), store, nil, read.MaxAuditLimit)
		if err != nil {
			t.Fatal(err)
		}
		if len(entries) == want {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the store holds %d audit entries, the log %d events to audit", len(entries), want)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// verifyOutside runs the Python verifier against h's read API, reading
// the chains three entries at a time, and wants it to exit with code.
func (h *realHub) verifyOutside(ctx context.Context, t *testing.T, python string, code int) outsideVerdict {
	t.Helper()
	out, err := runPython(ctx, python, "--server", h.url, "--token", h.tokens["auditor"], "--page", "3")
	var exit *exec.ExitError
	switch {
	case code == 0 && err != nil, code != 0 && (!errors.As(err, &exit) || exit.ExitCode() != code):
		t.Fatalf("audit_verify.py: %v, want exit %d\n%s", err, code, out)
	}
	t.Logf("audit_verify.py:\n%s", out)
	var v outsideVerdict
	lines := strings.Split(strings.TrimSpace(out.stdout), "\n")
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &v); err != nil {
		t.Fatalf("audit_verify.py's verdict: %v\n%s", err, out)
	}
	return v
}

// agree checks that the server's check (through api.Client and argosy
// audit verify, which exits with code) finds what the outside verifier
// found: the same partitions, entries, heads and first broken link.
func (h *realHub) agree(t *testing.T, outside outsideVerdict, code int) {
	t.Helper()
	c, err := api.NewClient(h.url, h.tokens["auditor"], nil)
	if err != nil {
		t.Fatal(err)
	}
	v, err := c.VerifyAudit(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(v, &outside.Verification); diff != "" {
		t.Errorf("the hub's check and the outside verifier's differ (-hub +outside):\n%s", diff)
	}
	got, stdout, stderr := runIn(t, "", "audit", "verify", "-o", "json", "--server", h.url, "--token", h.tokens["auditor"])
	var cli read.Verification
	if err := json.Unmarshal([]byte(stdout), &cli); err != nil || got != code {
		t.Fatalf("argosy audit verify: exit %d (want %d), %v\n%s%s", got, code, err, stdout, stderr)
	}
	if diff := cmp.Diff(&cli, &outside.Verification); diff != "" {
		t.Errorf("argosy audit verify and the outside verifier differ (-argosy +outside):\n%s", diff)
	}
}

// tamper changes the after of the first stored entry of type typ, as
// someone with write access to the store could, and returns its position.
func tamper(ctx context.Context, t *testing.T, path, typ string) read.ChainPosition {
	t.Helper()
	db, err := sql.Open("sqlite", "file:"+path+"?_busy_timeout=10000")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var pos read.ChainPosition
	var after []byte
	err = db.QueryRowContext(ctx, `SELECT topic, part, off, after FROM audit_entries WHERE type = ? ORDER BY topic, part, off LIMIT 1`, typ).
		Scan(&pos.Topic, &pos.Partition.Partition, &pos.Offset, &after)
	if err != nil {
		t.Fatal(err)
	}
	changed := bytes.Replace(after, []byte(`"v1.2.3"`), []byte(`"v6.6.6"`), 1)
	if bytes.Equal(changed, after) {
		t.Fatalf("%s at %s: no revision to change in %s", typ, pos, after)
	}
	res, err := db.ExecContext(ctx, `UPDATE audit_entries SET after = ? WHERE topic = ? AND part = ? AND off = ?`,
		changed, pos.Topic, pos.Partition.Partition, pos.Offset)
	if n, _ := res.RowsAffected(); err != nil || n != 1 {
		t.Fatalf("changing the entry at %s: %v (%d rows)", pos, err, n)
	}
	return pos
}

func pythonVenv(ctx context.Context, t *testing.T) string {
	t.Helper()
	reqs, err := os.ReadFile(filepath.Join(pyreaderDir, "requirements.txt"))
	if err != nil {
		t.Fatal(err)
	}
	python, err := toolcache.PythonVenv(ctx, "pyreader", reqs)
	if err != nil {
		t.Fatal(err)
	}
	return python
}

type pythonOutput struct{ stdout, stderr string }

func (o pythonOutput) String() string { return o.stdout + o.stderr }

func runPython(ctx context.Context, python string, args ...string) (pythonOutput, error) {
	ctx, cancel := context.WithTimeout(ctx, verifierTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, python, append([]string{filepath.Join(pyreaderDir, "audit_verify.py")}, args...)...)
	cmd.Env = append(os.Environ(), "PYTHONDONTWRITEBYTECODE=1")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	if err != nil && ctx.Err() != nil {
		err = fmt.Errorf("%w (%w)", err, ctx.Err())
	}
	return pythonOutput{stdout.String(), stderr.String()}, err
}
