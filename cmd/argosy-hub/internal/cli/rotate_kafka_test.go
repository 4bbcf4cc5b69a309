//go:build integration

package cli_test

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/argosyproj/argosy/cmd/argosy-hub/internal/cli"
	"github.com/argosyproj/argosy/cmd/internal/cmdkit"
	"github.com/argosyproj/argosy/events"
	"github.com/argosyproj/argosy/hub/api"
	"github.com/argosyproj/argosy/internal/testenv/kafkatest"
)

// TestRotateTheHubKey follows rotate's documented steps with the
// argosy-hub binary: a replica cosigning with the next key, `argosy-hub
// rotate`, then a replica on the next key with the first as its anchor. A
// reader that pins the first hub.pub alone accepts every config and trust
// event both replicas wrote.
func TestRotateTheHubKey(t *testing.T) {
	f := newFixture(t, buildHub(t))
	nextDir := filepath.Join(f.dir, "next")
	run := func(args ...string) string {
		t.Helper()
		out := &capture{}
		root := cli.NewRoot(cmdkit.IOStreams{Out: out, Err: new(discard)})
		root.SetArgs(args)
		if err := root.ExecuteContext(t.Context()); err != nil {
			t.Fatalf("argosy-hub %s: %v", strings.Join(args, " "), err)
		}
		return out.line()
	}
	run("keygen", "--dir", nextDir)
	first, next := filepath.Join(f.dir, cli.PrivateKeyFile), filepath.Join(nextDir, cli.PrivateKeyFile)

	overlap, overlapProc, _ := f.startWith("overlap", []string{"--next-hub-key", next})
	defer func() {
		if t.Failed() {
			t.Log(overlapProc.LogTail())
		}
	}()
	register := func(c *api.Client, name string) {
		t.Helper()
		signing, sealing := clusterKeys(t)
		if _, err := c.RegisterCluster(t.Context(), name, api.ClusterRequest{SigningKey: signing, SealingKey: sealing}, api.WriteOptions{}); err != nil {
			t.Fatalf("register %s: %v", name, err)
		}
	}
	register(overlap, "before")
	out := run("rotate", "--kafka-brokers", kafkatest.Bootstrap(t), "--topic-prefix", f.prefix, "--hub-key", first, "--next-hub-key", next)
	if !strings.Contains(out, "rotated to") {
		t.Errorf("rotate printed %q", out)
	}
	register(overlap, "during")
	successor, _, _ := f.startWith("successor", []string{"--hub-key", next, "--trust-anchor", filepath.Join(f.dir, cli.PublicKeyFile)})
	register(successor, "after")

	pub, err := events.LoadPublicKey(filepath.Join(f.dir, cli.PublicKeyFile))
	if err != nil {
		t.Fatal(err)
	}
	keys := events.NewFollowingRegistry(events.HubAnchor("hub", pub))
	trustDec, err := events.NewDecoder(events.NewVerifier(keys.Anchors()), events.WithTopics(f.topics))
	if err != nil {
		t.Fatal(err)
	}
	rotated := false
	for _, rec := range kafkatest.Committed(t, f.topics[events.TopicTrust]) {
		d, err := trustDec.Decode(t.Context(), rec)
		if err == nil {
			err = keys.Apply(d)
		}
		if err != nil {
			t.Fatalf("trust@%d: %v", rec.Offset, err)
		}
		rotated = rotated || d.Spec.Type == events.TypeKeyRotated
	}
	if !rotated {
		t.Fatal("no rotation on the trust topic")
	}
	keys.Advance(time.Now().Add(time.Hour))
	dec, err := events.NewDecoder(events.NewVerifier(keys), events.WithTopics(f.topics))
	if err != nil {
		t.Fatal(err)
	}
	var clusters []string
	for _, rec := range kafkatest.Committed(t, f.topics[events.TopicConfig]) {
		d, err := dec.Decode(t.Context(), rec)
		if err != nil {
			t.Fatalf("config %d@%d: %v", rec.Partition, rec.Offset, err)
		}
		clusters = append(clusters, d.Subject.Cluster)
	}
	slices.Sort(clusters)
	if want := []string{"after", "before", "during"}; !slices.Equal(clusters, want) {
		t.Errorf("config events for %v, want %v", clusters, want)
	}
}
