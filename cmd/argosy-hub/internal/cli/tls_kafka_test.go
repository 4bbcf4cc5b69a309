//go:build integration

package cli_test

import (
	"context"
	"crypto/tls"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/argosyproj/argosy/cmd/argosy-hub/internal/cli"
	"github.com/argosyproj/argosy/hub/api"
	"github.com/argosyproj/argosy/internal/testenv/kubetest"
	"github.com/argosyproj/argosy/internal/testenv/testproc"
	"github.com/argosyproj/argosy/internal/testenv/tlstest"
)

// TestHubServesTLS runs argosy-hub with --tls-cert and --tls-key from a
// private CA on a real broker: a client trusting the CA is answered,
// plain HTTP is not, and neither is a client with the system's CAs only. A
// new certificate written over the files is presented on a new handshake
// without a restart, and a broken pair written over that keeps it. A
// spoke joining the hub without --hub-ca fails with an error naming
// --hub-ca; with it, it joins.
func TestHubServesTLS(t *testing.T) {
	e := kubetest.Current(t)
	f := newFixture(t, buildHub(t))
	ca := tlstest.NewCA(t, "argosy test CA")
	tlsDir := filepath.Join(f.dir, "tls")
	if err := os.Mkdir(tlsDir, 0o700); err != nil {
		t.Fatal(err)
	}
	certFile, keyFile := ca.WriteFiles(t, tlsDir, "hub-first")
	ports, err := testproc.FreePorts(2)
	if err != nil {
		t.Fatal(err)
	}
	addr := "127.0.0.1:" + itoa(ports[0])
	p, err := testproc.Start(f.dir, "hub", f.bin, []string{"run", "--kafka-brokers", f.broker,
		"--topic-prefix", f.prefix, "--hub-key", filepath.Join(f.dir, cli.PrivateKeyFile), "--tokens", filepath.Join(f.dir, "tokens.yaml"),
		"--listen", addr, "--metrics-address", "127.0.0.1:" + itoa(ports[1])}, []string{"ARGOSY_TLS_CERT=" + certFile, "ARGOSY_TLS_KEY=" + keyFile})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := p.Stop(10 * time.Second); err != nil {
			t.Logf("hub: %v", err)
		}
	})
	url := "https://" + addr
	wctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	if err := p.WaitFor(wctx, func(ctx context.Context) error { return get(ctx, ca.Client(), url+"/readyz") }); err != nil {
		t.Fatalf("the hub over TLS: %v", err)
	}
	hubc, err := api.NewClient(url, f.token, ca.Client())
	if err != nil {
		t.Fatal(err)
	}
	ns := e.Namespace(t)
	cluster := "tls-" + ns
	reg, err := hubc.RegisterCluster(t.Context(), cluster, api.ClusterRequest{}, api.WriteOptions{})
	if err != nil || reg.JoinToken == "" {
		t.Fatalf("register over TLS = %+v, %v; want a join token", reg, err)
	}
	if err := get(t.Context(), http.DefaultClient, "http://"+addr+"/readyz"); err == nil {
		t.Error("plain HTTP to the TLS listener was answered 200")
	}
	if err := get(t.Context(), http.DefaultClient, url+"/readyz"); err == nil {
		t.Error("a client trusting the system's CAs only was answered")
	}

	presented := func() string {
		c, err := tls.Dial("tcp", addr, &tls.Config{RootCAs: ca.Pool(), MinVersion: tls.VersionTLS12})
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		return c.ConnectionState().PeerCertificates[0].Subject.CommonName
	}
	if cn := presented(); cn != "hub-first" {
		t.Fatalf("presents %q, want hub-first", cn)
	}
	ca.WriteFiles(t, tlsDir, "hub-renewed")
	waitFor(t, 10*time.Second, "the renewed certificate is presented", func() bool { return presented() == "hub-renewed" })
	_, otherKey := ca.Issue(t, "other")
	tlstest.Replace(t, keyFile, otherKey) // a key that does not match the certificate
	time.Sleep(2500 * time.Millisecond)
	if cn := presented(); cn != "hub-renewed" {
		t.Errorf("after a broken pair: presents %q, want the last good one, hub-renewed", cn)
	}
	if !strings.Contains(p.LogTail(), "tls certificate not reloaded") {
		t.Errorf("the broken pair is not logged:\n%s", p.LogTail())
	}
	if err := get(t.Context(), ca.Client(), url+"/readyz"); err != nil {
		t.Errorf("after a broken pair: %v", err)
	}
	metrics := "http://127.0.0.1:" + itoa(ports[1]) + "/metrics"
	waitFor(t, 10*time.Second, "the broken pair is counted", func() bool {
		resp, err := http.Get(metrics) //nolint:noctx // a loopback probe
		if err != nil {
			return false
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		return err == nil && regexp.MustCompile(`(?m)^argosy_hub_tls_reload_failures_total(\{[^}]*\})? 1$`).Match(b)
	})

	bin := buildSpoke(t)
	untrusting := spawnSpoke(t, e, f, bin, url, cluster, reg.JoinToken, ns)
	if exited, _ := untrusting.WaitExit(time.Minute); !exited {
		untrusting.Stop(5 * time.Second) //nolint:errcheck // it failed the test already
		t.Fatalf("a spoke without --hub-ca did not exit; log:\n%s", untrusting.LogTail())
	}
	if log := untrusting.LogTail(); !strings.Contains(log, "--hub-ca") || !strings.Contains(log, "not trusted") {
		t.Errorf("a spoke without --hub-ca: its error does not name --hub-ca:\n%s", log)
	}
	trusting := spawnSpoke(t, e, f, bin, url, cluster, reg.JoinToken, ns, "--hub-ca", filepath.Join(tlsDir, "ca.crt"))
	t.Cleanup(func() {
		if err := trusting.Terminate(30 * time.Second); err != nil {
			t.Logf("spoke: %v", err)
		}
	})
	waitFor(t, time.Minute, "the spoke with --hub-ca joins", func() bool { return strings.Contains(trusting.LogTail(), "joined the fleet") })
}

// get reads url with c and fails unless it answers 200.
func get(ctx context.Context, c *http.Client, url string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	resp, err := c.Do(req)
	if err != nil {
		return err
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return &api.ResponseError{Status: resp.StatusCode}
	}
	return nil
}

func itoa(i int) string { return strconv.Itoa(i) }
