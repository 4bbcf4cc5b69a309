//go:build integration

package system_test

import (
	"context"
	"crypto/ed25519"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"maps"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/argosyproj/argosy/events"
	"github.com/argosyproj/argosy/hub"
	"github.com/argosyproj/argosy/hub/api"
	"github.com/argosyproj/argosy/hub/auth"
	"github.com/argosyproj/argosy/internal/testenv/kafkatest"
	"github.com/argosyproj/argosy/projector/sqlstore"
	"github.com/argosyproj/argosy/system"
)

func TestMain(m *testing.M) { os.Exit(kafkatest.Main(m)) }

// TestSystemServesEveryPart runs a whole server process on the real
// broker: the API answers /healthz and /readyz, the read API and the
// dashboard are served beside the hub's routes, the fold folds a write
// into the store, the operations server's readiness joins every part's,
// and when ctx ends Run returns nil and the API's address is free.
func TestSystemServesEveryPart(t *testing.T) {
	prefix := kafkatest.Prefix(t)
	topics := events.DefaultTopics(prefix)
	if err := events.EnsureTopics(t.Context(), kadm.NewClient(kafkatest.Client(t)), topics, events.TopicPlan(2, 2), 1, 1); err != nil {
		t.Fatal(err)
	}
	kafkatest.DeleteAtEnd(t, slices.Collect(maps.Values(topics))...)
	signer, err := events.GenerateSigner()
	if err != nil {
		t.Fatal(err)
	}
	tok, entry, err := auth.NewToken("admin", auth.RoleAdmin, nil, "")
	if err != nil {
		t.Fatal(err)
	}
	store, err := sqlstore.OpenSQLite(t.Context(), filepath.Join(t.TempDir(), "views.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	ops := freeAddr(t)
	var opsReady system.Check
	sys, err := system.New([]kgo.Opt{kgo.SeedBrokers(kafkatest.Bootstrap(t))}, signer, []events.Key{events.HubAnchor(hub.HubKeyOwner, signer.Public())},
		system.WithTopicPrefix(prefix), system.WithListen("127.0.0.1:0"), system.WithTokens(entry), system.WithStore(store),
		system.WithDashboard(), system.WithFold(""),
		system.WithOpsServer(ops, func(ready system.Check) http.Handler {
			opsReady = ready
			mux := http.NewServeMux()
			mux.HandleFunc("/readyz", func(w http.ResponseWriter, r *http.Request) {
				if err := ready(r.Context()); err != nil {
					http.Error(w, err.Error(), http.StatusServiceUnavailable)
				}
			})
			return mux
		}))
	if err != nil {
		t.Fatal(err)
	}
	if err := sys.Ready(t.Context()); !errors.Is(err, hub.ErrNotRunning) {
		t.Errorf("Ready before Run = %v, want %v among its errors", err, hub.ErrNotRunning)
	}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- sys.Run(ctx) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run = %v, want nil once ctx ends", err)
		}
		if c, err := net.Dial("tcp", sys.Addr().String()); err == nil {
			c.Close()
			t.Errorf("the API's address %s still answers after Run", sys.Addr())
		}
	}()
	wctx, wcancel := context.WithTimeout(ctx, time.Minute)
	defer wcancel()
	if err := sys.WaitReady(wctx); err != nil {
		t.Fatalf("never ready: %v", err)
	}
	if opsReady == nil {
		t.Error("the operations server was not given the readiness check")
	}
	for _, c := range []struct{ url, token string }{
		{sys.URL() + "/healthz", ""}, {sys.URL() + "/readyz", ""}, {sys.URL() + "/", ""},
		{sys.URL() + "/api/v1/clusters", tok}, {"http://" + ops + "/readyz", ""},
	} {
		if code, body := get(t, c.url, c.token); code != http.StatusOK {
			t.Errorf("GET %s = %d %s, want 200", c.url, code, body)
		}
	}
	client, err := api.NewClient(sys.URL(), tok, nil)
	if err != nil {
		t.Fatal(err)
	}
	register(t, client, "c1")
	deadline := time.Now().Add(time.Minute)
	for {
		if _, ok, err := store.Cluster(t.Context(), "c1"); err == nil && ok {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the fold never folded the registration into the store")
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// TestRunTwice: Run is called once. A second call, after the first has
// returned, runs no part again: it says so at once, and Ready never
// passes meanwhile (the hub's readiness of the first run would otherwise
// hold before the second's ledger had read anything).
func TestRunTwice(t *testing.T) {
	prefix := kafkatest.Prefix(t)
	topics := events.DefaultTopics(prefix)
	if err := events.EnsureTopics(t.Context(), kadm.NewClient(kafkatest.Client(t)), topics, events.TopicPlan(2, 2), 1, 1); err != nil {
		t.Fatal(err)
	}
	kafkatest.DeleteAtEnd(t, slices.Collect(maps.Values(topics))...)
	signer, err := events.GenerateSigner()
	if err != nil {
		t.Fatal(err)
	}
	_, entry, err := auth.NewToken("admin", auth.RoleAdmin, nil, "")
	if err != nil {
		t.Fatal(err)
	}
	sys, err := system.New([]kgo.Opt{kgo.SeedBrokers(kafkatest.Bootstrap(t))}, signer, []events.Key{events.HubAnchor(hub.HubKeyOwner, signer.Public())},
		system.WithTopicPrefix(prefix), system.WithListen("127.0.0.1:0"), system.WithTokens(entry))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- sys.Run(ctx) }()
	wctx, wcancel := context.WithTimeout(ctx, time.Minute)
	defer wcancel()
	if err := sys.WaitReady(wctx); err != nil {
		t.Fatalf("never ready: %v", err)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("first Run = %v, want nil", err)
	}
	ctx2, cancel2 := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel2()
	go func() { done <- sys.Run(ctx2) }()
	for {
		select {
		case err := <-done:
			if !errors.Is(err, system.ErrRunAgain) {
				t.Errorf("second Run = %v, want %v", err, system.ErrRunAgain)
			}
			return
		case <-ctx2.Done():
			t.Fatal("the second Run still runs")
		default:
		}
		if err := sys.Ready(ctx2); err == nil {
			t.Fatal("Ready passed during a second Run")
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// register registers cluster name with new keys.
func register(t *testing.T, c *api.Client, name string) {
	t.Helper()
	pub, _, err := ed25519.GenerateKey(nil)
	if err != nil {
		t.Fatal(err)
	}
	sk, err := events.NewSealingKey()
	if err != nil {
		t.Fatal(err)
	}
	req := api.ClusterRequest{SigningKey: base64.StdEncoding.EncodeToString(pub), SealingKey: base64.StdEncoding.EncodeToString(sk.Public[:])}
	if _, err := c.RegisterCluster(t.Context(), name, req, api.WriteOptions{}); err != nil {
		t.Fatal(err)
	}
}

// get answers GET url with token, if any, as its status and body.
func get(t *testing.T, url, token string) (int, string) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, strings.TrimSpace(string(b))
}

// freeAddr is a free address on 127.0.0.1.
func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return fmt.Sprint(ln.Addr())
}
