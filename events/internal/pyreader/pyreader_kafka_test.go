//go:build integration

package pyreader

import (
	"bytes"
	"context"
	_ "embed"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/argosyproj/argosy/events"
	"github.com/argosyproj/argosy/internal/testenv/kafkatest"
	"github.com/argosyproj/argosy/internal/testenv/toolcache"
)

func TestMain(m *testing.M) { os.Exit(kafkatest.Main(m)) }

//go:embed requirements.txt
var requirements []byte

// TestPythonReaderReadsEveryTopic writes a workload to every topic of the
// topic plan, through the code the hub and the agents use, and has the
// Python reader read all of it: every record must pass every check the
// document describes, and the reader must have seen exactly what was
// written. It also verifies the golden samples.
func TestPythonReaderReadsEveryTopic(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Minute)
	defer cancel()
	started := time.Now()
	python, err := toolcache.PythonVenv(ctx, "pyreader", requirements)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("python environment ready in %s", time.Since(started).Round(time.Millisecond))

	w := newWorkload(t, 4, 3)
	w.run(ctx)

	topics := map[events.Topic]string{}
	for role := range events.TopicPlan(1, 1) {
		topics[role] = w.topics[role]
	}
	topicsJSON, err := json.Marshal(topics)
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(w.refused)
	got, unapplied := goRefused(t, w)
	if !cmp.Equal(got, w.refused) {
		t.Errorf("Argosy's own decoder refused %v, want exactly %v", got, w.refused)
	}
	if !cmp.Equal(unapplied, w.unapplied) {
		t.Errorf("Argosy's own registry refused to apply %v, want exactly %v", unapplied, w.unapplied)
	}
	refused, err := json.Marshal(w.refused)
	if err != nil {
		t.Fatal(err)
	}
	unappliedJSON, err := json.Marshal(w.unapplied)
	if err != nil {
		t.Fatal(err)
	}
	started = time.Now()
	cmd := exec.CommandContext(ctx, python, "reader.py", "--expect-refused", string(refused), "--expect-unapplied", string(unappliedJSON),
		"--bootstrap", kafkatest.Bootstrap(t),
		"--topics", string(topicsJSON),
		"--anchor", base64.StdEncoding.EncodeToString(w.hub.Public()), "--anchor-owner", hubName,
		"--design", "../../../docs/design.md", "--schemas", "../../../schemas/json",
		"--golden", "../../testdata/golden")
	cmd.Env = append(os.Environ(), "PYTHONDONTWRITEBYTECODE=1")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err = cmd.Run()
	t.Logf("python reader ran in %s", time.Since(started).Round(time.Millisecond))
	if err != nil {
		t.Fatalf("python reader: %v\n%s%s", err, stdout.String(), stderr.String())
	}
	t.Logf("python reader:\n%s", stdout.String())
	lines := strings.Split(strings.TrimSpace(stdout.String()), "\n")
	var summary struct {
		Counts    map[string]map[string]int `json:"counts"`
		Golden    int                       `json:"golden"`
		Refused   []string                  `json:"refused"`
		Unapplied []string                  `json:"unapplied"`
	}
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &summary); err != nil {
		t.Fatalf("python reader's summary: %v\n%s", err, stdout.String())
	}
	if diff := cmp.Diff(w.written, summary.Counts); diff != "" {
		t.Errorf("records read by type, per topic (-written +read):\n%s", diff)
	}
	slices.Sort(summary.Refused)
	if len(w.refused) != 7 || !cmp.Equal(w.refused, summary.Refused) {
		t.Errorf("the python reader refused %v, want exactly %v: signed by a planted key, a rotated-out key, the keys of a deregistered cluster, the hub's key rotated out, and a key naming a trust offset before its introduction, and a batch naming another cluster", summary.Refused, w.refused)
	}
	if !cmp.Equal(w.unapplied, summary.Unapplied) {
		t.Errorf("the python reader refused to apply %v, want exactly %v: a rotation to another cluster's key", summary.Unapplied, w.unapplied)
	}
	if summary.Golden < len(events.Catalogue())+1 {
		t.Errorf("python reader verified %d golden samples, want one per type and more", summary.Golden)
	}
}

// ensureTopics makes the workload's topics from the topic plan.
func ensureTopics(t *testing.T, topics events.Topics, configPartitions, statusPartitions int32) {
	t.Helper()
	adm := kadm.NewClient(kafkatest.Client(t))
	plan := events.TopicPlan(configPartitions, statusPartitions)
	if err := events.EnsureTopics(t.Context(), adm, topics, plan, 1, 1); err != nil {
		t.Fatal(err)
	}
	var names []string
	for role := range plan {
		if topics[role] == "" {
			t.Fatalf("the topic plan has %s, the workload no topic for it", role)
		}
		names = append(names, topics[role])
	}
	kafkatest.DeleteAtEnd(t, names...)
}

var errRefused = errors.New("refused by the test's handler")

// goRefused decodes the workload's status topic as a projector does, with
// the key set the committed trust topic builds, and returns the records
// refused for their signing key, and the trust records the registry
// refused to apply.
func goRefused(t *testing.T, w *workload) (_, unapplied []string) {
	t.Helper()
	reg := events.NewRegistry(events.HubAnchor(hubName, w.hub.Public()))
	trustDec, err := events.NewDecoder(events.NewVerifier(reg.Anchors()), events.WithTopics(w.topics))
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	refused := func(rec *kgo.Record, err error) bool {
		// A key not valid for the record, or a batch of deltas naming
		// another cluster than its signer's.
		if errors.Is(err, events.ErrNotAuthorized) || errors.Is(err, events.ErrUnknownKey) || errors.Is(err, events.ErrRevokedKey) ||
			errors.Is(err, events.ErrMalformed) && strings.Contains(err.Error(), "names cluster") {
			out = append(out, fmt.Sprintf("%s/%d@%d", rec.Topic, rec.Partition, rec.Offset))
			return true
		}
		return false
	}
	for _, rec := range kafkatest.Committed(t, w.topics[events.TopicTrust]) {
		d, err := trustDec.Decode(t.Context(), rec)
		if refused(rec, err) {
			continue
		}
		if err != nil {
			t.Fatalf("trust@%d: %v", rec.Offset, err)
		}
		if err := reg.Apply(d); events.IsPoison(err) {
			unapplied = append(unapplied, fmt.Sprintf("%s/%d@%d", rec.Topic, rec.Partition, rec.Offset))
		} else if err != nil {
			t.Fatalf("trust@%d: %v", rec.Offset, err)
		}
	}
	dec, err := events.NewDecoder(events.NewVerifier(reg), events.WithTopics(w.topics))
	if err != nil {
		t.Fatal(err)
	}
	for _, rec := range kafkatest.Committed(t, w.topics[events.TopicStatus]) {
		if _, err := dec.Decode(t.Context(), rec); err != nil && !refused(rec, err) {
			t.Errorf("status@%d/%d: %v", rec.Partition, rec.Offset, err)
		}
	}
	slices.Sort(out)
	return out, unapplied
}
