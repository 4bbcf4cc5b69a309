//go:build integration

package hub_test

import (
	"context"
	"crypto/ed25519"
	"encoding/base64"
	"errors"
	"maps"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"sigs.k8s.io/yaml"

	"github.com/argosyproj/argosy/events"
	"github.com/argosyproj/argosy/hub"
	"github.com/argosyproj/argosy/hub/api"
	"github.com/argosyproj/argosy/hub/auth"
	"github.com/argosyproj/argosy/hub/hubtest"
	"github.com/argosyproj/argosy/internal/testenv/kafkatest"
	"github.com/argosyproj/argosy/schemas"
)

func TestMain(m *testing.M) { os.Exit(kafkatest.Main(m)) }

// rig is one test's topics, hub key and tokens on the real broker.
type rig struct {
	t      testing.TB
	topics events.Topics
	signer *events.Signer
	tokens map[string]string // by actor
	list   []auth.Token
	// file, once useTokenFile has made it, is the tokens file every
	// replica started afterwards reads and follows.
	file string
}

func newRig(t testing.TB, partitions int32) *rig {
	t.Helper()
	r := &rig{t: t, topics: events.DefaultTopics(kafkatest.Prefix(t)), tokens: map[string]string{}}
	if err := events.EnsureTopics(t.Context(), kadm.NewClient(kafkatest.Client(t)), r.topics, events.TopicPlan(partitions, 2), 1, 1); err != nil {
		t.Fatal(err)
	}
	kafkatest.DeleteAtEnd(t, slices.Collect(maps.Values(r.topics))...)
	var err error
	if r.signer, err = events.GenerateSigner(); err != nil {
		t.Fatal(err)
	}
	for _, tk := range []struct{ name, role, clusters string }{
		{"root", auth.RoleAdmin, ""},
		{"dev-deployer", auth.RoleDeployer, "env=dev"},
		{"auditor", auth.RoleViewer, ""},
		{"alice", auth.RoleDeployer, ""},
	} {
		tok, entry, err := auth.NewToken(tk.name, tk.role, nil, tk.clusters)
		if err != nil {
			t.Fatal(err)
		}
		r.tokens[tk.name] = tok
		r.list = append(r.list, entry)
	}
	return r
}

// start runs a hub replica until the test ends and returns its URL once
// it is ready.
func (r *rig) start(opts ...hub.Option) string {
	r.t.Helper()
	return r.startAs(r.signer, []events.Key{events.HubAnchor("hub", r.signer.Public())}, opts...)
}

// startAs is start with another signer and anchors.
func (r *rig) startAs(signer *events.Signer, anchors []events.Key, opts ...hub.Option) string {
	r.t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		r.t.Fatal(err)
	}
	tokens, base := r.list, []hub.Option{hub.WithTopics(r.topics), hub.WithListener(ln),
		hub.WithTransactionalPrefix(r.topics[events.TopicConfig] + "-writer-")}
	if r.file != "" {
		tokens, base = nil, append(base, hub.WithTokenFile(r.file))
	}
	s, err := hub.New([]kgo.Opt{kgo.SeedBrokers(kafkatest.Bootstrap(r.t))}, signer, anchors, tokens, append(base, opts...)...)
	if err != nil {
		r.t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()
	r.t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				r.t.Errorf("hub Run = %v", err)
			}
		case <-time.After(30 * time.Second):
			r.t.Error("hub Run did not return within 30 s of its context ending")
		}
	})
	url := "http://" + ln.Addr().String()
	waitReady(r.t, url)
	return url
}

// useTokenFile writes the rig's tokens to a tokens file, which the
// replicas started afterwards read and follow.
func (r *rig) useTokenFile() {
	r.t.Helper()
	r.file = filepath.Join(r.t.TempDir(), "tokens.yaml")
	r.writeTokens(r.list)
}

// writeTokens replaces the tokens file's content with list, as an
// operator's editor would: a new file renamed over the old.
func (r *rig) writeTokens(list []auth.Token) {
	r.t.Helper()
	b, err := yaml.Marshal(auth.TokenFile{Tokens: list})
	if err != nil {
		r.t.Fatal(err)
	}
	if err := os.WriteFile(r.file+".tmp", b, 0o600); err != nil {
		r.t.Fatal(err)
	}
	if err := os.Rename(r.file+".tmp", r.file); err != nil {
		r.t.Fatal(err)
	}
}

func waitReady(t testing.TB, url string) { hubtest.WaitReady(t, url) }

// client returns a client of the hub at url with actor's token.
func (r *rig) client(url, actor string) *api.Client {
	r.t.Helper()
	c, err := api.NewClient(url, r.tokens[actor], nil)
	if err != nil {
		r.t.Fatal(err)
	}
	return c
}

// clusterKeys returns a new cluster's public keys as a registration sends
// them, and its sealing key.
func clusterKeys(t testing.TB) (signing, sealing string, seal events.SealingKey) {
	t.Helper()
	pub, _, err := ed25519.GenerateKey(nil)
	if err != nil {
		t.Fatal(err)
	}
	sk, err := events.NewSealingKey()
	if err != nil {
		t.Fatal(err)
	}
	return base64.StdEncoding.EncodeToString(pub), base64.StdEncoding.EncodeToString(sk.Public[:]), sk
}

// register registers a cluster with new keys and labels as root.
func (r *rig) register(c *api.Client, name string, labels map[string]string) (*api.Result, events.SealingKey) {
	r.t.Helper()
	signing, sealing, sk := clusterKeys(r.t)
	res, err := c.RegisterCluster(r.t.Context(), name, api.ClusterRequest{Labels: labels, SigningKey: signing, SealingKey: sealing}, api.WriteOptions{})
	if err != nil {
		r.t.Fatalf("register %s: %v", name, err)
	}
	return res, sk
}

// records reads every committed record of a topic role.
func (r *rig) records(role events.Topic) []*kgo.Record {
	r.t.Helper()
	return kafkatest.Committed(r.t, r.topics[role])
}

// decoded decodes records as a projector would, trusting the hub's key.
func (r *rig) decoded(recs []*kgo.Record) []*events.Decoded {
	r.t.Helper()
	dec, err := events.NewDecoder(events.NewVerifier(events.NewRegistry(events.HubAnchor("hub", r.signer.Public()))), events.WithTopics(r.topics))
	if err != nil {
		r.t.Fatal(err)
	}
	var out []*events.Decoded
	for _, rec := range recs {
		d, err := dec.Decode(r.t.Context(), rec)
		if err != nil {
			r.t.Fatalf("%s/%d@%d: %v", rec.Topic, rec.Partition, rec.Offset, err)
		}
		out = append(out, d)
	}
	return out
}

func ofType(ds []*events.Decoded, typ string) []*events.Decoded {
	var out []*events.Decoded
	for _, d := range ds {
		if d.Spec.Type == typ {
			out = append(out, d)
		}
	}
	return out
}

// clusterKeysRegistered returns the registrations of clusters' keys among
// trust events: the hub also registers its own key.
func clusterKeysRegistered(ds []*events.Decoded) []*events.Decoded {
	var out []*events.Decoded
	for _, d := range ofType(ds, events.TypeKeyRegistered) {
		if d.Data.(*schemas.KeyRegistered).Role == schemas.RoleCluster {
			out = append(out, d)
		}
	}
	return out
}

func contains(s, sub string) bool { return strings.Contains(s, sub) }

func asResponse(err error, re **api.ResponseError) bool { return errors.As(err, re) }
